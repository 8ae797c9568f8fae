r"""Reading another server's resources: ``mcp/<server>/resources/<uri>``.

The segment after ``resources/`` is the upstream URI, percent-encoded as one path segment. It
is data: it is sent to the server in ``resources/read`` only when the server declared it — as a
resource, or as a URI one of its declared templates yields — and never dereferenced here.

* **What may be read.** A declared resource's URI exactly; or a URI a declared template fits,
  for templates of simple (``{name}``) and reserved (``{+name}``) expressions. A simple value
  holds no ``/`` or ``\`` (spelled or percent-encoded); no value holds a ``.``/``..`` segment,
  white space or a control character, or is longer than :data:`MAX_VALUE`. Such a value, a
  URI past :data:`MAX_UPSTREAM_URI` characters or one holding a control character is refused
  ``bad-argument`` (``argument: uri``, ``failed`` naming the rule) before anything is asked;
  any other URI is ``not-found``, the server not asked.
* **The answer.** The item whose URI is the one asked (else the first), its text as text and
  its blob as bytes, typed with its ``mimeType`` (else the declaration's, else ``text/plain``
  or ``application/octet-stream``); capped like every read (256 KiB, then parts). Provenance —
  the server, the upstream URI, the declaration it comes from, when it was read, the server's
  sources and licence basis, the item's own ``_meta`` (capped) as ``upstreamMeta`` — rides in
  ``_meta["tinymachines.ai/provenance"]``. Links: ``up``/``collection`` to ``resources/``,
  ``describedby`` to the declaration and to the stat, each typed with its media type.
* **Faults** are the mount's (``tmsite.mounts.mcp.errors``): a server that never answered,
  wants a token or is not allowed is ``gated``/``unreachable`` before it is started; one that
  answers too slowly is ``timeout``; too much (a message over the client's byte cap, more than
  100 items) or malformed (an item with neither or both of text and blob, bad base64, a
  ``mimeType`` that is no media type) is ``unreachable`` naming which. A JSON-RPC "no such
  resource" (-32002, or -32602 as the official SDKs answer) is ``not-found`` with the server's
  words in ``peerError``.

``?as=declaration`` reads the declaration itself (``vnd.tm.resource``, or the template's
``vnd.tm.resource-template``); ``?as=stat`` says what the declaration says (type, size) without
asking the server; nor does ``?as=links``.

Spec: MCP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from tmsite.core.errors import BadArgument
from tmsite.core.parts import dumps, is_text_type
from tmsite.mcpclient import ResourceContent
from tmsite.mcpclient.client import MAX_MEDIA_TYPE

#: The longest upstream URI the mount sends to a server.
MAX_UPSTREAM_URI = 2048
#: The longest value one template expression may take.
MAX_VALUE = 256
#: The most bytes of an item's own ``_meta`` passed on (as compact JSON); past it, dropped.
MAX_UPSTREAM_META = 8 * 1024
#: JSON-RPC codes a server answers for "no such resource": MCP's -32002, the SDKs' -32602.
NOT_FOUND_CODES = frozenset({-32002, -32602})

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SPACE = re.compile(r"\s")
_EXPRESSION = re.compile(r"\{(\+?)([A-Za-z0-9_]+)\}")
_DOT_SEGMENT = re.compile(r"(?:^|/)\.{1,2}(?:/|$)")
_MEDIA = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*(;.*)?", re.I | re.A)


@dataclass(frozen=True)
class Found:
    """What an upstream URI was matched to.

    Attributes:
        item: the declaration (a resource, or the template the URI fits).
        template: the template's text when the URI fits one, else None.
        bindings: the template's values, by name.
    """

    item: Mapping[str, Any]
    template: str | None = None
    bindings: Mapping[str, str] | None = None

    @property
    def kind(self) -> str:
        """``resource`` or ``resource-template``: what the declaration is."""
        return "resource" if self.template is None else "resource-template"


def check_uri(uri: str, upstream: str) -> None:
    """Refuse an upstream URI no server is asked for, whatever it declared.

    Raises:
        BadArgument: too long (``failed: too-long``, ``limit``) or carrying a control
            character (``failed: control``).
    """
    if len(upstream) > MAX_UPSTREAM_URI:
        raise BadArgument(
            uri,
            f"the upstream URI is longer than {MAX_UPSTREAM_URI} characters",
            argument="uri",
            failed="too-long",
            limit=MAX_UPSTREAM_URI,
            valid=[],
        )
    if _CONTROL.search(upstream):
        raise BadArgument(
            uri,
            "the upstream URI holds a control character",
            argument="uri",
            failed="control",
            valid=[],
        )


def find(
    uri: str,
    upstream: str,
    resources: Sequence[Mapping[str, Any]],
    templates: Sequence[Mapping[str, Any]],
) -> Found | None:
    """The declaration ``upstream`` comes from: a resource, or the first template it fits.

    Raises:
        BadArgument: it fits a template only with a value the rules above refuse
            (``failed``: ``traversal``, ``separator`` or ``too-long``; ``template``).
    """
    for item in resources:
        if item.get("uri") == upstream:
            return Found(item)
    for item in templates:
        text = item.get("uriTemplate")
        if not isinstance(text, str):
            continue
        if text == upstream:
            return Found(item, text, {})
        bindings = _fit(text, upstream)
        if bindings is None:
            continue
        for name, (value, reserved) in bindings.items():
            _check_value(uri, text, name, value, reserved)
        return Found(item, text, {name: value for name, (value, _) in bindings.items()})
    return None


def _fit(template: str, upstream: str) -> dict[str, tuple[str, bool]] | None:
    """The values that make ``template`` yield ``upstream`` (simple and reserved only)."""
    pattern: list[str] = []
    names: list[tuple[str, bool]] = []
    at = 0
    for match in _EXPRESSION.finditer(template):
        literal = template[at : match.start()]
        if "{" in literal or "}" in literal:
            return None  # an operator this reader does not expand: never fits
        pattern.append(re.escape(literal))
        reserved = match[1] == "+"
        pattern.append("(.+?)" if reserved else "([^/?#]+?)")
        names.append((match[2], reserved))
        at = match.end()
    tail = template[at:]
    if not names or "{" in tail or "}" in tail:
        return None
    pattern.append(re.escape(tail))
    found = re.fullmatch("".join(pattern), upstream, re.DOTALL)
    if found is None:
        return None
    out: dict[str, tuple[str, bool]] = {}
    for (name, reserved), value in zip(names, found.groups(), strict=True):
        if name in out and out[name][0] != value:
            return None
        out[name] = (value, reserved)
    return out


def _check_value(uri: str, template: str, name: str, value: str, reserved: bool) -> None:
    decoded = unquote(unquote(value))
    failed, why = "", ""
    if len(value) > MAX_VALUE:
        failed, why = "too-long", f"is longer than {MAX_VALUE} characters"
    elif _DOT_SEGMENT.search(decoded.replace("\\", "/")):
        failed, why = "traversal", "holds a . or .. segment"
    elif not reserved and ("/" in decoded or "\\" in decoded):
        failed, why = "separator", "holds a path separator, which a simple expression cannot"
    elif _SPACE.search(decoded) or _CONTROL.search(decoded):
        failed, why = "control", "holds white space or a control character"
    elif "{" in value or "}" in value:
        failed, why = "separator", "holds a brace"
    if failed:
        raise BadArgument(
            uri,
            f"the value for {{{name}}} in the template {template[:200]!r} {why}; the server "
            "is not asked",
            argument="uri",
            failed=failed,
            template=template[:MAX_UPSTREAM_URI],
            valid=[],
        )


def declared_type(item: Mapping[str, Any]) -> str | None:
    """The declaration's ``mimeType`` when it is a well-formed media type."""
    mime = item.get("mimeType")
    if isinstance(mime, str) and len(mime) <= MAX_MEDIA_TYPE and _MEDIA.fullmatch(mime):
        return mime
    return None


def declared_size(item: Mapping[str, Any]) -> int | None:
    """The declaration's ``size`` when it is a non-negative integer."""
    size = item.get("size")
    if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
        return size
    return None


def chosen(upstream: str, contents: Sequence[ResourceContent]) -> ResourceContent | None:
    """The item answering ``upstream``: the one with that URI, else the first."""
    for item in contents:
        if item.uri == upstream:
            return item
    return contents[0] if contents else None


def body_and_type(item: ResourceContent, declared: Mapping[str, Any]) -> tuple[str | bytes, str]:
    """The item's body (text, or the blob's bytes) and the media type it is read as."""
    mime = item.mime_type or declared_type(declared)
    if item.text is not None:
        return item.text, mime or "text/plain; charset=utf-8"
    assert item.blob is not None
    return item.blob, mime or "application/octet-stream"


def is_text(mime: str | None) -> bool | None:
    """Whether a read of that type answers text (None when the type is unknown)."""
    return None if mime is None else is_text_type(mime)


def provenance(
    *,
    server: str,
    server_uri: str,
    upstream: str,
    found: Found,
    declaration_uri: str,
    item: ResourceContent,
    count: int,
    sources: Sequence[str],
    licence_basis: str,
) -> dict[str, Any]:
    """How the content was read: server, upstream URI, declaration, when, and the sources."""
    prov: dict[str, Any] = {
        "server": server,
        "serverUri": server_uri,
        "upstreamUri": upstream,
        "declaration": declaration_uri,
        "readAt": datetime.now(UTC).isoformat(),
        "sources": list(sources),
        "licenceBasis": licence_basis,
    }
    if found.template is not None:
        prov["template"] = found.template
        prov["arguments"] = dict(found.bindings or {})
    if item.uri != upstream:
        prov["contentUri"] = item.uri[:MAX_UPSTREAM_URI]
    if item.mime_type is not None:
        prov["mimeType"] = item.mime_type
    if count > 1:
        prov["contents"] = count
    return prov


def upstream_meta(item: ResourceContent) -> dict[str, Any] | None:
    """The item's own ``_meta``, when small enough to pass on."""
    if not item.meta:
        return None
    if len(dumps(item.meta).encode()) > MAX_UPSTREAM_META:
        return {"dropped": f"more than {MAX_UPSTREAM_META} bytes"}
    return dict(item.meta)
