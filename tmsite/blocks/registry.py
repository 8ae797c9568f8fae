"""The assembler registry: one assembler per kind of thing, a loud error on a clash.

An assembler turns one read (a ``Content``) into blocks. It is registered under the kind of
thing it assembles (``Content.kind``, e.g. ``log``) or under a media type (``text/markdown``,
or a family ``image/*``), and says which block kinds it yields (the manifest publishes that).
Lookup, for a read: its kind, then its exact media type, then its family, then the generic
fallback (kv of a JSON object, code for text, media for bytes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tmsite.blocks.vocabulary import BLOCK_KINDS, Block
from tmsite.mounts.types import Content

if TYPE_CHECKING:
    from tmsite.blocks.assemble import Context

AssembleFn = Callable[["Context", Content], list[Block]]


class AssemblerClash(Exception):
    """Two assemblers claimed the same kind or media type."""


@dataclass(frozen=True)
class Assembler:
    key: str
    fn: AssembleFn
    yields: tuple[str, ...]
    module: str


#: "kind:<kind>" or "type:<media type>" → its assembler.
ASSEMBLERS: dict[str, Assembler] = {}
GENERIC = "generic"


def assembles(
    *, kinds: tuple[str, ...] = (), types: tuple[str, ...] = (), yields: tuple[str, ...]
) -> Callable[[AssembleFn], AssembleFn]:
    """Register the decorated function for ``kinds`` and/or media ``types``.

    Raises:
        AssemblerClash: a kind or type another assembler already holds (at import).
    """
    unknown = sorted(set(yields) - set(BLOCK_KINDS))
    assert not unknown, f"not in the block vocabulary: {unknown}"
    keys = [f"kind:{kind}" for kind in kinds] + [f"type:{media}" for media in types]

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
    return media_type.split(";")[0].strip().lower()


def find(content: Content) -> Assembler:
    """The assembler for one read: by kind, exact type, type family, then the fallback."""
    media = base_type(content.mime_type)
    for key in (
        f"kind:{content.kind}",
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
