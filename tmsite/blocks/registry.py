"""The assembler registry: one assembler per kind of thing, a loud error on a clash.

An assembler turns one read (a ``Content``) into blocks. It is registered under the kind of
thing it assembles (``Content.kind``, e.g. ``log``), under a media type (``text/markdown``,
or a family ``image/*``), or under a mount whose kinds are data rather than code (the things an
MCP server's index map names take whatever kind the map declares), and says which block kinds
it yields (the manifest publishes that). Lookup, for a read: its kind, then the mount that
served it, then its exact media type, then its family, then the generic fallback (kv of a JSON
object, code for text, media for bytes).

Spec: BLOCKS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tmsite.blocks.vocabulary import BLOCK_KINDS, Block
from tmsite.core.types import Content

if TYPE_CHECKING:
    from tmsite.blocks.assemble import Context

AssembleFn = Callable[["Context", Content], list[Block]]


class AssemblerClash(Exception):
    """Two assemblers claimed the same kind or media type."""


@dataclass(frozen=True)
class Assembler:
    """One registered assembler: its key, its function, the block kinds it yields, its module."""

    key: str
    fn: AssembleFn
    yields: tuple[str, ...]
    module: str


#: "kind:<kind>", "mount:<mount>" or "type:<media type>" → its assembler.
ASSEMBLERS: dict[str, Assembler] = {}
GENERIC = "generic"


def assembles(
    *,
    kinds: tuple[str, ...] = (),
    types: tuple[str, ...] = (),
    mounts: tuple[str, ...] = (),
    yields: tuple[str, ...],
) -> Callable[[AssembleFn], AssembleFn]:
    """Register the decorated function for ``kinds``, media ``types`` and/or ``mounts``.

    A mount key catches what that mount serves under a kind no assembler holds.

    Raises:
        AssemblerClash: a kind or type another assembler already holds (at import).
    """
    unknown = sorted(set(yields) - set(BLOCK_KINDS))
    assert not unknown, f"not in the block vocabulary: {unknown}"
    keys = (
        [f"kind:{kind}" for kind in kinds]
        + [f"type:{media}" for media in types]
        + [f"mount:{mount}" for mount in mounts]
    )

    def register(fn: AssembleFn) -> AssembleFn:
        for key in keys:
            held = ASSEMBLERS.get(key)
            if held is not None and held.fn is not fn:
                raise AssemblerClash(
                    f"{key} is assembled by {held.module}.{held.fn.__name__}; "
                    f"{fn.__module__}.{fn.__name__} claims it too"
                )
            ASSEMBLERS[key] = Assembler(key, fn, tuple(yields), fn.__module__)
        return fn

    return register


def base_type(media_type: str) -> str:
    """A media type without parameters, lower-cased: ``Text/HTML; charset=x`` → ``text/html``."""
    return media_type.split(";")[0].strip().lower()


def mount_of(uri: str) -> str:
    """The mount segment of a ``tm://`` address (``""`` for a host root or anything else)."""
    if not uri.startswith("tm://"):
        return ""
    segments = uri[len("tm://") :].split("?", 1)[0].split("/")
    return segments[1] if len(segments) > 1 else ""


def find(content: Content) -> Assembler:
    """The assembler for one read: by kind, mount, exact type, type family, then the fallback."""
    media = base_type(content.mime_type)
    for key in (
        f"kind:{content.kind}",
        f"mount:{mount_of(content.uri)}",
        f"type:{media}",
        f"type:{media.split('/')[0]}/*",
        f"kind:{GENERIC}",
    ):
        found = ASSEMBLERS.get(key)
        if found is not None:
            return found
    raise LookupError("no generic assembler registered")  # pragma: no cover - import order


def handles() -> dict[str, dict[str, list[str]]]:
    """Per registered key, the block kinds it yields (for the manifest)."""
    return {
        key: {"blocks": list(assembler.yields)} for key, assembler in sorted(ASSEMBLERS.items())
    }
