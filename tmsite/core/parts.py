"""Parts of a thing (``lines``, ``pointer``, ``range``) and the read cap.

Applied once, after a mount has read, so every mount honours parts the same way; a mount that
can cut a part more cheaply (seeking in a large file) does so and marks it applied.

Spec: NS4, NS6.
"""

from __future__ import annotations

import json
import re
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
    return _range(content, text_uri, facets.byte_range)


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


def _range(content: Content, uri: str, span: tuple[int, int]) -> Content:
    data = content.body if isinstance(content.body, bytes) else to_text(content.body).encode()
    start, end = check_range(uri, span, len(data))
    piece = data[start:end]
    body: str | bytes = (
        piece.decode("utf-8", "replace") if is_text_type(content.mime_type) else piece
    )
    return Content(
        uri, content.mime_type, body, content.links, content.kind, True, len(data), content.meta
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


def too_large(uri: TmUri, size: int) -> TooLarge:
    """The ``too-large`` refusal for ``uri``, with ``range``/``lines`` templates and stat."""
    base = uri.keeping("at", "as")
    ranged = str(base.with_params(range="START-END")).replace("START-END", "{start}-{end}")
    lined = str(base.with_params(lines="FIRST-LAST")).replace("FIRST-LAST", "{first}-{last}")
    return TooLarge(
        str(uri),
        f"it is {size} bytes; one read returns at most {READ_CAP}: read it in parts",
        size=size,
        cap=READ_CAP,
        range=ranged,
        lines=lined,
        stat=str(uri.keeping("at", **{"as": "stat"})),
    )
