"""The two engines behind one index: SQLite FTS5 and PostgreSQL full-text search.

Both keep the same two tables — ``search_document`` (what is indexed, with its stamp) and
``search_passage`` (each passage's address and text) — and differ only in how a passage is
matched and ranked:

* SQLite: an FTS5 table over (title, heading, body) with the ``porter`` stemmer; ranked by
  ``bm25`` with the title weighted 10 and the heading 4 against the body's 1.
* PostgreSQL: a ``tsvector`` column under a GIN index, the ``english`` configuration (stems,
  stopwords), the title weighted A, the heading B, the body D; ranked by ``ts_rank_cd``.

CJK text reaches both as ASCII pair tokens (:func:`tmsite.search.query.indexable`), so neither
depends on its tokenizer or locale knowing those scripts. Queries are built from checked words
only (:mod:`tmsite.search.query`): no client text is ever engine syntax.

Spec: SRCH1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tmsite.search.query import Query, gram, grams, is_cjk

#: A stable key for PostgreSQL's advisory lock: one machine writes the index at a time.
LOCK_KEY = 0x746D5F73656172  # "tm_sear"

_TABLES = (
    """CREATE TABLE IF NOT EXISTS search_document (
        uri TEXT PRIMARY KEY, mount TEXT NOT NULL, stamp TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS search_state (name TEXT PRIMARY KEY, value TEXT NOT NULL)""",
)
_PASSAGE_COLUMNS = (
    "uri TEXT NOT NULL, address TEXT NOT NULL, mount TEXT NOT NULL, kind TEXT NOT NULL, "
    "mime_type TEXT NOT NULL, title TEXT NOT NULL, heading TEXT NOT NULL, body TEXT NOT NULL"
)
_SELECT = "p.uri, p.address, p.mount, p.kind, p.mime_type, p.title, p.heading, p.body"


@dataclass(frozen=True)
class Row:
    """One passage as stored: ``index*`` is the text as tokenized (CJK as pair tokens)."""

    uri: str
    address: str
    mount: str
    kind: str
    mime_type: str
    title: str
    heading: str
    body: str
    index_title: str
    index_heading: str
    index_body: str

    def stored(self) -> list[str]:
        """The values of the passage table's columns, in their order."""
        head = [self.uri, self.address, self.mount, self.kind, self.mime_type]
        return [*head, self.title, self.heading, self.body]


@dataclass(frozen=True)
class Found:
    """One passage that matched, with the engine's score (higher is better)."""

    uri: str
    address: str
    mount: str
    kind: str
    mime_type: str
    title: str
    heading: str
    body: str
    score: float


Cursor = Any  # a DB-API cursor (Django's wrapper): ``execute(sql, params)``, ``fetchall()``


class Engine(Protocol):
    """What differs between the engines; the index does the rest."""

    def create(self, cursor: Cursor) -> None:
        """Make the tables (idempotent)."""

    def lock(self, cursor: Cursor) -> bool:
        """Whether this transaction may write the index (another machine may be writing)."""

    def add(self, cursor: Cursor, rows: Sequence[Row]) -> None:
        """Store passages."""

    def remove(self, cursor: Cursor, uris: Sequence[str]) -> None:
        """Forget every passage of the documents ``uris``."""

    def match(
        self, cursor: Cursor, query: Query, any_word: bool, where: str, params: list[Any]
    ) -> list[Found]:
        """Passages with every needed word (or any, with ``any_word``), best first."""


def _chunks(items: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class SqliteFts:
    """FTS5 with the porter stemmer, ranked by ``bm25``."""

    weights = (10.0, 4.0, 1.0)

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
            "heading, body) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [[number, *row.stored()] for number, row in numbered],
        )
        cursor.executemany(
            "INSERT INTO search_fts (rowid, title, heading, body) VALUES (%s, %s, %s, %s)",
            [[n, row.index_title, row.index_heading, row.index_body] for n, row in numbered],
        )

    def remove(self, cursor: Cursor, uris: Sequence[str]) -> None:
        """Forget every passage of the documents ``uris``."""
        for chunk in _chunks(uris):
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                "DELETE FROM search_fts WHERE rowid IN "
                f"(SELECT id FROM search_passage WHERE uri IN ({marks}))",
                list(chunk),
            )
            cursor.execute(f"DELETE FROM search_passage WHERE uri IN ({marks})", list(chunk))

    def expression(self, query: Query, any_word: bool) -> str:
        """The FTS5 MATCH text: every word a quoted string, so none is an operator."""
        terms = []
        for word in query.needed:
            if not is_cjk(word):
                terms.append(f'"{word}"')
            elif len(word) == 1:
                terms.append(f'"{gram(word)}"*')
            else:
                terms.append('"' + " ".join(grams(word)) + '"')
        return (" OR " if any_word else " AND ").join(terms)

    def match(
        self, cursor: Cursor, query: Query, any_word: bool, where: str, params: list[Any]
    ) -> list[Found]:
        """Passages with every needed word (or any), best first."""
        title, heading, body = self.weights
        cursor.execute(
            f"SELECT {_SELECT}, -bm25(search_fts, {title}, {heading}, {body}) AS score "
            "FROM search_fts JOIN search_passage p ON p.id = search_fts.rowid "
            f"WHERE search_fts MATCH %s AND {where} ORDER BY score DESC, p.id LIMIT %s",
            [self.expression(query, any_word), *params],
        )
        return [Found(*row) for row in cursor.fetchall()]


class PostgresFts:
    """A ``tsvector`` under GIN, ``english`` configuration, ranked by ``ts_rank_cd``."""

    #: ``ts_rank_cd`` weights, in its order D, C, B, A: body, —, heading, title.
    weights = "{0.1, 0.2, 0.4, 1.0}"

    def create(self, cursor: Cursor) -> None:
        """Make the tables (idempotent)."""
        for sql in _TABLES:
            cursor.execute(sql)
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS search_passage (id BIGSERIAL PRIMARY KEY, "
            f"{_PASSAGE_COLUMNS}, vec TSVECTOR NOT NULL)"
        )
        cursor.execute("CREATE INDEX IF NOT EXISTS search_passage_uri ON search_passage (uri)")
        cursor.execute(
            "CREATE INDEX IF NOT EXISTS search_passage_vec ON search_passage USING GIN (vec)"
        )

    def lock(self, cursor: Cursor) -> bool:
        """Whether this transaction may write the index."""
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [LOCK_KEY])
        return bool(cursor.fetchone()[0])

    def add(self, cursor: Cursor, rows: Sequence[Row]) -> None:
        """Store passages, one batch."""
        cursor.executemany(
            "INSERT INTO search_passage (uri, address, mount, kind, mime_type, title, "
            "heading, body, vec) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, "
            "setweight(to_tsvector('english', %s), 'A') || "
            "setweight(to_tsvector('english', %s), 'B') || "
            "setweight(to_tsvector('english', %s), 'D'))",
            [[*row.stored(), row.index_title, row.index_heading, row.index_body] for row in rows],
        )

    def remove(self, cursor: Cursor, uris: Sequence[str]) -> None:
        """Forget every passage of the documents ``uris``."""
        for chunk in _chunks(uris):
            cursor.execute("DELETE FROM search_passage WHERE uri = ANY(%s)", [list(chunk)])

    def expression(self, query: Query, any_word: bool) -> str:
        """The ``to_tsquery`` text: every word a quoted lexeme (words hold no quote)."""
        terms = []
        for word in query.needed:
            if not is_cjk(word):
                terms.append(f"'{word}'")
            elif len(word) == 1:
                terms.append(f"'{gram(word)}':*")
            else:
                terms.append("(" + " <-> ".join(f"'{g}'" for g in grams(word)) + ")")
        return (" | " if any_word else " & ").join(terms)

    def match(
        self, cursor: Cursor, query: Query, any_word: bool, where: str, params: list[Any]
    ) -> list[Found]:
        """Passages with every needed word (or any), best first."""
        cursor.execute(
            f"SELECT {_SELECT}, ts_rank_cd(%s, p.vec, q) AS score "
            "FROM search_passage p, to_tsquery('english', %s) q "
            f"WHERE p.vec @@ q AND {where} ORDER BY score DESC, p.id LIMIT %s",
            [self.weights, self.expression(query, any_word), *params],
        )
        return [Found(*row) for row in cursor.fetchall()]


ENGINES: dict[str, Engine] = {"sqlite": SqliteFts(), "postgresql": PostgresFts()}
