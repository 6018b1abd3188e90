"""Arrows point one way: domains -> public face -> composition root -> features -> graph, storage, engine, model.

Every import of the platform's own modules is read from the source (also imports inside functions and under
``TYPE_CHECKING``), so a wrong-way import or a cycle fails here, not in review.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "mesh_assets"
LAYERS: list[set[str]] = [
    {"compat", "settings", "collector"},
    {"model"},
    {"engine"},
    {"storage"},
    {"graph"},
    {"checks"},
    {"alerts"},
    {"datadiff"},
    {"lineage"},
    {"run"},
    {"assets"},
    {"automation"},
    {"backfill"},
    {"maintenance"},
    {"dbt"},
    {"testing"},
    {"change"},
    {"definitions"},
    {"components"},
    {"__init__", "cli"},
]
"""Bottom to top: a part may import its own modules and those of parts below it, never above."""
LAYER = {part: i for i, parts in enumerate(LAYERS) for part in parts}


def modules(package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(path: Path, package: str) -> Iterator[str]:
    """Every module of ``package`` that ``path`` imports (``from x import y`` counts ``x.y`` when it is one)."""
    known = modules(package)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == package:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found = [n for n in names if n in known]
            yield from found or [node.module]
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == package)


def part(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "__init__"


def test_every_part_of_the_platform_has_a_layer():
    assert {part(m) for m in modules(PACKAGE)} <= set(LAYER)


def test_no_import_points_up_the_layers():
    wrong = [
        f"{module} imports {target}"
        for module, path in modules(PACKAGE).items()
        for target in imports(path, PACKAGE)
        if part(target) != part(module) and LAYER[part(target)] >= LAYER[part(module)]
    ]
    assert wrong == []


def test_no_import_cycle_between_modules():
    graph = {m: {t for t in imports(p, PACKAGE) if t != m} for m, p in modules(PACKAGE).items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's strongly connected components, iteratively
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert cycles == []


@pytest.mark.parametrize("pattern", ["domains/**/*.py", "tests/fixtures/*/domains/**/*.py"])
def test_domains_import_only_the_public_face(pattern):
    reaching = [
        f"{path.relative_to(ROOT)} imports {target}"
        for path in sorted(ROOT.glob(pattern))
        for target in imports(path, PACKAGE)
        if target != PACKAGE
    ]
    assert reaching == []


def test_the_platform_never_imports_the_example():
    reaching = [
        f"{module} imports {target}"
        for module, path in modules(PACKAGE).items()
        if part(module) != "cli"
        for target in imports(path, "mesh_examples")
    ]
    assert reaching == []


def calls(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, name)`` of every call in ``path``: ``f(...)`` is ``f``, ``a.b.c(...)`` is ``a.b.c``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            parts, func = [], node.func
            while isinstance(func, ast.Attribute):
                parts.append(func.attr)
                func = func.value
            if isinstance(func, ast.Name):
                yield node.lineno, ".".join([func.id, *reversed(parts)])


SETTINGS_READERS = {"mesh_assets.settings", "mesh_assets.definitions", "mesh_assets.storage.resource"}
"""Where the process's settings are read: the composition root and the resource pass them to the rest."""


def test_settings_are_read_by_the_composition_root_the_resource_and_the_command_line_only():
    readers = [
        f"{module}:{line}"
        for module, path in modules(PACKAGE).items()
        if module not in SETTINGS_READERS and part(module) != "cli"
        for line, name in calls(path)
        if name.split(".")[-1] == "get_settings"
    ]
    assert readers == []


def test_no_module_changes_the_process_environment_for_good():
    writes = {"os.environ.setdefault", "os.environ.update", "os.environ.pop", "os.putenv"}
    found = [
        f"{module}:{line} {name}"
        for module, path in modules(PACKAGE).items()
        if module != "mesh_assets.settings"  # scoped_environ: set for a block, put back after it
        for line, name in calls(path)
        if name in writes
    ]
    assigned = [
        f"{module}:{node.lineno}"
        for module, path in modules(PACKAGE).items()
        if module != "mesh_assets.settings"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ" for t in node.targets)
    ]
    assert found + assigned == []


def test_the_command_line_imports_the_example_only_when_its_commands_run():
    eager = [
        f"{module}:{node.lineno}"
        for module, path in modules(PACKAGE).items()
        if part(module) == "cli"
        for node in ast.parse(path.read_text()).body  # module level; imports inside functions run with the command
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(name.split(".")[0] == "mesh_examples" for name in imported_names(node))
    ]
    assert eager == []


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
