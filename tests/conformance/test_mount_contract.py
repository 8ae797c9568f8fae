"""The shared mount suite: every registered mount kind passes the same checks on its world."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conformance.worlds import HOST, NOTES, RECORD, WORLDS, World
from tmsite.core.errors import BadArgument, BadCursor, BadFacet, NotFound, Refusal
from tmsite.core.parts import to_text
from tmsite.core.uri import parse
from tmsite.mounts import registry
from tmsite.mounts.base import Mount
from tmsite.mounts.fs import mount as fs_mount
from tmsite.mounts.namespace import Namespace
from tmsite.search import passages

pytestmark = pytest.mark.spec(
    "NS2",
    "NS3",
    "NS4",
    "NS5",
    "NS6",
    "NS7",
    "NS8",
    "LK1",
    "LK5",
    "RJ1",
    "FS",
    "GIT",
    "HTTP",
    "ENT",
    "MCP",
    "OFFBOX",
    "KINDS",
    "MANIFEST",
    "RENDERERS",
    "TRAILS",
)

DOCS = Path(__file__).resolve().parents[2] / "docs"


def documented_relations() -> tuple[frozenset[str], frozenset[str]]:
    """The link vocabulary as docs/links.md gives it to clients: (IANA, ``tm:``) relations.

    Read from the relation tables (IANA, paired ``tm:``, one-way), not from the code, so a
    relation a mount emits that nobody documented fails here.
    """
    text = (DOCS / "links.md").read_text(encoding="utf-8")
    tables = text.split("## IANA relations", 1)[1].split("## Order", 1)[0]
    names = set(re.findall(r"^\| `([a-z:-]+)` \|", tables, re.MULTILINE))
    iana = frozenset(n for n in names if not n.startswith("tm:"))
    return iana, frozenset(names - iana)


def _world_params() -> list[object]:
    """One parameter per world; a world of a mount backed by Django models is marked for the
    database, so the test database is set up even when no other test in the run asks for it
    (a fixture that asks for ``db`` on the fly is not seen when pytest-django decides)."""
    return [
        pytest.param(name, marks=pytest.mark.django_db)
        if getattr(build, "needs_db", False)
        else name
        for name, build in sorted(WORLDS.items())
    ]


@pytest.fixture(params=_world_params())
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return WORLDS[request.param](tmp_path)


def space(world: World) -> Namespace:
    mounts = {m.name: m for m in [*world.others, world.mount]}
    return registry.compose(HOST, mounts)


def test_every_registered_mount_has_a_world() -> None:
    missing = sorted(set(registry.MOUNTS) - set(WORLDS))
    assert missing == [], f"registered mounts without a world in the shared suite: {missing}"


def test_registered_classes_are_mounts_named_as_registered() -> None:
    for name in registry.MOUNTS:
        cls = registry.mount_class(name)
        assert issubclass(cls, Mount) and cls.name == name


def test_root_of_the_mount_lists_and_points_up_to_the_host_root(world: World) -> None:
    content = space(world).read(str(world.mount.root))
    assert content.mime_type == "application/vnd.tm.listing+json"
    assert content.body["uri"] == str(world.mount.root)
    ups = [link.href for link in content.links if link.rel == "up"]
    assert ups == [f"tm://{HOST}/"]
    for child in content.body["children"]:
        assert child["uri"].startswith(str(world.mount.root))


def test_collection_lists_children_in_order_with_types(world: World) -> None:
    body = space(world).read(world.collection).body
    names = [child["name"] for child in body["children"]]
    flags = [child["isCollection"] for child in body["children"]]
    assert flags == sorted(flags, reverse=True), "collections come first"
    if world.first_child is not None:
        assert names[0] == world.first_child, "collections come first"
    assert all(name in names for name in world.child_names)
    if world.leaf_text is not None:
        notes = next(c for c in body["children"] if c["name"] == "notes.md")
        assert notes["isCollection"] is False
        assert notes["size"] == len(NOTES)


def test_leaf_reads_as_itself_with_up_collection_describedby(world: World) -> None:
    content = space(world).read(world.leaf)
    assert content.uri == world.leaf
    if world.leaf_text is not None:
        assert to_text(content.body) == world.leaf_text
    else:
        assert content.is_json and content.mime_type == world.leaf_type
    rels = {link.rel: link.href for link in content.links}
    assert rels["up"] == world.collection
    assert rels["collection"] == world.collection
    assert rels["describedby"] == world.leaf + "?as=stat"


def test_listed_types_equal_stat_types(world: World) -> None:
    ns = space(world)
    for child in ns.read(world.collection).body["children"]:
        if child["isCollection"] or child.get("redacted"):
            continue
        stat = ns.read(child["uri"] + "?as=stat").body
        assert stat["mimeType"] == child["mimeType"], child["uri"]


def test_every_stat_has_the_shared_shape(world: World) -> None:
    ns = space(world)
    leaves = [
        child
        for child in ns.read(world.collection).body["children"]
        if not child["isCollection"] and not child.get("redacted")
    ]
    assert leaves
    for child in leaves:
        stat = ns.read(child["uri"] + "?as=stat").body
        missing = {"uri", "name", "mimeType", "isCollection"} - set(stat)
        assert missing == set(), child["uri"]
        assert stat["uri"] == child["uri"] and stat["isCollection"] is False
        if "name" in stat:
            assert stat["name"] == child["name"], child["uri"]
        for known in ("size", "modified", "text"):
            assert stat.get(known, "absent") is not None, (child["uri"], known)
        if "size" in child and "size" in stat:
            assert stat["size"] == child["size"], child["uri"]


def test_the_documented_vocabulary_is_read_whole() -> None:
    iana, tm = documented_relations()
    assert {"up", "collection", "alternate", "describedby", "help"} <= iana
    assert {"tm:source", "tm:renders-as", "tm:step", "tm:step-of", "tm:links"} <= tm
    assert len(tm) == 26  # 11 pairs and 4 one-way relations


def test_links_are_documented_resolve_and_up_never_names_itself(world: World) -> None:
    """LK1 and LK5: every relation is one of the documented ones with its confidence rule, and
    every href answers a read through the namespace (a link to a mount missing from the world
    is a world to complete, not a link to skip)."""
    iana, tm = documented_relations()
    ns = space(world)
    for uri in (str(world.mount.root), world.collection, world.leaf, world.leaf + "?as=stat"):
        for link in ns.read(uri).links:
            where = f"{link.rel} {link.href} on {uri}"
            if link.rel.startswith("tm:"):
                assert link.rel in tm, f"undocumented relation: {where}"
                assert link.confidence in ("exact", "inferred", "low"), where
            else:
                assert link.rel in iana, f"undocumented relation: {where}"
                assert link.confidence is None, where
            assert str(parse(link.href)) == link.href, f"not in its one spelling: {where}"
            try:
                ns.read(link.href)
            except Refusal as refused:
                pytest.fail(f"{where} does not resolve: {refused.reason}")
            if link.rel == "up":
                assert link.href != str(parse(uri).identity)


def test_typo_is_not_found_with_the_real_leaf_nearest(world: World) -> None:
    with pytest.raises(NotFound) as refused:
        space(world).read(world.typo)
    data = refused.value.data
    assert data["reason"] == "not-found"
    assert data["uri"] == world.typo
    assert data["nearest"][0] == world.leaf
    assert len(data["nearest"]) <= 5
    assert world.typo not in data["nearest"]


def test_missing_directory_answers_from_the_deepest_ancestor(world: World) -> None:
    if world.sub_collection is None:
        pytest.skip("this mount has no collection below another")
    parent = world.sub_parent or world.collection
    missing = parent + world.sub_collection.rstrip("/") + "a/deep.md"
    with pytest.raises(NotFound) as refused:
        space(world).read(missing)
    assert refused.value.data["nearest"][0] == parent + world.sub_collection


def test_collection_asked_as_leaf_points_at_its_slash_form(world: World) -> None:
    if world.sub_collection is None:
        pytest.skip("this mount has no collection below another")
    parent = world.sub_parent or world.collection
    with pytest.raises(NotFound) as refused:
        space(world).read(parent + world.sub_collection.rstrip("/"))
    assert refused.value.data["nearest"] == [parent + world.sub_collection]


def test_unknown_parameter_and_facet_are_bad_facet_with_valid_list(world: World) -> None:
    ns = space(world)
    with pytest.raises(BadFacet) as refused:
        ns.read(world.leaf + "?colour=red")
    assert refused.value.data["reason"] == "bad-facet"
    assert "as" in refused.value.data["valid"]
    with pytest.raises(BadFacet) as refused:
        ns.read(world.leaf + "?as=" + world.unoffered_facet)
    assert "stat" in refused.value.data["valid"]


def test_parts_keep_their_address(world: World) -> None:
    ns = space(world)
    if world.leaf_text is not None:
        lines = ns.read(world.leaf + "?lines=2-3")
        assert to_text(lines.body) == "two\nthree\n"
        assert lines.uri == world.leaf + "?lines=2-3"
        ranged = ns.read(world.leaf + "?range=0-3")
        assert to_text(ranged.body) == "one"
        assert ranged.uri == world.leaf + "?range=0-3"
    if world.leaf_pointer is not None:
        where, value = world.leaf_pointer
        pointed = ns.read(world.leaf + "?pointer=" + where)
        assert pointed.body == value
        assert pointed.uri == world.leaf + "?pointer=" + where
    if world.json_leaf:
        pointed = ns.read(world.json_leaf + "?pointer=/a/1/b")
        assert pointed.body == RECORD["a"][1]["b"]  # type: ignore[index]
        assert pointed.uri == world.json_leaf + "?pointer=/a/1/b"
        with pytest.raises(NotFound) as refused:
            ns.read(world.json_leaf + "?pointer=/a/7")
        assert refused.value.data["nearest"][0] == world.json_leaf + "?pointer=/a/0"


@pytest.mark.parametrize(
    "part",
    [
        "lines=0-2",
        "lines=3-2",
        "lines=１-2",
        "range=5-5",
        "range=-1-4",
        "range=1_0-20",
        "pointer=a/b",
        "pointer=/~2",
        "lines=1-2&range=0-4",
        "lines=99999999999-1",
    ],
)
def test_malformed_parts_are_refused(world: World, part: str) -> None:
    with pytest.raises(BadFacet):
        space(world).read(world.leaf + "?" + part)


def test_cursor_pages_whole_listing_and_refuses_foreign_cursors(world: World) -> None:
    world.mount.page_size = 1
    ns = space(world)
    seen: list[str] = []
    uri = world.collection
    while True:
        body = ns.read(uri).body
        seen.extend(child["name"] for child in body["children"])
        if "next" not in body:
            break
        uri = body["next"]
    assert seen == [c.name for c in world.mount.list(_req(world.collection)).children]
    first = ns.read(world.collection).body["nextCursor"]
    other = str(world.mount.root)
    if other != world.collection:  # a mount with one collection has no other to replay on
        with pytest.raises(BadCursor):  # replayed on another listing
            ns.read(f"{other}?cursor={first}")
    with pytest.raises(BadCursor):  # forged
        ns.read(f"{world.collection}?cursor=MTA")
    with pytest.raises(BadCursor):  # edited
        ns.read(f"{world.collection}?cursor={first[:-2]}xx")


def test_completion_knows_its_arguments_only(world: World) -> None:
    ns = space(world)
    template = world.mount.templates()[0]
    assert template.title and template.description
    with pytest.raises(BadArgument) as refused:
        ns.complete(template.uri_template, "colour", "", {})
    assert refused.value.data["valid"] == list(template.arguments)
    if world.completion is not None:
        argument, typed_value, expected = world.completion
        assert ns.complete(template.uri_template, argument, typed_value, {}) == expected
        return
    path = parse(world.collection).path[world.complete_skip :]
    typed = "/".join(path) + "/no"
    values = ns.complete(template.uri_template, "path", typed, world.complete_context)
    assert values == ["/".join(path) + "/notes.md"]


def test_hostile_uris_are_refused_and_leak_nothing(world: World) -> None:
    ns = space(world)
    assert world.hostile, "every world names URIs to refuse"
    inside = str(world.mount.root)
    for uri, reason in world.hostile.items():
        with pytest.raises(Refusal) as refused:
            ns.read(uri)
        data = refused.value.data
        assert data["reason"] == reason, uri
        assert data["uri"] == str(parse(uri)), uri
        if reason == "out-of-root":  # RJ1: with the served roots, inside this mount
            assert data["roots"] and all(r.startswith(inside) for r in data["roots"]), uri
        if reason == "not-found":  # NS8: nearest inside this mount, never the refused URI
            nearest = data["nearest"]
            assert len(nearest) <= 5 and data["uri"] not in nearest, uri
            assert all(n.startswith(inside) for n in nearest), uri
        if world.secret:
            assert world.secret not in json.dumps(refused.value.data), uri
    if world.secret:
        for listed in (str(world.mount.root), world.collection):
            assert world.secret not in json.dumps(ns.read(listed).body)


def _req(uri: str):  # type: ignore[no-untyped-def]
    from tmsite.core.facets import parse_facets
    from tmsite.core.types import Request

    parsed = parse(uri)
    return Request(parsed, parse_facets(parsed))


def test_documents_are_what_reads_serve_and_never_the_secret(world: World) -> None:
    ns = space(world)
    inside = str(world.mount.root)
    documents = {document.uri: document for document in world.mount.documents()}
    for uri, document in documents.items():
        assert uri.startswith(inside), uri
        assert document.title and document.kind and document.stamp, uri
        read = ns.read(uri)
        assert read.mime_type == document.mime_type, uri
        text = document.text
        if document.lines and text:
            last = text.count("\n") or 1
            assert to_text(ns.read(f"{uri}?lines=1-{last}").body) in text, uri
        for pointer, words in document.parts() if document.parts else []:
            assert words == "\n".join(passages.words(ns.read(f"{uri}?pointer={pointer}").body))
        if world.secret:
            assert world.secret not in text and world.secret not in document.title, uri
    if world.indexed and world.indexed_as is not None:
        assert documents[world.indexed_as].text.strip() and not documents[world.indexed_as].lines
    elif world.indexed and world.leaf_text is not None:
        assert documents[world.leaf].text == world.leaf_text
        assert documents[world.leaf].lines
    elif world.indexed:  # a JSON thing: its words, read whole
        assert documents[world.leaf].text.strip() and not documents[world.leaf].lines
    else:
        assert not documents, "a mount offers documents: say so with indexed=True in its world"


def test_a_stamp_vouches_for_the_leaf_while_it_reads_the_same_and_never_for_the_hostile(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stamp`` never raises; a mount that stamps vouches for its leaf with a hashable value,
    the same while nothing changes; no hostile address is kept."""
    monkeypatch.setattr(fs_mount, "SETTLE_SECONDS", 0.0)  # the world's files were just written
    ns = space(world)
    leaf = parse(world.leaf)
    first = world.mount.stamp(leaf)
    if type(world.mount).stamp is Mount.stamp:
        assert first is None
        return
    assert first is not None, "a mount that stamps vouches for its plain leaf"
    hash(first)
    body = ns.read(world.leaf).body
    assert world.mount.stamp(leaf) == first
    assert ns.read(world.leaf).body == body
    assert not ns.keeps(world.leaf) or ns.kept(world.leaf) is not None, "the leaf is kept"
    for uri in world.hostile:  # refused, and never kept, whether the mount stamps it or not
        with pytest.raises(Refusal):
            ns.read(uri)
        assert ns.kept(uri) is None, uri
        assert uri not in ns.memo._entries, uri
