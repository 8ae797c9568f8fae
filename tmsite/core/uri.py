r"""The one module that parses and builds every ``tm://`` URI.

Shape: ``tm://<host>/<mount>/<segment>/…[/][?<param>=<value>&…]``.

* ``tm://`` alone names the list of hosts; ``tm://<host>/`` (or ``tm://<host>``) the root.
* A trailing ``/`` marks a collection. Past the mount, the segments are the backend's own.
* Segments are percent-decoded exactly once, after splitting, to ``str`` with
  ``surrogateescape`` so a file name that is not UTF-8 keeps its bytes. A decoded segment may
  therefore hold ``/``, ``\`` or NUL: mounts refuse those, the parser only carries them.
* Query parameters are representation (facets) and parts, never identity. Each key may appear
  once. Built URIs put them in one canonical order.

Nothing else in tmsite concatenates a ``tm://`` string.

Spec: NS2.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from urllib.parse import quote, unquote_to_bytes

from tmsite.core.errors import BadFacet, BadUri

SCHEME = "tm"
MAX_URI_LENGTH = 8192
#: What a URI may not hold as it is: a space, a control character, DEL.
_SPACE_OR_CONTROL = re.compile("[\x00-\x20\x7f]")
#: Characters left unescaped in a path segment (RFC 3986 pchar minus ``+``, ``&`` and ``=``
#: which readers confuse with a query).
_SEGMENT_SAFE = "-._~!$'()*,;:@"
_QUERY_SAFE = "-._~!$'()*,;:@/"
#: The canonical order of query parameters in every built URI.
PARAM_ORDER: tuple[str, ...] = (
    "at",
    "as",
    "rel",
    "min",
    "n",
    "depth",
    "lines",
    "pointer",
    "range",
    "cursor",
)


@dataclass(frozen=True)
class TmUri:
    """A parsed ``tm://`` URI.

    Attributes:
        host: The host, or ``""`` for ``tm://`` (the list of hosts).
        mount: The first path segment, or None for the host root.
        path: The decoded segments after the mount.
        collection: Whether the URI path ends with ``/``.
        params: Query parameters in the order given.
    """

    host: str
    mount: str | None = None
    path: tuple[str, ...] = ()
    collection: bool = False
    params: tuple[tuple[str, str], ...] = field(default=())

    # ---- identity and shape -------------------------------------------------------------

    @property
    def is_hosts(self) -> bool:
        """Whether this is ``tm://``, the list of hosts."""
        return self.host == ""

    @property
    def is_root(self) -> bool:
        """Whether this is a host's root, ``tm://<host>/``, which lists the mounts."""
        return self.host != "" and self.mount is None

    @property
    def is_mount_root(self) -> bool:
        """Whether this names a mount itself (``tm://<host>/<mount>/``), nothing below it."""
        return self.mount is not None and not self.path

    @property
    def query(self) -> dict[str, str]:
        """The parameters as a dict (each key appears once, so nothing is lost)."""
        return dict(self.params)

    def param(self, name: str) -> str | None:
        """The value of parameter ``name``, or None when it is not given."""
        for key, value in self.params:
            if key == name:
                return value
        return None

    @property
    def identity(self) -> TmUri:
        """The same thing without any parameter."""
        return replace(self, params=())

    @property
    def name(self) -> str:
        """The last segment (the mount for a mount root, ``""`` for the root)."""
        if self.path:
            return self.path[-1]
        return self.mount or ""

    # ---- derivation ---------------------------------------------------------------------

    def with_params(
        self, params: Mapping[str, str | None] | None = None, **more: str | None
    ) -> TmUri:
        """A copy whose parameters are replaced: ``None`` removes one."""
        merged = dict(self.params)
        for key, value in {**(params or {}), **more}.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return replace(self, params=tuple(merged.items()))

    def keeping(self, *names: str, **more: str | None) -> TmUri:
        """A copy keeping only ``names`` among the current parameters, plus ``more``."""
        kept = {key: value for key, value in self.params if key in names}
        return replace(self, params=tuple(kept.items())).with_params(more)

    def child(self, name: str, *, collection: bool = False) -> TmUri:
        """The URI of a child of this collection (parameters dropped)."""
        if self.is_hosts:
            return TmUri(host=name, collection=True)
        if self.mount is None:
            return TmUri(self.host, name, (), collection)
        return TmUri(self.host, self.mount, (*self.path, name), collection)

    def as_collection(self) -> TmUri:
        """The same URI with a trailing ``/`` (parameters kept)."""
        return replace(self, collection=True)

    def as_leaf(self) -> TmUri:
        """The same URI without a trailing ``/`` (parameters kept)."""
        return replace(self, collection=False)

    def parent(self) -> TmUri | None:
        """The collection holding this one, or None for ``tm://``."""
        if self.is_hosts:
            return None
        if self.mount is None:
            return TmUri("")
        if not self.path:
            return TmUri(self.host, collection=True)
        return TmUri(self.host, self.mount, self.path[:-1], True)

    # ---- text ---------------------------------------------------------------------------

    @cached_property
    def text(self) -> str:
        """The canonical text, built once per instance (a read emits each URI several times)."""
        return build_text(self)

    def __str__(self) -> str:
        return self.text


def parse(text: object) -> TmUri:
    """Parse client text into a ``TmUri``.

    Raises:
        BadUri: not a string, too long, not ``tm://``, userinfo, port, fragment, or a
            percent-escape or query that does not decode.
        BadFacet: a query parameter given twice.
    """
    text, rest = _split_scheme(text)
    rest, _, query = rest.partition("?")
    host, _, path = rest.partition("/")
    for char, why in _NOT_IN_HOST:
        if char in host:
            raise BadUri(text, why)
    params = _parse_query(query, text)
    if not host:
        if path:
            raise BadUri(text, "tm:// names the hosts; a path needs a host")
        return TmUri("", params=params)
    if not path:
        return TmUri(host, params=params, collection=True)
    collection = path.endswith("/")
    raw_segments = path[:-1].split("/") if collection else path.split("/")
    segments = tuple(_decode(segment, text) for segment in raw_segments)
    return TmUri(host, segments[0], segments[1:], collection, params)


#: What a host may not hold, in the order it is checked, and the sentence refusing it.
_NOT_IN_HOST: tuple[tuple[str, str], ...] = (
    ("@", "a tm:// URI has no userinfo"),
    (":", "a tm:// URI has no port"),
    # A decoded host could hold '/' or non-UTF-8 bytes that no built URI can echo.
    ("%", "a tm:// host is a plain name, never percent-encoded"),
)


def _split_scheme(text: object) -> tuple[str, str]:
    """Client text, checked as a whole, and what follows its ``tm://``."""
    if not isinstance(text, str):
        raise BadUri(None, "a tm:// URI must be a string")
    if len(text) > MAX_URI_LENGTH:
        raise BadUri(text[:200] + "…", f"the URI is longer than {MAX_URI_LENGTH} characters")
    if _SPACE_OR_CONTROL.search(text):
        raise BadUri(text, "a URI holds no spaces or control characters; percent-encode them")
    scheme, sep, rest = text.partition("://")
    if not sep or scheme != SCHEME:
        raise BadUri(text, "only tm:// URIs are served here")
    if "#" in rest:
        raise BadUri(text, "a tm:// URI has no fragment; parts are query parameters")
    return text, rest


def _decode(segment: str, text: str) -> str:
    try:
        return unquote_to_bytes(segment).decode("utf-8", "surrogateescape")
    except ValueError as exc:  # pragma: no cover - unquote_to_bytes accepts any str
        raise BadUri(text, f"a percent-escape does not decode: {exc}") from exc


def _parse_query(query: str, text: str) -> tuple[tuple[str, str], ...]:
    if not query:
        return ()
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for chunk in query.split("&"):
        if not chunk:
            continue
        key, _, value = chunk.partition("=")
        try:
            key = unquote_to_bytes(key.replace("+", " ")).decode("utf-8")
            value = unquote_to_bytes(value.replace("+", " ")).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadUri(text, "a query parameter is not UTF-8") from exc
        if key in seen:
            raise BadFacet(text, f"the parameter {key!r} is given twice", valid=[])
        seen.add(key)
        pairs.append((key, value))
    return tuple(pairs)


@lru_cache(maxsize=8192)
def quote_segment(segment: str) -> str:
    """Percent-encode one decoded segment (bytes kept through ``surrogateescape``)."""
    return quote(segment.encode("utf-8", "surrogateescape"), safe=_SEGMENT_SAFE)


def build_text(uri: TmUri) -> str:
    """The canonical text of ``uri``: percent-encoded, parameters in canonical order."""
    if uri.is_hosts:
        base = f"{SCHEME}://"
    elif uri.mount is None:
        base = f"{SCHEME}://{uri.host}/"
    else:
        segments = "/".join(quote_segment(s) for s in (uri.mount, *uri.path))
        base = f"{SCHEME}://{uri.host}/{segments}{'/' if uri.collection else ''}"
    if not uri.params:
        return base
    return f"{base}?{encode_query(uri.params)}"


def encode_query(params: Iterable[tuple[str, str]]) -> str:
    """The query string of ``params``: percent-encoded, in ``PARAM_ORDER``, then by name."""
    order = {name: index for index, name in enumerate(PARAM_ORDER)}
    ordered = sorted(params, key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    return "&".join(
        f"{quote(key, safe='')}={quote(value, safe=_QUERY_SAFE)}" for key, value in ordered
    )


def build(
    host: str,
    mount: str | None = None,
    path: Iterable[str] = (),
    *,
    collection: bool = False,
    params: Mapping[str, str] | None = None,
) -> str:
    """Build the text of a ``tm://`` URI from its parts."""
    return build_text(TmUri(host, mount, tuple(path), collection, tuple((params or {}).items())))
