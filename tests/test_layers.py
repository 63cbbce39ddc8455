"""The import graph keeps its layers: the store below everything, features without cycles."""

from __future__ import annotations

import ast
import itertools
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "api",
    "domain",
    "warehouse",
    "pipelines",
    "workers",
    "connectors",
    "simulator",
    "murmur",
    "core",
)


def _imports() -> dict[str, set[str]]:
    """Every first-party module and the first-party modules it imports (function-local too)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            module = ".".join(parts)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                else:
                    continue
                graph[module].update(n for n in names if n.split(".")[0] in PACKAGES)
    return graph


def _feature(module: str) -> str | None:
    """The feature package a module belongs to (``api.posts``, ``domain.posts``), if any."""
    parts = module.split(".")
    if parts[0] in {"api", "domain"} and len(parts) > 2:
        return ".".join(parts[:2])
    return None


# Each layer and what it must not import: the store is below everything, the domain below
# the API, the workers and the Dagster code that all call it, the API beside the workers and
# pipelines (none imports another), and no part of Murmur reaches the simulator. The ground
# (core: the one settings class and the one error root) is read by every layer and reads none;
# the CLI's package (murmur) is read by none.
FORBIDDEN = {
    # The settings' openers (open_store, open_lakehouse, lake, analyst_login) still build the
    # store's objects, in their bodies: the one arrow up from the ground left (issue 54, 6).
    "core": {"api", "domain", "pipelines", "workers", "murmur", "simulator"},
    "warehouse": {"api", "domain", "pipelines", "workers", "murmur", "simulator"},
    "connectors": {"api", "domain", "pipelines", "workers", "murmur", "simulator", "warehouse"},
    "domain": {"api", "pipelines", "workers", "murmur", "simulator"},
    "api": {"pipelines", "workers", "murmur", "simulator"},
    "workers": {"api", "pipelines", "murmur", "simulator"},
    "pipelines": {"api", "workers", "murmur", "simulator"},
}


def test_each_layer_imports_nothing_above_it() -> None:
    wrong = {
        (module, imported)
        for module, names in _imports().items()
        for imported in names
        if imported.split(".")[0] in FORBIDDEN.get(module.split(".")[0], set())
    }
    assert wrong == set()


def _reach(edges: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    frontier = [start]
    while frontier:
        for target in edges[frontier.pop()]:
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    return seen


def _cycles(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The pairs of nodes that reach each other through ``edges``."""
    reach = {node: _reach(edges, node) for node in list(edges)}
    return {
        (a, b)
        for a, b in itertools.combinations(sorted(reach), 2)
        if b in reach[a] and a in reach[b]
    }


def test_the_api_features_import_each_other_without_cycles() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, names in _imports().items():
        source = _feature(module)
        for imported in names:
            target = _feature(imported)
            if source and target and source != target:
                edges[source].add(target)
    assert "domain.posts" in edges["domain.approvals"]  # the graph is read at all
    assert "domain.posts" in edges["api.posts"]  # the routers' edges to their services too
    assert _cycles(edges) == set()


def test_the_simulators_modules_import_each_other_without_cycles() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    graph = _imports()
    modules = {m for m in graph if m.startswith("simulator.")}
    for module in modules:
        edges[module] = {n for n in graph[module] if n in modules and n != module}
    assert "simulator.platforms.common" in edges["simulator.platforms.x"]  # the graph is read
    assert _cycles(edges) == set()
