"""What renders a page of this project's site, and which records its code reads.

* **The view** of a page is found with Django's own URL resolver (:func:`django.urls.resolve`
  on the page's path): an exact answer. Its module's file, relative to the code's checkout, is
  what ``tm:source`` names. A view renders *several* pages when its route captures part of the
  path or when more than one URL pattern names it.
* **The records** a view reads are found by reading code with :mod:`ast` — never by running
  it. In the view function and the functions of its own module it calls, a read is a string
  pair ``"data", "<name>.json"`` (consecutive arguments of a call, or consecutive operands of a
  ``/`` path expression) or a string literal ending in ``data/<name>.json``; docstrings and
  comments are not reads. Those reads are ``inferred``. Functions of the project's other modules
  that the view's code calls (``pages.f()``, ``from .x import f``) are read the same way, and
  what they read is ``low``. **The frame** — the helpers every page view of a module calls to
  build the page around its content (menus, language switch, the words of each language) — is
  not walked, and language tables (:data:`LANGUAGE_RECORDS`) are never page data.
* **Readers.** One reader per route, in the default language: a route that renders one page is
  read by that page; a route that renders many is read by the collection of its pages (their
  longest common path, ``/docs/``); if that would be the site root, by each page. Only a
  reader carries ``tm:data``, and every record names its readers with ``tm:read-by`` at the
  same confidence — both ends come from one table, so they cannot disagree.

Spec: HTTP, LK2, LK5.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver, get_urlconf
from django.urls.exceptions import Resolver404

import tmsite
from tmsite.core.links import CONFIDENCES, Confidence
from tmsite.mounts.http import pages

#: The checkout the project's code lives in: module paths are relative to it.
CODE_ROOT = Path(tmsite.__file__).resolve().parent.parent
#: Records that are the words of a language, read by every page: never page data.
LANGUAGE_RECORDS = frozenset({"ja.json", "ja-docs.json", "words.json"})
_RECORD_PATH = re.compile(r"(?:^|/)data/([A-Za-z0-9_][A-Za-z0-9_.-]*\.json)\Z")
_RECORD_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.json\Z")
#: How many modules deep the reading follows imports.
MAX_DEPTH = 3
_RENDER_CALLS = frozenset({"render", "render_to_response", "TemplateResponse", "render_to_string"})


def best(a: Confidence | None, b: Confidence) -> Confidence:
    """The stronger of two confidences."""
    if a is None:
        return b
    return a if CONFIDENCES.index(a) <= CONFIDENCES.index(b) else b


# ---- the view of a page ----------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """The view that renders a path.

    Attributes:
        module: Its module, dotted.
        function: Its function's name in that module.
        source: The module's file relative to the code's checkout (None outside it).
        route: The URL pattern that matched.
        dynamic: The route captures part of the path (it renders many pages).
        several: The view renders more than one page (dynamic, or named by several routes).
    """

    module: str
    function: str
    source: str | None
    route: str
    dynamic: bool
    several: bool


def _patterns(
    entries: Iterable[URLPattern | URLResolver],
) -> Iterator[URLPattern]:
    for entry in entries:
        if isinstance(entry, URLResolver):
            yield from _patterns(entry.url_patterns)
        else:
            yield entry


_callback_cache: dict[int, tuple[dict[Any, int], dict[str, list[str]]]] = {}
_cache_lock = threading.Lock()


def _callbacks() -> tuple[dict[Any, int], dict[str, list[str]]]:
    """How many URL patterns name each view; each module's view functions."""
    resolver = get_resolver(get_urlconf())
    key = id(resolver)
    with _cache_lock:
        cached = _callback_cache.get(key)
    if cached is not None:
        return cached
    counts: dict[Any, int] = {}
    by_module: dict[str, list[str]] = {}
    for pattern in _patterns(resolver.url_patterns):
        func = inspect.unwrap(pattern.callback)
        counts[func] = counts.get(func, 0) + 1
        module = getattr(func, "__module__", "")
        name = getattr(func, "__name__", "")
        by_module.setdefault(module, [])
        if name not in by_module[module]:
            by_module[module].append(name)
    with _cache_lock:
        _callback_cache.clear()
        _callback_cache[key] = (counts, by_module)
    return counts, by_module


def module_source(module: str) -> str | None:
    """The file of a project module relative to the code's checkout, or None."""
    loaded = sys.modules.get(module)
    file = getattr(loaded, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    if not path.is_relative_to(CODE_ROOT) or ".venv" in path.parts or "site-packages" in path.parts:
        return None
    return path.relative_to(CODE_ROOT).as_posix()


def view_for(url_path: str) -> View | None:
    """The view Django's resolver finds for ``url_path``, or None when no route matches."""
    try:
        match = get_resolver(get_urlconf()).resolve(url_path)
    except Resolver404:
        return None
    func = inspect.unwrap(match.func)
    module = getattr(func, "__module__", "")
    name = getattr(func, "__name__", "")
    counts, _ = _callbacks()
    dynamic = bool(getattr(match, "captured_kwargs", None)) or bool(match.args)
    return View(
        module=module,
        function=name,
        source=module_source(module),
        route=str(match.route),
        dynamic=dynamic,
        several=dynamic or counts.get(func, 1) > 1,
    )


# ---- reading code ----------------------------------------------------------------------------


@dataclass
class _Module:
    name: str
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    #: local name → (module, attribute or None for the module itself)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    #: module-level names whose value reads records
    constants: dict[str, set[str]] = field(default_factory=dict)


_modules: dict[tuple[str, float], _Module | None] = {}


def _project_module(name: str) -> Path | None:
    root_package = name.split(".", 1)[0]
    if root_package != tmsite.__name__:
        return None
    loaded = sys.modules.get(name)
    file = getattr(loaded, "__file__", None)
    if file is None:
        candidate = CODE_ROOT.joinpath(*name.split("."))
        for path in (candidate.with_suffix(".py"), candidate / "__init__.py"):
            if path.is_file():
                return path
        return None
    path = Path(file)
    return path if path.suffix == ".py" else None


def _resolve_relative(module: str, level: int, target: str | None, is_package: bool) -> str:
    if level == 0:
        return target or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, target] if target else base)


def _load(name: str) -> _Module | None:
    path = _project_module(name)
    if path is None:
        return None
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    key = (str(path), mtime)
    with _cache_lock:
        if key in _modules:
            return _modules[key]
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        info: _Module | None = None
    else:
        info = _index(name, tree, path.name == "__init__.py")
    with _cache_lock:
        _modules[key] = info
    return info


def _index(name: str, tree: ast.Module, is_package: bool) -> _Module:
    """A module's top-level functions, what its imports name, and its record constants."""
    info = _Module(name)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            info.functions[node.name] = node
        elif isinstance(node, ast.Import):
            _index_import(info, node)
        elif isinstance(node, ast.ImportFrom):
            _index_import_from(info, node, is_package)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            _index_assign(info, node)
    return info


def _index_import(info: _Module, node: ast.Import) -> None:
    """``import a.b`` binds ``a``; ``import a.b as c`` binds ``c`` to ``a.b``."""
    for alias in node.names:
        bound = alias.name if alias.asname else alias.name.split(".")[0]
        info.imports[alias.asname or bound] = (bound, None)


def _index_import_from(info: _Module, node: ast.ImportFrom, is_package: bool) -> None:
    """``from m import x`` binds ``x`` to the module ``m.x`` when it is one, else to ``m``'s x."""
    base = _resolve_relative(info.name, node.level, node.module, is_package)
    for alias in node.names:
        local = alias.asname or alias.name
        submodule = f"{base}.{alias.name}" if base else alias.name
        if _project_module(submodule) is not None:
            info.imports[local] = (submodule, None)
        else:
            info.imports[local] = (base, alias.name)


def _index_assign(info: _Module, node: ast.Assign | ast.AnnAssign) -> None:
    """A module constant whose value names records (``PATH = ... "data/x.json"``)."""
    if node.value is None:
        return
    found = _reads_in(node.value)
    if not found:
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if isinstance(target, ast.Name):
            info.constants[target.id] = found


def _flatten_div(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [*_flatten_div(node.left), *_flatten_div(node.right)]
    return [node]


def _string(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _pairs(operands: list[ast.expr]) -> set[str]:
    found: set[str] = set()
    for first, second in itertools.pairwise(operands):
        a, b = _string(first), _string(second)
        if a is not None and b is not None and a.strip("/") == "data" and _RECORD_NAME.match(b):
            found.add(b)
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """Ids of the constant nodes that are docstrings (or other bare string statements)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            out.add(id(node.value))
    return out


def _reads_in(tree: ast.AST) -> set[str]:
    """Records named by reads in ``tree`` (not descending into nested functions' callees)."""
    skip = _docstrings(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            match = _RECORD_PATH.search(node.value)
            if match:
                found.add(match.group(1))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found |= _pairs(_flatten_div(node))
        elif isinstance(node, ast.Call):
            found |= _pairs(list(node.args))
    return found


def _callees(
    module: _Module, func: ast.FunctionDef | ast.AsyncFunctionDef
) -> Iterator[tuple[str, str]]:
    """(module, name) for every project function or constant ``func`` refers to."""
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in module.functions or node.id in module.constants:
                yield module.name, node.id
            elif node.id in module.imports:
                target, attr = module.imports[node.id]
                if attr is not None:
                    yield target, attr
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in module.imports
        ):
            target, attr = module.imports[node.value.id]
            if attr is None:
                yield target, node.attr


def _renders(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            callee = node.func
            name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", "")
            if name in _RENDER_CALLS:
                return True
    return False


def frame_of(module: str) -> frozenset[str]:
    """The frame of a module: the helpers every one of its page views calls."""
    info = _load(module)
    if info is None:
        return frozenset()
    _, by_module = _callbacks()
    common: set[str] | None = None
    for view_name in by_module.get(module, []):
        func = info.functions.get(view_name)
        if func is None or not _renders(func):
            continue
        called = {name for mod, name in _callees(info, func) if mod == module}
        common = called if common is None else common & called
    return frozenset(common or ())


def records_read(module: str, function: str) -> dict[str, Confidence]:
    """The records a view reads: ``inferred`` in its own module, ``low`` deeper."""
    frame = frame_of(module)
    found: dict[str, Confidence] = {}
    seen: set[tuple[str, str]] = set()
    queue: list[tuple[str, str, int]] = [(module, function, 0)]
    while queue:
        mod_name, name, depth = queue.pop(0)
        if (mod_name, name) in seen or depth > MAX_DEPTH:
            continue
        seen.add((mod_name, name))
        info = _load(mod_name)
        if info is None:
            continue
        confidence: Confidence = "inferred" if depth == 0 else "low"
        if name in info.constants:
            for record in info.constants[name]:
                found[record] = best(found.get(record), confidence)
            continue
        func = info.functions.get(name)
        if func is None:
            continue
        for record in _reads_in(func):
            found[record] = best(found.get(record), confidence)
        for target, callee in _callees(info, func):
            if target == module and callee in frame:
                continue
            next_depth = depth if target == mod_name else depth + 1
            queue.append((target, callee, next_depth))
    return {r: c for r, c in found.items() if r not in LANGUAGE_RECORDS}


# ---- the route table -------------------------------------------------------------------------


@dataclass
class RouteTable:
    """Readers and renderers of every page the site serves, from one snapshot of its pages.

    Attributes:
        readers: reader path (``/pieces`` or ``/docs/``) → {record: confidence}.
        read_by: record → {reader path: confidence}.
        renders: module file → every page path its views render.
    """

    readers: dict[str, dict[str, Confidence]] = field(default_factory=dict)
    read_by: dict[str, dict[str, Confidence]] = field(default_factory=dict)
    renders: dict[str, list[str]] = field(default_factory=dict)


def language_of(url_path: str) -> str:
    """The language of a page by its path's first segment (``/ja/…``), else the default."""
    for lang in pages.LANGUAGES[1:]:
        if url_path == f"/{lang}" or url_path.startswith(f"/{lang}/"):
            return lang
    return pages.LANGUAGES[0]


def _common_collection(paths: list[str]) -> str | None:
    split = [p.strip("/").split("/") if p.strip("/") else [] for p in paths]
    prefix: list[str] = []
    for parts in zip(*split, strict=False):
        if all(part == parts[0] for part in parts):
            prefix.append(parts[0])
        else:
            break
    return "/" + "/".join(prefix) + "/" if prefix else None


_table_cache: dict[tuple[object, ...], RouteTable] = {}


def route_table(page_paths: list[str]) -> RouteTable:
    """The table for the pages ``page_paths`` (cached per snapshot of the pages and urlconf)."""
    key = (get_urlconf() or settings.ROOT_URLCONF, tuple(page_paths))
    with _cache_lock:
        cached = _table_cache.get(key)
    if cached is not None:
        return cached
    table = RouteTable()
    for view, paths in _routes(page_paths, table.renders).values():
        records = records_read(view.module, view.function)
        if not records:
            continue
        for reader in _readers(view, paths):
            held = table.readers.setdefault(reader, {})
            for record, confidence in records.items():
                held[record] = best(held.get(record), confidence)
    for reader, records in table.readers.items():
        for record, confidence in records.items():
            table.read_by.setdefault(record, {})[reader] = confidence
    with _cache_lock:
        if len(_table_cache) > 8:
            _table_cache.clear()
        _table_cache[key] = table
    return table


def _routes(
    page_paths: list[str], renders: dict[str, list[str]]
) -> dict[tuple[str, str, str], tuple[View, list[str]]]:
    """The pages grouped by the route and view that render them; ``renders`` filled on the way."""
    groups: dict[tuple[str, str, str], tuple[View, list[str]]] = {}
    for path in page_paths:
        view = view_for(path)
        if view is None:
            continue
        if view.source is not None:
            renders.setdefault(view.source, []).append(path)
        group_key = (view.route, view.module, view.function)
        groups.setdefault(group_key, (view, []))[1].append(path)
    return groups


def _readers(view: View, paths: list[str]) -> list[str]:
    """Who reads for a route: its pages in the default language, or their common collection."""
    english = [p for p in paths if language_of(p) == pages.LANGUAGES[0]]
    if view.dynamic and english:
        common = _common_collection(english)
        return [common] if common is not None else english
    return english


def page_readers(url_path: str) -> dict[str, Confidence]:
    """The records a single page reads as its route's reader, without the whole table.

    A page is a reader only when its route renders it alone (not dynamic) and it is in the
    default language; that needs only the resolver and the code, never the list of pages.
    """
    if language_of(url_path) != pages.LANGUAGES[0]:
        return {}
    view = view_for(url_path)
    if view is None or view.dynamic:
        return {}
    return records_read(view.module, view.function)


# ---- writers ---------------------------------------------------------------------------------

_SCRIPT_SUFFIXES = (".py", ".mjs", ".ts", ".sh")
_NAMED_SCRIPT = re.compile(r"scripts/([A-Za-z0-9_][A-Za-z0-9_.-]*\.(?:py|mjs|ts|sh))\b")
_writer_cache: dict[tuple[object, ...], dict[str, dict[str, Confidence]]] = {}


def _scripts(checkout: Path) -> list[Path]:
    directory = checkout / "scripts"
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for entry in entries:
        name = entry.name
        if not name.endswith(_SCRIPT_SUFFIXES) or name == "deploy.sh":
            continue
        if name.startswith(("check-", ".")):
            continue
        if entry.is_file(follow_symlinks=False):
            out.append(Path(entry.path))
    return out


def _records(checkout: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(checkout / "data"), key=lambda e: e.name)
    except OSError:
        return []
    return [
        Path(e.path)
        for e in entries
        if e.name.endswith(".json")
        and not e.name.startswith(".")
        and e.is_file(follow_symlinks=False)
    ]


def _stamp(paths: Iterable[Path]) -> tuple[tuple[str, float], ...]:
    out = []
    for path in paths:
        try:
            out.append((path.name, os.stat(path).st_mtime))
        except OSError:
            continue
    return tuple(out)


def writers(checkout: Path) -> dict[str, dict[str, Confidence]]:
    """Record name → {script name: confidence}, for the records under ``data/``.

    ``exact`` when the record's own ``note`` or ``_`` names ``scripts/<file>``; otherwise
    ``inferred`` for each script whose text names the record's file.
    """
    scripts = _scripts(checkout)
    records = _records(checkout)
    key = (str(checkout), _stamp(scripts), _stamp(records))
    with _cache_lock:
        cached = _writer_cache.get(key)
    if cached is not None:
        return cached
    texts: dict[str, str] = {}
    for script in scripts:
        try:
            texts[script.name] = script.read_bytes()[: 1 << 20].decode("utf-8", "replace")
        except OSError:
            continue
    found: dict[str, dict[str, Confidence]] = {}
    for record in records:
        stated = [name for name in _stated_writers(record) if name in texts]
        if stated:
            found[record.name] = {name: "exact" for name in stated}
            continue
        word = re.compile(rf"(?<![A-Za-z0-9_.-]){re.escape(record.name)}(?![A-Za-z0-9_-])")
        named = {name: "inferred" for name, text in texts.items() if word.search(text)}
        if named:
            found[record.name] = dict(sorted(named.items()))  # type: ignore[arg-type]
    with _cache_lock:
        _writer_cache.clear()
        _writer_cache[key] = found
    return found


def _stated_writers(record: Path) -> list[str]:
    try:
        if record.stat().st_size > 16 * 1024 * 1024:
            return []
        data = json.loads(record.read_bytes())
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    out: list[str] = []
    for key in ("note", "_"):
        value = data.get(key)
        if isinstance(value, str):
            out.extend(m.group(1) for m in _NAMED_SCRIPT.finditer(value))
    return sorted(set(out))
