"""Plain reads answered again while what they show is unchanged.

``tmsite.mcp.prepared`` keeps the answer of a plain ``resources/read``
(``tm://<host>/<mount>/<path>``, no query, no trailing ``/``) of a mount that can vouch for
its reads (``Mount.stamp``) once it was built by the ordinary path, and gives it again while
the read's stamp is the same. The stamp, taken before the answer is built, is:

* the mount's stamp of the address (fs: the file as a read resolves it, and its stat; git: the
  commit its ref resolves to; entity: the load tokens and the newest correction; trail: the
  files' stats and the corrections' version), taken on every use; None for an address the
  mount cannot vouch for, whose read is built;
* each mount's stamp of the links it gives others' things (``Mount.links_stamp``: the
  trails and curated links this process dropped, so a correction or an approved link saved
  here is in the next answer, as in a built one);
* the links other mounts give the thing (``Namespace.links_into``: its repository, its
  pages, the trails it is a step of, …), compared again when they were last compared more
  than ``LINKS_RECHECK_SECONDS`` ago. That second is the one the git mount trusts a resolved
  ref for (``REF_TTL``) and the trail index another machine's corrections: a commit or such
  a correction reaches a kept answer as late as it reaches a built one; a trail file, an
  import manifest or a page edited on disk, up to a second later.

At most ``MAX_ENTRIES`` answers are kept (the oldest forgotten first).

Spec: T7, FS.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from functools import lru_cache
from typing import Any

from tmsite.core.errors import Refusal
from tmsite.core.links import Link
from tmsite.core.uri import TmUri, parse

#: The most answers kept in one process.
MAX_ENTRIES = 1024
#: Seconds the links of a kept answer are trusted before they are compared again.
LINKS_RECHECK_SECONDS = 1.0

_lock = threading.Lock()
#: When each kept answer's links were last compared (``time.monotonic``), oldest kept first.
_checked: OrderedDict[Any, float] = OrderedDict()


def candidate(uri: str, host: str, stamped: frozenset[str]) -> bool:
    """Whether ``uri`` is spelled as a plain read of a thing of ``host`` in a ``stamped`` mount."""
    prefix = f"tm://{host}/"
    if not uri.startswith(prefix) or uri.endswith("/") or "?" in uri or "#" in uri:
        return False
    mount, slash, _ = uri[len(prefix) :].partition("/")
    return bool(slash) and mount in stamped and len(uri) <= 1024


@lru_cache(maxsize=MAX_ENTRIES)
def _parsed(uri: str) -> TmUri | None:
    try:
        parsed = parse(uri)
    except Refusal:
        return None
    if parsed.mount is None or parsed.params or parsed.collection:
        return None
    return parsed


def stamp(namespace: Any, uri: str) -> Hashable | None:
    """What vouches for a plain read of ``uri`` now; None when nothing does."""
    parsed = _parsed(uri)
    return None if parsed is None else namespace.stamp(parsed)


def links(namespace: Any, uri: str) -> tuple[Link, ...]:
    """The links other mounts give the file ``uri`` reads, now."""
    parsed = _parsed(uri)
    return () if parsed is None else tuple(namespace.links_into(parsed))


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
