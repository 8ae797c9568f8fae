"""Layers that point one way, read from every import in tmsite/ (type-only, in-function too).

A module's unit is the longest prefix in the rank table (each ``tmsite.mounts.<kind>`` its own
unit, rank 5). Django finds an app's ``admin``, ``management`` commands and ``migrations`` by
their names: those entry points stand at the top whatever their app's rank, and nothing of
tmsite imports them. A back-edge imports a higher rank; a mount reaches another only through its
pure modules (``uris``, the builders of its addresses; ``catalogue``, data), never its
``mount``; the core imports only the core; no units import each other in a cycle (``pytest
tests/test_layers.py -k cycles`` lists the package cycles).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {
    0: "core mime icon",
    1: "gitstore mcpclient check_registry admin_base version_rows bus",
    2: "blocks",
    3: "entities servers kinds trails proposals search",
    4: "mounts mounts.base",  # ``mounts``: the package's own __init__
    6: "mounts.registry mounts.namespace",
    7: "operations oplog callers subscriptions",
    8: "mcp rest",
    9: "api urls admin_site site management demo checks apps settings wsgi asgi streams",
    10: "serve",  # the ASGI application over ``wsgi``'s
}
RANKS = {f"tmsite.{name}": rank for rank, names in LAYERS.items() for name in names.split()}
#: The modules Django imports by name in each app, above every layer.
ENTRY_POINTS = ("admin", "management", "migrations")
TOP = max(LAYERS)


def entry_point(module: str) -> str | None:
    """The app entry point ``module`` is or lies in (``tmsite.<app>.admin``), else None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[0] == "tmsite" and parts[2] in ENTRY_POINTS:
        return ".".join(parts[:3])
    return None


def unit(module: str) -> tuple[str, int]:
    """The unit a module belongs to, and its rank."""
    if (entry := entry_point(module)) is not None:
        return entry, TOP
    kind = ".".join(module.split(".")[:3])
    if kind.startswith("tmsite.mounts.") and kind not in RANKS:
        return kind, 5
    if module == "tmsite":  # the package itself: its version
        return module, 0
    units = [u for u in RANKS if module == u or module.startswith(u + ".")]
    assert units, f"{module} has no rank: give its unit one in LAYERS"
    return max(units, key=len), RANKS[max(units, key=len)]


def edges() -> list[tuple[str, str]]:
    """(importer, imported module) for every import of tmsite in tmsite/, relative ones too."""
    found = set()
    for path in (ROOT / "tmsite").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        me = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {(me, a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                up = parts[: len(parts) - node.level] if node.level else ()
                base = ".".join([*up, *([node.module] if node.module else [])])
                for a in node.names:
                    sub = ROOT.joinpath(*base.split("."), a.name)
                    is_module = sub.with_suffix(".py").is_file() or sub.is_dir()
                    found.add((me, f"{base}.{a.name}" if is_module else base))
    return sorted((a, b) for a, b in found if b.split(".")[0] == "tmsite")


def test_no_back_edges() -> None:
    back = [
        f"{a} -> {b} (rank {unit(a)[1]} -> {unit(b)[1]})"
        for a, b in edges()
        if unit(b)[1] > unit(a)[1]
    ]
    assert not back, "back-edges:\n" + "\n".join(back)


#: The modules of a mount that another mount may import: pure data and builders, no mount.
SHARED = ("uris", "catalogue")


def test_no_module_imports_an_app_entry_point() -> None:
    """An app's admin, commands and migrations are Django's to import, so they may sit on top."""
    importing = [
        f"{a} -> {b}"
        for a, b in edges()
        if entry_point(b) is not None and entry_point(a) != entry_point(b)
    ]
    assert not importing, "entry points imported:\n" + "\n".join(importing)


def test_mounts_share_only_pure_modules() -> None:
    crossing = [
        f"{a} -> {b}"
        for a, b in edges()
        if unit(a)[1] == unit(b)[1] == 5 and unit(a)[0] != unit(b)[0]
        if b.removeprefix(unit(b)[0] + ".") not in SHARED
    ]
    assert not crossing, "a mount importing another's modules:\n" + "\n".join(crossing)


def test_core_imports_nothing_of_tmsite() -> None:
    outside = [
        f"{a} -> {b}"
        for a, b in edges()
        if unit(a)[0] == "tmsite.core" and unit(b)[0] != "tmsite.core"
    ]
    assert not outside, "the core imports:\n" + "\n".join(outside)


def test_no_package_cycles() -> None:
    graph: dict[str, set[str]] = {}
    for a, b in edges():
        if unit(a)[0] != unit(b)[0]:
            graph.setdefault(unit(a)[0], set()).add(unit(b)[0])
    reach = {u: set(graph[u]) for u in graph}  # grown to every unit reachable from u
    for u in graph:
        todo = list(reach[u])
        while todo:
            new = graph.get(todo.pop(), set()) - reach[u]
            reach[u] |= new
            todo += new
    cycles = {
        " <-> ".join(sorted(v for v in reach[u] if u in reach.get(v, ())))
        for u in reach
        if u in reach[u]
    }
    assert not cycles, "package cycles:\n" + "\n".join(sorted(cycles))


def test_only_the_demo_imports_the_mcp_sdk() -> None:
    """The official SDK is the demo's dependency (the ``demo`` extra), not the box's."""
    importers = set()
    for path in (ROOT / "tmsite").rglob("*.py"):
        if "demo" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(name == "mcp" or name.startswith("mcp.") for name in names):
                importers.add(path.relative_to(ROOT).as_posix())
    assert not importers, f"the mcp SDK imported outside tmsite/demo: {sorted(importers)}"


def test_the_protocol_layer_imports_no_mount() -> None:
    """``tmsite.mcp`` reaches mounts through the namespace and its hooks, never a mount kind."""
    named = [f"{a} -> {b}" for a, b in edges() if unit(a)[0] == "tmsite.mcp" and unit(b)[1] == 5]
    assert not named, "the protocol layer imports a mount:\n" + "\n".join(named)
