"""Plain reads given again while what they show is unchanged, whatever surface asked.

``Namespace.read`` keeps the finished read of a plain address (``tm://<host>/<mount>/<path>``,
no query, no trailing ``/``) of a mount that can vouch for its reads (``Mount.stamp``), and gives
it again while the read's stamp is the same. The stamp, taken before the read is built, is:

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

At most ``MAX_ENTRIES`` reads are kept per namespace (the oldest forgotten first). A kept read
is a :class:`Kept`, compared by identity: an answer made from it (the MCP endpoint keeps the
serialised answer) stands while the namespace gives that same one.

Spec: T7, FS.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import replace
from functools import lru_cache

from tmsite.core.errors import Refusal
from tmsite.core.links import Link
from tmsite.core.types import Content
from tmsite.core.uri import TmUri, parse

#: The most reads kept by one namespace.
MAX_ENTRIES = 1024
#: Seconds the links of a kept read are trusted before they are compared again.
LINKS_RECHECK_SECONDS = 1.0
#: The longest address kept.
MAX_ADDRESS = 1024


class Kept:
    """One kept read: its stamp, the links others gave it, the read, when links were compared.

    Compared by identity (no ``__eq__``): a new read of the same address is a new ``Kept``.
    """

    __slots__ = ("checked", "content", "links", "stamp")

    def __init__(
        self, stamp: Hashable, links: tuple[Link, ...], content: Content, checked: float
    ) -> None:
        self.stamp = stamp
        self.links = links
        self.content = content
        self.checked = checked

    def given(self) -> Content:
        """The kept read as a read returns it (its own list of links, which callers may extend)."""
        return replace(self.content, links=list(self.content.links))


def plain(text: str, host: str, stamped: frozenset[str]) -> bool:
    """Whether ``text`` is spelled as a plain read of a thing of ``host`` in a ``stamped`` mount."""
    prefix = f"tm://{host}/"
    if not text.startswith(prefix) or text.endswith("/") or "?" in text or "#" in text:
        return False
    mount, slash, _ = text[len(prefix) :].partition("/")
    return bool(slash) and mount in stamped and len(text) <= MAX_ADDRESS


@lru_cache(maxsize=MAX_ENTRIES)
def parsed(text: str) -> TmUri | None:
    """``text`` parsed, when it is a plain address below a mount (else None)."""
    try:
        uri = parse(text)
    except Refusal:
        return None
    if uri.mount is None or uri.params or uri.collection:
        return None
    return uri


class ReadMemo:
    """The kept reads of one namespace, by address as asked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Kept] = OrderedDict()

    def get(
        self,
        text: str,
        stamp: Hashable | None,
        links: Callable[[], tuple[Link, ...]] | None,
    ) -> Kept | None:
        """The read kept for ``text`` while ``stamp`` is its stamp and its links are as they were.

        ``links`` gives the links others give the thing now; None: the links are not to be
        compared now (the caller may not wait on them), and a read whose links are due is None.
        """
        if stamp is None:
            return None
        kept = self._entries.get(text)
        if kept is None or kept.stamp != stamp:
            return None
        if time.monotonic() - kept.checked < LINKS_RECHECK_SECONDS:
            return kept
        if links is None or links() != kept.links:
            return None
        kept.checked = time.monotonic()
        return kept

    def put(self, text: str, stamp: Hashable, links: tuple[Link, ...], content: Content) -> Kept:
        """Keep ``content``, the read of ``text`` built under ``stamp`` with ``links``."""
        kept = Kept(stamp, links, replace(content, links=list(content.links)), time.monotonic())
        with self._lock:
            self._entries[text] = kept
            self._entries.move_to_end(text)
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)
        return kept

    def clear(self) -> None:
        """Forget every kept read."""
        with self._lock:
            self._entries.clear()
