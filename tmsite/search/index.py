"""The search index: kept in step with the mounts' documents, asked for hits.

``sync`` walks each mount's ``documents()`` and rewrites only those whose stamp changed,
dropping those gone; ``refresh`` does the same for the documents at a few addresses of a mount
(what one change touched), reading only those; ``search`` asks the engine of the database in
use. The index lives in the
box's own database (SQLite by default, PostgreSQL when ``TM_DATABASE_URL`` names it), so every
machine of a many-machine box reads the same index; on PostgreSQL an advisory lock lets one
machine write at a time, and the others skip that round.

Ranking: the engine's own (BM25 on SQLite, cover density on PostgreSQL) with titles and
headings weighted above bodies; a hit is a document's best passage. A document's title (with
its name and its folder's, which say what it is: ``trails``, ``decisions``, ``ja``) is weighted
as a title with its first passage only, so a title match names the passage that opens the
document rather than whichever passage is shortest; the later passages hold it with their
heading, so every word of a question may be found between a title and a section.
A document's inbound links in the namespace (:func:`inbound`, counted when a sync writes it; a
change applied alone keeps the count) lift its score a little and break ties; the order the
passages were indexed in breaks the rest.

Spec: SRCH1, SRCH2.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from django.db import connections, transaction

from tmsite.core.errors import Refusal
from tmsite.core.types import Document
from tmsite.core.uri import TmUri, parse
from tmsite.search.engines import ENGINES, Engine, Found, Row, best, chunks
from tmsite.search.passages import Passage, cut, title_of, whole
from tmsite.search.query import Query, indexable, parse_query

#: Seconds of the engine's work one search may spend (CPU on SQLite, the statement's time on
#: PostgreSQL); past it the search is refused ``timeout``.
BOUND_SECONDS = 2.0
#: Documents written per transaction (a long walk never holds the write lock long).
BATCH = 200
#: Changed documents a sync names (a rebuild names its first ones only).
MAX_TOLD = 1000
_writing = threading.Lock()


class Offers(Protocol):
    """A mount, as the index sees it."""

    def documents(self) -> Iterator[Document]:
        """What it offers to the index."""
        ...

    def documents_under(self, uri: TmUri) -> Iterator[Document]:
        """What it offers at ``uri`` or below it."""
        ...


@dataclass
class Synced:
    """What one sync did.

    Documents written, dropped, left as they were; whether it was skipped because another
    machine held the write lock.
    """

    written: int = 0
    dropped: int = 0
    unchanged: int = 0
    skipped: bool = False
    #: The documents written or dropped (their addresses), the first ``MAX_TOLD``.
    changed: list[str] = field(default_factory=list)


def engine(using: str = "default") -> Engine:
    """The engine of database ``using``."""
    return ENGINES[connections[using].vendor]


def create(using: str = "default") -> None:
    """Make the index's tables in database ``using`` (idempotent)."""
    with connections[using].cursor() as cursor:
        engine(using).create(cursor)


def rows_of(mount: str, document: Document, links: int | None = None) -> list[Row]:
    """The passages of ``document`` as stored.

    ``links``: its inbound links (see ``inbound``); None keeps the count the index holds.
    """
    text = document.text
    markdown = document.mime_type == "text/markdown"
    title = title_of(text, document.title) if markdown else document.title
    uri = parse(document.uri)
    cuts = _cuts(document, text, markdown, uri)
    name = uri.name or ""
    folder = uri.path[-2] if len(uri.path) >= 2 else ""
    named = [title, name if name != title else "", folder]
    index_title = indexable(" ".join(word for word in named if word))
    rows = []
    for number, (address, passage) in enumerate(cuts):
        rows.append(
            Row(
                document.uri,
                address,
                mount,
                document.kind,
                document.mime_type,
                title,
                passage.heading,
                passage.text,
                index_title if number == 0 else "",
                indexable(f"{title} {passage.heading}" if number else passage.heading),
                indexable(passage.text),
                links,
            )
        )
    return rows


def inbound(mounts: Mapping[str, Offers], uri: str) -> int:
    """The typed links into ``uri`` in the namespace of ``mounts``.

    Each ``tm:`` link a mount holds about a thing (``links_into``: a page rendered from a
    file, the file's copy in git, a record read by a page) is paired with its inverse from the
    thing it names, so their number is the number of things that link to this one. Counted
    once per relation and target; a mount that cannot answer counts none.
    """
    target = parse(uri)
    held: set[tuple[str, str]] = set()
    for mount in mounts.values():
        links_into = getattr(mount, "links_into", None)
        if links_into is None:
            continue
        try:
            links = links_into(target)
        except Refusal:
            continue
        held.update((link.rel, link.href) for link in links if link.rel.startswith("tm:"))
    return len(held)


def _cuts(document: Document, text: str, markdown: bool, uri: TmUri) -> list[tuple[str, Passage]]:
    """Each passage with the address that reads it: by lines, by pointer, or the whole."""
    if document.parts is not None:
        parts = [(pointer, words) for pointer, words in document.parts() if words.strip()]
        if parts:
            return [
                (str(uri.with_params(pointer=pointer)), Passage(0, 0, _last_token(pointer), words))
                for pointer, words in parts
            ]
    cuts = (cut(text, markdown) if document.lines else whole(text)) or [Passage(0, 0, "", "")]
    return [
        (
            str(uri.with_params(lines=f"{p.first}-{p.last}")) if p.first else document.uri,
            p,
        )
        for p in cuts
    ]


def _last_token(pointer: str) -> str:
    """A part's heading: its pointer's last token, unescaped (``/fields/name`` → ``name``)."""
    return pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")


def sync(
    mounts: Mapping[str, Offers],
    using: str = "default",
    *,
    full: bool = False,
    whole: bool = True,
) -> Synced:
    """Bring the index in step with ``mounts`` (with ``whole``, every mount not in it is dropped).

    ``full`` rewrites every document, whatever its stamp.
    """
    done = Synced()
    with _writing:
        held = _held(using)
        for name in sorted(set(held) - set(mounts)) if whole else []:
            _write(using, done, name, [], list(held[name]))
        for name, mount in mounts.items():
            count = partial(inbound, mounts) if whole else None  # all the namespace
            _bring(using, done, name, mount.documents(), held.get(name, {}), full, count)
            if done.skipped:
                return done
        if done.written or done.dropped:
            _applied(using)
    return done


def refresh(name: str, mount: Offers, addresses: Iterable[TmUri], using: str = "default") -> Synced:
    """Bring the documents of mount ``name`` at ``addresses`` (or below, a collection) in step.

    Reads only what is there (``documents_under``) and the index's rows for those addresses:
    a changed file costs a stat and its text, whatever the size of the rest.
    """
    done = Synced()
    with _writing:
        for address in addresses:
            documents = mount.documents_under(address)
            _bring(using, done, name, documents, _held_at(using, name, address), False)
            if done.skipped:
                return done
        if done.written or done.dropped:
            _applied(using)
    return done


def _bring(
    using: str,
    done: Synced,
    name: str,
    documents: Iterable[Document],
    stamps: Mapping[str, str],
    full: bool,
    count: Callable[[str], int] | None = None,
) -> None:
    """Write the ``documents`` of mount ``name`` whose stamp moved (all if ``full``).

    In batches; drops those of ``stamps`` no longer offered; stops once a batch is skipped.
    ``count`` counts a document's inbound links, where the whole namespace is at hand.
    """
    seen: set[str] = set()
    batch: list[tuple[Document, list[Row]]] = []
    for document in documents:
        seen.add(document.uri)
        if not full and stamps.get(document.uri) == document.stamp:
            done.unchanged += 1
            continue
        links = count(document.uri) if count is not None else None
        batch.append((document, rows_of(name, document, links)))
        if len(batch) >= BATCH:
            _write(using, done, name, batch, [])
            batch = []
        if done.skipped:
            return
    _write(using, done, name, batch, sorted(set(stamps) - seen))


def _held_at(using: str, mount: str, address: TmUri) -> dict[str, str]:
    """The stamps held for the documents of ``mount`` at ``address`` (or below it)."""
    at = str(address.identity)
    where = "substr(uri, 1, %s) = %s" if address.collection else "uri = %s"
    params: list[Any] = [len(at), at] if address.collection else [at]
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT uri, stamp FROM search_document WHERE mount = %s AND {where}",
            [mount, *params],
        )
        return {str(uri): str(stamp) for uri, stamp in cursor.fetchall()}


def _held(using: str) -> dict[str, dict[str, str]]:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT mount, uri, stamp FROM search_document")
        held: dict[str, dict[str, str]] = {}
        for mount, uri, stamp in cursor.fetchall():
            held.setdefault(mount, {})[uri] = stamp
    return held


def _write(
    using: str,
    done: Synced,
    mount: str,
    batch: list[tuple[Document, list[Row]]],
    gone: list[str],
) -> None:
    if not batch and not gone:
        return
    the_engine = engine(using)
    with transaction.atomic(using), connections[using].cursor() as cursor:
        if not the_engine.lock(cursor):
            done.skipped = True
            return
        uris = [document.uri for document, _ in batch] + gone
        batch = _links_kept(cursor, batch)
        the_engine.remove(cursor, uris)
        for chunk in chunks(uris):
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(f"DELETE FROM search_document WHERE uri IN ({marks})", list(chunk))
        if batch:
            the_engine.add(cursor, [row for _, rows in batch for row in rows])
            cursor.executemany(
                "INSERT INTO search_document (uri, mount, stamp) VALUES (%s, %s, %s)",
                [[document.uri, mount, document.stamp] for document, _ in batch],
            )
    done.written += len(batch)
    done.dropped += len(gone)
    room = MAX_TOLD - len(done.changed)
    if room > 0:
        done.changed += uris[:room]


def _links_kept(
    cursor: Any, batch: list[tuple[Document, list[Row]]]
) -> list[tuple[Document, list[Row]]]:
    """``batch`` with the inbound links the index holds where they were not counted.

    A change applied alone (``refresh``) sees one mount, not the namespace: its documents keep
    the count a sync last gave them (new ones count none until a sync or a reindex).
    """
    uncounted = sorted({row.uri for _, rows in batch for row in rows if row.links is None})
    held: dict[str, int] = {}
    for chunk in chunks(uncounted):
        marks = ", ".join(["%s"] * len(chunk))
        cursor.execute(
            f"SELECT uri, max(links) FROM search_passage WHERE uri IN ({marks}) GROUP BY uri",
            list(chunk),
        )
        held.update((str(uri), int(links)) for uri, links in cursor.fetchall())
    return [
        (
            document,
            [
                row if row.links is not None else replace(row, links=held.get(row.uri, 0))
                for row in rows
            ],
        )
        for document, rows in batch
    ]


def _applied(using: str) -> None:
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    with transaction.atomic(using), connections[using].cursor() as cursor:
        cursor.execute("DELETE FROM search_state WHERE name = %s", ["applied"])
        cursor.execute("INSERT INTO search_state (name, value) VALUES (%s, %s)", ["applied", now])


def clear(using: str = "default") -> None:
    """Forget everything indexed."""
    with _writing, transaction.atomic(using), connections[using].cursor() as cursor:
        if not engine(using).lock(cursor):
            return
        cursor.execute("SELECT uri FROM search_document")
        engine(using).remove(cursor, [uri for (uri,) in cursor.fetchall()])
        cursor.execute("DELETE FROM search_document")


def status(using: str = "default") -> dict[str, Any]:
    """Documents and passages per mount, and when the last change was applied."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT mount, count(*) FROM search_passage GROUP BY mount ORDER BY mount")
        passages = dict(cursor.fetchall())
    return {
        "engine": connections[using].vendor,
        "documents": documents(using),
        "passages": passages,
        "applied": applied_text(using),
    }


def documents(using: str = "default") -> dict[str, int]:
    """Documents indexed, per mount (one aggregate over the documents' table)."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT mount, count(*) FROM search_document GROUP BY mount ORDER BY mount")
        return {str(mount): int(count) for mount, count in cursor.fetchall()}


def applied(using: str = "default") -> datetime | None:
    """When a sync last changed the index (``None`` before the first)."""
    text = applied_text(using)
    return datetime.fromisoformat(text) if text else None


def applied_text(using: str = "default") -> str | None:
    """When a sync last changed the index, as stored (a standing search's stamp)."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT value FROM search_state WHERE name = %s", ["applied"])
        row = cursor.fetchone()
    return str(row[0]) if row else None


def probe(using: str = "default") -> dict[str, Any]:
    """Whether the index can serve (for readiness): one search and a look at what is indexed.

    Raises:
        DatabaseError: what the database raises (the index's tables missing, no engine).
    """
    search(parse_query("ready"), "tm://", (), 1, using)
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT uri FROM search_document LIMIT 1")
        cursor.fetchall()
    return {"engine": connections[using].vendor}


def search(
    query: Query,
    scope: str,
    kinds: Iterable[str] = (),
    want: int = 10,
    using: str = "default",
) -> list[Found]:
    """The best passage of each matching document below ``scope``, best first, at most ``want``.

    Documents with every needed word come first; when they are fewer than ``want``, those
    with any of them follow. The engine ranks and cuts to ``want`` itself; only the passages
    returned are read whole. One search spends at most ``BOUND_SECONDS`` of the engine's work.

    Raises:
        Timeout: the search went past its bound.
    """
    wanted_kinds = sorted(set(kinds))
    where = "substr(p.uri, 1, %s) = %s"
    params: list[Any] = [len(scope), scope]
    if wanted_kinds:
        marks = ", ".join(["%s"] * len(wanted_kinds))
        where += f" AND (p.mount IN ({marks}) OR p.kind IN ({marks}))"
        params += wanted_kinds * 2
    # a host's root, every kind: the engine may rank before it looks at documents
    everywhere = not wanted_kinds and parse(scope).mount is None
    the_engine = engine(using)
    connection = connections[using]
    hits: dict[str, Found] = {}
    with the_engine.bounded(connection, BOUND_SECONDS) as run, connection.cursor() as cursor:
        for any_word in (False, True):
            if any_word and (len(hits) >= want or len(query.needed) < 2):
                break
            # those with every word are among those with any: ask for as many more
            more = want + len(hits)
            every = best(
                the_engine.dialect, run, cursor, query, any_word, where, params, more, everywhere
            )
            for found in every:
                hits.setdefault(found.uri, found)
    return list(hits.values())[:want]


def timed(call: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``call(*args, **kwargs)`` and the seconds it took (for status and the bench)."""
    start = time.perf_counter()
    return call(*args, **kwargs), time.perf_counter() - start
