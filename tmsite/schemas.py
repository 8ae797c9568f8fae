"""Shared schemas: the tools' inputs and outputs, which are also the REST routes' shapes.

A tool's ``inputSchema`` and ``outputSchema`` are generated from these models, and the REST
routes declare the same models, so the two spellings cannot drift. A model's docstring is
its schema's ``description``: it is written for the client that reads the schema.

Spec: TL1, TL6.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from tmsite.pieces import Licensing, Piece
from tmsite.probes import Measurement


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
    start_here: str = Field(description="The first tm:// document to read.")


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


__all__ = [
    "Licensing",
    "LicensingInput",
    "LinkOut",
    "Overview",
    "OverviewInput",
    "PieceInput",
    "PieceStatus",
    "ResolveInput",
    "Resolved",
]
