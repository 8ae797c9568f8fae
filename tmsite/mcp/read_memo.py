"""Reads of small checkout files, answered again while what they show is unchanged.

``tmsite.mcp.prepared`` keeps the answer of a plain ``resources/read`` of an ``fs`` file
(``tm://<host>/fs/<root>/<path>``, no query, no trailing ``/``) once it was built by the
ordinary path, and gives it again while the answer's stamp is the same. The stamp, taken
before the answer is built, is:

* the file as the fs mount resolves the address (its rules run on every use: a segment
  refused, a symlink swapped to point elsewhere, a denied name, all change or void it; the
  served roots are the ones the mount resolved when it was built, as for its own reads) and
  that file's stat: device, inode, size, modification and change times in nanoseconds;
* how many times this process dropped its trails and its curated links
  (``trails.index.forgotten``, ``proposals.curated.forgotten``: a correction or an approved
  link saved here is in the next answer, as in a built one);
* the links other mounts give the file (``Namespace.links_into``: its repository, its pages,
  the trails it is a step of, …), compared again when they were last compared more than
  ``LINKS_RECHECK_SECONDS`` ago. That second is the one the git mount trusts a resolved ref
  for (``REF_TTL``) and the trail index another machine's corrections: a commit or such a
  correction reaches a kept answer as late as it reaches a built one; a trail file, an
  import manifest or a page edited on disk, up to a second later.

Only regular files of at most ``SMALL_FILE`` bytes are kept, at most ``MAX_ENTRIES`` answers
(the oldest forgotten first). A file changed less than ``SETTLE_SECONDS`` before its stat was
taken is not kept: a second write in the same tick of the file system's clock, of the same
size, would leave the stat as it was.

Spec: T7, FS.
"""

from __future__ import annotations

import os
import stat as stat_module
import threading
import time
from collections import OrderedDict
from functools import lru_cache
from typing import Any

from tmsite.core.errors import Refusal
from tmsite.core.links import Link
from tmsite.core.paths import CheckoutRoots, PathRefused
from tmsite.core.uri import TmUri, parse

#: The largest file whose answer is kept.
SMALL_FILE = 64 * 1024
#: The most answers kept in one process.
MAX_ENTRIES = 1024
#: Seconds the links of a kept answer are trusted before they are compared again.
LINKS_RECHECK_SECONDS = 1.0
#: A file changed this recently is read, not kept.
SETTLE_SECONDS = 2.0

Stamp = tuple[str, int, int, int, int, int, int, int]

_lock = threading.Lock()
#: When each kept answer's links were last compared (``time.monotonic``), oldest kept first.
_checked: OrderedDict[Any, float] = OrderedDict()


def candidate(uri: str, host: str) -> bool:
    """Whether ``uri`` is spelled as a plain read of an fs file of ``host``."""
    return (
        uri.startswith(f"tm://{host}/fs/")
        and not uri.endswith("/")
        and "?" not in uri
        and "#" not in uri
        and len(uri) <= 1024
    )


@lru_cache(maxsize=MAX_ENTRIES)
def _parsed(uri: str) -> TmUri | None:
    try:
        parsed = parse(uri)
    except Refusal:
        return None
    if parsed.mount != "fs" or parsed.params or parsed.collection or len(parsed.path) < 2:
        return None
    return parsed


def stamp(namespace: Any, uri: str) -> Stamp | None:
    """The file ``uri`` reads and its stat; None when it is not a small regular file."""
    from tmsite.mounts.fs.mount import FsMount
    from tmsite.proposals import curated
    from tmsite.trails import index

    parsed = _parsed(uri)
    mount = namespace.mounts.get("fs")
    if parsed is None or not isinstance(mount, FsMount):
        return None
    try:
        found = _walk(mount.files, parsed.path)
    except (PathRefused, OSError, ValueError):
        return None
    if found is None:
        return None
    resolved, info = found
    if not stat_module.S_ISREG(info.st_mode) or info.st_size > SMALL_FILE:
        return None
    return (
        resolved,
        index.forgotten(),
        curated.forgotten(),
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
    )


def _walk(files: CheckoutRoots, segments: tuple[str, ...]) -> tuple[str, os.stat_result] | None:
    """The path ``segments`` name under their root, and its stat, as the fs mount resolves it.

    The asked names are checked by the mount's own rules first. Then each name below the
    root is looked at without following it (``lstat``): with no symlink among them, the path
    is the one the mount's resolution gives, without a ``realpath`` of the whole path (the
    root is the one the mount resolved when it was built; a root no longer a directory is
    None, for the ordinary read to refuse). A symlink below the root is resolved by the
    mount's ``resolve`` (its containment and deny-list checks) and followed by ``stat``.
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


def links(namespace: Any, uri: str) -> tuple[Link, ...]:
    """The links other mounts give the file ``uri`` reads, now."""
    parsed = _parsed(uri)
    return () if parsed is None else tuple(namespace.links_into(parsed))


def settled(found: Stamp) -> bool:
    """Whether the file was last changed long enough ago for its stat to tell every change."""
    return time.time_ns() - max(found[6], found[7]) >= SETTLE_SECONDS * 1e9


def due(key: Any) -> bool:
    """Whether the links of the answer kept for ``key`` are to be compared again."""
    checked = _checked.get(key)
    return checked is None or time.monotonic() - checked >= LINKS_RECHECK_SECONDS


def checked(key: Any) -> None:
    """The links of ``key``'s answer were just found as they were."""
    with _lock:
        _checked[key] = time.monotonic()


def kept(key: Any, entries: dict[Any, Any]) -> None:
    """``key``'s answer was just kept in ``entries``: forget the oldest past ``MAX_ENTRIES``."""
    with _lock:
        _checked[key] = time.monotonic()
        _checked.move_to_end(key)
        while len(_checked) > MAX_ENTRIES:
            oldest, _ = _checked.popitem(last=False)
            entries.pop(oldest, None)


def clear() -> None:
    """Forget when every answer's links were compared (with the answers themselves)."""
    with _lock:
        _checked.clear()
    _parsed.cache_clear()
