"""The one rejection tree. Mounts raise these and nothing else.

Every refusal has a stable ``reason`` a client can branch on, the refused URI, a sentence for
people, and helper fields (``nearest``, ``size``, ``valid`` …). Foreign exceptions (OSError,
dulwich, httpx, an MCP peer) are translated at a mount's edge. How a reason becomes a wire code
is decided in one table per surface (``tmsite.mcp.codes`` for MCP, ``tmsite.rest.routes`` for REST).

Spec: RJ1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from tmsite.core.paths import PathRefused


class Refusal(Exception):
    """A read, list or completion the server refuses, with what would help instead."""

    reason: ClassVar[str] = ""

    def __init__(self, uri: str | None, message: str, **helpers: Any) -> None:
        super().__init__(message)
        self.uri = uri
        self.message = message
        self.helpers = {key: value for key, value in helpers.items() if value is not None}

    @property
    def data(self) -> dict[str, Any]:
        """The machine-readable fields: ``reason``, ``uri`` and the helpers."""
        data: dict[str, Any] = {"reason": self.reason}
        if self.uri is not None:
            data["uri"] = self.uri
        data.update(self.helpers)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r}, {self.message!r}, {self.helpers!r})"


class NotFound(Refusal):
    """Nothing answers at this URI. ``nearest``: up to five URIs that do."""

    reason = "not-found"

    def __init__(
        self, uri: str | None, message: str, nearest: Sequence[str] | None = None, **helpers: Any
    ) -> None:
        super().__init__(uri, message, **helpers)
        # None means "not computed yet": the namespace fills it from the deepest ancestor.
        self.nearest_given = nearest is not None
        self.helpers["nearest"] = list(nearest or [])


class OutOfRoot(Refusal):
    """The path leaves the roots this mount serves. ``roots``: the served roots."""

    reason = "out-of-root"


class Denied(Refusal):
    """It exists and is not offered. No helper: nothing about it is told."""

    reason = "denied"


class TooLarge(Refusal):
    """Over the read cap. ``size``, ``range`` and ``lines`` templates, ``stat``."""

    reason = "too-large"


class Binary(Refusal):
    """Binary where text was asked. ``mimeType``, ``stat``, ``raw``."""

    reason = "binary"


class Redirect(Refusal):
    """A page answered with a redirect, as a visitor would be sent on. ``status``, ``target``."""

    reason = "redirect"


class Unreachable(Refusal):
    """The backend did not answer well. ``status`` or ``failed``."""

    reason = "unreachable"


class NoSuchRef(Refusal):
    """The ref does not resolve. ``nearest``: refs that do, as URIs.

    ``starts``: for a date before the history, when the history starts (ISO 8601, UTC).
    """

    reason = "no-such-ref"


class GitError(Refusal):
    """The repository could not be read."""

    reason = "git-error"


class BadFacet(Refusal):
    """A parameter the target cannot honour. ``valid``: what it can."""

    reason = "bad-facet"

    def __init__(
        self, uri: str | None, message: str, valid: Sequence[str] | None = None, **helpers: Any
    ) -> None:
        super().__init__(uri, message, valid=list(valid) if valid is not None else None, **helpers)


class BadCursor(Refusal):
    """A cursor this server did not issue for this listing."""

    reason = "bad-cursor"


class BadUri(Refusal):
    """Not a tm:// URI this server can parse. ``root``: where to start."""

    reason = "bad-uri"


class BadArgument(Refusal):
    """A completion or tool argument that is not offered. ``valid``: what is."""

    reason = "bad-argument"


class Gated(Refusal):
    """Reading it needs a credential this box does not hold."""

    reason = "gated"


class RateLimited(Refusal):
    """Too many reads from this caller. ``retryAfter``: seconds to wait."""

    reason = "rate-limited"


class Timeout(Refusal):
    """The backend took longer than its deadline. ``seconds``."""

    reason = "timeout"


class Exists(Refusal):
    """What a proposal asks for is there already: ``uri`` names it."""

    reason = "exists"


class QueueFull(Refusal):
    """The maintainers' queue holds all it takes. ``retryAfter``: seconds to wait."""

    reason = "queue-full"


class TooCostly(Refusal):
    """Computing it would cost more than a caller's whole budget: refused before spending it.

    ``cost`` (tokens, at least), ``budget`` (the whole budget), ``narrower``: reads of the same
    thing that are known to cost less than the budget (the commits a history had found, the
    lines a blame had blamed, when they were stopped).
    """

    reason = "too-costly"


REFUSALS: dict[str, type[Refusal]] = {
    cls.reason: cls
    for cls in (
        NotFound,
        OutOfRoot,
        Denied,
        TooLarge,
        Binary,
        Redirect,
        Unreachable,
        NoSuchRef,
        GitError,
        BadFacet,
        BadCursor,
        BadUri,
        BadArgument,
        Gated,
        RateLimited,
        Timeout,
        Exists,
        QueueFull,
        TooCostly,
    )
}
#: Every reason a refusal can give, one class each.
REASONS: tuple[str, ...] = tuple(REFUSALS)
assert len(REASONS) == len(Refusal.__subclasses__()), "every refusal class has its own reason"


def path_refusal(exc: PathRefused, uri: str, roots: Sequence[str]) -> Refusal:
    """The refusal of a checkout path the shared rules refuse.

    ``denied`` for a deny-listed name; else ``out-of-root`` with the served ``roots`` (and, for
    an unknown root, the roots as ``nearest``).
    """
    if exc.denied:
        return Denied(uri, exc.why)
    return OutOfRoot(
        uri, exc.why, roots=list(roots), nearest=list(roots) if exc.unknown_root else None
    )
