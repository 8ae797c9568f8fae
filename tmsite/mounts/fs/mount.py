r"""The ``fs`` mount: the allow-listed roots of the served checkout, as files.

``tm://<host>/fs/<root>/<path>`` — the roots (``docs``, ``data``, ``notes`` by default) are the
only directories offered; the rest of the checkout is unreachable by design. Safety, in order:

1. every decoded segment is checked (no ``.``, ``..``, empty, ``/``, ``\`` or NUL);
2. the first segment must be a root;
3. the path is resolved (symlinks followed) before anything is opened, and must stay inside
   the resolved root (a component check, so ``docs-old`` is not inside ``docs``);
4. the deny-list of name patterns is the second net, on the asked and the resolved names:
   denied entries are listed ``redacted`` and refused ``denied``;
5. only regular files are opened, with ``O_NOFOLLOW`` and ``O_NONBLOCK``, and checked again.

Spec: FS.
"""

from __future__ import annotations

import builtins
import os
import stat as stat_module
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from django.conf import settings
from typing_extensions import override

from tmsite import mime
from tmsite.core import work
from tmsite.core.errors import (
    BadFacet,
    Denied,
    NotFound,
    OutOfRoot,
    Refusal,
    path_refusal,
)
from tmsite.core.facets import Facets
from tmsite.core.links import Link
from tmsite.core.nearest import MAX_CANDIDATES
from tmsite.core.parts import READ_CAP, check_range, cut_range, too_large
from tmsite.core.paths import CheckoutRoots, PathRefused, denied_name, display
from tmsite.core.types import (
    Content,
    Document,
    Entry,
    LazyEntries,
    Listing,
    Request,
    Stat,
    Template,
    capped,
    vnd,
)
from tmsite.core.uri import TmUri
from tmsite.mounts.base import ChangeSource, Mount, Watching, unknown_argument, whole_stat
from tmsite.mounts.fs import watch

#: A file read whole for ``lines`` or text may be at most this large.
WHOLE_READ_LIMIT = 16 * 1024 * 1024
FILE_FACETS = ("raw", "stat")
#: The largest file a stamp vouches for (a larger answer is not worth keeping).
STAMPED_SIZE = 64 * 1024
#: A file changed this recently has no stamp: a second write in the same tick of the file
#: system's clock, of the same size, would leave its stat as it was.
SETTLE_SECONDS = 2.0
_FILE_PARAMS = ("as", "at", "lines", "range", "pointer")


#: Reads a checkout file as the checkout's repository had it at a revision (``fs/…?at=``):
#: the fs URI asked and the revision. Handed to the fs mount when git is served.
HistoryAt = Callable[[TmUri, str], Content]


@dataclass(frozen=True)
class Target:
    """A checked path: where it is, and how the client named it."""

    root: str
    segments: tuple[str, ...]
    path: Path


def _named(roots: Sequence[str], suffix: str = "") -> str:
    """The roots in a sentence: ``docs/, data/ and notes/``."""
    shown = [f"{root}{suffix}" for root in roots]
    if len(shown) <= 1:
        return "".join(shown) or "no root"
    return ", ".join(shown[:-1]) + " and " + shown[-1]


class FsMount(Mount):
    """The checkout's allow-listed roots, listed and read by the rules above.

    ``files`` holds the rules (:class:`~tmsite.core.paths.CheckoutRoots`), shared with the git
    mount's ``fs/…?at=`` reads; ``history_at`` is how those reads reach git.
    """

    name = "fs"
    title = "The checkout's files"
    what = "The files of the served checkout under its allow-listed roots (TM_FS_ROOTS)."
    listing_facets = (None, "raw")

    def __init__(self, host: str, checkout: Path, roots: Sequence[str]) -> None:
        super().__init__(host)
        self.files = CheckoutRoots(checkout, roots)
        self.checkout = self.files.checkout
        self.roots = self.files.names
        self.what = (
            f"The files of the served checkout under its allow-listed roots ({_named(self.roots)})."
        )
        #: ``?at=`` reads; the registry hands it over when the git mount is served.
        self.history_at: HistoryAt | None = None

    @classmethod
    def from_settings(cls, host: str) -> FsMount:
        """The mount over ``TM_CHECKOUT`` with the roots ``TM_FS_ROOTS``."""
        return cls(host, Path(settings.TM_CHECKOUT), settings.TM_FS_ROOTS)

    # ---- path safety ------------------------------------------------------------------

    def root_uris(self) -> list[str]:
        """The URIs of the served roots, which an ``out-of-root`` refusal names."""
        return [str(self.uri(root, collection=True)) for root in self.roots]

    def target(self, uri: TmUri) -> Target:
        """Check ``uri``'s path and resolve it inside its root.

        Raises:
            OutOfRoot: a segment that could leave the root, an unknown root, or a resolved
                path (through symlinks) outside its root.
            Denied: a segment matching the deny-list, asked or resolved.
        """
        try:
            resolved = self.files.resolve(uri.path)
        except PathRefused as exc:
            raise path_refusal(exc, str(uri), self.root_uris()) from None
        return Target(uri.path[0], uri.path, resolved)

    @override
    def admits(self, uri: TmUri) -> None:
        if uri.path:
            self.target(uri)

    @override
    def stamp(self, uri: TmUri) -> Hashable | None:
        """The file a plain read of ``uri`` reads, as the read resolves it, and that file's stat.

        The stat is device, inode, size, modification and change times in nanoseconds; the
        path's rules run on every stamp (a segment refused, a symlink swapped to point
        elsewhere, a denied name: each changes the stamp or voids it). None for anything but
        a regular file of at most ``STAMPED_SIZE`` bytes last changed ``SETTLE_SECONDS`` ago.
        """
        if uri.params or uri.collection or len(uri.path) < 2:
            return None
        try:
            found = _walk(self.files, uri.path)
        except (PathRefused, OSError, ValueError):
            return None
        if found is None:
            return None
        resolved, info = found
        if not stat_module.S_ISREG(info.st_mode) or info.st_size > STAMPED_SIZE:
            return None
        if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < SETTLE_SECONDS * 1e9:
            return None
        return resolved, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns

    # ---- the contract ------------------------------------------------------------------

    @override
    def list(self, req: Request) -> Listing:
        uri = req.uri
        if not uri.path:
            children = [
                Entry(
                    str(self.uri(root, collection=True)),
                    f"{root}/",
                    True,
                    vnd("listing"),
                    modified=_modified((self.checkout / root).stat()),
                )
                for root in self.roots
                if (self.checkout / root).is_dir()
            ]
            return Listing(children)
        target = self.target(uri)
        try:
            scan = self._scan(target.path)
        except NotADirectoryError as exc:
            raise NotFound(
                str(uri), "that is a file: its URI has no trailing /", nearest=[str(uri.as_leaf())]
            ) from exc
        except FileNotFoundError as exc:
            raise NotFound(str(uri), "no such directory") from exc
        except OSError as exc:
            raise NotFound(str(uri), f"no such directory ({exc.strerror})") from exc
        return Listing(_LazyEntries(self, uri, target.path, scan))

    def _scan(self, directory: Path) -> _Scan:
        """The directory's names, directories first, sorted by bytes; kept per mtime."""
        info = os.stat(directory)
        if not stat_module.S_ISDIR(info.st_mode):
            raise NotADirectoryError(str(directory))
        key = (str(directory), info.st_ino, info.st_mtime_ns)
        with _SCAN_LOCK:
            cached = _SCANS.get(key)
            if cached is not None:
                _SCANS.move_to_end(key)
                return cached
        out: builtins.list[tuple[bool, str]] = []
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                out.append((not is_dir, entry.name))
        work.spend("scanned", len(out))
        out.sort(key=lambda item: (item[0], item[1].encode("utf-8", "surrogateescape")))
        scan = _Scan(out)
        with _SCAN_LOCK:
            _SCANS[key] = scan
            while len(_SCANS) > _SCAN_CACHE_SIZE:
                _SCANS.popitem(last=False)
        return scan

    def entry_for(self, parent: TmUri, directory: Path, name: str, is_dir: bool) -> Entry:
        """The listing entry of ``name`` in ``directory``, typed as its stat would type it.

        A denied name, one that resolves out of its root, or one that is not a regular file
        or directory is listed ``redacted``: it is shown, never offered.
        """
        uri = parent.child(name, collection=is_dir)
        shown = display(name) + ("/" if is_dir else "")
        if denied_name(name):
            return Entry(str(uri), shown, is_dir, redacted=True)
        try:
            resolved = self.target(uri).path
            info = resolved.stat()
        except (OutOfRoot, Denied, OSError):
            return Entry(str(uri), shown, is_dir, redacted=True)
        if is_dir:
            return Entry(str(uri), shown, True, vnd("listing"), modified=_modified(info))
        if not stat_module.S_ISREG(info.st_mode):
            return Entry(str(uri), shown, False, redacted=True)
        # Typed from the resolved file, as stat types it (a symlink inside is not opened).
        mime_type = self._mime(resolved, name)
        return Entry(str(uri), shown, False, mime_type, info.st_size, modified=_modified(info))

    @override
    def read(self, req: Request) -> Content:
        if req.facets.at is not None:
            return self._read_at(req, req.facets.at)
        uri = req.uri
        self._check_params(req)
        target = self.target(uri)
        if len(uri.path) == 1:
            raise self.leaf_as_collection(uri)
        info = self._regular_file(req, target)
        if req.facets.facet == "stat":
            whole_stat(req)
            return self._stat(uri, target, info)
        return self._raw(req, target, info)

    def _read_at(self, req: Request, at: str) -> Content:
        """The file as the checkout's repository had it then: the git mount reads it."""
        if self.history_at is None:
            raise BadFacet(req.text, "at= needs the git mount, which is not served", valid=[])
        return self.history_at(req.uri, at)

    def _check_params(self, req: Request) -> None:
        """Refuse what no read of this URI honours, before the path is touched."""
        uri = req.uri
        if not uri.path and not uri.collection:
            raise self.leaf_as_collection(uri)
        if uri.collection:
            req.facets.require_facet(req.text, ("raw",), "a directory")
        req.facets.require(req.text, _FILE_PARAMS, "a file")
        req.facets.require_facet(req.text, FILE_FACETS, "a file")

    def _regular_file(self, req: Request, target: Target) -> os.stat_result:
        """The stat of the file ``target`` resolved to, refused unless it is a regular file."""
        try:
            info = target.path.stat()
        except FileNotFoundError as exc:
            raise NotFound(req.text, "no such file") from exc
        except OSError as exc:
            raise NotFound(req.text, f"no such file ({exc.strerror})") from exc
        if stat_module.S_ISDIR(info.st_mode):
            raise self.leaf_as_collection(req.uri)
        if not stat_module.S_ISREG(info.st_mode):
            raise Denied(req.text, "only regular files are read")
        return info

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        if argument == "as":
            return [f for f in FILE_FACETS if f.startswith(value)]
        if argument != "path":
            raise unknown_argument(argument, ["path", "as"])
        directory, _, leaf = value.rpartition("/")
        if not directory:
            return [f"{root}/" for root in self.roots if root.startswith(leaf)]
        uri = self.uri(*directory.split("/"), collection=True)
        try:
            children = self.list(Request(uri, _NO_FACETS)).children
        except Refusal:
            return []
        names_of = getattr(children, "names", None)
        names = names_of() if callable(names_of) else [entry.name for entry in children]
        # Matched by name first, so only matching files are touched; a redacted entry (a
        # symlink out, a FIFO) is never offered. At most MAX_CANDIDATES are looked at.
        offered = (
            f"{directory}/{children[index].name}"
            for index, name in enumerate(names)
            if name.startswith(leaf)
            and not denied_name(name.rstrip("/"))
            and not children[index].redacted
        )
        return capped(offered, MAX_CANDIDATES)

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "fs",
                f"tm://{self.host}/fs/{{+path}}",
                "A file or directory of the checkout",
                f"Files under the checkout's {_named(self.roots, '/')}. A path ending in / lists "
                "its children (500 a page, with a cursor); a file reads as itself. ?as=stat "
                "gives size, type and modified time; ?range=START-END reads bytes past the 256 "
                "KiB cap; ?lines=FIRST-LAST and ?pointer=/a/0 read parts. Denied names are "
                "listed redacted and refused.",
                ("path", "as"),
            )
        ]

    @override
    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        yield from super().collections(limit)
        for count, (directory, rel, _) in enumerate(self._directories(), start=1):
            try:
                modified = _modified(os.stat(directory))
            except OSError:
                modified = None
            name = "/".join(display(p) for p in rel) + "/"
            uri = self.uri(*rel, collection=True)
            yield Entry(str(uri), name, True, vnd("listing"), modified=modified)
            if count >= limit:
                return

    @override
    def change_sources(self, watching: Watching) -> builtins.list[ChangeSource]:
        """The checkout's roots watched while listened to (one watch a process)."""

        def served() -> FsMount | None:
            mount = watching.mounts().get(self.name)
            return mount if isinstance(mount, FsMount) else None

        watch.SOURCE.find = served
        return [ChangeSource(self.name, watch.SOURCE, start=watch.SOURCE.follow)]

    @override
    def documents(self) -> Iterator[Document]:
        """Every regular file a read would serve: text up to the read cap, else its name."""
        return self._documents_in()

    @override
    def documents_under(self, uri: TmUri) -> Iterator[Document]:
        """The file ``uri`` names (a stat), or the files below the directory it names."""
        if not uri.path or uri.path[0] not in self.roots:
            return
        if not uri.collection:
            document = self._document(uri.path[:-1], uri.path[-1])
            if document is not None:
                yield document
            return
        yield from self._documents_in((uri.path,))

    def _documents_in(self, starts: Iterable[tuple[str, ...]] | None = None) -> Iterator[Document]:
        """The documents of the served files in the directories below ``starts`` (every root)."""
        for _, rel, files in self._directories(starts):
            for name in sorted(files):
                document = self._document(rel, name)
                if document is not None:
                    yield document

    def _document(self, rel: tuple[str, ...], name: str) -> Document | None:
        """The file ``name`` in directory ``rel`` as the index sees it; None if not served."""
        if denied_name(name):
            return None
        uri = self.uri(*rel, name)
        try:
            resolved = self.target(uri).path
            info = resolved.stat()
        except (OutOfRoot, Denied, OSError):
            return None
        if not stat_module.S_ISREG(info.st_mode):
            return None
        mime_type = self._mime(resolved, name)
        text = mime.is_text(mime_type) and info.st_size <= READ_CAP
        return Document(
            str(uri),
            display(name),
            "file",
            f"{info.st_mtime_ns}-{info.st_size}-{info.st_ino}",
            mime_type,
            partial(_text_of, resolved) if text else _no_text,
            lines=text,
        )

    def _directories(
        self, starts: Iterable[tuple[str, ...]] | None = None
    ) -> Iterator[tuple[str, tuple[str, ...], builtins.list[str]]]:
        """Each served directory under ``starts`` (default the roots): path, segments, files.

        Denied names and directories that resolve out of their root are left out.
        """
        for parts in starts if starts is not None else [(root,) for root in self.roots]:
            if any(denied_name(part) for part in parts):
                continue
            start = self.checkout.joinpath(*parts)
            if not start.is_dir():
                continue
            for directory, dirnames, filenames in os.walk(start):
                dirnames[:] = sorted(d for d in dirnames if not denied_name(d))
                rel = Path(directory).relative_to(self.checkout).parts
                try:
                    self.target(self.uri(*rel, collection=True))
                except (OutOfRoot, Denied):
                    dirnames[:] = []
                    continue
                yield directory, rel, filenames

    # ---- reads --------------------------------------------------------------------------

    def _mime(self, path: Path, name: str) -> str:
        known = mime.by_name(name)
        if known:
            return known
        try:
            with open_regular(path) as handle:
                return mime.sniff(handle.read(mime.SNIFF_BYTES))
        except OSError:
            return mime.OCTET_STREAM

    def _stat(self, uri: TmUri, target: Target, info: os.stat_result) -> Content:
        name = target.segments[-1]
        mime_type = self._mime(target.path, name)
        stat = Stat(
            str(uri.identity),
            display(name),
            mime_type,
            size=info.st_size,
            modified=_modified(info),
            text=mime.is_text(mime_type),
            extra={"path": "/".join(display(s) for s in target.segments)},
        )
        links = [*self.leaf_links(uri, uri.identity), Link("alternate", str(uri.identity))]
        return stat.content(str(uri), links)

    def _raw(self, req: Request, target: Target, info: os.stat_result) -> Content:
        uri = req.uri
        name = target.segments[-1]
        mime_type = self._mime(target.path, name)
        size = info.st_size
        links = self.leaf_links(uri, uri.identity)
        span = req.facets.byte_range
        if span is not None:
            clipped = check_range(req.text, span, size)
            with open_regular(target.path) as handle:

                def read(start: int, end: int) -> bytes:
                    handle.seek(start)
                    return handle.read(end - start)

                raw = req.facets.facet == "raw"
                cut = cut_range(read, clipped, size, text=mime.is_text(mime_type), raw=raw)
            shown = uri.with_params(range=f"{cut.start}-{cut.end}")
            return Content(str(shown), mime_type, cut.body, links, "file", True, size, cut.meta())
        limit = WHOLE_READ_LIMIT if req.facets.part is not None else READ_CAP
        parts = readable_parts(mime.is_text(mime_type), size)
        if size > limit:
            raise too_large(uri, size, parts)
        with open_regular(target.path) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise too_large(uri, len(data), readable_parts(mime.is_text(mime_type), len(data)))
        text_body: str | bytes = (
            data.decode("utf-8", "replace") if mime.is_text(mime_type) else data
        )
        return Content(str(uri), mime_type, text_body, links, "file", size=size)


def _walk(files: CheckoutRoots, segments: tuple[str, ...]) -> tuple[str, os.stat_result] | None:
    """The path ``segments`` name under their root, and its stat, as a read resolves it.

    The asked names are checked by the read's own rules first. Then each name below the
    root is looked at without following it (``lstat``): with no symlink among them, the path
    is the one ``files.resolve`` gives, without a ``realpath`` of the whole path (the root is
    the one resolved when the mount was built; a root no longer a directory is None, for the
    read to refuse). A symlink below the root is resolved by ``files.resolve`` (its
    containment and deny-list checks) and followed by ``stat``.
    """
    files.check_plain(segments)
    files.check_named(segments)
    path = str(files.paths[segments[0]])
    if not stat_module.S_ISDIR(os.lstat(path).st_mode):
        return None
    info = None
    for name in segments[1:]:
        path = os.path.join(path, name)
        info = os.lstat(path)
        if stat_module.S_ISLNK(info.st_mode):
            resolved = str(files.resolve(segments))
            return resolved, os.stat(resolved)
    return None if info is None else (path, info)


def readable_parts(text: bool, size: int) -> tuple[str, ...]:
    """The parts a file too large for one read is read in: bytes, and lines of text it cuts."""
    return ("range", "lines") if text and size <= WHOLE_READ_LIMIT else ("range",)


class open_regular:
    """Open a regular file for reading without following a final symlink or blocking."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> _Reader:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        self.fd = os.open(self.path, flags)
        if not stat_module.S_ISREG(os.fstat(self.fd).st_mode):
            os.close(self.fd)
            raise IsADirectoryError(f"{self.path} is not a regular file")
        return _Reader(self.fd)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


class _Reader:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def seek(self, offset: int) -> None:
        os.lseek(self.fd, offset, os.SEEK_SET)

    def read(self, count: int) -> bytes:
        chunks = []
        while count > 0:
            chunk = os.read(self.fd, min(count, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)


class _Scan:
    """One scan of a directory: its ``(is_file, name)`` items and, once asked, shown names."""

    def __init__(self, items: list[tuple[bool, str]]) -> None:
        self.items = items
        self._shown: list[str] | None = None

    def shown(self) -> list[str]:
        """The names as listed (a directory's with ``/``), made once per scan."""
        shown = self._shown
        if shown is None:
            shown = self._shown = [
                display(name) + ("" if is_file else "/") for is_file, name in self.items
            ]
        return shown


class _LazyEntries(LazyEntries[tuple[bool, str]]):
    """A directory's children, stat'ed only when a page asks for them."""

    def __init__(self, mount: FsMount, uri: TmUri, directory: Path, scan: _Scan) -> None:
        super().__init__(scan.items)
        self.mount = mount
        self.uri = uri.identity
        self.directory = directory
        self.scan = scan

    def names(self) -> list[str]:
        """The children's shown names, without touching the files (kept with the scan)."""
        return self.scan.shown()

    def entry(self, item: tuple[bool, str]) -> Entry:
        is_file, name = item
        return self.mount.entry_for(self.uri, self.directory, name, not is_file)


_NO_FACETS = Facets()
#: Sorted names of recently listed directories, keyed by inode and mtime.
_SCANS: OrderedDict[tuple[str, int, int], _Scan] = OrderedDict()
_SCAN_LOCK = threading.Lock()
_SCAN_CACHE_SIZE = 64


def _text_of(path: Path) -> str:
    """A text file's content for the index, as a read decodes it ("" once it is gone)."""
    try:
        with open_regular(path) as handle:
            return handle.read(READ_CAP).decode("utf-8", "replace")
    except OSError:
        return ""


def _no_text() -> str:
    return ""


def _modified(info: os.stat_result) -> datetime:
    """When a file or directory last changed, to the second, UTC (as its stat says)."""
    return datetime.fromtimestamp(int(info.st_mtime), UTC)
