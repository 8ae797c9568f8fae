"""The docs/ index behind every page lookup: a lookup checks its own directories only, and
still sees every change to them (new directories, renames, symlinked documents)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tmsite.core.uri import parse
from tmsite.mounts import registry
from tmsite.mounts.http import pages

pytestmark = pytest.mark.spec("OP3", "HTTP")

HOST = "testbox"


@pytest.fixture
def crowded(checkout: Path) -> Path:
    for i in range(300):
        (checkout / "docs" / f"sec{i // 30}" / f"d{i:03d}").mkdir(parents=True)
    pages.all_pages()
    return checkout


def stats_during(monkeypatch: pytest.MonkeyPatch, action: Callable[[], object]) -> list[str]:
    """The paths ``os.stat`` was asked for while ``action`` ran (the real call answers)."""
    asked: list[str] = []
    real = os.stat

    def counting(path: str | os.PathLike[str], *args: object, **kwargs: object) -> os.stat_result:
        asked.append(os.fspath(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", counting)
    try:
        action()
    finally:
        monkeypatch.setattr(os, "stat", real)
    return asked


def test_a_lookup_stats_its_own_directories_not_the_tree(
    crowded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = stats_during(monkeypatch, lambda: pages.page_at("/ja/docs/nes/pile"))
    docs = str(crowded / "docs")
    assert sorted(set(asked)) == [docs, f"{docs}/ja", f"{docs}/ja/nes", f"{docs}/nes"]
    assert len(stats_during(monkeypatch, pages.all_pages)) > 300  # the whole-tree answer


def test_a_lookup_sees_new_directories_renames_and_removals(
    crowded: Path, put: Callable[[str, str], Path]
) -> None:
    assert pages.page_at("/docs/sec3/d095/new") is None
    put("docs/sec3/d095/new/index.md", "# New\n")
    page = pages.page_at("/docs/sec3/d095/new")
    assert page is not None and page.source == "docs/sec3/d095/new/index.md"
    os.rename(crowded / "docs" / "sec3", crowded / "docs" / "moved")
    assert pages.page_at("/docs/sec3/d095/new") is None
    assert pages.page_at("/docs/moved/d095/new") is not None
    (crowded / "docs" / "moved" / "d095" / "new" / "index.md").unlink()
    assert pages.page_at("/docs/moved/d095/new") is None
    put("docs/ja/sec0/d001/x.md", "# x\n")
    japanese = pages.page_at("/ja/docs/sec0/d001/x")
    assert japanese is not None and not japanese.fallback


def test_a_symlinked_document_follows_its_target(
    crowded: Path, put: Callable[[str, str], Path]
) -> None:
    target = put("docs/_store/real.md", "# Real\n")
    os.symlink(target, crowded / "docs" / "alias.md")
    assert pages.source_for("en", "alias") == "docs/alias.md"
    target.unlink()  # only docs/_store changes, a directory no page lives in
    assert pages.source_for("en", "alias") is None
    put("docs/_store/real.md", "# Back\n")
    assert pages.source_for("en", "alias") == "docs/alias.md"


def test_the_page_links_change_with_the_tree(
    crowded: Path, put: Callable[[str, str], Path]
) -> None:
    http = registry.build_mount("http", HOST)
    source = parse(f"tm://{HOST}/fs/docs/sec1/d040/guide.md")
    assert http.links_into(source) == []
    put("docs/sec1/d040/guide.md", "# Guide\n")
    renders = [link.href for link in http.links_into(source) if link.rel == "tm:renders-as"]
    assert renders and all(href.endswith("/docs/sec1/d040/guide") for href in renders[:1])
    assert any(href.endswith("/ja/docs/sec1/d040/guide") for href in renders)
    (crowded / "docs" / "sec1" / "d040" / "guide.md").unlink()
    assert http.links_into(source) == []
