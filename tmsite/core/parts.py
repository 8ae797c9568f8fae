"""Parts of a thing (``lines``, ``pointer``, ``range``) and the read cap.

Applied once, after a mount has read, so every mount honours parts the same way; a mount that
can cut a part more cheaply (seeking in a large file) does so and marks it applied.

Spec: NS4, NS6, ANY3.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tmsite.core.errors import BadFacet, NotFound, TooLarge
from tmsite.core.facets import Facets
from tmsite.core.nearest import rank
from tmsite.core.types import Content, JsonValue
from tmsite.core.uri import TmUri

#: The most one read returns: 256 KiB.
READ_CAP = 256 * 1024
_INDEX = re.compile(r"0|[1-9][0-9]{0,8}", re.ASCII)
_JSON_TYPES = ("application/json",)
#: The ``_meta`` key of a range answered with other bytes than asked (whole characters).
RANGE_META = "tinymachines.ai/range"
WHOLE_CHARACTERS = (
    "a range of text answers whole UTF-8 characters: one cut at the start begins the range, one "
    "cut at the end is left to the next; ?as=raw&range= answers the bytes as asked"
)
NOT_UTF8 = "these bytes are not UTF-8: answered as they are, base64"


def is_text_type(mime_type: str) -> bool:
    """Whether a media type is read as text."""
    base = mime_type.split(";")[0].strip()
    return (
        base.startswith("text/")
        or base in _JSON_TYPES
        or base.endswith("+json")
        or base.endswith("+xml")
        or base in {"image/svg+xml", "application/xml", "application/javascript"}
    )


def to_text(body: str | bytes | JsonValue) -> str:
    """The text of a body (JSON serialised compactly, bytes decoded with replacement)."""
    if isinstance(body, str):
        return body
    if isinstance(body, bytes):
        return body.decode("utf-8", "replace")
    return dumps(body)


def dumps(value: JsonValue) -> str:
    """Compact JSON text, non-ASCII kept as is: how a JSON body is cut and measured."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def apply_part(content: Content, uri: TmUri, facets: Facets) -> Content:
    """Cut the part ``facets`` asks for out of ``content`` (once)."""
    part = facets.part
    if part is None or content.part_applied:
        return content
    text_uri = str(uri)
    if part == "lines":
        assert facets.lines is not None
        return _lines(content, text_uri, facets.lines)
    if part == "pointer":
        assert facets.pointer is not None
        return _pointer(content, uri, facets.pointer)
    assert facets.byte_range is not None
    return _range(content, text_uri, facets.byte_range, raw=facets.facet == "raw")


def _lines(content: Content, uri: str, span: tuple[int, int]) -> Content:
    if isinstance(content.body, bytes) and not is_text_type(content.mime_type):
        raise BadFacet(uri, "lines= cuts text; this is binary: use range=", valid=["range"])
    # Lines end at \n only, as in git and grep: str.splitlines would also break at \f,
    # \x1c-\x1e, \x85 and U+2028, numbering lines unlike blame and every editor.
    lines = to_text(content.body).split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    first, last = span
    if first > len(lines):
        raise BadFacet(
            uri,
            f"lines={first}-{last} starts past the end: it has {len(lines)} lines",
            valid=[f"1-{max(len(lines), 1)}"],
            lines=len(lines),
        )
    body = "".join(lines[first - 1 : last])
    mime = content.mime_type if not content.is_json else "text/plain; charset=utf-8"
    return Content(uri, mime, body, content.links, content.kind, True, content.size, content.meta)


def _pointer(content: Content, uri: TmUri, pointer: str) -> Content:
    text_uri = str(uri)
    if content.is_json:
        document: Any = content.body
    elif content.mime_type.split(";")[0].strip().endswith("json"):
        try:
            document = json.loads(to_text(content.body))
        except ValueError as exc:
            raise BadFacet(text_uri, f"pointer= needs JSON; this does not parse: {exc}") from exc
    else:
        raise BadFacet(text_uri, "pointer= reads into JSON; this is not JSON", valid=[])
    value = document
    walked = ""
    for token in pointer.split("/")[1:] if pointer else []:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and _INDEX.fullmatch(key) and int(key) < len(value):
            value = value[int(key)]
        else:
            raise NotFound(
                text_uri,
                f"the JSON has nothing at {walked + '/' + token!r}",
                nearest=_pointer_nearest(uri, value, walked, key),
            )
        walked += "/" + token
    return Content(
        text_uri, "application/json", value, content.links, content.kind, True, None, content.meta
    )


def _pointer_nearest(uri: TmUri, node: Any, walked: str, key: str) -> list[str]:
    if isinstance(node, dict):
        names = [str(k) for k in node]
    elif isinstance(node, list):
        names = [str(i) for i in range(min(len(node), 1000))]
    else:
        names = []

    def escape(name: str) -> str:
        return name.replace("~", "~0").replace("/", "~1")

    candidates = [(n, str(uri.with_params(pointer=f"{walked}/{escape(n)}"))) for n in names]
    return rank(key, candidates, exclude=str(uri))


def check_range(uri: str, span: tuple[int, int], size: int) -> tuple[int, int]:
    """``span`` clipped to a thing of ``size`` bytes, or the refusal of a range that cannot be.

    Raises:
        BadFacet: the range starts past the end.
        TooLarge: the range is wider than one read returns.
    """
    start, end = span
    if start >= size and size > 0:
        raise BadFacet(
            uri,
            f"range={start}-{end} starts past the end ({size} bytes)",
            valid=[f"0-{size}"],
            size=size,
        )
    end = min(end, size)
    if end - start > READ_CAP:
        raise TooLarge(uri, f"a range reads at most {READ_CAP} bytes", size=size, cap=READ_CAP)
    return start, end


@dataclass(frozen=True)
class Cut:
    """A byte range as answered: its body and the bytes it holds (``start``..``end``)."""

    body: str | bytes
    start: int
    end: int
    asked: tuple[int, int]
    size: int
    why: str = WHOLE_CHARACTERS

    @property
    def moved(self) -> bool:
        """Whether the answer holds other bytes than those asked (a character kept whole)."""
        return (self.start, self.end) != self.asked

    def meta(self) -> dict[str, JsonValue] | None:
        """What the answer's ``_meta`` says of a range not answered as asked, else None."""
        if not self.moved and self.why == WHOLE_CHARACTERS:
            return None
        return {
            RANGE_META: {
                "asked": f"{self.asked[0]}-{self.asked[1]}",
                "given": f"{self.start}-{self.end}",
                "size": self.size,
                "why": self.why,
            }
        }


def cut_range(
    read: Callable[[int, int], bytes], span: tuple[int, int], size: int, *, text: bool, raw: bool
) -> Cut:
    """The answer to ``range=start-end`` of a thing of ``size`` bytes; ``read(a, b)`` its bytes.

    ``raw`` (``?as=raw&range=``) or not text: the bytes themselves, sent base64, never text
    that lost what it cut. Text: whole characters, never a U+FFFD for a character cut at either
    end. A character belongs to the range holding its first byte: a range starting inside one
    starts at it, a range ending inside one ends before it, so ranges split at any byte join
    back to the text (:attr:`Cut.moved`, said in :meth:`Cut.meta`).
    """
    start, end = span
    if raw or not text:
        return Cut(read(start, end), start, end, span, size)
    low = max(0, start - 3)
    chunk = read(low, end)
    first = start - low
    back = first
    while back > 0 and back < len(chunk) and _continues(chunk[back]):
        back -= 1
    if back < len(chunk) and not _continues(chunk[back]):
        first = back  # else not UTF-8 there: the bytes as asked
    last = len(chunk) if end >= size else _whole_end(chunk, first)
    if last - first > READ_CAP:
        last = _whole_end(chunk[: first + READ_CAP], first)
    try:
        body = chunk[first:last].decode("utf-8")
    except UnicodeDecodeError:  # not UTF-8: the bytes as asked, never text with U+FFFD
        return Cut(chunk[start - low :], start, end, span, size, NOT_UTF8)
    return Cut(body, low + first, low + last, span, size)


def _continues(byte: int) -> bool:
    """Whether a byte continues a UTF-8 character (``10xxxxxx``)."""
    return byte & 0xC0 == 0x80


def _whole_end(data: bytes, floor: int) -> int:
    """Where ``data`` ends on a character boundary: before a last character cut short."""
    for back in range(1, min(4, len(data) - floor) + 1):
        lead = data[-back]
        if _continues(lead):
            continue
        wanted = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4
        if lead < 0x80 or lead >> 3 > 0b11110:
            return len(data)  # ASCII, or a byte no character starts with: nothing cut
        return len(data) if back >= wanted else len(data) - back
    return len(data)


def _range(content: Content, uri: str, span: tuple[int, int], *, raw: bool) -> Content:
    data = content.body if isinstance(content.body, bytes) else to_text(content.body).encode()
    clipped = check_range(uri, span, len(data))
    text = is_text_type(content.mime_type)
    cut = cut_range(lambda a, b: data[a:b], clipped, len(data), text=text, raw=raw)
    meta = {**(content.meta or {}), **(cut.meta() or {})} or None
    return Content(
        uri, content.mime_type, cut.body, content.links, content.kind, True, len(data), meta
    )


def wire_size(content: Content) -> int:
    """Bytes the body takes before transport encoding."""
    if isinstance(content.body, bytes):
        return len(content.body)
    return len(to_text(content.body).encode("utf-8", "surrogatepass"))


def enforce_cap(content: Content, uri: TmUri) -> None:
    """Refuse a body over ``READ_CAP`` with ready templates for reading it in parts."""
    size = wire_size(content)
    if size <= READ_CAP:
        return
    raise too_large(uri, content.size or size)


#: The parts an answer too large for one read is read in, by the facet asked: a blame is read
#: in lines, never in bytes. A facet not named here is read in both.
PARTS_OF_FACET: dict[str | None, tuple[str, ...]] = {"blame": ("lines",)}
#: A part's address template, by part.
_TEMPLATES = {"range": ("START-END", "{start}-{end}"), "lines": ("FIRST-LAST", "{first}-{last}")}


def too_large(
    uri: TmUri, size: int, parts: Sequence[str] | None = None, *, cap: int = READ_CAP
) -> TooLarge:
    """The ``too-large`` refusal for ``uri``, with stat and a template for each part that reads.

    ``parts``: the parts this thing is read in (``range``, ``lines``), as its mount knows it
    (``lines`` cuts text only); by default those of the facet asked (:data:`PARTS_OF_FACET`).
    None of them when none would read: a refusal offers only addresses that read.
    """
    base = uri.keeping("at", "as")
    if parts is None:
        parts = PARTS_OF_FACET.get(uri.param("as"), ("range", "lines"))
    templates = {
        part: str(base.with_params({part: mark})).replace(mark, shape)
        for part, (mark, shape) in _TEMPLATES.items()
        if part in parts
    }
    said = f"it is {size} bytes; one read returns at most {cap}"
    return TooLarge(
        str(uri),
        said + (": read it in parts" if templates else ""),
        size=size,
        cap=cap,
        **templates,
        stat=str(uri.keeping("at", **{"as": "stat"})),
    )
