"""A site the box serves but did not build: the demo site, served by a real static server."""

from __future__ import annotations

import pytest

from tests.http.conftest import DEMO, uri
from tmsite.core.errors import Binary, Denied, NotFound
from tmsite.mounts.namespace import Namespace

pytestmark = [pytest.mark.slow, pytest.mark.spec("HTTP")]


def test_listed_from_its_sitemap_with_manifest_titles(ns: Namespace) -> None:
    root = ns.read(uri(DEMO, collection=True)).body
    assert [c["name"] for c in root["children"]] == ["drafts/", "img/", "notes/"]
    assert root["page"] == uri(DEMO, collection=True, **{"as": "text"})
    notes = ns.read(uri(DEMO, "notes", collection=True)).body["children"]
    assert [(c["name"], c.get("title")) for c in notes] == [
        ("clock.html", "Clock"),
        ("solder.html", "Solder"),
    ]
    drafts = ns.read(uri(DEMO, "drafts", collection=True)).body["children"]
    assert drafts == [{"uri": uri(DEMO, "drafts", "plan.html"), "name": "plan.html",
                       "redacted": True, "isCollection": False}]  # fmt: skip


def test_a_page_reads_as_text_and_an_article_counts(ns: Namespace) -> None:
    assert ns.read(uri(DEMO, "notes", "solder.html")).body == (
        "Solder\nTin and lead, or tin and silver.\nmelt  183 C\nflow  250 C\n"
    )
    assert ns.read(uri(DEMO, "notes", "clock.html")).body == "Clock\nOne phase, then the other.\n"


def test_stat_lists_the_files_that_make_the_page(ns: Namespace) -> None:
    stat = ns.read(uri(DEMO, collection=True, **{"as": "stat"})).body
    assert stat["title"] == "A demo shelf"
    assert stat["files"] == ["index.html", "style.css", "img/chip.png"]
    assert stat["status"] == 200 and stat["mimeType"] == "text/vnd.tm.page"


def test_an_image_reads_raw_as_itself(ns: Namespace) -> None:
    image = uri(DEMO, "img", "chip.png")
    content = ns.read(image + "?as=raw")
    assert content.mime_type == "image/png" and content.body.startswith(b"\x89PNG")
    assert ns.read(image).body == content.body  # raw is the default for what is not HTML
    with pytest.raises(Binary) as refused:
        ns.read(image + "?as=text")
    assert refused.value.data["mimeType"] == "image/png"
    assert refused.value.data["raw"] == image + "?as=raw"
    listed = ns.read(uri(DEMO, "img", collection=True)).body["children"][0]
    assert listed["mimeType"] == ns.read(image + "?as=stat").body["mimeType"] == "image/png"
    # its alternate is an address that reads: raw, not ?as=rendered (refused for an image)
    alternates = [link.href for link in content.links if link.rel == "alternate"]
    assert alternates == [image]
    alternates = [link.href for link in ns.read(image).links if link.rel == "alternate"]
    assert alternates == [image + "?as=raw"]
    for href in alternates:
        ns.read(href)


def test_a_path_not_in_the_sitemap_is_not_found_before_any_request(
    ns: Namespace, demo_door: str
) -> None:
    for path in [("style.css",), ("elsewhere.html",), ("notes", "solderr.html")]:
        with pytest.raises(NotFound) as refused:
            ns.read(uri(DEMO, *path))
        assert refused.value.data["reason"] == "not-found"
    with pytest.raises(NotFound) as refused:
        ns.read(uri(DEMO, "notes", "solderr.html"))
    assert refused.value.data["nearest"][0] == uri(DEMO, "notes", "solder.html")


def test_a_path_under_a_disallow_is_denied_with_the_rule(ns: Namespace) -> None:
    with pytest.raises(Denied) as refused:
        ns.read(uri(DEMO, "drafts", "plan.html"))
    assert refused.value.data["rule"] == "Disallow: /drafts/"
    assert "Not ready" not in str(refused.value.data)
