"""Transport-neutral operations: the only callers of the mounts and the pieces.

MCP methods, MCP tools and REST views are adapters over these functions; each returns plain
data or raises a ``Refusal`` from ``tmsite.core.errors``.

Beside them, in this package: their input and output shapes (``schemas``), the pieces record
(``pieces``) and its probes (``probes``), the prompt table (``prompts``), and a proposal's
intake (``intake``) and decision (``decide``).

Spec: TL4, TL5, TL6, PR1.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from tmsite.core.errors import NotFound
from tmsite.core.parts import to_text
from tmsite.core.types import Content, Template
from tmsite.core.uri import parse
from tmsite.mounts.namespace import MapPage
from tmsite.mounts.registry import namespace
from tmsite.operations import pieces as piece_records
from tmsite.operations import probes
from tmsite.operations.schemas import (
    Overview,
    PieceStatus,
    ProposalReceipt,
    ProposeInput,
    Resolved,
    SearchInput,
    SearchResult,
)
from tmsite.search import answer as searches

CHIP_MCP_ENDPOINT = "https://6502.tinymachines.ai/api/mcp"
WHAT = (
    "tinymachines is the roof over six pieces of transistor-level MOS 6502 work; this box "
    "serves its documents, records, repositories and pages as the tm:// namespace."
)


# ---- the namespace ------------------------------------------------------------------------


def read(uri: object) -> Content:
    """Read one tm:// URI (links ordered and capped). Raises ``Refusal``."""
    return namespace().read(uri)


def resource_map(cursor: str | None) -> MapPage:
    """One page of the map (root, help, collections). Raises ``Refusal`` (``bad-cursor``)."""
    return namespace().resource_map(cursor)


def host() -> str:
    """The host this box answers for (``tm://<host>/``)."""
    return namespace().host


def help_uri() -> str | None:
    """The document a client should read first: the one the root links ``help`` (None: none)."""
    return namespace().help_uri()


def templates() -> list[Template]:
    """The URI templates: the host list, the root, and each mount's own."""
    return namespace().templates()


def complete(template: str, argument: str, value: str, context: Mapping[str, str]) -> list[str]:
    """Live values for one argument of a published template, given what was typed (uncapped).

    ``context`` holds the arguments already filled. Raises ``Refusal`` (``bad-argument`` for an
    unknown template or an argument it does not have).
    """
    return namespace().complete(template, argument, value, context)


def resolve(uri: object) -> Resolved:
    """``resources/read`` in one flat body with the links in it.

    Binary content comes as its size and a note on how to get the bytes, unless the URI asked
    ``?as=raw``, which returns them base64.
    """
    content = read(uri)
    shared = {
        "uri": content.uri,
        "mimeType": content.mime_type,
        "links": [link.to_json() for link in content.links],
    }
    body = content.body
    if not isinstance(body, bytes):
        return Resolved.model_validate({**shared, "text": to_text(body)})
    if parse(uri).param("as") == "raw":
        blob = base64.b64encode(body).decode("ascii")
        return Resolved.model_validate(
            {**shared, "blob": blob, "encoding": "base64", "bytes": len(body)}
        )
    note = (
        "binary content: add ?as=raw to the URI for the bytes in base64, "
        "and ?range=START-END past the 256 KiB cap"
    )
    return Resolved.model_validate({**shared, "bytes": len(body), "note": note})


def search(args: SearchInput) -> SearchResult:
    """The hits of a search, read as its address (``<scope>?as=search&q=…``) is read.

    Raises ``Refusal``: ``bad-argument`` naming the argument, ``bad-cursor``.
    """
    asked = searches.ask(host(), args.query, args.scope, args.kinds, args.limit, args.cursor)
    content = read(str(asked.address.with_params(cursor=args.cursor)))
    return SearchResult.model_validate(content.body)


def propose(args: ProposeInput, address: str | None) -> ProposalReceipt:
    """Keep a proposal for the maintainers (identical ones counted), answer its receipt.

    ``address`` is the caller's (in memory only; None outside HTTP), for its daily cap.

    Raises ``Refusal``: ``bad-argument`` (naming what is valid), ``exists``, ``rate-limited``
    (the caller's daily cap), ``queue-full``.
    """
    from tmsite.operations import intake  # a Django app's models: imported once apps are ready

    fields = args.model_dump(by_alias=True, exclude_none=True, mode="json")
    kind = fields.pop("kind")
    taken = intake.take(kind, fields, address)
    proposal = taken.proposal
    return ProposalReceipt(
        receipt=intake.receipt_uri(proposal),
        kind=proposal.kind,
        status=proposal.status,
        count=proposal.count,
        new=taken.new,
    )


# ---- the pieces ---------------------------------------------------------------------------


def _pieces() -> list[piece_records.Piece]:
    """The pieces in reporting order; none when the served checkout has no pieces record."""
    try:
        return piece_records.load_pieces(settings.TM_PIECES_FILE)
    except piece_records.PiecesAbsent:
        return []


def _no_pieces() -> str:
    """Why there are no pieces: the record the served checkout does not have."""
    record = Path(settings.TM_PIECES_FILE)
    checkout = Path(settings.TM_CHECKOUT)
    shown = record.relative_to(checkout) if record.is_relative_to(checkout) else record
    return (
        f"the served checkout has no pieces record ({shown}, TM_PIECES_FILE): there are no "
        f"pieces to measure; its files and repository are the namespace under tm://{host()}/"
    )


def overview() -> Overview:
    """Every piece with its reachability measured now (subject to the short probe cache)."""
    pieces = _pieces()
    measured = probes.probe_all(pieces)
    statuses = [
        PieceStatus.model_validate({**piece.model_dump(), "status": status})
        for piece, status in zip(pieces, measured, strict=True)
    ]
    probed = [s.status for s in statuses if s.status.reachability != "not_probed"]
    return Overview(
        what=WHAT if pieces else f"{host()} serves its checkout as the tm:// namespace.",
        checked_at=min((m.checked_at for m in probed), default=None),
        up=sum(1 for m in probed if m.reachability == "up"),
        probed=len(probed),
        total=len(statuses),
        pieces=statuses,
        chip_mcp_endpoint=CHIP_MCP_ENDPOINT,
        start_here=namespace().help_uri() or str(namespace().root),
        note=None if pieces else _no_pieces(),
    )


def piece(key: str) -> PieceStatus:
    """One piece by key, measured now. Raises ``NotFound`` naming the valid keys."""
    pieces = _pieces()
    for candidate in pieces:
        if candidate.key == key:
            status = probes.probe_one(candidate)
            return PieceStatus.model_validate({**candidate.model_dump(), "status": status})
    valid = sorted(p.key for p in pieces)
    why = f"valid keys: {', '.join(valid)}" if valid else _no_pieces()
    raise NotFound(None, f"no piece named {key!r}; {why}", nearest=[], valid=valid)


def licensing() -> dict[str, Any]:
    """What may be published under which terms, assembled from the pieces."""
    pieces = _pieces()
    answer = piece_records.licensing(pieces)
    if not pieces:
        answer["summary"] = f"Nothing to license: {_no_pieces()}."
    return answer
