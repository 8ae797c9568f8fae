"""The shapes mounts return: a read's content, a listing's children, a template.

Spec: NS5.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from typing import Any, Generic, Protocol, TypeVar, overload

from tmsite.core.facets import Facets
from tmsite.core.links import Link
from tmsite.core.uri import TmUri

T = TypeVar("T")

JsonValue = Any  # dict / list / str / int / float / bool / None, as json.dumps takes it


#: Media type of what the server assembles.
def vnd(kind: str) -> str:
    """``application/vnd.tm.<kind>+json``, the type of a JSON thing the server assembles."""
    return f"application/vnd.tm.{kind}+json"


@dataclass(frozen=True)
class Request:
    """One read of one URI: the parsed URI and its checked parameters."""

    uri: TmUri
    facets: Facets

    @property
    def text(self) -> str:
        """The URI's canonical text: what refusals echo as ``data.uri``."""
        return str(self.uri)


@dataclass
class Content:
    """What a read answers.

    Attributes:
        uri: The URI the answer stands for: what was asked, canonical, with its part kept.
        mime_type: ``application/vnd.tm.<kind>+json`` for assembled things, else the file's
            own type.
        body: ``str`` (text), ``bytes`` (binary, sent base64), or a JSON value (sent as text).
        links: Every link of the thing; the namespace orders and caps them.
        kind: The kind of thing read (``listing``, ``file``, ``stat``, ``log`` …).
        part_applied: The mount already cut the part (``range``/``lines``) asked for.
        size: The whole thing's size in bytes, when the body is a part of it.
        meta: What a surface with a ``_meta`` sends beside the body (provenance of a body that
            is not JSON and so cannot carry its own), by key; None when there is nothing.
    """

    uri: str
    mime_type: str
    body: str | bytes | JsonValue
    links: list[Link] = field(default_factory=list)
    kind: str = "file"
    part_applied: bool = False
    size: int | None = None
    meta: dict[str, JsonValue] | None = None

    @property
    def is_json(self) -> bool:
        """Whether the body is a JSON value (neither text nor bytes)."""
        return not isinstance(self.body, (str, bytes))


class Reader(Protocol):
    """What reads an address through the namespace: its host and its one read path."""

    @property
    def host(self) -> str:
        """The host whose namespace this reads (``tm://<host>/``)."""
        ...

    def read(self, text: object) -> Content:
        """Read one tm:// URI as every surface reads it.

        Raises:
            Refusal: the one rejection tree.
        """
        ...


#: A facet the namespace answers for any address (``?as=blocks``): given the namespace to read
#: through and the parsed URI, the whole answer. The registry hands these to the namespace.
FacetAssembler = Callable[[Reader, TmUri], Content]


def iso_utc(moment: datetime) -> str:
    """``moment`` in ISO 8601, UTC, to the second, spelled with ``Z`` (``lastModified``)."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class Emphasis:
    """Who a thing is for and how much it matters: MCP's ``audience`` and ``priority``."""

    audience: tuple[str, ...]
    priority: float


@dataclass(frozen=True)
class Entry:
    """One child in a listing, or one entry of the ``resources/list`` map.

    ``size`` is the byte length of what a plain read answers, ``modified`` when the thing last
    changed (UTC), ``emphasis`` who it is for; each only when the mount knows it.
    """

    uri: str
    name: str
    collection: bool
    mime_type: str | None = None
    size: int | None = None
    title: str | None = None
    redacted: bool = False
    extra: dict[str, JsonValue] = field(default_factory=dict)
    modified: datetime | None = None
    emphasis: Emphasis | None = None

    def annotations(self) -> dict[str, JsonValue] | None:
        """MCP's ``annotations`` of the entry (``lastModified``, ``audience``, ``priority``).

        None when there are none; a redacted entry says no more than its name.
        """
        out: dict[str, JsonValue] = {}
        if self.emphasis is not None:
            out["audience"] = list(self.emphasis.audience)
            out["priority"] = self.emphasis.priority
        if self.modified is not None and not self.redacted:
            out["lastModified"] = iso_utc(self.modified)
        return out or None

    def to_json(self) -> dict[str, JsonValue]:
        """The child as a listing shows it; a redacted one shows neither type, size nor time."""
        out: dict[str, JsonValue] = {"uri": self.uri, "name": self.name}
        if self.redacted:
            out["redacted"] = True
        elif self.mime_type is not None:
            out["mimeType"] = self.mime_type
        out["isCollection"] = self.collection
        if self.size is not None and not self.redacted:
            out["size"] = self.size
        if self.title is not None:
            out["title"] = self.title
        annotations = self.annotations()
        if annotations is not None:
            out["annotations"] = annotations
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class Stat:
    """What ``?as=stat`` says of one thing, whatever the mount: the body of every stat.

    ``uri``, ``name``, ``mimeType`` (the type the thing is listed and read as) and
    ``isCollection`` always; ``size``, ``modified`` (UTC) and ``text`` (whether a plain read
    answers text) when the mount knows them, absent when it does not; then the mount's own
    fields (a repository and commit, a status, a count …), in the order given.
    """

    uri: str
    name: str
    mime_type: str
    collection: bool = False
    size: int | None = None
    modified: datetime | None = None
    text: bool | None = None
    extra: dict[str, JsonValue] = field(default_factory=dict)

    def to_json(self) -> dict[str, JsonValue]:
        """The body of the stat: the fixed fields, those known, then the mount's own."""
        out: dict[str, JsonValue] = {
            "uri": self.uri,
            "name": self.name,
            "mimeType": self.mime_type,
            "isCollection": self.collection,
        }
        if self.size is not None:
            out["size"] = self.size
        if self.modified is not None:
            out["modified"] = self.modified.isoformat()
        if self.text is not None:
            out["text"] = self.text
        out.update(self.extra)
        return out

    def content(self, uri: str, links: list[Link]) -> Content:
        """The stat as a read's answer (``application/vnd.tm.stat+json``)."""
        return Content(uri, vnd("stat"), self.to_json(), links, kind="stat")


class LazyEntries(Sequence[Entry], Generic[T]):
    """A listing's children made only when a page asks for them, from cheap items.

    The items are names, keys or tree entries: a listing of 100,000 children builds one page
    of entries.

    A mount subclasses it with :meth:`entry`; it may override :meth:`page` (to cache a page)
    or :meth:`item` (to find one item more cheaply than indexing ``items``).
    """

    def __init__(self, items: Sequence[T]) -> None:
        self.items = items

    def entry(self, item: T) -> Entry:
        """The listing entry for one item; every subclass writes it."""
        raise NotImplementedError

    def item(self, index: int) -> T:
        """The item at ``index`` (by default, by indexing ``items``)."""
        return self.items[index]

    def page(self, index: slice) -> list[Entry]:
        """The entries of the items ``index`` selects: one page of a listing."""
        return [self.entry(item) for item in self.items[index]]

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...

    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            return self.page(index)
        return self.entry(self.item(index))


@dataclass
class Listing:
    """A collection's children, in order, with what the mount adds to the body and links."""

    children: Sequence[Entry]
    extra: dict[str, JsonValue] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    kind: str = "listing"


@dataclass(frozen=True)
class Template:
    """A resource template: the grammar of one mount, taught to clients."""

    name: str
    uri_template: str
    title: str
    description: str
    arguments: tuple[str, ...] = ()
    mime_type: str | None = None

    def to_json(self) -> dict[str, JsonValue]:
        """The template as ``resources/templates/list`` shows it (not its ``arguments``)."""
        out: dict[str, JsonValue] = {
            "uriTemplate": self.uri_template,
            "name": self.name,
            "title": self.title,
            "description": self.description,
        }
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        return out


@dataclass(frozen=True)
class Document:
    """One thing a mount offers to a search index.

    Attributes:
        uri: The thing's address; a hit names it (narrowed with ``?lines=`` when ``lines``).
        title: A few words that name it (a file's name, a record's title).
        kind: What it is (``file``, ``commit``, the entity kind), kept so searches can keep it.
        stamp: Changes whenever its text may have changed (a file's mtime and size): an index
            that holds a document with this stamp need not read it again.
        mime_type: What reading ``uri`` gives.
        body: Its text, read only when an index needs it; ``""`` for a thing found by its
            name only (binary, or past the read cap).
        lines: Whether ``uri?lines=FIRST-LAST`` reads those lines of the text ``body`` gives.
        parts: For a thing read as JSON, its passages: (JSON pointer, that part's words) pairs,
            read only when an index needs them; a hit then names ``uri?pointer=`` the part it
            matched. None: the thing is one passage (``body``, or its lines).
    """

    uri: str
    title: str
    kind: str
    stamp: str
    mime_type: str
    body: Callable[[], str]
    lines: bool = False
    parts: Callable[[], list[tuple[str, str]]] | None = None

    @property
    def text(self) -> str:
        """The document's text (read now)."""
        return self.body()


class Truncated(list[str]):
    """Completion values cut at a mount's limit: there are more, and how many is not known.

    A surface reports no ``total`` for them (or says it is a lower bound), never the limit as
    though it were the count.
    """


def capped(values: Iterable[str], limit: int) -> list[str]:
    """At most ``limit`` of ``values``, taken lazily; a :class:`Truncated` when there were more."""
    taken = list(islice(values, limit + 1))
    return Truncated(taken[:limit]) if len(taken) > limit else taken
