"""The pieces record (``data/pieces.json``) and the licensing position assembled from it.

The record is validated when it is loaded: a missing or malformed file, a field of the wrong
shape, two pieces with one key, or a ``not_hosted_because`` that does not match
``public_url`` is a :class:`PiecesError` whose message names the file and the field. Loads are
cached by the file's modification time, so an edited record is read again on the next call.

:func:`licensing` never holds text of its own about terms: every licence, term and decision in
its answer is read from the pieces, so it cannot disagree with them.

Spec: TL4, TL6, ANY1.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class PiecesError(ValueError):
    """The pieces record cannot be used; the message names the file and, if known, the field."""


class PiecesAbsent(PiecesError):
    """The checkout has no pieces record: another repository than this project's has none."""


class Decision(BaseModel):
    """A recorded decision that bears on how a piece's terms apply."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(min_length=1, description="What the decision is about, e.g. 'coins'.")
    decision: str = Field(min_length=1, description="The decision, in one or two sentences.")
    decided_on: date = Field(description="The day it was decided (ISO date).")


class Piece(BaseModel):
    """One piece of the 6502 work: what it is, where its source is, how it ships, its terms."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(
        min_length=1,
        pattern=r"^[a-z0-9][a-z0-9-]*$",
        description="The piece's stable key, for example 'chip-api'.",
    )
    project: str | None = Field(
        description="The project the piece belongs to, or null for a piece of its own."
    )
    name: str = Field(min_length=1, description="The piece's name as people say it.")
    what: str = Field(min_length=1, description="What the piece is, in one sentence.")
    source: str = Field(description="Where the piece's source is (a repository URL).")
    ships_as: str = Field(min_length=1, description="How the piece reaches its users.")
    code_licence: str = Field(min_length=1, description="The licence of the piece's code.")
    data_terms: str = Field(
        min_length=1,
        description="The terms of the data the piece embeds, separate from its code licence.",
    )
    embeds_die_data: bool = Field(
        description="Whether the piece embeds data derived from the chip's die; false means clean."
    )
    terms_reach: list[str] = Field(
        default_factory=list,
        description="The things of this piece that the data terms travel to.",
    )
    decisions: list[Decision] = Field(
        default_factory=list,
        description="Recorded decisions that bear on how the terms apply to this piece.",
    )
    read_before_publishing: str | None = Field(
        default=None,
        description="The document to read before publishing anything of this piece, if any.",
    )
    public_url: str | None = Field(
        description="The piece's public surface, probed for reachability; null when not hosted."
    )
    not_hosted_because: str | None = Field(
        default=None,
        min_length=1,
        description="Why the piece has no public URL; present exactly when public_url is null.",
    )

    @field_validator("source", "public_url")
    @classmethod
    def _is_url(cls, value: str | None) -> str | None:
        """An absolute http(s) URL without credentials (``public_url`` may be ``None``)."""
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError(f"must be an absolute http or https URL, not {value!r}")
        if parts.username is not None or parts.password is not None:
            raise ValueError("must not carry a user name or password")
        return value

    @model_validator(mode="after")
    def _hosted_or_why_not(self) -> Piece:
        if self.public_url is None and self.not_hosted_because is None:
            raise ValueError("not_hosted_because: required when public_url is null")
        if self.public_url is not None and self.not_hosted_because is not None:
            raise ValueError("not_hosted_because: present although public_url is set")
        if self.embeds_die_data is False and self.terms_reach:
            raise ValueError("terms_reach: a piece that embeds no die data carries no terms")
        return self


class PiecesRecord(BaseModel):
    """The whole record: a note on what it is and the pieces, in the order they are reported."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    note: str = Field(min_length=1, description="What the record is and who reads it.")
    pieces: list[Piece] = Field(min_length=1, description="The pieces, in reporting order.")


class PerPiece(BaseModel):
    """One piece's two separate positions: code licence and data terms."""

    key: str = Field(description="The piece's key.")
    code_licence: str = Field(description="The licence of the piece's code.")
    data_terms: str = Field(description="The terms of the data the piece embeds.")


class Grouped(BaseModel):
    """One licence or set of terms, and the pieces under it."""

    terms: str = Field(description="The licence or terms, as the pieces state them.")
    pieces: list[str] = Field(description="The keys of the pieces under these terms.")


class Reach(BaseModel):
    """Something the data terms travel to, and the piece it belongs to."""

    key: str = Field(description="The piece's key.")
    reaches: str = Field(description="What the data terms travel to.")


class CleanPiece(BaseModel):
    """A piece that embeds no die data, so only its code licence applies."""

    key: str = Field(description="The piece's key.")
    name: str = Field(description="The piece's name.")
    code_licence: str = Field(description="The licence of the piece's code.")
    data_terms: str = Field(description="The piece's own statement of its data terms.")


class PieceDecision(BaseModel):
    """A recorded decision, with the piece it belongs to."""

    key: str = Field(description="The key of the piece the decision belongs to.")
    subject: str = Field(description="What the decision is about.")
    decision: str = Field(description="The decision.")
    decided_on: date = Field(description="The day it was decided.")


class Licensing(BaseModel):
    """What may be published under which terms, assembled from the pieces."""

    summary: str = Field(description="The position in a few sentences, built from the fields.")
    code_licences: list[Grouped] = Field(description="Each code licence and its pieces.")
    data_terms: list[Grouped] = Field(description="Each set of data terms and its pieces.")
    what_the_terms_reach: list[Reach] = Field(
        description="Everything the data terms travel to, piece by piece."
    )
    clean_pieces: list[CleanPiece] = Field(
        description="The pieces that embed no die data, so only their code licence applies."
    )
    decisions: list[PieceDecision] = Field(
        description="Recorded decisions that bear on how the terms apply."
    )
    per_piece: list[PerPiece] = Field(
        description="Every piece's code licence and data terms, in reporting order."
    )
    read_before_publishing: list[str] = Field(
        description="The documents to read before publishing, relicensing or charging."
    )


# --- loading ------------------------------------------------------------------------------------

_CacheKey = tuple[int, int]
_cache: dict[Path, tuple[_CacheKey, PiecesRecord]] = {}
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every loaded record, so the next load reads its file again."""
    with _cache_lock:
        _cache.clear()


def _reject_duplicate_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for name, value in pairs:
        if name in seen:
            raise PiecesError(f"the name {name!r} appears twice in one JSON object")
        seen[name] = value
    return seen


def _where(loc: Sequence[int | str], data: Any) -> str:
    """Render a pydantic error location as ``pieces[2] (key 'x').field``."""
    out = ""
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            node = node[part] if isinstance(node, list) and part < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("key"), str):
                out += f" (key {node['key']!r})"
        else:
            out += f".{part}" if out else part
            node = node.get(part) if isinstance(node, dict) else None
    return out or "(top level)"


def _parse(path: Path) -> PiecesRecord:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PiecesAbsent(f"{path}: the pieces record does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PiecesError(f"{path}: the pieces record cannot be read: {exc}") from None
    try:
        data = json.loads(text, object_pairs_hook=_reject_duplicate_names)
    except json.JSONDecodeError as exc:
        raise PiecesError(
            f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except PiecesError as exc:
        raise PiecesError(f"{path}: {exc}") from None
    try:
        record = PiecesRecord.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            message = str(error["msg"]).removeprefix("Value error, ")
            problems.append(f"{_where(error['loc'], data)}: {message}")
        raise PiecesError(f"{path}: " + "; ".join(problems)) from None
    first: dict[str, int] = {}
    for index, piece in enumerate(record.pieces):
        if piece.key in first:
            raise PiecesError(
                f"{path}: pieces[{index}].key: duplicate key {piece.key!r} "
                f"(first at pieces[{first[piece.key]}])"
            )
        first[piece.key] = index
    return record


def load_record(path: Path | str) -> PiecesRecord:
    """Load and validate the whole pieces record, cached by the file's modification time.

    Raises:
        PiecesError: The file is unreadable, not JSON, or does not validate; the message
            names the file and the field. :class:`PiecesAbsent` when there is no file.
    """
    resolved = Path(path).resolve()
    try:
        info = resolved.stat()
        stamp: _CacheKey | None = (info.st_mtime_ns, info.st_size)
    except OSError:
        stamp = None
    if stamp is not None:
        with _cache_lock:
            hit = _cache.get(resolved)
        if hit is not None and hit[0] == stamp:
            return hit[1]
    record = _parse(resolved)
    if stamp is not None:
        with _cache_lock:
            _cache[resolved] = (stamp, record)
    return record


def load_pieces(path: Path | str) -> list[Piece]:
    """A new list of the validated (immutable) pieces, in reporting order (:func:`load_record`)."""
    return list(load_record(path).pieces)


# --- licensing ----------------------------------------------------------------------------------


def _grouped(pieces: Sequence[Piece], attribute: str) -> list[Grouped]:
    groups: dict[str, list[str]] = {}
    for piece in pieces:
        groups.setdefault(str(getattr(piece, attribute)), []).append(piece.key)
    return [Grouped(terms=terms, pieces=keys) for terms, keys in groups.items()]


def _keys(keys: Sequence[str]) -> str:
    if len(keys) <= 2:
        return " and ".join(keys)
    return ", ".join(keys[:-1]) + ", and " + keys[-1]


def _summary(
    pieces: Sequence[Piece],
    code: list[Grouped],
    data: list[Grouped],
    clean: list[Piece],
    reach: list[Reach],
) -> str:
    def who(keys: list[str]) -> str:
        return "every piece" if len(keys) == len(pieces) > 1 else _keys(keys)

    sentences: list[str] = []
    if len(code) + len(data) > 1:
        sentences.append("The licence position is not one licence.")
    for group in code:
        sentences.append(f"Code of {who(group.pieces)}: {group.terms}.")
    clean_keys = {piece.key for piece in clean}
    for group in data:
        if set(group.pieces) <= clean_keys:
            continue
        sentences.append(f"Data of {who(group.pieces)}: {group.terms}.")
    if reach:
        sentences.append(
            "Those data terms travel to: " + "; ".join(item.reaches for item in reach) + "."
        )
    for piece in clean:
        sentences.append(f"{piece.name} is clean ({piece.data_terms}).")
    return " ".join(sentences)


def licensing(pieces: Sequence[Piece]) -> dict[str, Any]:
    """What may be published under which terms, assembled from the pieces, never retyped.

    Code licence and data terms are kept apart on purpose: terms that travel with data (such as
    NonCommercial and ShareAlike) reach everything derived from it, whatever the code's licence.
    Returns a JSON-ready dict shaped by :class:`Licensing`.
    """
    code = _grouped(pieces, "code_licence")
    data = _grouped(pieces, "data_terms")
    reach = [Reach(key=p.key, reaches=item) for p in pieces for item in p.terms_reach]
    clean = [p for p in pieces if not p.embeds_die_data]
    documents = [p.read_before_publishing for p in pieces if p.read_before_publishing]
    result = Licensing(
        summary=_summary(pieces, code, data, clean, reach),
        code_licences=code,
        data_terms=data,
        what_the_terms_reach=reach,
        clean_pieces=[
            CleanPiece(key=p.key, name=p.name, code_licence=p.code_licence, data_terms=p.data_terms)
            for p in clean
        ],
        decisions=[
            PieceDecision(
                key=p.key, subject=d.subject, decision=d.decision, decided_on=d.decided_on
            )
            for p in pieces
            for d in p.decisions
        ],
        per_piece=[
            PerPiece(key=p.key, code_licence=p.code_licence, data_terms=p.data_terms)
            for p in pieces
        ],
        read_before_publishing=list(dict.fromkeys(documents)),
    )
    return result.model_dump(mode="json")
