"""The package's shape: each package by job, imports only downwards (docs/design.md, "Layout").

Read from the source with ast, so it holds whatever a run happens to import: a module's imports
inside functions count too, those only for type checkers do not."""

from __future__ import annotations

import ast
from pathlib import Path

from fixtures.cli import REPO

# Each package with the packages it may import (besides itself and rig.core); the CLI and ops are
# at the top and may import anything.
LAYERS = {
    "rig.core": set(),
    "rig.model": {"rig.congestion"},  # the campaign model checks CC names against what the rig knows
    "rig.agents": set(),
    "rig.congestion": {"rig.agents"},
    "rig.store": {"rig.model"},
    "rig.run": {"rig.model", "rig.agents", "rig.congestion", "rig.store"},
    "rig.rigs": {"rig.model", "rig.agents", "rig.congestion", "rig.store", "rig.run"},
    "rig.campaign": {"rig.model", "rig.agents", "rig.congestion", "rig.store", "rig.run", "rig.rigs", "rig.influx"},
    "rig.findings": {"rig.model", "rig.store"},
    "rig.export": {"rig.store", "rig.findings"},
    "rig.influx": {"rig.store"},
    "rig.report": {"rig.store", "rig.findings"},
}


def modules() -> dict[str, Path]:
    out = {}
    for f in (REPO / "rig").rglob("*.py"):
        name = ".".join(f.relative_to(REPO).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = f
    return out


def imports(f: Path, known: dict) -> set[str]:
    tree = ast.parse(f.read_text())
    typing_only = {id(x) for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
                   for b in n.body for x in ast.walk(b)}
    out = set()
    for n in ast.walk(tree):
        if id(n) in typing_only:
            continue
        if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "rig":
            out |= {f"{n.module}.{a.name}" if f"{n.module}.{a.name}" in known else n.module for a in n.names}
        elif isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.split(".")[0] == "rig"}
    return out


def package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_no_module_imports_a_package_above_its_own():
    known = modules()
    wrong = []
    for name, f in known.items():
        allowed = LAYERS.get(package(name))
        if allowed is None:
            continue
        for dep in imports(f, known):
            if dep != "rig" and package(dep) not in allowed | {package(name), "rig.core"}:
                wrong.append(f"{name} -> {dep}")
    assert wrong == []


def test_a_run_never_imports_a_backend():
    known = modules()
    assert [f"{n} -> {d}" for n, f in known.items() if package(n) == "rig.run"
            for d in imports(f, known) if package(d) == "rig.rigs"] == []


def test_the_import_graph_has_no_cycle():
    known = modules()
    graph = {n: {d for d in imports(f, known) if d in known and d != n} for n, f in known.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for d in sorted(graph[n]):
            if state.get(d) == 1:
                cycles.append(path[path.index(d):] + [d] if d in path else [n, d])
            elif d not in state:
                visit(d, [*path, d])
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    assert cycles == []
