"""Plain reads given again while what they show is unchanged, whatever surface asked.

``Namespace.read`` keeps the read of a plain address (``tm://<host>/<mount>/<path>``, no query,
no trailing ``/``) of a mount that vouches for its reads (``Mount.stamp``) and gives it again
while its stamp, taken before the read (``Namespace.stamp``: the mount's, and each mount's
``links_stamp``: a link approved, a trail saved or corrected), is the same. The rest of the
links other mounts give it (``Namespace.links_into``) are compared again once
``LINKS_RECHECK_SECONDS`` old: a trail file, an import manifest or a page edited on disk
reaches a kept read up to a second later, as a commit reaches a built one (the git mount
trusts a ref as long).

A surface keeps the answers it made of a kept read beside it (``Kept.answers``: the MCP
endpoint's serialised answer per protocol version); they go with it. A namespace keeps at most
``MAX_ENTRIES`` reads and ``MAX_BYTES`` of their bodies and answers, the oldest kept forgotten
first (one read is under ``READ_CAP``, 256 KiB).

Spec: T7, FS.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import replace
from functools import lru_cache
from typing import Any

from tmsite.core.errors import Refusal
from tmsite.core.links import Link
from tmsite.core.parts import wire_size
from tmsite.core.types import Content
from tmsite.core.uri import TmUri, parse

#: The most reads one namespace keeps.
MAX_ENTRIES = 1024
#: The most bytes of kept bodies and the answers made of them, per namespace.
MAX_BYTES = 32 * 1024 * 1024
#: Seconds the links of a kept read are trusted before they are compared again.
LINKS_RECHECK_SECONDS = 1.0
#: The longest address kept.
MAX_ADDRESS = 1024


class Kept:
    """One kept read: its stamp, the links others gave it, the read, and the answers made of it.

    Compared by identity: a new read of the same address is a new ``Kept``.
    """

    __slots__ = ("answers", "checked", "content", "links", "size", "stamp")

    def __init__(self, stamp: Hashable, links: tuple[Link, ...], content: Content) -> None:
        self.stamp, self.links, self.checked = stamp, links, time.monotonic()
        self.content = replace(content, links=list(content.links))
        self.size = wire_size(content)  # the bytes held: the body's, then each answer's too
        self.answers: dict[Hashable, Any] = {}

    def given(self) -> Content:
        """The kept read as a read returns it (its own list of links, which callers may extend)."""
        return replace(self.content, links=list(self.content.links))


def plain(text: str, host: str, stamped: frozenset[str]) -> TmUri | None:
    """``text`` parsed, when it is a plain address of ``host`` in a ``stamped`` mount."""
    prefix = f"tm://{host}/"
    if not text.startswith(prefix) or text.endswith("/") or "?" in text or "#" in text:
        return None
    mount, slash, _ = text[len(prefix) :].partition("/")
    if not slash or mount not in stamped or len(text) > MAX_ADDRESS:
        return None
    return _parsed(text)


@lru_cache(maxsize=MAX_ENTRIES)
def _parsed(text: str) -> TmUri | None:
    try:
        uri = parse(text)
    except Refusal:
        return None
    return None if uri.mount is None or uri.params or uri.collection else uri


class ReadMemo:
    """The kept reads of one namespace, by address as asked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Kept] = OrderedDict()
        self._bytes = 0

    def get(
        self, text: str, stamp: Hashable | None, links: Callable[[], tuple[Link, ...]] | None
    ) -> Kept | None:
        """The read kept for ``text`` while ``stamp`` is its stamp and its links are as they were.

        ``links`` gives the links others give the thing now; None: the links are not to be
        compared now (the caller may not wait), and a read whose links are due is None.
        """
        kept = self._entries.get(text) if stamp is not None else None
        if kept is None or kept.stamp != stamp:
            return None
        if time.monotonic() - kept.checked < LINKS_RECHECK_SECONDS:
            return kept
        if links is None or links() != kept.links:
            return None
        kept.checked = time.monotonic()
        return kept

    def put(self, text: str, kept: Kept) -> None:
        """Keep ``kept`` for ``text``, in place of what was."""
        with self._lock:
            old = self._entries.pop(text, None)
            self._entries[text] = kept
            self._trim(kept.size - (0 if old is None else old.size))

    def answered(self, text: str, kept: Kept, key: Hashable, answer: Any, size: int) -> None:
        """Keep ``answer`` (``size`` bytes), made of ``kept``, beside it while it is kept."""
        with self._lock:
            if self._entries.get(text) is kept and key not in kept.answers:
                kept.answers[key] = answer
                kept.size += size
                self._trim(size)

    def _trim(self, added: int) -> None:
        self._bytes += added
        while len(self._entries) > MAX_ENTRIES or self._bytes > MAX_BYTES:
            self._bytes -= self._entries.popitem(last=False)[1].size
