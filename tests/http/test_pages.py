"""Pages of this project's site, read through the http mount over live loopback HTTP."""

from __future__ import annotations

import json

import pytest

from tests.http.conftest import DEMO, HOST, SECRET, SITE, uri
from tmsite.core.errors import BadFacet, NotFound, Redirect
from tmsite.mounts.namespace import Namespace

pytestmark = [pytest.mark.slow, pytest.mark.spec("HTTP", "NS3", "OP3")]


def rels(content) -> dict[str, list[tuple[str, str | None]]]:  # type: ignore[no-untyped-def]
    out: dict[str, list[tuple[str, str | None]]] = {}
    for link in content.links:
        out.setdefault(link.rel, []).append((link.href, link.confidence))
    return out


def test_a_page_reads_as_its_main_text(ns: Namespace) -> None:
    content = ns.read(uri(SITE, "docs", "nes", "pile"))
    assert content.mime_type == "text/vnd.tm.page"
    assert content.body == "The pile\nWhat is in the pile.\none\ntwo\na  b\nc\n"
    assert content.uri == uri(SITE, "docs", "nes", "pile")
    links = rels(content)
    assert links["up"] == [(uri(SITE, "docs", "nes", collection=True), None)]
    assert links["collection"] == links["up"]
    assert (uri(SITE, "docs", "nes", "pile", **{"as": "stat"}), None) in links["describedby"]
    assert (f"tm://{HOST}/fs/docs/nes/pile.md", "exact") in links["tm:source"]
    ja = uri(SITE, "ja", "docs", "nes", "pile")
    assert (ja, None) in links["alternate"]
    titled = [link for link in content.links if link.href == ja]
    assert titled[0].title == "the same page in Japanese"


def test_text_with_a_facet_keeps_it_and_lines_cut_it(ns: Namespace) -> None:
    content = ns.read(uri(SITE, "docs", "nes", "pile", **{"as": "text"}))
    assert content.uri.endswith("?as=text")
    cut = ns.read(uri(SITE, "docs", "nes", "pile", lines="2-3"))
    assert cut.body == "What is in the pile.\none\n"


def test_rendered_is_the_html_with_its_headers(ns: Namespace) -> None:
    content = ns.read(uri(SITE, "docs", "nes", "pile", **{"as": "rendered"}))
    assert content.mime_type == "application/vnd.tm.rendered+json"
    body = content.body
    assert body["status"] == 200
    headers = {k.lower(): v for k, v in body["headers"]}
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert "etag" in headers
    assert "<nav" in body["body"] and "<main" in body["body"]
    assert body["url"] == f"https://{SITE}/docs/nes/pile"
    assert (uri(SITE, "docs", "nes", "pile"), None) in rels(content)["alternate"]


def test_raw_is_the_html_alone(ns: Namespace) -> None:
    content = ns.read(uri(SITE, "docs", "nes", "pile", **{"as": "raw"}))
    assert content.mime_type == "text/html"
    assert content.body.startswith("<!doctype html>")


def test_stat_reports_status_type_size_time_and_title(ns: Namespace) -> None:
    content = ns.read(uri(SITE, "docs", "nes", "pile", **{"as": "stat"}))
    body = content.body
    assert body["status"] == 200
    assert body["mimeType"] == "text/vnd.tm.page"
    assert body["contentType"] == "text/html; charset=utf-8"
    assert body["title"] == "The pile"
    assert isinstance(body["size"], int) and body["size"] > 100
    assert body["fetched"].endswith("+00:00")


def test_japanese_fallback_page_names_the_english_markdown(ns: Namespace) -> None:
    content = ns.read(uri(SITE, "ja", "docs", "nes", "alone"))
    links = rels(content)
    assert (f"tm://{HOST}/fs/docs/nes/alone.md", "exact") in links["tm:source"]
    assert (uri(SITE, "docs", "nes", "alone"), None) in links["alternate"]
    shadowed = rels(ns.read(uri(SITE, "ja", "docs", "nes", "pile")))
    assert (f"tm://{HOST}/fs/docs/ja/nes/pile.md", "exact") in shadowed["tm:source"]


def test_round_trip_page_markdown_page(ns: Namespace) -> None:
    page = uri(SITE, "docs", "nes", "alone")
    source = next(
        link.href for link in ns.read(page).links if link.rel == "tm:source" and "/fs/" in link.href
    )
    back = rels(ns.read(source))["tm:renders-as"]
    assert (page, "exact") in back
    assert (uri(SITE, "ja", "docs", "nes", "alone"), "exact") in back  # the fallback page too
    shadowed = rels(ns.read(f"tm://{HOST}/fs/docs/nes/pile.md"))["tm:renders-as"]
    assert shadowed == [(uri(SITE, "docs", "nes", "pile"), "exact")]


def test_site_root_lists_pages_and_collections_both_ways(ns: Namespace) -> None:
    body = ns.read(uri(SITE, collection=True)).body
    names = [child["name"] for child in body["children"]]
    assert "docs" in names and "docs/" in names and "ja/" in names and "pieces" in names
    assert body["page"] == uri(SITE, collection=True, **{"as": "text"})
    nes = ns.read(uri(SITE, "docs", "nes", collection=True)).body
    assert [c["name"] for c in nes["children"]] == ["alone", "pile"]
    assert all(c["mimeType"] == "text/vnd.tm.page" for c in nes["children"])
    sites = ns.read(f"tm://{HOST}/http/").body
    assert [c["name"] for c in sites["children"]] == [f"{SITE}/", f"{DEMO}/"]


def test_front_page_is_the_site_root_under_a_page_facet(ns: Namespace) -> None:
    stat = ns.read(uri(SITE, collection=True, **{"as": "stat"})).body
    assert stat["status"] == 200 and stat["path"] == "/"
    text = ns.read(uri(SITE, collection=True, **{"as": "text"})).body
    assert "Notes" in text
    with pytest.raises(BadFacet) as refused:
        ns.read(uri(SITE, "docs", collection=True, **{"as": "text"}))
    assert refused.value.data == {
        "reason": "bad-facet",
        "uri": uri(SITE, "docs", collection=True, **{"as": "text"}),
        "valid": [],
    }


def test_redirect_is_reported_as_a_visitor_is_sent(ns: Namespace) -> None:
    with pytest.raises(Redirect) as refused:
        ns.read(uri(SITE, "docs", "nes", "index"))
    data = refused.value.data
    assert data["status"] == 301
    assert data["target"] == f"https://{SITE}/docs/nes"
    assert data["targetUri"] == uri(SITE, "docs", "nes")
    stat = ns.read(uri(SITE, "docs", "nes", "index", **{"as": "stat"})).body
    assert stat["status"] == 301 and stat["location"] == "/docs/nes"


def test_not_found_names_the_nearest_pages(ns: Namespace) -> None:
    with pytest.raises(NotFound) as refused:
        ns.read(uri(SITE, "docs", "nes", "pyle"))
    data = refused.value.data
    assert data["reason"] == "not-found"
    assert data["nearest"][0] == uri(SITE, "docs", "nes", "pile")
    assert data["uri"] == uri(SITE, "docs", "nes", "pyle")
    with pytest.raises(NotFound) as deeper:
        ns.read(uri(SITE, "docs", "nes", "nothing", "deeper"))
    data = deeper.value.data
    assert data["reason"] == "not-found"
    assert data["uri"] == uri(SITE, "docs", "nes", "nothing", "deeper")
    # NS8: docs/nes/nothing/ does not list either, so the pages come from docs/nes/, the
    # deepest ancestor that does, ranked against "nothing".
    assert data["nearest"] == [uri(SITE, "docs", "nes", "alone"), uri(SITE, "docs", "nes", "pile")]


def test_unknown_site_is_not_found_with_the_sites(ns: Namespace) -> None:
    with pytest.raises(NotFound) as refused:
        ns.read(uri("tinymachines.a", "docs"))
    assert refused.value.data["nearest"][0] == uri(SITE, collection=True)


def test_pieces_page_reads_its_record_and_the_record_names_it(ns: Namespace) -> None:
    links = rels(ns.read(uri(SITE, "pieces")))
    assert links["tm:data"] == [(f"tm://{HOST}/fs/data/pieces.json", "inferred")]
    record = rels(ns.read(f"tm://{HOST}/fs/data/pieces.json"))
    assert record["tm:read-by"] == [(uri(SITE, "pieces"), "inferred")]
    assert "tm:read-by" not in rels(ns.read(f"tm://{HOST}/fs/data/other.json"))
    assert "tm:data" not in rels(ns.read(uri(SITE, "docs", "nes", "pile")))


def test_completion_of_site_path_and_as(ns: Namespace) -> None:
    template = f"tm://{HOST}/http/{{site}}/{{+path}}{{?as}}"
    assert ns.complete(template, "site", "tiny", {}) == [SITE]
    assert ns.complete(template, "as", "r", {}) == ["rendered", "raw"]
    assert ns.complete(template, "path", "docs/n", {"site": SITE}) == ["docs/nes", "docs/nes/"]
    assert ns.complete(template, "path", "", {"site": DEMO}) == ["drafts/", "img/", "notes/"]
    assert ns.complete(template, "path", "x/y/", {"site": "nowhere"}) == []


def test_nothing_outside_the_served_roots_is_read(ns: Namespace) -> None:
    for path in [("..", "secret.txt"), ("docs", "..", "..", "secret.txt")]:
        with pytest.raises(Exception) as refused:
            ns.read(uri(SITE, *path))
        assert SECRET not in json.dumps(getattr(refused.value, "data", {}))
