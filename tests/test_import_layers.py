"""The architecture as a test: the import graph of memeval and reference_memory (built with
`ast`; module-level, function-level and TYPE_CHECKING imports all count) has no cycle, and
no module imports from a layer above its own.

Layers, lowest first (a module's layer is that of its longest matching prefix):
reference_memory < errors, version, plugins, progress, tracing core < scenario, models, tools
< rundir < systems, agent, traced tools < replay, runner < grading, health, importers < report,
tables, gate, baseline, compare, junit, summary, annotations < publish, finish, comparison
< cli and the public face. Within a layer any direction is allowed; a cycle never is. The
report renders results and never grades, so report -> grading is refused even though it
points downward.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reference_memory", "memeval")

LAYERS: list[tuple[str, ...]] = [
    ("reference_memory",),
    (
        "memeval.errors",
        "memeval.version",
        "memeval.plugins",
        "memeval.progress",
        "memeval.tracing",  # the package itself and its core: spans, export, endpoint...
        "memeval.tracing.attributes",
        "memeval.tracing.endpoint",
        "memeval.tracing.export",
        "memeval.tracing.spans",
        "memeval.tracing.phoenix",
    ),
    ("memeval.scenario", "memeval.models", "memeval.tools", "memeval.strategy_defaults"),
    ("memeval.rundir",),
    ("memeval.systems", "memeval.agent", "memeval.control_agent", "memeval.tracing.tools"),
    ("memeval.replay", "memeval.runner"),
    ("memeval.grading", "memeval.health", "memeval.importers"),
    (
        "memeval.report",
        "memeval.tables",
        "memeval.summary",
        "memeval.gate",
        "memeval.gate_view",
        "memeval.baseline",
        "memeval.provenance",
        "memeval.freshness",
        "memeval.noise",
        "memeval.compare",
        "memeval.junit",
        "memeval.tracing.annotations",
    ),
    ("memeval.publishing", "memeval.finish", "memeval.comparison"),
    ("memeval.cli", "memeval.__main__", "memeval"),
]
FORBIDDEN: list[tuple[str, str]] = [
    ("reference_memory", "memeval"),  # the pipeline stands alone
    ("memeval.report", "memeval.grading"),  # the report renders the results it is given
]

Graph = dict[str, set[str]]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path, packages: Iterable[str]) -> Graph:
    """module -> the modules of `packages` it imports, anywhere in its body."""
    files = {module_name(p, root): p for pkg in packages for p in (root / pkg).rglob("*.py")}
    graph: Graph = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _targets(node, package):
                found = _known(target, graph)
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def _targets(node: ast.AST, package: str) -> list[str]:
    """What an import statement names: `import a.b` -> a.b; `from a import b` -> a.b (the
    longest known prefix decides whether b is a module or a name in a)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        return [f"{base}.{alias.name}" for alias in node.names]
    return []


def _known(target: str, graph: Mapping[str, object]) -> str | None:
    """The longest prefix of `target` that is one of our modules (`from a import b` names
    module a.b when there is one, else a)."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in graph:
            return candidate
    return None


def layer_of(module: str, layers: list[tuple[str, ...]]) -> int:
    best, best_len = -1, -1
    for index, prefixes in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best < 0:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return best


def cycle(graph: Graph) -> list[str] | None:
    """One import cycle, as the list of modules around it, or None."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def violations(
    graph: Graph, layers: list[tuple[str, ...]], forbidden: list[tuple[str, str]]
) -> list[str]:
    found = []
    for module, imports in sorted(graph.items()):
        for imported in sorted(imports):
            if layer_of(imported, layers) > layer_of(module, layers):
                found.append(f"{module} imports {imported}, a higher layer")
            for low, high in forbidden:
                if _within(module, low) and _within(imported, high):
                    found.append(f"{module} imports {imported} ({low} must not import {high})")
    return found


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


# --- the checker on tiny graphs: it must catch what it is for ---------------------------------

TINY_LAYERS = [("pkg.low",), ("pkg.mid",), ("pkg.top",)]


def test_the_checker_sees_an_import_from_a_lower_layer_to_a_higher_one() -> None:
    graph = {"pkg.top": {"pkg.low"}, "pkg.mid": {"pkg.low"}, "pkg.low": {"pkg.mid"}}
    assert violations(graph, TINY_LAYERS, []) == ["pkg.low imports pkg.mid, a higher layer"]


def test_the_checker_sees_a_cycle_even_within_one_layer() -> None:
    graph = {"pkg.mid.a": {"pkg.mid.b"}, "pkg.mid.b": {"pkg.mid.c"}, "pkg.mid.c": {"pkg.mid.a"}}
    assert violations(graph, TINY_LAYERS, []) == []
    found = cycle(graph)
    assert found is not None and set(found) == {"pkg.mid.a", "pkg.mid.b", "pkg.mid.c"}
    assert cycle({"pkg.mid.a": {"pkg.mid.b"}, "pkg.mid.b": set()}) is None


def test_the_checker_sees_a_forbidden_edge_that_points_down() -> None:
    graph = {"pkg.top.page": {"pkg.mid.grade"}, "pkg.mid.grade": set()}
    found = violations(graph, TINY_LAYERS, [("pkg.top", "pkg.mid")])
    assert found == ["pkg.top.page imports pkg.mid.grade (pkg.top must not import pkg.mid)"]


def test_function_level_and_relative_imports_count(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("def f():\n    from ..top import b\n")
    (pkg / "top.py").write_text("from pkg.low import a\nif False:\n    import pkg.low.a\n")
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.low.a"] == {"pkg.top"} and graph["pkg.top"] == {"pkg.low.a"}
    assert cycle(graph) is not None
    layers = [("pkg.low",), ("pkg.top", "pkg")]
    assert violations(graph, layers, []) == ["pkg.low.a imports pkg.top, a higher layer"]


# --- the real graph ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(ROOT, PACKAGES)


def test_memeval_and_reference_memory_have_no_import_cycle(graph: Graph) -> None:
    assert cycle(graph) is None, f"import cycle: {' -> '.join(cycle(graph) or [])}"


def test_no_module_imports_from_a_higher_layer(graph: Graph) -> None:
    assert violations(graph, LAYERS, FORBIDDEN) == []


def test_every_module_is_in_a_layer(graph: Graph) -> None:
    for module in graph:
        layer_of(module, LAYERS)  # raises naming the module otherwise
