"""One search, two engines: the same behaviour on SQLite FTS5 and PostgreSQL.

Spec: SRCH1, SRCH2, SRCH3.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from django.db import connections, transaction

from tests.conformance.worlds import HOST
from tmsite.core.errors import BadArgument, Timeout
from tmsite.core.parts import to_text
from tmsite.core.uri import parse
from tmsite.mounts import registry
from tmsite.mounts.fs.mount import FsMount
from tmsite.search import engines, index
from tmsite.search.passages import MARK_CLOSE, MARK_OPEN, snippet
from tmsite.search.query import MAX_QUERY_CHARS, MAX_TERMS, parse_query

pytestmark = [pytest.mark.spec("SRCH1", "SRCH2", "SRCH3"), pytest.mark.django_db]


def found(
    using: str, text: str, scope: str = "tm://test/", kinds: tuple[str, ...] = ()
) -> list[str]:
    return [hit.uri for hit in index.search(parse_query(text), scope, kinds, 10, using)]


def test_english_is_matched_by_stem(fs: FsMount, using: str) -> None:
    index.sync({"fs": fs}, using)
    assert found(using, "connecting")[0] == "tm://test/fs/docs/connect.md"
    assert found(using, "transports") == ["tm://test/fs/docs/connect.md"]


def test_a_two_character_japanese_word_finds_its_page(fs: FsMount, using: str) -> None:
    index.sync({"fs": fs}, using)
    assert found(using, "検索") == ["tm://test/fs/docs/ja/connect.md"]
    assert found(using, "接続") == ["tm://test/fs/docs/ja/connect.md"]
    assert found(using, "接続する方法") == ["tm://test/fs/docs/ja/connect.md"]
    assert found(using, "索") == ["tm://test/fs/docs/ja/connect.md"]
    assert found(using, "検査") == []


def test_a_title_match_ranks_above_a_body_match(fs: FsMount, using: str) -> None:
    index.sync({"fs": fs}, using)
    assert found(using, "bresenham")[:2] == [
        "tm://test/fs/docs/bresenham.md",
        "tm://test/fs/docs/other.md",
    ]


def test_a_title_match_ranks_above_a_body_that_repeats_the_word(
    checkout: Path, fs: FsMount, using: str
) -> None:
    repeats = " ".join(["Bresenham stepped the line again."] * 40)
    (checkout / "docs" / "repeats.md").write_text(f"# Line notes\n\n{repeats}\n")
    index.sync({"fs": fs}, using)
    assert found(using, "bresenham")[:2] == [
        "tm://test/fs/docs/bresenham.md",
        "tm://test/fs/docs/repeats.md",
    ]


def test_every_word_first_then_any(fs: FsMount, using: str) -> None:
    index.sync({"fs": fs}, using)
    hits = found(using, "how do I connect claude code?")
    assert hits == ["tm://test/fs/docs/connect.md", "tm://test/fs/docs/ja/connect.md"]
    either = found(using, "zebra bresenham")
    assert set(either) >= {"tm://test/fs/docs/long.txt", "tm://test/fs/docs/bresenham.md"}


def test_a_hit_reads_as_the_passage_its_snippet_came_from(fs: FsMount, using: str) -> None:
    index.sync({"fs": fs}, using)
    ns = registry.compose(HOST, {"fs": fs})
    query = parse_query("zebra")
    (hit,) = index.search(query, "tm://test/", (), 10, using)
    assert hit.address == "tm://test/fs/docs/long.txt?lines=81-120"
    passage = to_text(ns.read(hit.address).body)
    assert passage.rstrip("\n") == hit.body
    marked = snippet(hit.body, query)
    assert f"{MARK_OPEN}zebra{MARK_CLOSE}" in marked
    assert marked.replace(MARK_OPEN, "").replace(MARK_CLOSE, "").strip("…") in " ".join(
        passage.split()
    )
    (heading,) = index.search(parse_query("transport"), "tm://test/", (), 10, using)
    assert heading.heading == "Transport"
    assert "streamable" in to_text(ns.read(heading.address).body)


def test_scope_and_kinds_narrow(fs: FsMount, using: str) -> None:
    index.sync({"fs": fs}, using)
    assert found(using, "transport", scope="tm://test/fs/docs/ja/") == []
    assert found(using, "接続", scope="tm://test/fs/docs/ja/") == [
        "tm://test/fs/docs/ja/connect.md"
    ]
    assert found(using, "transport", kinds=("file",)) == ["tm://test/fs/docs/connect.md"]
    assert found(using, "transport", kinds=("fs",)) == ["tm://test/fs/docs/connect.md"]
    assert found(using, "connect", kinds=("git",)) == []


def test_denied_files_are_never_found(fs: FsMount, using: str) -> None:
    index.sync({"fs": fs}, using)
    assert found(using, "secretword") == []
    for name in ("env", "id_rsa", "server", "pem", "ssh", "notes"):
        assert found(using, name) == [], name


def test_a_change_is_found_and_the_old_text_is_gone(
    checkout: Path, fs: FsMount, using: str
) -> None:
    first = index.sync({"fs": fs}, using)
    assert first.written == 6 and first.dropped == 0
    (checkout / "docs" / "patterns.md").write_text("# Patterns\n\nA joystick routine.\n")
    (checkout / "docs" / "other.md").unlink()
    second = index.sync({"fs": fs}, using)
    assert (second.written, second.dropped, second.unchanged) == (1, 1, 4)
    assert found(using, "joystick") == ["tm://test/fs/docs/patterns.md"]
    assert found(using, "poll") == []
    assert found(using, "mentioned") == []
    status = index.status(using)
    assert status["documents"] == {"fs": 5} and status["applied"]


def test_a_mount_no_longer_served_is_dropped(fs: FsMount, using: str) -> None:
    index.sync({"fs": fs}, using)
    assert index.sync({}, using).dropped == 6
    assert found(using, "connect") == []


HOSTILE = [
    '"',
    '""',
    '"connect',
    "connect*",
    "*",
    "NEAR(connect transport)",
    "connect NEAR transport",
    "connect OR transport",
    "connect AND NOT transport",
    "NOT",
    "AND",
    "title:connect",
    "body : connect",
    "-connect",
    "connect -transport",
    "(connect",
    "connect)",
    "((((((",
    "^connect",
    "connect^2",
    "{title heading}: connect",
    "connect + transport",
    "'connect'",
    "connect' OR '1'='1",
    "connect; DROP TABLE search_passage; --",
    "connect:*",
    "connect & transport | !poll",
    "<-> connect",
    "connect <2> transport",
    "\\connect",
    "con\\nect",
    "%connect%",
    "_",
    "connect\x00",
    "\ud800connect",
    "connect\udfff",
    "x" * (MAX_QUERY_CHARS + 1),
    " ".join(f"w{n}" for n in range(MAX_TERMS + 1)),
    "",
    "   ",
    "!!!",
    "😀",
    "connect 😀",
    "ｃｏｎｎｅｃｔ",
    "Ｃｏｎｎｅｃｔ ＯＲ",
    "接続 OR 検索",
    "接続*",
    '"接続" NEAR 検索',
    "\u200bconnect",
    "connect\u202e",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_queries_are_words_or_refused(fs: FsMount, using: str, text: str) -> None:
    index.sync({"fs": fs}, using)
    try:
        query = parse_query(text)
    except BadArgument as refusal:
        assert refusal.data["reason"] == "bad-argument"
        assert "query" in refusal.message
        return
    hits = index.search(query, "tm://test/", (), 10, using)
    assert all(hit.uri.startswith("tm://test/fs/docs/") for hit in hits)
    if "connect" in query.words:
        assert "tm://test/fs/docs/connect.md" in [hit.uri for hit in hits]


def test_a_trail_is_found_by_its_notes(checkout: Path, using: str) -> None:
    from tmsite.mounts.trail.mount import TrailMount

    trails = checkout / "notes" / "trails"
    trails.mkdir(parents=True)
    step = {"uri": "tm://test/fs/docs/patterns.md", "note": "where the joystick is read"}
    body = {"title": "Pad walk", "description": "A walk past the pad.", "steps": [step]}
    (trails / "pad-walk.json").write_text(json.dumps(body))
    index.sync({"trail": TrailMount("test", checkout)}, using)
    (hit,) = index.search(parse_query("joystick"), "tm://test/", ("trail",), 10, using)
    assert (hit.uri, hit.address, hit.kind, hit.title) == (
        "tm://test/trail/pad-walk",
        "tm://test/trail/pad-walk",
        "trail",
        "Pad walk",
    )


def test_a_search_past_its_bound_is_refused_and_the_next_one_answers(
    checkout: Path, using: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(20):  # 2,000 passages with the word, each file under the read cap
        lines = "".join(f"zebra {n} {line}\n" for line in range(4000))
        (checkout / "docs" / f"many{n}.txt").write_text(lines)
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    assert len(found(using, "zebra")) == 10
    monkeypatch.setattr(index, "BOUND_SECONDS", 0.0)  # PostgreSQL's least: a millisecond
    monkeypatch.setattr(engines, "PROGRESS_STEPS", 100)
    with pytest.raises(Timeout) as refused:
        index.search(parse_query("zebra"), "tm://test/", (), 10, using)
    assert refused.value.data == {"reason": "timeout", "seconds": 0.0}
    assert "rarer words" in refused.value.message
    monkeypatch.undo()
    assert len(found(using, "zebra")) == 10  # the bound was this search's only


def test_inbound_links_break_a_tie_and_are_counted_when_indexed(checkout: Path, using: str) -> None:
    from tmsite.mounts.trail.mount import TrailMount

    twin = "# Twins\n\nA kestrel nests here.\n"
    (checkout / "docs" / "twin-a.md").write_text(twin)
    (checkout / "docs" / "twin-b.md").write_text(twin)
    fs = FsMount("test", checkout, ["docs"])
    index.sync({"fs": fs}, using)
    assert found(using, "kestrel") == ["tm://test/fs/docs/twin-a.md", "tm://test/fs/docs/twin-b.md"]
    trails = checkout / "notes" / "trails"
    trails.mkdir(parents=True)
    step = {"uri": "tm://test/fs/docs/twin-b.md", "note": "the second twin"}
    walk = {"title": "Twin walk", "description": "A walk.", "steps": [step]}
    (trails / "twin-walk.json").write_text(json.dumps(walk))
    mounts = {"fs": fs, "trail": TrailMount("test", checkout)}
    assert index.inbound(mounts, "tm://test/fs/docs/twin-b.md") == 1
    assert index.inbound(mounts, "tm://test/fs/docs/twin-a.md") == 0
    index.sync(mounts, using, full=True)
    assert found(using, "kestrel", kinds=("file",)) == [
        "tm://test/fs/docs/twin-b.md",
        "tm://test/fs/docs/twin-a.md",
    ]
    scores = {
        hit.uri: hit.score
        for hit in index.search(parse_query("kestrel"), "tm://test/", ("file",), 10, using)
    }
    boost = scores["tm://test/fs/docs/twin-b.md"] / scores["tm://test/fs/docs/twin-a.md"]
    assert boost == pytest.approx(1 + engines.LINK_BOOST)
    (checkout / "docs" / "twin-b.md").write_text(twin + "\nA second line.\n")
    refreshed = index.refresh("fs", fs, [parse("tm://test/fs/docs/twin-b.md")], using)
    assert refreshed.written == 1  # one mount's change, applied alone: its count is kept
    (checkout / "docs" / "twin-b.md").write_text(twin + "\nA third line.\n")
    assert index.sync({"fs": fs}, using, whole=False).written == 1  # nor a part's walk
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT uri, links FROM search_passage WHERE uri LIKE %s", ["%/twin-_.md"])
        assert sorted(cursor.fetchall()) == [
            ("tm://test/fs/docs/twin-a.md", 0),
            ("tm://test/fs/docs/twin-b.md", 1),
        ]


def test_a_search_inside_a_transaction_leaves_its_settings_as_they_were(
    fs: FsMount, using: str
) -> None:
    index.sync({"fs": fs}, using)
    with transaction.atomic(using), connections[using].cursor() as cursor:
        assert found(using, "transports") == ["tm://test/fs/docs/connect.md"]
        if connections[using].vendor == "postgresql":
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"  # the search's bound ended with its statement
            cursor.execute("SHOW enable_seqscan")
            assert cursor.fetchone()[0] == "on"  # and so did its plan's setting
        assert found(using, "transports") == ["tm://test/fs/docs/connect.md"]


def _explained(monkeypatch: pytest.MonkeyPatch, explain: str) -> list[str]:
    """The plans of PostgreSQL's search statements from now on (``explain`` each, then run it)."""
    plans: list[str] = []
    bounded = engines.PostgresFts.bounded

    @contextlib.contextmanager
    def explained(self: engines.PostgresFts, connection: Any, seconds: float) -> Iterator[Any]:
        with bounded(self, connection, seconds) as run:

            def explaining(cursor: Any, sql: str, params: list[Any]) -> None:
                run(cursor, f"{explain} {sql}", params)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
                run(cursor, sql, params)

            yield explaining

    monkeypatch.setattr(engines.PostgresFts, "bounded", explained)
    return plans


def test_a_word_in_most_passages_is_matched_through_the_index(
    checkout: Path, using: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL's planner prices a passage's ``tsvector`` as if its row held it: for a word
    in a fifth or more of the passages it read every passage's vector from TOAST (a word in a
    fifth of 50,000 generated passages: 170-230 ms a search, 65-80 ms through the index)."""
    if connections[using].vendor != "postgresql":
        pytest.skip("a PostgreSQL plan")
    for n in range(300):
        (checkout / "docs" / f"common{n}.md").write_text(f"# Note {n}\n\nA common word.\n")
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    with connections[using].cursor() as cursor:
        cursor.execute("ANALYZE search_passage")
    plans = _explained(monkeypatch, "EXPLAIN")
    assert len(found(using, "common")) == 10
    assert plans and all("Bitmap Index Scan on search_passage_vec" in plan for plan in plans)
    assert not any("Seq Scan" in plan for plan in plans)


def _tiers(checkout: Path, word: str, titles: int, onces: int) -> None:
    """Passages holding ``word`` in ``titles`` titles, in headings, repeated in bodies (2 to 6
    times, some with links), and once in ``onces`` bodies; the indexing order mixed."""
    docs = checkout / "docs" / "tiers"
    docs.mkdir()
    for n in range(max(titles, onces)):
        if n < titles:
            (docs / f"t{n:03d}.md").write_text(f"# The {word} {n}\n\nA note.\n")
        if n < onces:
            (docs / f"o{n:03d}.md").write_text(f"# Note {n}\n\nA {word} in passing, {n}.\n")
        if n < 12:
            body = f"A plain line {n}.\n\n## The {word} section\n\nMore.\n"
            (docs / f"h{n:03d}.md").write_text(f"# Heads {n}\n\n{body}")
            repeats = " ".join([f"{word} again"] * (2 + n % 5))
            (docs / f"r{n:03d}.md").write_text(f"# Repeats {n}\n\n{repeats}.\n")


def _ranked_over_every_match(monkeypatch: pytest.MonkeyPatch) -> None:
    untiered = replace(engines.PostgresFts.dialect, tiered=None)
    monkeypatch.setattr(engines.PostgresFts, "dialect", untiered)


@pytest.mark.parametrize("titles", [0, 30, engines.FETCH + 5])
def test_a_word_ranked_by_tiers_has_the_hits_of_every_match_ranked(
    checkout: Path, using: str, monkeypatch: pytest.MonkeyPatch, titles: int
) -> None:
    """PostgreSQL ranks a word's passages by tier (title or heading, repeated, once) and only
    as many as it keeps: the same hits, scores and order as ranking every match."""
    if connections[using].vendor != "postgresql":
        pytest.skip("PostgreSQL's tiers")
    _tiers(checkout, "kestrel", titles, onces=engines.FETCH + 40)
    (checkout / "docs" / "tiers" / "t-extra.md").write_text("# A kestrel's kestrel\n\nkestrel\n")
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    asked = [("kestrel", "tm://test/"), ("kestrel", "tm://test/fs/docs/tiers/"), ("kes", "tm://")]
    asked += [("kestrel section", "tm://test/"), ("kestrels plain", "tm://test/")]
    asked += [("索", "tm://test/"), ("接続する", "tm://test/"), ("the", "tm://test/")]

    def hits() -> list[list[tuple[str, float]]]:
        return [
            [
                (hit.address, hit.score)
                for hit in index.search(parse_query(text), scope, (), want, using)
            ]
            for text, scope in asked
            for want in (10, engines.FETCH)
        ]

    tiered = hits()
    _ranked_over_every_match(monkeypatch)
    assert tiered == hits()
    assert len(tiered[1]) == engines.FETCH  # past the once-tier's first passages


def test_a_word_in_many_titles_ranks_only_the_passages_it_keeps(
    checkout: Path, using: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word in the titles of ``FETCH`` passages and the bodies of more: the passages holding
    it once in their body are never read, nor ranked (before: every match, 470 here; a word in a
    fifth of 50,000 generated passages took 45-70 ms a search)."""
    if connections[using].vendor != "postgresql":
        pytest.skip("a PostgreSQL plan")
    _tiers(checkout, "kestrel", engines.FETCH + 5, onces=250)
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    plans = _explained(monkeypatch, "EXPLAIN (ANALYZE, COSTS OFF)")
    hits = index.search(parse_query("kestrel"), "tm://test/", (), 10, using)
    assert [hit.title for hit in hits] == [f"The kestrel {n}" for n in range(10)]
    (plan,) = plans
    scans = [line for line in plan.splitlines() if "Bitmap Index Scan on" in line]
    assert len(scans) == 4  # a tier each: titled, repeated, once, and any other query
    assert "search_passage_titled" in scans[0]
    assert f"rows={engines.FETCH + 5 + 12} " in scans[0]  # the titles and the headings
    assert all("(never executed)" in scan for scan in scans[1:])


def _asked_both_ways(
    monkeypatch: pytest.MonkeyPatch, using: str, asked: list[tuple[str, str, tuple[str, ...]]]
) -> tuple[list[list[tuple[str, float]]], list[list[tuple[str, float]]]]:
    """The hits (addresses, scores) of each of ``asked`` (text, scope, kinds), 10 and ``FETCH``
    deep, ranked as the engine ranks, then ranked over every match."""

    def hits() -> list[list[tuple[str, float]]]:
        return [
            [
                (hit.address, hit.score)
                for hit in index.search(parse_query(text), scope, kinds, want, using)
            ]
            for text, scope, kinds in asked
            for want in (10, engines.FETCH)
        ]

    tiered = hits()
    with monkeypatch.context() as patch:
        _ranked_over_every_match(patch)
        return tiered, hits()


def test_a_common_word_and_a_rare_one_have_the_hits_of_every_match_ranked(
    checkout: Path, using: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Among 400 passages a word in most of them (in titles, headings, repeated and once, some
    documents with links) and a word in three: by tiers, the same hits, scores and order as
    ranking every match, below the root, a directory and a kind."""
    if connections[using].vendor != "postgresql":
        pytest.skip("PostgreSQL's tiers")
    docs = checkout / "docs" / "many"
    docs.mkdir()
    for n in range(400):
        title = "Harbour" if n % 40 == 7 else f"Note {n}"
        heading = "\n\n## The harbour side\n" if n % 50 == 3 else ""
        body = " ".join(["harbour"] * (1 + n % 3)) if n % 5 else "nothing of it"
        rare = " and a rare osprey" if n in (13, 250, 399) else ""
        link = f" See [note](n{n - 1:03d}.md)." if n % 9 == 0 and n else ""
        (docs / f"n{n:03d}.md").write_text(f"# {title}\n\nA {body}{rare}.{link}{heading}\n")
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    asked = [
        (word, scope, kinds)
        for word in ("harbour", "harbours", "osprey")
        for scope, kinds in [
            ("tm://test/", ()),
            ("tm://test/fs/docs/many/", ()),
            ("tm://", ("fs",)),
        ]
    ]
    tiered, every = _asked_both_ways(monkeypatch, using, asked)
    assert tiered == every
    assert len(tiered[1]) == engines.FETCH and len(tiered[-1]) == 3


def test_a_rare_word_reads_only_the_passages_that_hold_it(
    checkout: Path, using: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a small index (a few hundred passages) a word in few of them is matched through the
    GIN index in every tier: no passage is read but by its id or the index's match (the tiers'
    query, computed once for all, hid the word from the planner: it walked every passage in
    ``id`` order for those holding it once, 6 ms a search on this checkout against 1.3)."""
    if connections[using].vendor != "postgresql":
        pytest.skip("a PostgreSQL plan")
    for n in range(300):
        rare = " An osprey." if n in (5, 150) else ""
        (checkout / "docs" / f"note{n:03d}.md").write_text(f"# Note {n}\n\nA plain note.{rare}\n")
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    with connections[using].cursor() as cursor:
        cursor.execute("ANALYZE search_passage")
    plans = _explained(monkeypatch, "EXPLAIN (ANALYZE, COSTS OFF)")
    assert found(using, "osprey") == [f"tm://test/fs/docs/note{n}.md" for n in ("005", "150")]
    (plan,) = plans
    lines = plan.splitlines()
    reads = [(line, lines[n + 1].strip()) for n, line in enumerate(lines) if " Scan " in line]
    passages = [(line, then) for line, then in reads if "on search_passage" in line]
    assert passages and all(
        then.startswith(("Index Cond: ", "Recheck Cond: ")) for _, then in passages
    ), plan
    assert "Bitmap Index Scan on search_passage_vec" in plan


def test_the_tiers_migration_fills_the_passages_already_indexed(
    checkout: Path, using: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index built before the tiers (its passages without the two columns) is migrated in
    place: every passage gets its titled and repeated lexemes, and a word's hits are those of
    ranking every match."""
    if connections[using].vendor != "postgresql":
        pytest.skip("PostgreSQL's tiers")
    from django.db.migrations.executor import MigrationExecutor

    _tiers(checkout, "kestrel", 30, onces=engines.FETCH + 40)
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    connection = connections[using]
    MigrationExecutor(connection).migrate([("tm_search", "0003_passage_tiers")])
    MigrationExecutor(connection).migrate([("tm_search", "0002_passage_links")])

    def columns() -> set[str]:
        with connection.cursor() as cursor:
            described = connection.introspection.get_table_description(cursor, "search_passage")
        return {column.name for column in described}

    assert not {"titled", "repeated"} & columns()  # as before the tiers
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_passage")
        passages = cursor.fetchone()[0]
    MigrationExecutor(connection).migrate([("tm_search", "0003_passage_tiers")])
    assert {"titled", "repeated"} <= columns()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE titled @@ 'kestrel'), "
            "count(*) FILTER (WHERE repeated @@ 'kestrel') FROM search_passage"
        )
        assert cursor.fetchone() == (passages, 30 + 12, 12)
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'search_passage'")
        assert {"search_passage_titled", "search_passage_repeated"} <= {r[0] for r in cursor}
    tiered, every = _asked_both_ways(monkeypatch, using, [("kestrel", "tm://test/", ())])
    assert tiered == every
    assert len(tiered[1]) == engines.FETCH


def test_a_search_after_a_build_reads_no_pending_gin_entries(checkout: Path, using: str) -> None:
    """GIN gathers new entries in a pending list that every search reads whole until a vacuum
    merges it: three lists for a word's tiers. The index merges them as it writes (a word in
    14 of 2,000 new passages: 1.2-7.4 ms for the vector's index scan before, all of it the
    list)."""
    if connections[using].vendor != "postgresql":
        pytest.skip("PostgreSQL's GIN indexes")
    _tiers(checkout, "kestrel", 30, onces=60)
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    (checkout / "docs" / "tiers" / "late.md").write_text("# A late kestrel\n\nkestrel kestrel\n")
    index.sync({"fs": FsMount("test", checkout, ["docs"])}, using)
    with connections[using].cursor() as cursor:
        names = [f"search_passage_{column}" for column in ("vec", "titled", "repeated")]
        cursor.execute(
            "SELECT gin_clean_pending_list(name::regclass) FROM unnest(%s::text[]) name", [names]
        )
        assert [pages for (pages,) in cursor.fetchall()] == [0, 0, 0]  # nothing left to merge
    assert found(using, "kestrel")[0] == "tm://test/fs/docs/tiers/late.md"
