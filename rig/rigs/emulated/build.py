"""Build the ns-3 radio emulator (rig/rigs/emulated/ns3/*.cc) against the installed PyPI `ns3` wheel.

The wheel ships headers and shared libraries, but its pkg-config files point at the wheel's
build machine, so include/lib paths are derived from where the package is installed.
Objects are rebuilt only when their source (or any local header, or the flags) changed.

    python -m rig.rigs.emulated.build [--force]
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from rig.core.errors import RigError
from rig.core.repo import REPO

SOURCE_DIR = Path(__file__).resolve().parent / "ns3"
REPO_ROOT = REPO
BUILD_DIR = REPO_ROOT / "build" / "emu"
NS3_VERSION = "3.44"
# ns-3 modules the emulator links; the wheel names them libns<version>-<module>.so.
NS3_MODULES = ("core", "network", "mobility", "propagation", "wifi", "internet", "lte", "point-to-point", "virtual-net-device")
# The wheel's libraries were compiled with these; headers must see the same.
DEFINES = ("NS3_BUILD_PROFILE_RELEASE", "NS3_LOG_ENABLE", "NS3_ASSERT_ENABLE")
CXXFLAGS = ("-std=c++20", "-O2", "-g0", "-Wall", "-fPIC")
PARALLEL_JOBS = 2


def emulator_binary() -> Path:
    return BUILD_DIR / "radio-emulator"


def ns3_paths() -> tuple[Path, Path]:
    """Include dir and lib dir of the installed ns3 wheel, found without importing ns3."""
    spec = importlib.util.find_spec("ns3")
    if spec is None or not spec.submodule_search_locations:
        raise RigError("the Python package ns3 is not installed (pip install ns3==3.44.post0)")
    root = Path(next(iter(spec.submodule_search_locations)))
    include, lib = root / "include", root / "lib64"
    if not (include / "ns3" / "simulator-impl.h").is_file() or not lib.is_dir():
        raise RigError(f"the ns3 package at {root} has no headers/libraries (expected include/, lib64/)")
    return include, lib


def _compiler() -> str:
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name):
            return name
    raise RigError("no C++ compiler found (apt-get install g++)")


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()


def _compile_command(cxx: str, include: Path, source: Path, obj: Path) -> list[str]:
    return [cxx, *CXXFLAGS, *(f"-D{d}" for d in DEFINES), f"-I{include}", "-c", str(source), "-o", str(obj)]


def _link_command(cxx: str, lib: Path, objects: list[Path], out: Path) -> list[str]:
    libs = [f"-lns{NS3_VERSION}-{m}" for m in NS3_MODULES]
    # The wheel's config-store library refers to GTK symbols without linking GTK; they are
    # never called here, and lazy binding leaves them unresolved at run time.
    return [cxx, *map(str, objects), f"-L{lib}", f"-Wl,-rpath,{lib}", "-Wl,--allow-shlib-undefined",
            *libs, "-lpthread", "-o", str(out)]


def _run_jobs(commands: list[list[str]]) -> None:
    """Runs compiler commands, PARALLEL_JOBS at a time; raises with the first failure's output."""
    pending = list(commands)
    running: list[subprocess.Popen] = []
    failure = None
    while pending or running:
        while pending and len(running) < PARALLEL_JOBS and failure is None:
            running.append(subprocess.Popen(pending.pop(0), stderr=subprocess.PIPE, text=True))
        proc = running.pop(0)
        _, err = proc.communicate()
        if proc.returncode != 0 and failure is None:
            failure = err
            pending.clear()
    if failure is not None:
        raise RigError("building the radio emulator failed:\n" + failure[-4000:])


def _fresh(output: Path, stamp: Path, digest: str) -> bool:
    return output.exists() and stamp.exists() and stamp.read_text() == digest


def _units(cxx: str, include: Path) -> list[tuple[Path, list[str], Path, str]]:
    """(object, compile command, stamp file, digest of its inputs) per source file."""
    obj_dir = BUILD_DIR / "obj"
    headers = b"".join(p.read_bytes() for p in sorted(SOURCE_DIR.glob("*.h")))
    units = []
    for source in sorted(SOURCE_DIR.glob("*.cc")):
        obj = obj_dir / (source.stem + ".o")
        command = _compile_command(cxx, include, source, obj)
        digest = _digest(source.read_bytes(), headers, " ".join(command).encode())
        units.append((obj, command, obj.with_suffix(".hash"), digest))
    return units


def _link_plan(cxx: str, lib: Path, objects: list[Path]) -> tuple[list[str], Path, str]:
    binary = emulator_binary()
    link = _link_command(cxx, lib, objects, binary.with_suffix(".tmp"))
    existing = [o.read_bytes() for o in objects if o.exists()]
    return link, binary.with_suffix(".hash"), _digest(*existing, " ".join(link).encode())


def is_up_to_date() -> bool:
    """True if the binary exists and was built from the current sources (for `rig doctor`)."""
    try:
        include, lib = ns3_paths()
        cxx = _compiler()
    except RigError:
        return False
    units = _units(cxx, include)
    if not all(_fresh(obj, stamp, digest) for obj, _, stamp, digest in units):
        return False
    _, link_stamp, link_digest = _link_plan(cxx, lib, [obj for obj, _, _, _ in units])
    return _fresh(emulator_binary(), link_stamp, link_digest)


def build(force: bool = False, progress=None) -> Path:
    """Compiles the emulator if it is missing or its sources changed; returns the binary path."""
    say = progress or (lambda message: None)
    include, lib = ns3_paths()
    cxx = _compiler()
    (BUILD_DIR / "obj").mkdir(parents=True, exist_ok=True)
    units = _units(cxx, include)
    stale = [u for u in units if force or not _fresh(u[0], u[2], u[3])]
    for obj, _, stamp, _ in stale:
        say(f"compiling {obj.stem}.cc")
        stamp.unlink(missing_ok=True)
    _run_jobs([command for _, command, _, _ in stale])
    for _, _, stamp, digest in stale:
        stamp.write_text(digest)
    binary = emulator_binary()
    link, link_stamp, link_digest = _link_plan(cxx, lib, [obj for obj, _, _, _ in units])
    if force or stale or not _fresh(binary, link_stamp, link_digest):
        say(f"linking {binary}")
        _run_jobs([link])
        binary.with_suffix(".tmp").replace(binary)  # atomic: a running emulator keeps its inode
        link_stamp.write_text(link_digest)
    return binary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        path = build(force="--force" in args, progress=lambda m: print(m, flush=True))
    except RigError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"radio emulator ready: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
