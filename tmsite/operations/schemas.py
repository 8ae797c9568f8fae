"""Shared schemas: the tools' inputs and outputs, which are also the REST routes' shapes.

A tool's ``inputSchema`` and ``outputSchema`` are generated from these models, and the REST
routes declare the same models, so the two spellings cannot drift. A model's docstring is
its schema's ``description``: it is written for the client that reads the schema.

Spec: TL1, TL6.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tmsite.operations.pieces import Piece
from tmsite.operations.probes import Measurement


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OverviewInput(_Input):
    """No arguments."""


class PieceInput(_Input):
    """The key of one piece."""

    key: str = Field(
        description="The piece's stable key, for example chip-api. An unknown key is refused "
        "with the valid keys."
    )


class LicensingInput(_Input):
    """No arguments."""


class ResolveInput(_Input):
    """One tm:// URI to read."""

    uri: str = Field(
        description="A tm:// URI, with facets and parts in its query string, for example "
        "tm://tinymachines/fs/docs/mcp.md?as=stat. Start at tm://tinymachines/."
    )


class PieceStatus(Piece):
    """A piece with its reachability, measured when asked."""

    status: Measurement = Field(description="The measurement of the piece's public surface.")


class Overview(BaseModel):
    """What the box is, and which of its pieces answer now."""

    what: str = Field(description="What the box is, in one sentence.")
    checked_at: datetime | None = Field(
        description="The oldest measurement in this answer (UTC), or null if none was probed."
    )
    up: int = Field(description="How many probed pieces answered below 400.")
    probed: int = Field(description="How many pieces have a public surface that was probed.")
    total: int = Field(description="How many pieces there are.")
    pieces: list[PieceStatus] = Field(description="Every piece, in reporting order.")
    chip_mcp_endpoint: str = Field(
        description="The 6502 API's own MCP endpoint: the chip runs there, not here."
    )
    start_here: str = Field(
        description="The first tm:// document to read: the guide when the checkout has one, "
        "else the root."
    )
    note: str | None = Field(
        default=None,
        description="Why there are no pieces, when the served checkout has no pieces record.",
    )


class LinkOut(BaseModel):
    """A typed link."""

    rel: str = Field(description="An IANA relation or a tm: relation.")
    href: str = Field(description="A complete tm:// URI.")
    confidence: str | None = Field(
        default=None, description="exact, inferred or low; on tm: relations only."
    )
    title: str | None = Field(default=None, description="What the target is.")
    count: int | None = Field(default=None, description="Occurrences this link stands for.")
    type: str | None = Field(default=None, description="The target's media type.")
    provenance: str | None = Field(
        default=None,
        description="curated: a link a maintainer approved, not one derived from the content.",
    )


class Resolved(BaseModel):
    """One tm:// read, exactly as resources/read answers it, with its links in the body."""

    uri: str = Field(description="The URI the answer stands for, with its part kept.")
    mimeType: str = Field(description="The media type of the content.")
    text: str | None = Field(default=None, description="The content, when it is text or JSON.")
    blob: str | None = Field(
        default=None, description="Base64 bytes, only when ?as=raw asked for them."
    )
    encoding: str | None = Field(default=None, description="'base64' when blob is present.")
    bytes: int | None = Field(default=None, description="The size of binary content.")
    note: str | None = Field(default=None, description="How to get binary bytes.")
    links: list[LinkOut] = Field(description="Typed links, in the one link order.")


class SearchInput(_Input):
    """Words to find, and where."""

    query: str = Field(
        description="Plain words, English or Japanese (at most 256 characters, 12 words). "
        "Quotes, *, OR, NEAR, - and : are read as plain words, not operators."
    )
    scope: str | None = Field(
        default=None,
        description="A collection address to search below, such as tm://tinymachines/fs/docs/ "
        "(default: the whole box).",
    )
    kinds: list[str] = Field(
        default_factory=list,
        description="Keep only hits of these mounts or kinds (fs, git, entity, file, game …).",
    )
    limit: int = Field(default=10, ge=1, le=50, description="Hits per page (1 to 50).")
    cursor: str | None = Field(
        default=None, description="The nextCursor of an earlier answer, for the next page."
    )


class SearchHit(BaseModel):
    """One thing that matched: its address narrowed to the passage that matched."""

    uri: str = Field(
        description="The passage's address (?lines=FIRST-LAST on text): read it for the text "
        "the snippet is cut from."
    )
    document: str = Field(description="The whole thing's address.")
    title: str = Field(description="What the thing is called.")
    heading: str | None = Field(default=None, description="The heading the passage is under.")
    snippet: str = Field(description="Plain text of the passage, matched words «marked».")
    score: float = Field(description="The engine's relevance score; higher is better.")
    kind: str = Field(description="What the thing is (file, commit, a record's kind …).")
    mimeType: str = Field(description="What reading the document gives.")
    links: list[LinkOut] = Field(description="Typed links of the document.")


class SearchResult(BaseModel):
    """The hits of one search, best first, and the way to the next page."""

    uri: str = Field(description="This search as an address (?as=search&q=…): read or listen.")
    query: str = Field(description="The words searched, as read.")
    scope: str = Field(description="The collection searched below.")
    hits: list[SearchHit] = Field(description="The best passage of each matching thing.")
    nextCursor: str | None = Field(default=None, description="Pass as cursor for more.")
    next: str | None = Field(default=None, description="The next page as an address.")


class ProposedStep(_Input):
    """One step of a proposed trail."""

    uri: str = Field(description="A tm:// address that resolves.")
    note: str = Field(description="Why the step is there (plain text, at most 500 characters).")


#: The fields each kind of proposal takes, in order, and those of them it may leave out; the
#: proposal's intake refuses any other, and the schema says them (``oneOf`` by ``kind``).
PROPOSAL_FIELDS: dict[str, tuple[str, ...]] = {
    "address": ("uri", "expected"),
    "link": ("from", "rel", "to", "why"),
    "correction": ("uri", "entry", "field", "value", "why"),
    "trail": ("name", "title", "description", "steps"),
}
PROPOSAL_OPTIONAL: dict[str, frozenset[str]] = {"correction": frozenset({"entry", "why"})}


def _required(prop: dict[str, Any]) -> dict[str, Any]:
    """A field's schema as a kind that requires it has it: not null."""
    either = prop.get("anyOf", [])
    variants = [v for v in either if v != {"type": "null"}]
    if len(variants) == len(either):  # null was never one of them
        return prop
    kept = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**variants[0], **kept} if len(variants) == 1 else {"anyOf": variants, **kept}


def _by_kind(schema: dict[str, Any]) -> None:
    """A ``oneOf`` branch for each kind: its fields alone, and those it requires."""
    properties = schema["properties"]
    properties["kind"]["enum"] = list(PROPOSAL_FIELDS)
    branches = []
    for kind, fields in PROPOSAL_FIELDS.items():
        optional = PROPOSAL_OPTIONAL.get(kind, frozenset())
        branch_properties = {"kind": {"const": kind}}
        for name in fields:
            prop = properties[name]
            branch_properties[name] = prop if name in optional else _required(prop)
        branches.append(
            {
                "title": f"{kind} proposal",
                "type": "object",
                "properties": branch_properties,
                "required": ["kind", *(f for f in fields if f not in optional)],
                "additionalProperties": False,
            }
        )
    schema["oneOf"] = branches


class ProposeInput(_Input):
    """A proposal: its kind and the fields that kind takes (the others left out).

    One branch of ``oneOf`` a kind: the fields it takes, and those it requires.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_extra=_by_kind)

    kind: str = Field(description="address, link, correction or trail.")
    uri: str | None = Field(
        default=None,
        description="address: the tm:// address that does not resolve. correction: the "
        "entity (entity/<kind>/<key>, entity/game/<game>/routine/<routine>) or the map "
        "mcp/<server>/map.",
    )
    expected: str | None = Field(
        default=None, description="address: what you expected to find there."
    )
    from_: str | None = Field(
        default=None, alias="from", description="link: the address the link is read from."
    )
    rel: str | None = Field(default=None, description="link: a tm: relation (docs/links.md).")
    to: str | None = Field(default=None, description="link: the address it leads to.")
    why: str | None = Field(default=None, description="link, correction: why it is right.")
    entry: str | None = Field(
        default=None, description="correction of a map: the entry's path template."
    )
    field: str | None = Field(default=None, description="correction: the field to correct.")
    value: str | dict[str, str] | None = Field(
        default=None,
        description="correction: the value it should have (an object for a map entry's arguments).",
    )
    name: str | None = Field(default=None, description="trail: its name, a-z, 0-9 and -.")
    title: str | None = Field(default=None, description="trail: its title.")
    description: str | None = Field(default=None, description="trail: what the walk is for.")
    steps: list[ProposedStep] | None = Field(
        default=None, description="trail: the steps in order, each an address and a note."
    )


class ProposalReceipt(BaseModel):
    """A proposal kept for review: read its receipt for its status and the decision."""

    receipt: str = Field(
        description="tm://<host>/proposals/<token>: the proposal's status, the change prepared "
        "for review as a diff, the decision and its reason. Keep it: it is the only way to "
        "read an open proposal."
    )
    kind: str = Field(description="The kind of proposal.")
    status: str = Field(description="open, approved, rejected or expired.")
    count: int = Field(description="How many times this same proposal was made.")
    new: bool = Field(description="Whether this call made it (false: an identical one).")
