"""A fresh machine: every program the rig runs is installed, by a package scripts/install.sh lists;
install.sh is idempotent and ends by asking `rig doctor`, failing loudly if the demo lacks anything."""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from fixtures.cli import REPO
from rig.ops.host_tools import BY_NAME, PROGRAMS, which

INSTALL = REPO / "scripts" / "install.sh"


def apt_packages() -> list[str]:
    """APT_PACKAGES of install.sh, as bash itself reads the array (comments and all)."""
    script = (f"eval \"$(sed -n '/^APT_PACKAGES=(/,/^)/p' {INSTALL})\"; "
              "printf '%s\\n' \"${APT_PACKAGES[@]}\"")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert "iperf3" in out and "mptcpize" in out, out
    return out


def _usr_merge_aliases(path: str) -> list[str]:
    """/usr/bin/ip is /bin/ip on a /usr-merged system, and dpkg may know only one of them."""
    for usr, root in (("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/"), ("/usr/lib/", "/lib/")):
        if path.startswith(usr):
            return [path, root + path.removeprefix(usr)]
        if path.startswith(root):
            return [path, usr + path.removeprefix(root)]
    return [path]


def _candidates(path: str) -> list[str]:
    """The path, each link it goes through and its final target, each with its /usr-merge alias."""
    chain, seen = [path], {path}
    while os.path.islink(chain[-1]):
        nxt = os.path.normpath(os.path.join(os.path.dirname(chain[-1]), os.readlink(chain[-1])))
        if nxt in seen:
            break
        chain.append(nxt)
        seen.add(nxt)
    chain.append(os.path.realpath(path))
    out: list[str] = []
    for p in chain:
        out += [a for a in _usr_merge_aliases(p) if a not in out]
    return out


def dpkg_owners(path: str) -> list[str]:
    """The packages `dpkg -S` attributes the first attributable candidate of `path` to."""
    for candidate in _candidates(path):
        p = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        owners = []
        for line in p.stdout.splitlines():
            if line.startswith("diversion by") or ": " not in line:
                continue
            names, owned = line.rsplit(": ", 1)
            if owned == candidate:
                owners += [n.strip().split(":")[0] for n in names.split(",")]
        if owners:
            return owners
    return []


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: p.name)
def test_program_is_installed_from_a_package_install_sh_lists(prog):
    path = which(prog.name)
    assert path, f"{prog.name} ({prog.used_for}) is not installed: scripts/install.sh should install {prog.package}"
    owners = dpkg_owners(path)
    assert prog.package in owners, f"{prog.name}: dpkg -S attributes {path} to {owners or 'no package'}, not {prog.package}"
    assert prog.package in apt_packages(), f"{prog.name}: its package {prog.package} is not in install.sh's APT_PACKAGES"


# --- the code runs no program the list does not know ---------------------------------------------

# Programs that are not this machine's packages' business.
ELSEWHERE = {
    "rig": "this package's own command (pyproject.toml)",
    "sudo": "runs on the lab's boards only (the node role installs it)",
}
# Shell words that are not programs.
SHELL_WORDS = {
    "if", "then", "else", "elif", "fi", "for", "while", "do", "done", "case", "esac", "in", "function", "return",
    "set", "cd", "echo", "export", "local", "exit", "trap", "wait", "read", "shift", "source", ".", "eval",
    "printf", "true", "false", "test", "[", "[[", "]]", "{", "}", "(", ")", "exec", "kill", "unset", "command",
}
ARGV_IN_PYTHON = [
    # subprocess.run(["prog", ...]) / Popen / _run / nsx(ns, "prog", ...)
    re.compile(r"\b(?:run|Popen|check_output|check_call|_run|_first_line)\(\s*\[\s*\"([^\"]+)\""),
    re.compile(r"\bnsx\(\s*[^,]+,\s*\"([^\"]+)\""),
    # ip netns exec NS "prog" ...
    re.compile(r"\"exec\",\s*[^,\]]+,\s*\"([^\"]+)\""),
    # argv=["prog", ...], return ["prog", ...], x = ["prog", ...] followed by more argv words
    re.compile(r"(?:argv=|return |= )\[\s*\"([a-z][\w.+-]*)\",\s*\"-"),
    re.compile(r"argv=\[\s*\"([^\"]+)\""),
    # shell run by a node agent or a namespace: a.sh("prog ..."), netns.sh(ns, "prog ...")
    re.compile(r"\.sh\(\s*(?:[^,()]+,\s*)?f?\"([a-z][\w.+-]*) "),
    # lines of generated node scripts: f"ip route ...", "sysctl -qw ..."
    re.compile(r"^\s*(?:lines\s*[+=]+\s*\[?\s*)?f?\"(ip|sysctl|tc|ethtool|ss) ", re.M),
    # iperf3 / mptcpize / ping words in argv lists
    re.compile(r"\[\s*\"(mptcpize|iperf3)\""),
]
SHELL_FILES = ["demo.sh", "test.sh", "scripts/*.sh", "nodes/bpf/repro/*.sh"]
PYTHON_FILES = ["rig/**/*.py", "nodes/agent/**/*.py", "nodes/bpf/rig-cc-register", "tests/**/*.py"]


def programs_in_python() -> dict[str, str]:
    found: dict[str, str] = {}
    for pattern in PYTHON_FILES:
        for path in REPO.glob(pattern):
            if ".venv" in path.parts or path.name == "test_install.py":
                continue
            text = path.read_text()
            for regex in ARGV_IN_PYTHON:
                for m in regex.finditer(text):
                    if m.group(1) not in SHELL_WORDS:
                        found.setdefault(m.group(1), str(path.relative_to(REPO)))
    return found


def programs_in_shell() -> dict[str, str]:
    """The first word of each command of the repository's shell scripts (and after | && || ; $( )."""
    found: dict[str, str] = {}
    for pattern in SHELL_FILES:
        for path in REPO.glob(pattern):
            text = path.read_text()
            functions = set(re.findall(r"^\s*([\w-]+)\(\)\s*\{", text, re.M))
            skip_until = None
            for line in text.splitlines():
                if skip_until is not None:  # inside a heredoc or an array literal
                    if line.strip() == skip_until:
                        skip_until = None
                    continue
                heredoc = re.search(r"<<-?'?(\w+)'?", line)
                if heredoc:
                    skip_until = heredoc.group(1)
                line = line.split(" #")[0].strip()
                if re.match(r"^\w+=\($", line):
                    skip_until = ")"
                    continue
                if not line or line.startswith("#"):
                    continue
                for part in re.split(r"\|\||&&|\||;|\$\(|\bexec\b|\bif !?|\bthen\b|\bdo\b|\{", line):
                    words = [w for w in part.strip().split() if not re.match(r"^[A-Za-z_]\w*=", w) and w != "!"]
                    if words and re.match(r"^[a-z][\w.+-]*$", words[0]) and words[0] not in SHELL_WORDS | functions:
                        found.setdefault(words[0], str(path.relative_to(REPO)))
                    if words[:3] == ["ip", "netns", "exec"] and len(words) > 4:
                        found.setdefault(words[4], str(path.relative_to(REPO)))
    return found


def test_code_runs_no_program_missing_from_the_list():
    found = {**programs_in_shell(), **programs_in_python()}
    # the scan itself works: it sees the programs every run uses
    assert {"ip", "iperf3", "mptcpize", "sysctl", "ss", "bpftool", "ansible-inventory", "git"} <= set(found), found
    unknown = {name: where for name, where in found.items() if name not in BY_NAME and name not in ELSEWHERE}
    assert not unknown, f"programs run by the code but missing from rig/ops/host_tools.py: {unknown}"


# --- install.sh ----------------------------------------------------------------------------------

def test_install_sh_second_run_only_checks_and_ends_with_rig_doctor():
    p = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, timeout=900, cwd=REPO)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "apt-get install" not in p.stdout and "pip install" not in p.stdout, p.stdout
    assert "==> rig doctor" in p.stdout and "ready for the emulated rig and the demo" in p.stdout, p.stdout
    assert p.stdout.rstrip().endswith("==> installed"), p.stdout


def test_install_sh_fails_loudly_when_rig_doctor_finds_something_missing():
    """A real missing requirement: in a network namespace with MPTCP off, doctor reports it."""
    ns = f"tinst-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.mptcp.enabled=0"], check=True)
        p = subprocess.run(["ip", "netns", "exec", ns, "bash", str(INSTALL)], capture_output=True, text=True,
                           timeout=900, cwd=REPO)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    assert p.returncode != 0
    assert "MISSING  kernel MPTCP" in p.stdout, p.stdout
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("error: scripts/install.sh: the host is not ready"), p.stderr
    assert "==> installed" not in p.stdout
