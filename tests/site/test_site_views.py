"""The site's pages through the Django test client: documents, front pages, pieces, sitemap."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

# The sitemap lists the game pages, which come from the database.
pytestmark = [pytest.mark.urls("tests.site.urls"), pytest.mark.django_db, pytest.mark.spec("OP3")]


class Outline(HTMLParser):
    """Which elements each element sits in, and the attributes of a few."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.seen: list[tuple[str, tuple[str, ...], dict[str, str | None]]] = []
        self.title = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, tuple(self.stack), dict(attrs)))
        if tag not in {"meta", "link", "br", "hr", "img", "input"}:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] == "title":
            self.title += data

    def where(self, tag: str) -> list[tuple[str, ...]]:
        return [parents for t, parents, _ in self.seen if t == tag]

    def attrs(self, tag: str) -> list[dict[str, str | None]]:
        return [a for t, _, a in self.seen if t == tag]


def outline(body: bytes) -> Outline:
    parser = Outline()
    parser.feed(body.decode())
    return parser


def test_a_document_page(client: Client, checkout: Path) -> None:
    response = client.get("/docs/nes/pile")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/html; charset=utf-8"
    body = response.content
    assert body.startswith(b"<!doctype html>")
    page = outline(body)
    assert page.title == "The pile · tinymachines"
    assert page.attrs("html") == [{"lang": "en"}]
    # one <main>, one <nav>, and the nav is not inside main (nor main inside nav)
    assert len(page.where("main")) == 1 and len(page.where("nav")) == 1
    assert "main" not in page.where("nav")[0]
    assert "nav" not in page.where("main")[0]
    # headings carry ids and permalinks, and they are inside <main>
    h2 = page.attrs("h2")
    assert {"id": "sprite-zero"} in h2
    assert b'<a class="headerlink" href="#sprite-zero"' in body
    assert all("main" in parents for parents in page.where("h1"))
    # fenced code is highlighted by Pygments with classes; the table is a table
    assert b'<div class="highlight"><pre>' in body
    assert b'<span class="k">def</span>' in body
    assert b'<span class="k">return</span>' in body
    assert all("main" in parents for parents in page.where("table"))
    assert b"<td>PPUCTRL</td>" in body
    # the stylesheet, the language switch to the Japanese page, the alternates
    assert {"rel": "stylesheet", "href": "/static/site.css"} in page.attrs("link")
    switch = [a for a in page.attrs("a") if a.get("class") == "language-switch"]
    assert switch == [
        {"class": "language-switch", "href": "/ja/docs/nes/pile", "hreflang": "ja", "lang": "ja"}
    ]
    alternates = {a["hreflang"]: a["href"] for a in page.attrs("link") if a.get("hreflang")}
    assert alternates == {
        "en": "http://testserver/docs/nes/pile",
        "ja": "http://testserver/ja/docs/nes/pile",
    }


def test_the_site_name_comes_from_settings(client: Client, checkout: Path, settings: Any) -> None:
    settings.TM_SITE_NAME = "example box"
    assert outline(client.get("/docs/nes/pile").content).title == "The pile · example box"


def test_index_pages_and_canonical_addresses(client: Client, checkout: Path) -> None:
    assert outline(client.get("/docs").content).title == "Notes · tinymachines"
    assert outline(client.get("/docs/nes").content).title == "NES · tinymachines"
    for wrong, right in [
        ("/docs/", "/docs"),
        ("/docs/nes/", "/docs/nes"),
        ("/docs/nes/index", "/docs/nes"),
        ("/docs/index", "/docs"),
        ("/ja/docs/nes/pile/", "/ja/docs/nes/pile"),
    ]:
        response = client.get(wrong)
        assert response.status_code == 301, wrong
        assert response["Location"] == right


def test_a_japanese_translation(client: Client, checkout: Path) -> None:
    response = client.get("/ja/docs/nes/pile")
    assert response.status_code == 200
    page = outline(response.content)
    assert page.attrs("html") == [{"lang": "ja"}]
    assert page.title == "山 · tinymachines"
    assert "スプライトの話".encode() in response.content
    assert b"fallback" not in response.content
    assert {"class": "doc"} in page.attrs("article")
    switch = [a for a in page.attrs("a") if a.get("class") == "language-switch"]
    assert switch[0]["href"] == "/docs/nes/pile"


def test_a_japanese_page_falls_back_to_the_english_text(client: Client, checkout: Path) -> None:
    response = client.get("/ja/docs/nes/alone")
    assert response.status_code == 200
    page = outline(response.content)
    assert page.attrs("html") == [{"lang": "ja"}]
    # the English text, marked as English, under a note that says it is not translated
    assert {"class": "doc", "lang": "en"} in page.attrs("article")
    assert b"Only in English." in response.content
    assert {"class": "note fallback"} in page.attrs("p")
    assert "翻訳されていません".encode() in response.content
    assert page.title == "Alone · tinymachines"
    # the index falls back too
    assert client.get("/ja/docs").status_code == 200


def test_front_pages(client: Client, checkout: Path) -> None:
    response = client.get("/")
    assert response.status_code == 200
    page = outline(response.content)
    assert page.title == "tinymachines"
    hrefs = [a["href"] for a in page.attrs("a")]
    for path in ["/docs", "/docs/nes", "/docs/nes/pile", "/docs/nes/alone", "/pieces"]:
        assert path in hrefs
    assert b">The pile</a>" in response.content
    ja = client.get("/ja/")
    assert ja.status_code == 200
    page = outline(ja.content)
    assert page.attrs("html") == [{"lang": "ja"}]
    hrefs = [a["href"] for a in page.attrs("a")]
    assert "/ja/docs/nes/pile" in hrefs and "/ja/docs/nes/alone" in hrefs
    assert ">山</a>".encode() in ja.content
    assert client.get("/ja").status_code == 301


def test_pieces(client: Client, checkout: Path) -> None:
    response = client.get("/pieces")
    assert response.status_code == 200
    body = response.content.decode()
    page = outline(response.content)
    assert page.title == "Pieces · tinymachines"
    assert [a["id"] for a in page.attrs("article")] == ["halfphi", "explorer"]
    assert "a crate is a dependency, not a running service" in body
    assert '<a href="https://6502.tinymachines.ai">' in body
    assert "CC BY-NC-SA 3.0" in body


def test_pieces_as_a_bare_list(client: Client, checkout: Path) -> None:
    record = checkout / "data" / "pieces.json"
    items = json.loads(record.read_text())["pieces"]
    record.write_text(json.dumps(items))
    body = client.get("/pieces").content.decode()
    assert 'id="halfphi"' in body and 'id="explorer"' in body


def test_pieces_without_a_record(client: Client, checkout: Path) -> None:
    (checkout / "data" / "pieces.json").unlink()
    response = client.get("/pieces")
    assert response.status_code == 200
    assert "data/pieces.json does not exist" in response.content.decode()
    assert "main" in outline(response.content).where("p")[0]


def test_pieces_with_a_broken_record(client: Client, checkout: Path) -> None:
    (checkout / "data" / "pieces.json").write_text('{"pieces": {"not": "a list"}}')
    response = client.get("/pieces")
    assert response.status_code == 200
    assert "data/pieces.json cannot be read" in response.content.decode()
    (checkout / "data" / "pieces.json").write_text("{")
    assert "not JSON" in client.get("/pieces").content.decode()


def test_pieces_escape_what_the_record_says(client: Client, checkout: Path) -> None:
    (checkout / "data" / "pieces.json").write_text(
        json.dumps([{"key": "x", "name": "<script>alert(1)</script>", "source": "javascript:x"}])
    )
    body = client.get("/pieces").content.decode()
    assert "<script>" not in body and "&lt;script&gt;" in body
    assert 'href="javascript:x"' not in body


def test_sitemap_lists_every_page(client: Client, checkout: Path, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["example.org", "testserver"]
    response = client.get("/sitemap.xml", HTTP_HOST="example.org")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/xml; charset=utf-8"
    body = response.content.decode()
    locs = re.findall(r"<loc>([^<]*)</loc>", body)
    assert locs == sorted(set(locs), key=locs.index)  # no duplicates
    assert set(locs) == {
        "http://example.org/",
        "http://example.org/ja/",
        "http://example.org/pieces",
        "http://example.org/explore",
        "http://example.org/llms.txt",
        "http://example.org/docs",
        "http://example.org/docs/nes",
        "http://example.org/docs/nes/alone",
        "http://example.org/docs/nes/pile",
        "http://example.org/ja/docs",
        "http://example.org/ja/docs/nes",
        "http://example.org/ja/docs/nes/alone",
        "http://example.org/ja/docs/nes/pile",
    }
    assert re.search(r"/docs/nes/pile</loc><lastmod>\d{4}-\d\d-\d\dT", body)
    # every listed page answers 200
    for loc in locs:
        assert client.get(loc.removeprefix("http://example.org")).status_code == 200, loc


def test_sitemap_percent_encodes(client: Client, checkout: Path, put: Callable[..., Path]) -> None:
    put("docs/nes/two words.md", "# Two words\n")
    body = client.get("/sitemap.xml").content.decode()
    assert "<loc>http://testserver/docs/nes/two%20words</loc>" in body
    assert client.get("/docs/nes/two%20words").status_code == 200


def test_robots(client: Client, checkout: Path, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["example.org"]
    response = client.get("/robots.txt", HTTP_HOST="example.org")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    lines = response.content.decode().splitlines()
    assert "User-agent: *" in lines and "Allow: /" in lines
    assert "Sitemap: http://example.org/sitemap.xml" in lines


def test_stylesheet(client: Client) -> None:
    response = client.get("/static/site.css")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/css; charset=utf-8"
    css = response.content.decode()
    assert "main {" in css and ".highlight .k {" in css


@pytest.mark.parametrize(
    "path",
    ["/docs/nes/unknown", "/ja/docs/nope", "/docs/README", "/docs/_draft", "/docs/styles/x"],
)
def test_unknown_pages_are_a_404_page(client: Client, checkout: Path, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    page = outline(response.content)
    assert len(page.where("main")) == 1
    assert "main" not in page.where("nav")[0]
    assert page.title.startswith(("Page not found", "ページが見つかりません"))


def test_the_404_handler_for_the_project(client: Client, checkout: Path) -> None:
    response = client.get("/no/such/route")
    assert response.status_code == 404
    assert len(outline(response.content).where("main")) == 1


@pytest.mark.parametrize(
    "path", ["/", "/ja/", "/docs/nes/pile", "/ja/docs/nes/alone", "/pieces", "/sitemap.xml"]
)
def test_head_answers_like_get(client: Client, checkout: Path, path: str) -> None:
    get = client.get(path)
    head = client.head(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    for header in ["Content-Type", "ETag", "Cache-Control"]:
        assert head[header] == get[header]
    assert int(head["Content-Length"]) == len(get.content)


def test_other_methods_are_refused(client: Client, checkout: Path) -> None:
    response = client.post("/docs/nes/pile")
    assert response.status_code == 405
    assert set(response["Allow"].replace(" ", "").split(",")) == {"GET", "HEAD"}


def test_conditional_requests(client: Client, checkout: Path) -> None:
    first = client.get("/docs/nes/pile")
    assert first["Last-Modified"]
    again = client.get("/docs/nes/pile", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""
    since = client.get("/docs/nes/pile", HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
    assert since.status_code == 304
    # a change to the source changes the page
    source = checkout / "docs" / "nes" / "pile.md"
    source.write_text(source.read_text() + "\nOne more line.\n")
    changed = client.get("/docs/nes/pile", HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200
    assert b"One more line." in changed.content
    assert changed["ETag"] != first["ETag"]


def test_rendering_is_cached(
    client: Client, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tmsite.site import rendering

    calls: list[str] = []
    real = rendering.render_text

    def counting(text: str, *args: Any) -> Any:
        calls.append(text)
        return real(text, *args)

    monkeypatch.setattr(rendering, "render_text", counting)
    path = checkout / "docs" / "nes" / "alone.md"
    path.write_text("# Alone\n\nFirst.\n")
    client.get("/docs/nes/alone")
    client.get("/docs/nes/alone")
    assert len(calls) == 1
    client.get("/ja/docs/nes/alone")  # its links go to Japanese pages: rendered once more
    client.get("/ja/docs/nes/alone")
    assert len(calls) == 2
    path.write_text("# Alone\n\nSecond, longer.\n")
    assert b"Second, longer." in client.get("/docs/nes/alone").content
    assert len(calls) == 3


def test_links_between_documents_go_to_pages(
    client: Client, checkout: Path, put: Callable[..., Path]
) -> None:
    put(
        "docs/nes/links.md",
        "# Links\n\n[pile](pile.md), [top](../index.md#top), [section](index.md), "
        "[elsewhere](https://example.org/x.md), [file](data.json), [gone](../../notes/a.md), "
        "[readme](../README.md), [here](#links)\n",
    )
    body = client.get("/docs/nes/links").content.decode()
    assert '<a href="/docs/nes/pile">pile</a>' in body
    assert '<a href="/docs#top">top</a>' in body
    assert '<a href="/docs/nes">section</a>' in body
    assert '<a href="https://example.org/x.md">elsewhere</a>' in body
    assert '<a href="data.json">file</a>' in body
    assert '<a href="../../notes/a.md">gone</a>' in body
    assert '<a href="../README.md">readme</a>' in body
    assert '<a href="#links">here</a>' in body
    # read in Japanese (a fallback page), the same links go to the Japanese pages
    ja = client.get("/ja/docs/nes/links").content.decode()
    assert '<a href="/ja/docs/nes/pile">pile</a>' in ja
    assert '<a href="/ja/docs#top">top</a>' in ja
    # and from a translation, relative links stay in docs/ja/ and its pages
    put("docs/ja/nes/alone.md", "# 一人\n\n[山](pile.md)、[英語の索引](../../index.md)\n")
    ja = client.get("/ja/docs/nes/alone").content.decode()
    assert '<a href="/ja/docs/nes/pile">山</a>' in ja
    assert '<a href="/ja/docs">英語の索引</a>' in ja
