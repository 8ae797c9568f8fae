"""The page rule: file → page, page → file, and every page the site serves."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tmsite.mounts.http import pages

pytestmark = pytest.mark.spec("OP3", "HTTP")


@pytest.mark.parametrize(
    ("relpath", "page"),
    [
        # The ten cases of the reference's page rule (§10.1).
        ("docs/nes/pile.md", "/docs/nes/pile"),
        ("docs/index.md", "/docs"),
        ("docs/nes/index.md", "/docs/nes"),
        ("docs/ja/nes/pile.md", "/ja/docs/nes/pile"),
        ("docs/ja/index.md", "/ja/docs"),
        # This site renders Markdown only, so an .mdx file (the earlier site's JSX notebook
        # format) makes no page here.
        ("docs/6502/two-ways-in.mdx", None),
        ("docs/README.md", None),
        ("docs/styles/x.md", None),
        ("docs/nes/pile", None),
        ("notes/plan.md", None),
        # And the edges this site adds.
        ("docs/_draft.md", None),
        ("docs/nes/_part.md", None),
        ("docs/_private/x.md", None),
        ("docs/.hidden.md", None),
        ("docs/nes/readme.md", None),
        ("docs/ja/styles/x.md", None),
        ("docs/ja.md", None),
        ("docs/ja/ja/x.md", None),
        ("docs/../settings.md", None),
        ("docs/nes/../../settings.md", None),
        ("docs\\nes\\pile.md", None),
        ("/docs/nes/pile.md", None),
        ("docs/nes//pile.md", None),
        ("docs/nes/pi\x00le.md", None),
        ("docs", None),
        ("docs/6502/two-ways-in.md", "/docs/6502/two-ways-in"),
        ("docs/ja/nes/index.md", "/ja/docs/nes"),
    ],
)
def test_page_for(relpath: str, page: str | None) -> None:
    assert pages.page_for(relpath) == page


def test_source_for_is_the_inverse(checkout: Path) -> None:
    # The reference's cases (§10.2) ...
    assert pages.source_for("ja", "nes/alone") == "docs/nes/alone.md"
    assert pages.source_for("en", "") == "docs/index.md"
    assert pages.source_for("en", "nes") == "docs/nes/index.md"
    assert pages.source_for("en", "nes/unknown") is None
    # ... the Japanese shadow wins over the English file ...
    assert pages.source_for("ja", "nes/pile") == "docs/ja/nes/pile.md"
    assert pages.source_for("ja", "nes") == "docs/ja/nes/index.md"
    assert pages.source_for("ja", "") == "docs/index.md"
    assert pages.source_for("en", "nes/pile") == "docs/nes/pile.md"
    # ... and what has no page has no source.
    for lang, slug in [
        ("en", "README"),
        ("en", "_draft"),
        ("en", "styles/x"),
        ("en", "ja/nes/pile"),
        ("fr", "nes/pile"),
        ("en", "../settings"),
        ("en", "nes/../../settings"),
        ("en", "nes/"),
        ("en", "/nes"),
    ]:
        assert pages.source_for(lang, slug) is None, (lang, slug)


def test_every_source_maps_back_to_its_page(checkout: Path) -> None:
    for page in pages.all_pages():
        assert pages.source_for(page.lang, page.slug) == page.source
        assert pages.page_at(page.path) == page
        if not page.fallback:
            assert pages.page_for(page.source) == page.path


def test_all_pages(checkout: Path) -> None:
    found = {(p.path, p.source, p.lang, p.fallback) for p in pages.all_pages()}
    assert found == {
        ("/docs", "docs/index.md", "en", False),
        ("/docs/nes", "docs/nes/index.md", "en", False),
        ("/docs/nes/alone", "docs/nes/alone.md", "en", False),
        ("/docs/nes/pile", "docs/nes/pile.md", "en", False),
        ("/ja/docs", "docs/index.md", "ja", True),
        ("/ja/docs/nes", "docs/ja/nes/index.md", "ja", False),
        ("/ja/docs/nes/alone", "docs/nes/alone.md", "ja", True),
        ("/ja/docs/nes/pile", "docs/ja/nes/pile.md", "ja", False),
    }


def test_page_at_answers_canonical_paths_only(checkout: Path) -> None:
    page = pages.page_at("/ja/docs/nes/alone")
    assert page is not None and page.fallback and page.source == "docs/nes/alone.md"
    assert pages.page_at("/docs/nes/index") is None
    assert pages.page_at("/docs/nes/") is None
    assert pages.page_at("/pieces") is None


def test_the_index_follows_the_tree(checkout: Path, put: Callable[[str, str], Path]) -> None:
    assert pages.source_for("en", "nes/new") is None
    put("docs/nes/new.md", "# New\n")
    assert pages.source_for("en", "nes/new") == "docs/nes/new.md"
    put("docs/deep/er/page.md", "# Deep\n")
    assert pages.source_for("ja", "deep/er/page") == "docs/deep/er/page.md"
    (checkout / "docs/nes/new.md").unlink()
    assert pages.source_for("en", "nes/new") is None


def test_the_index_is_rebuilt_only_when_a_directory_changes(
    checkout: Path, put: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    pages.all_pages()
    walks: list[Path] = []
    real_walk = pages._walk

    def counting_walk(root: Path) -> pages._Index:
        walks.append(root)
        return real_walk(root)

    monkeypatch.setattr(pages, "_walk", counting_walk)
    pages.all_pages()
    pages.source_for("en", "nes/pile")
    assert walks == []
    put("docs/nes/more.md", "# More\n")
    assert pages.source_for("en", "nes/more") == "docs/nes/more.md"
    assert len(walks) == 1


def test_a_symlink_out_of_docs_is_no_page(checkout: Path) -> None:
    os.symlink(checkout / "settings.md", checkout / "docs" / "escape.md")
    os.symlink(checkout, checkout / "docs" / "loop")
    assert pages.source_for("en", "escape") is None
    assert pages.source_for("en", "loop/docs/index") is None
    assert all(p.source != "docs/escape.md" for p in pages.all_pages())


def test_a_symlink_inside_docs_is_a_page(checkout: Path) -> None:
    os.symlink(checkout / "docs" / "nes" / "pile.md", checkout / "docs" / "alias.md")
    assert pages.source_for("en", "alias") == "docs/alias.md"


def test_no_docs_directory(tmp_path: Path, settings: Any) -> None:
    settings.TM_CHECKOUT = tmp_path
    assert pages.all_pages() == []
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Now\n")
    assert pages.source_for("en", "") == "docs/index.md"


@pytest.mark.django_db  # the game pages are listed from the database
def test_site_pages_and_registered_families(checkout: Path) -> None:
    paths = [p.path for p in pages.site_pages()]
    assert paths[:3] == ["/", "/ja/", "/pieces"]
    assert "/docs/nes/pile" in paths and "/ja/docs/nes/alone" in paths

    def family() -> list[pages.SitePage]:
        return [pages.SitePage("/entity/x", "en")]

    pages.register_pages("test-family", family)
    try:
        assert pages.site_pages()[-1] == pages.SitePage("/entity/x", "en")
        with pytest.raises(ValueError):
            pages.register_pages("test-family", lambda: [])
    finally:
        del pages._families["test-family"]


@pytest.mark.parametrize(
    ("source", "lang", "href", "target"),
    [
        ("docs/nes/pile.md", "en", "alone.md", "/docs/nes/alone"),
        ("docs/nes/pile.md", "en", "../index.md", "/docs"),
        ("docs/nes/pile.md", "en", "./index.md#a-b", "/docs/nes#a-b"),
        ("docs/nes/pile.md", "ja", "alone.md", "/ja/docs/nes/alone"),
        ("docs/ja/nes/pile.md", "ja", "../index.md", "/ja/docs"),
        ("docs/index.md", "en", "two%20words.md", "/docs/two%20words"),
        ("docs/index.md", "en", "https://example.org/a.md", None),
        ("docs/index.md", "en", "//example.org/a.md", None),
        ("docs/index.md", "en", "/docs/a.md", None),
        ("docs/index.md", "en", "#top", None),
        ("docs/index.md", "en", "../notes/plan.md", None),
        ("docs/index.md", "en", "README.md", None),
        ("docs/index.md", "en", "picture.png", None),
    ],
)
def test_link_for(source: str, lang: str, href: str, target: str | None) -> None:
    assert pages.link_for(source, lang, href) == target
