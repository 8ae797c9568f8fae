"""The two engines behind one index: SQLite FTS5 and PostgreSQL full-text search.

Both keep the same two tables — ``search_document`` (what is indexed, with its stamp) and
``search_passage`` (each passage's address, text and the inbound links of its document) — and
differ only in how a passage is matched and scored, which :class:`Dialect` holds:

* SQLite: an FTS5 table over (title, heading, body) with the ``porter`` stemmer; scored by
  ``bm25`` with the title weighted 10 and the heading 4 against the body's 1.
* PostgreSQL: a ``tsvector`` column under a GIN index, the ``english`` configuration (stems,
  stopwords), the title weighted A, the heading B, the body D; scored by ``ts_rank``. Two small
  vectors beside it, each under its own GIN index, name the lexemes that can score above a
  single mention in the body (``titled``, ``repeated``): a query of one word ranks only the
  passages that may be among its best (:func:`_tiered`).

One query (:func:`best`) ranks on both: every matching passage is scored with only the few
columns that name its document, the engine keeps the best ``FETCH`` of them and of those each
document's best, and only the few passages a search returns are read whole: a common word
costs its scores, not the reading of every passage that holds it. A document's inbound links
(``links``, counted when it is indexed) raise its score by ``LINK_BOOST`` a link, at most
``MAX_LINKS`` of them, and break ties; the order passages were indexed in breaks the rest.

CJK text reaches both as ASCII pair tokens (:func:`tmsite.search.query.indexable`), so neither
depends on its tokenizer or locale knowing those scripts. Queries are built from checked words
only (:mod:`tmsite.search.query`): no client text is ever engine syntax. One search's work in
the engine is bounded (:meth:`Engine.bounded`): SQLite's progress handler counts the thread's
CPU time, PostgreSQL's ``statement_timeout`` the statement's; past the bound the search is
refused ``timeout``.

Spec: SRCH1, SRCH2, SRCH3.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import DatabaseError, transaction

from tmsite.core.errors import Timeout
from tmsite.search.query import Query, gram, grams, is_cjk

#: A stable key for PostgreSQL's advisory lock: one machine writes the index at a time.
LOCK_KEY = 0x746D5F73656172  # "tm_sear"
#: A document's score rises by this share for each inbound link, up to ``MAX_LINKS`` of them.
LINK_BOOST = 0.01
MAX_LINKS = 10
#: Passages an engine ranks per query (its best), before they are grouped by document: the
#: deepest a search pages.
FETCH = 200
#: SQLite runs this many virtual-machine steps between two looks at the search's CPU time.
PROGRESS_STEPS = 20_000

_TABLES = (
    """CREATE TABLE IF NOT EXISTS search_document (
        uri TEXT PRIMARY KEY, mount TEXT NOT NULL, stamp TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS search_state (name TEXT PRIMARY KEY, value TEXT NOT NULL)""",
)
_PASSAGE_COLUMNS = (
    "uri TEXT NOT NULL, address TEXT NOT NULL, mount TEXT NOT NULL, kind TEXT NOT NULL, "
    "mime_type TEXT NOT NULL, title TEXT NOT NULL, heading TEXT NOT NULL, body TEXT NOT NULL, "
    "links INTEGER NOT NULL DEFAULT 0"
)
_SELECT = "p.uri, p.address, p.mount, p.kind, p.mime_type, p.title, p.heading, p.body"


@dataclass(frozen=True)
class Stored:
    """One passage as the passage table holds it: its document, its address, its text."""

    uri: str
    address: str
    mount: str
    kind: str
    mime_type: str
    title: str
    heading: str
    body: str


@dataclass(frozen=True)
class Row(Stored):
    """One passage to store: ``index*`` is the text as tokenized (CJK as pair tokens).

    ``links``: its document's inbound links in the namespace, counted when it was indexed;
    None when they were not counted (the count stored before, if any, is kept).
    """

    index_title: str
    index_heading: str
    index_body: str
    links: int | None = None

    def stored(self) -> list[Any]:
        """The values of the passage table's columns, in their order."""
        head = [self.uri, self.address, self.mount, self.kind, self.mime_type]
        return [*head, self.title, self.heading, self.body, self.links or 0]


@dataclass(frozen=True)
class Found(Stored):
    """One passage that matched, with the engine's score (higher is better)."""

    score: float


Cursor = Any  # a DB-API cursor (Django's wrapper): ``execute(sql, params)``, ``fetchall()``
#: Runs a search's statement on a cursor under the search's bound (see ``Engine.bounded``).
Run = Callable[[Cursor, str, list[Any]], None]


@dataclass(frozen=True)
class Dialect:
    """What differs between the engines' matching and scoring; :func:`best` does the rest.

    Attributes:
        word: One plain word as a term, quoted so that no word is an operator.
        prefix: A lone CJK character: every pair token that starts with it.
        phrase: A CJK run as its pair tokens in order: (opening, one token, between, closing).
        every: What joins the terms when a passage needs all of them.
        either: What joins them when it needs any.
        passages: The passage table as ``p``, read for what names a passage's document.
        matched: The FROM and WHERE of the passages ``p`` that match (``%s``: the expression).
        score: A matched passage's score, higher better.
        everything: The ``id`` and ``score`` of every matching passage without reading the
            passage table, or ``""`` where that saves nothing.
        tiered: Given ``where``, a statement for the ``id`` and ``score`` of the best ``FETCH``
            passages matching a query of one word and ``where``, scoring fewer passages than
            all that match, and how many times it holds ``where``; None where the engine has
            none. Its parameters: the words, then the words and ``where``'s for each time.
    """

    word: str
    prefix: str
    phrase: tuple[str, str, str, str]
    every: str
    either: str
    passages: str
    matched: str
    score: str
    everything: str
    tiered: Callable[[str], tuple[str, int]] | None = None


class Engine(Protocol):
    """What differs between the engines beyond their dialect; the index does the rest."""

    dialect: Dialect

    def create(self, cursor: Cursor) -> None:
        """Make the tables (idempotent)."""

    def lock(self, cursor: Cursor) -> bool:
        """Whether this transaction may write the index (another machine may be writing)."""

    def add(self, cursor: Cursor, rows: Sequence[Row]) -> None:
        """Store passages."""

    def remove(self, cursor: Cursor, uris: Sequence[str]) -> None:
        """Forget every passage of the documents ``uris``."""

    def bounded(self, connection: Any, seconds: float) -> contextlib.AbstractContextManager[Run]:
        """How to run a search's statements on ``connection``, stopped past ``seconds`` of work.

        On SQLite the bound is the whole search's; on PostgreSQL each statement's.

        Raises:
            Timeout: a search went past the bound (its work was abandoned there).
        """
        ...


def expression(dialect: Dialect, query: Query, any_word: bool) -> str:
    """The engine's match text for ``query``: every needed word a quoted term."""
    opening, token, between, closing = dialect.phrase
    terms = []
    for word in query.needed:
        if not is_cjk(word):
            terms.append(dialect.word.format(word))
        elif len(word) == 1:
            terms.append(dialect.prefix.format(gram(word)))
        else:
            terms.append(opening + between.join(token.format(g) for g in grams(word)) + closing)
    return (dialect.either if any_word else dialect.every).join(terms)


def best(
    dialect: Dialect,
    run: Run,
    cursor: Cursor,
    query: Query,
    any_word: bool,
    where: str,
    params: list[Any],
    want: int,
    everywhere: bool = False,
) -> list[Found]:
    """The best passage of each of the ``want`` best documents with every needed word (or any).

    Only passages matching ``where``. The engine keeps its ``FETCH`` best passages, reading only
    the columns that name their documents (none at all where the dialect can and ``where``
    keeps ``everywhere``: it is then checked on those), lifts them by their inbound links,
    keeps each document's best, and reads whole only the ``want`` it returns. When those hold
    fewer documents than ``want`` (a few long documents full of the words), every matching
    passage is grouped instead. Ties go to more inbound links, then to the passage indexed
    first. A query of one word is cut by the dialect's ``tiered`` where it has one: the same
    ``FETCH``, scoring only the passages that may be among them.
    """
    words = expression(dialect, query, any_word)
    every = f"SELECT p.id, {dialect.score} AS score FROM {dialect.matched} AND {where}"
    first = (f"{every} ORDER BY score DESC, p.id LIMIT {FETCH}", [words, *params])
    if everywhere and dialect.everything:
        first = (f"{dialect.everything} ORDER BY score DESC, id LIMIT {FETCH}", [words])
    elif dialect.tiered is not None and _one_word(query):
        tiered, times = dialect.tiered(where)
        first = (tiered, [words, *[words, *params] * times])
    found: list[Found] = []
    for top, top_params in (first, (every, [words, *params])):
        run(cursor, _best_sql(dialect, top, where), [*top_params, *params, want])
        rows = cursor.fetchall()
        found = [Found(*row[:-1]) for row in rows]
        if len(found) >= want or not rows or rows[0][-1] < FETCH:  # the cut held every match
            break
    return found


def _one_word(query: Query) -> bool:
    """Whether ``query`` needs one term: one word, not 1 or 3+ CJK characters (prefix, phrase)."""
    if len(query.needed) != 1:
        return False
    word = query.needed[0]
    return not is_cjk(word) or len(word) == 2


def _best_sql(dialect: Dialect, top: str, where: str) -> str:
    links = f"(CASE WHEN p.links > {MAX_LINKS} THEN {MAX_LINKS} ELSE p.links END)"
    return (
        f"WITH top AS ({top}), "
        f"lifted AS (SELECT top.id, p.uri, p.links, top.score * (1 + {LINK_BOOST} * {links}) "
        f"AS score FROM top JOIN {dialect.passages} ON p.id = top.id WHERE {where}), "
        "ranked AS (SELECT id, score, links, "
        "row_number() OVER (PARTITION BY uri ORDER BY score DESC, links DESC, id) AS n "
        "FROM lifted) "
        f"SELECT {_SELECT}, ranked.score, (SELECT count(*) FROM top) "
        "FROM ranked JOIN search_passage p ON p.id = ranked.id "
        "WHERE ranked.n = 1 ORDER BY ranked.score DESC, ranked.links DESC, ranked.id LIMIT %s"
    )


def chunks(items: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    """``items`` in runs of ``size``: a statement's parameters stay few."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def _execute(cursor: Cursor, sql: str, params: list[Any]) -> None:
    cursor.execute(sql, params)


def _over(seconds: float) -> Timeout:
    return Timeout(
        None,
        f"this search needs more than the {seconds:g} s of the engine's work one search may "
        "spend; ask with rarer words, or below a narrower scope or kinds",
        seconds=seconds,
    )


class SqliteFts:
    """FTS5 with the porter stemmer, scored by ``bm25``."""

    weights = (10.0, 4.0, 1.0)
    dialect = Dialect(
        word='"{}"',
        prefix='"{}"*',
        phrase=('"', "{}", " ", '"'),
        every=" AND ",
        either=" OR ",
        # The covering index names a passage's document without reading its text.
        passages="search_passage p INDEXED BY search_passage_scope",
        matched="search_fts JOIN search_passage p INDEXED BY search_passage_scope "
        "ON p.id = search_fts.rowid WHERE search_fts MATCH %s",  # as ``passages``
        score="-bm25(search_fts, {}, {}, {})".format(*weights),
        everything="SELECT rowid AS id, -bm25(search_fts, {}, {}, {}) AS score "
        "FROM search_fts WHERE search_fts MATCH %s".format(*weights),
    )

    def create(self, cursor: Cursor) -> None:
        """Make the tables (idempotent)."""
        for sql in _TABLES:
            cursor.execute(sql)
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS search_passage "
            f"(id INTEGER PRIMARY KEY, {_PASSAGE_COLUMNS})"
        )
        cursor.execute("CREATE INDEX IF NOT EXISTS search_passage_uri ON search_passage (uri)")
        cursor.execute(
            "CREATE INDEX IF NOT EXISTS search_passage_scope "
            "ON search_passage (id, uri, mount, kind, links)"
        )
        cursor.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5("
            "title, heading, body, tokenize='porter unicode61 remove_diacritics 2')"
        )

    def lock(self, cursor: Cursor) -> bool:
        """Whether this transaction may write the index."""
        return True  # SQLite is one machine's; its own write lock orders writers

    def add(self, cursor: Cursor, rows: Sequence[Row]) -> None:
        """Store passages (numbered here, so both tables are written in one batch each)."""
        cursor.execute("SELECT coalesce(max(id), 0) FROM search_passage")
        first = int(cursor.fetchone()[0]) + 1
        numbered = list(enumerate(rows, start=first))
        cursor.executemany(
            "INSERT INTO search_passage (id, uri, address, mount, kind, mime_type, title, "
            "heading, body, links) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [[number, *row.stored()] for number, row in numbered],
        )
        cursor.executemany(
            "INSERT INTO search_fts (rowid, title, heading, body) VALUES (%s, %s, %s, %s)",
            [[n, row.index_title, row.index_heading, row.index_body] for n, row in numbered],
        )

    def remove(self, cursor: Cursor, uris: Sequence[str]) -> None:
        """Forget every passage of the documents ``uris``."""
        for chunk in chunks(uris):
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                "DELETE FROM search_fts WHERE rowid IN "
                f"(SELECT id FROM search_passage WHERE uri IN ({marks}))",
                list(chunk),
            )
            cursor.execute(f"DELETE FROM search_passage WHERE uri IN ({marks})", list(chunk))

    @contextlib.contextmanager
    def bounded(self, connection: Any, seconds: float) -> Iterator[Run]:
        """The connection's progress handler interrupts a search past ``seconds`` of CPU."""
        connection.ensure_connection()
        raw = connection.connection
        deadline = time.thread_time() + seconds
        over = False

        def check() -> int:
            nonlocal over
            over = time.thread_time() > deadline
            return int(over)

        raw.set_progress_handler(check, PROGRESS_STEPS)
        try:
            yield _execute
        except DatabaseError:
            if over:
                raise _over(seconds) from None
            raise
        finally:
            raw.set_progress_handler(None, PROGRESS_STEPS)


#: ``ts_rank``'s weights in its order D, C, B, A: body, —, heading, title. A word's repeats
#: count less and less, so one title match stays above a body that repeats the word;
#: ``ts_rank_cd`` adds them up, and costs nearly twice as much on a common word.
_RANK = "ts_rank('{0.1, 0.2, 0.4, 1.0}', p.vec, q)"
#: The lexemes of a passage's vector ``{0}`` weighted above the body (its title's, its
#: heading's), and those found in the body alone, more than once; stripped of positions.
TITLED = "strip(ts_filter({0}, '{{a,b,c}}'))"
REPEATED = (
    "array_to_tsvector(ARRAY(SELECT u.lexeme FROM unnest({0}) u "
    "WHERE cardinality(u.positions) > 1 AND 'D' = ALL(u.weights)))"
)


def _tiered(where: str) -> tuple[str, int]:
    """The best ``FETCH`` passages for a query of one word, ranking only those that may be.

    For one lexeme ``ts_rank`` adds up the weights of the word's places in the passage: where
    one is a title's or a heading's it scores at least 0.2 / (pi² / 6) = 0.12; where the body
    alone holds it more than once, from 0.076 to below 0.1; once, exactly 0.1 / (pi² / 6) =
    0.061. So the best ``FETCH`` are the best of those with the word in their ``titled``
    lexemes, then the best of its ``repeated`` ones, then the passages that hold it once, in
    the order of their ids, all their scores equal: only the passages kept are ranked, not
    every one that holds a common word. Any other query (several lexemes, as the parser may
    cut one word; a prefix) is ranked over every match. The statement holds ``where`` 4 times.

    Each tier matches against its own ``to_tsquery`` of the words, which the planner folds to
    a constant and prices by the word, and the passages holding it once are all found through
    the GIN index before the first are kept: below a few thousand passages the planner would
    otherwise walk the table in ``id`` order for them, reading every passage's vector.
    """

    def top(tier: str, room: str, ranked: bool = True) -> str:
        matched = f"search_passage p, to_tsquery('english', %s) q WHERE {tier} AND {where}"
        limit = f"LIMIT (SELECT CASE WHEN lone THEN {room} END FROM asked)"
        if ranked:
            return f"SELECT p.id, {_RANK} AS score FROM {matched} ORDER BY score DESC, p.id {limit}"
        # Every match of the tier first, then the first by id: asked for them in id order, the
        # planner walks the passages by id, reading each one's vector (TOAST it does not price).
        return (
            f"WITH matched AS MATERIALIZED (SELECT p.id FROM {matched}) "
            f"SELECT id FROM matched ORDER BY id {limit}"
        )

    titled = top("p.titled @@ q", f"{FETCH} ELSE 0")
    repeated = top(
        "p.repeated @@ q AND NOT p.titled @@ q", f"{FETCH} - (SELECT count(*) FROM titled) ELSE 0"
    )
    left = f"{FETCH} - (SELECT count(*) FROM titled) - (SELECT count(*) FROM repeated) ELSE 0"
    once = top("p.vec @@ q AND NOT p.titled @@ q AND NOT p.repeated @@ q", left, ranked=False)
    every = top("p.vec @@ q", f"0 ELSE {FETCH}")
    sql = (
        "WITH asked AS (SELECT q, numnode(q) = 1 AND querytree(q) NOT LIKE '%%:*' AS lone "
        "FROM to_tsquery('english', %s) q), "
        f"titled AS ({titled}), repeated AS ({repeated}), once AS ({once}), every AS ({every}) "
        "SELECT id, score FROM titled UNION ALL SELECT id, score FROM repeated "
        f"UNION ALL SELECT p.id, {_RANK} FROM asked, once JOIN search_passage p ON p.id = once.id "
        "UNION ALL SELECT id, score FROM every "
        f"ORDER BY score DESC, id LIMIT {FETCH}"
    )
    return sql, 4


#: The passages' vectors, each under a GIN index ``search_passage_<column>``.
_VECTORS = ("vec", "titled", "repeated")
#: Settings local to each PostgreSQL search statement. The planner prices matching a passage's
#: ``tsvector`` as if the row held it, not TOAST: for a word in a fifth of the passages it would
#: read every passage's vector rather than the GIN index's matches, three times slower.
PLANNED = {"enable_seqscan": "off"}


class PostgresFts:
    """A ``tsvector`` under GIN, ``english`` configuration, scored by ``ts_rank``."""

    dialect = Dialect(
        word="'{}'",
        prefix="'{}':*",
        phrase=("(", "'{}'", " <-> ", ")"),
        every=" & ",
        either=" | ",
        passages="search_passage p",
        matched="search_passage p, to_tsquery('english', %s) q WHERE p.vec @@ q",
        score=_RANK,
        everything="",  # the text is in the row that names the document
        tiered=_tiered,
    )

    def create(self, cursor: Cursor) -> None:
        """Make the tables (idempotent)."""
        for sql in _TABLES:
            cursor.execute(sql)
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS search_passage (id BIGSERIAL PRIMARY KEY, "
            f"{_PASSAGE_COLUMNS}, vec TSVECTOR NOT NULL, titled TSVECTOR NOT NULL, "
            "repeated TSVECTOR NOT NULL)"
        )
        cursor.execute("CREATE INDEX IF NOT EXISTS search_passage_uri ON search_passage (uri)")
        for column in _VECTORS:
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS search_passage_{column} "
                f"ON search_passage USING GIN ({column})"
            )

    def lock(self, cursor: Cursor) -> bool:
        """Whether this transaction may write the index."""
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [LOCK_KEY])
        return bool(cursor.fetchone()[0])

    def add(self, cursor: Cursor, rows: Sequence[Row]) -> None:
        """Store passages, one batch in one statement (in their order: their ids follow it).

        Each column goes as an array: the statement is planned once a batch, not once a passage.
        """
        if not rows:
            return
        values = [
            [*row.stored(), row.index_title, row.index_heading, row.index_body] for row in rows
        ]
        arrays = [list(column) for column in zip(*values, strict=True)]
        types = ["text"] * 8 + ["int"] + ["text"] * 3
        cursor.execute(
            "INSERT INTO search_passage (uri, address, mount, kind, mime_type, title, heading, "
            "body, links, vec, titled, repeated) "
            "SELECT r.uri, r.address, r.mount, r.kind, r.mime_type, r.title, r.heading, r.body, "
            f"r.links, made.vec, {TITLED.format('made.vec')}, {REPEATED.format('made.vec')} "
            f"FROM unnest({', '.join(f'%s::{kind}[]' for kind in types)}) WITH ORDINALITY AS "
            "r(uri, address, mount, kind, mime_type, title, heading, body, links, t, h, b, n), "
            "LATERAL (SELECT setweight(to_tsvector('english', r.t), 'A') || "
            "setweight(to_tsvector('english', r.h), 'B') || "
            "setweight(to_tsvector('english', r.b), 'D') AS vec) made ORDER BY r.n",
            arrays,
        )
        # GIN gathers new entries in a pending list that every search of the index reads whole
        # until a vacuum merges it: merged here, a search after a build reads only its word's.
        # Only the indexes' owner may merge; another role leaves it to autovacuum.
        merged = (
            f"gin_clean_pending_list('search_passage_{column}'::regclass)" for column in _VECTORS
        )
        cursor.execute("SAVEPOINT tm_search_pending")
        try:
            cursor.execute(f"SELECT {', '.join(merged)}")
        except DatabaseError:
            cursor.execute("ROLLBACK TO SAVEPOINT tm_search_pending")
        cursor.execute("RELEASE SAVEPOINT tm_search_pending")

    def remove(self, cursor: Cursor, uris: Sequence[str]) -> None:
        """Forget every passage of the documents ``uris``."""
        for chunk in chunks(uris):
            cursor.execute("DELETE FROM search_passage WHERE uri = ANY(%s)", [list(chunk)])

    @contextlib.contextmanager
    def bounded(self, connection: Any, seconds: float) -> Iterator[Run]:
        """A ``statement_timeout`` local to each search statement's transaction, sent with it.

        The settings (the bound and ``PLANNED``), the statement and the settings' reset go as
        one simple query, which PostgreSQL runs as one transaction: one round trip, and the
        settings end with it.
        Inside a caller's transaction (an ``atomic``) they run in a savepoint, so a stopped
        search leaves that transaction usable.
        """
        local = {"statement_timeout": str(max(1, math.ceil(seconds * 1000))), **PLANNED}
        before = "; ".join(f"SET LOCAL {name} = {value}" for name, value in local.items())
        after = "; ".join(f"SET LOCAL {name} TO DEFAULT" for name in local)
        nested = connection.in_atomic_block

        def run(cursor: Cursor, sql: str, params: list[Any]) -> None:
            statements = f"{before}; {sql}; {after}"
            if nested:
                with transaction.atomic(connection.alias):
                    cursor.execute(statements, params)
            else:
                cursor.execute(statements, params)
            for _ in local:
                cursor.nextset()  # past the settings, to the search's own rows

        try:
            yield run
        except DatabaseError as failed:
            if getattr(failed.__cause__, "sqlstate", None) == "57014":  # query_canceled
                raise _over(seconds) from None
            raise


ENGINES: dict[str, Engine] = {"sqlite": SqliteFts(), "postgresql": PostgresFts()}
