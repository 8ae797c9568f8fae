"""The page link rules the other http tests leave unasserted, each on real reads through the
namespace, the site served live over loopback:

* a record read by a module deeper than the view's own is ``low``; the view's own module's
  reads are ``inferred``; the pair (``tm:data`` / ``tm:read-by``) agrees at both ends;
* the frame (a helper every page view of the module calls) and the language tables are never
  page data;
* ``tm:generated-by`` is ``exact`` when the record's note names its writer, ``inferred`` when a
  script merely names the record (the git mount over a dulwich-built repository of the checkout);
* page → view is ``exact`` and its title says when the view renders several pages;
* ``alternate`` between two sites serving the same page, both ways, titled.

The deeper-module and frame rules need views the project does not have: a small package of
views is written into the temporary directory and put on ``tmsite``'s package path (the reading
follows the project's own package only), and a URL configuration adds its routes in front of
the project's.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import clear_url_caches

import tmsite
from tests.gitstore.builder import Builder
from tests.http.conftest import HOST, SITE, configure, uri, write
from tmsite.core.types import Content
from tmsite.mounts import registry
from tmsite.mounts.http import pages
from tmsite.mounts.namespace import Namespace

pytestmark = [pytest.mark.slow, pytest.mark.spec("HTTP", "LK2", "LK5")]

BETA = "beta.tinymachines.ai"
#: The package of views the deeper-module and frame tests serve (under ``tmsite``).
PACKAGE = "tmsite.linkrules_fixture"

VIEWS = '''
"""Two page views sharing a frame."""

from django.shortcuts import render

from tmsite.mounts.http import pages

from . import shelves
from .shelves import tally


def frame(request):
    """Every page view calls this: the menu is the frame, not page data."""
    return {"menu": shelves.read(pages.checkout() / "data" / "menu.json"), "lang": "en"}


def rows():
    return shelves.read(pages.checkout() / "data" / "shelf.json")


def shelf(request):
    context = frame(request)
    context["rows"] = rows()
    context["deep"] = shelves.deep_rows()
    context["words"] = shelves.read(pages.checkout() / "data" / "ja.json")
    return render(request, "tm_site/base.html", context)


def counter(request):
    context = frame(request)
    context["count"] = tally()
    return render(request, "tm_site/base.html", context)
'''

SHELVES = '''
"""A library module the views import: what it reads is a level deeper."""

import json

from tmsite.mounts.http import pages


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


def deep_rows():
    return read(pages.checkout() / "data" / "deep.json")


def tally():
    return len(read(pages.checkout() / "data" / "counted.json"))
'''

URLS = """
from django.urls import path

from tmsite.urls import handler400, urlpatterns as project

from . import views

urlpatterns = [
    path("shelf", views.shelf),
    path("counter", views.counter),
    *project,
]
"""

#: The records the fixture views read (the frame's menu and a language table among them).
RECORDS = ("shelf.json", "deep.json", "counted.json", "menu.json", "ja.json")


def links_of(content: Content, rel: str) -> list[tuple[str, str | None]]:
    return [(link.href, link.confidence) for link in content.links if link.rel == rel]


def titled(content: Content, rel: str, href: str) -> list[str | None]:
    return [link.title for link in content.links if link.rel == rel and link.href == href]


def fs(*path: str) -> str:
    return f"tm://{HOST}/fs/" + "/".join(path)


def git(*path: str) -> str:
    return f"tm://{HOST}/git/tmsite/" + "/".join(path)


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def fixture_views(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The fixture package on ``tmsite``'s path; its URL configuration's dotted name."""
    code = tmp_path / "code"
    package = code / PACKAGE.rsplit(".", 1)[1]
    write(package, "__init__.py", "")
    write(package, "views.py", textwrap.dedent(VIEWS))
    write(package, "shelves.py", textwrap.dedent(SHELVES))
    write(package, "urls.py", textwrap.dedent(URLS))
    monkeypatch.setattr(tmsite, "__path__", [*tmsite.__path__, str(code)])
    importlib.invalidate_caches()
    importlib.import_module(f"{PACKAGE}.urls")
    family = [pages.SitePage("/shelf", "en"), pages.SitePage("/counter", "en")]
    monkeypatch.setitem(pages._families, "linkrules", lambda: family)
    yield f"{PACKAGE}.urls"
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]


@pytest.fixture
def views_ns(
    live_server: Any, settings: Any, checkout: Path, fixture_views: str
) -> Iterator[Namespace]:
    """fs and http over the live site, whose routes include the fixture views."""
    for record in RECORDS:
        write(checkout, f"data/{record}", "[]")
    configure(settings, live_server.url, None, checkout)
    settings.ROOT_URLCONF = fixture_views
    clear_url_caches()
    registry.reset()
    yield registry.namespace()
    registry.reset()
    clear_url_caches()


def commit_checkout(checkout: Path) -> None:
    """Make the checkout a git repository whose ``main`` holds every file in it."""
    files = {
        path.relative_to(checkout).as_posix(): path.read_bytes()
        for path in sorted(checkout.rglob("*"))
        if path.is_file()
    }
    builder = Builder.init(str(checkout))
    sha = builder.commit("checkout", dict(files), when=0)
    builder.set_ref("refs/heads/main", sha)
    builder.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    builder.repo.close()


#: The site's view modules, which this project's checkout holds and another repository does not.
VIEW_MODULES = ("tmsite/site/views.py", "tmsite/site/explorer.py")
PROJECT = Path(tmsite.__file__).resolve().parents[1]


@pytest.fixture
def git_ns(live_server: Any, settings: Any, checkout: Path) -> Iterator[Namespace]:
    """fs, http and git: the checkout is this project's repository, served as ``git/tmsite``.

    It holds the site's view modules, as this project's checkout does.
    """
    for module in VIEW_MODULES:
        write(checkout, module, (PROJECT / module).read_text())
    commit_checkout(checkout)
    configure(
        settings,
        live_server.url,
        None,
        checkout,
        mounts=["fs", "http", "git"],
        TM_CHECKOUT_REPO="tmsite",
        TM_GIT_REPOS={},
        TM_GIT_DEFAULT_REFS={},
        TM_IMPORTS_FILE=None,
    )
    registry.reset()
    yield registry.namespace()
    registry.reset()


@pytest.fixture
def two_sites_ns(live_server: Any, settings: Any, checkout: Path) -> Iterator[Namespace]:
    """Two sites served by this project: the canonical one and a second name for it."""
    configure(settings, live_server.url, None, checkout)
    settings.TM_SITES = {
        SITE: {"kind": "self", "front_door": live_server.url},
        BETA: {"kind": "self", "front_door": live_server.url},
    }
    registry.reset()
    yield registry.namespace()
    registry.reset()


# ---- (1) deeper modules are low, the view's own module inferred ------------------------------


def test_a_record_read_by_a_deeper_module_is_low(views_ns: Namespace) -> None:
    shelf = views_ns.read(uri(SITE, "shelf"))
    assert links_of(shelf, "tm:data") == [
        (fs("data", "shelf.json"), "inferred"),  # read in the view's own module
        (fs("data", "deep.json"), "low"),  # read by shelves.deep_rows(), a module deeper
    ]
    counter = views_ns.read(uri(SITE, "counter"))
    # ``from .shelves import tally`` is followed too: a deeper module's function, so low.
    assert links_of(counter, "tm:data") == [(fs("data", "counted.json"), "low")]
    # The other end says the same, at the same confidence.
    deep = views_ns.read(fs("data", "deep.json"))
    assert links_of(deep, "tm:read-by") == [(uri(SITE, "shelf"), "low")]
    assert titled(deep, "tm:read-by", uri(SITE, "shelf")) == ["a page whose code reads this record"]
    own = views_ns.read(fs("data", "shelf.json"))
    assert links_of(own, "tm:read-by") == [(uri(SITE, "shelf"), "inferred")]
    assert links_of(views_ns.read(fs("data", "counted.json")), "tm:read-by") == [
        (uri(SITE, "counter"), "low")
    ]


# ---- (2) the frame and the language tables are not page data --------------------------------


def test_the_frame_and_language_tables_are_not_page_data(views_ns: Namespace) -> None:
    # ``frame`` is called by both page views of the module: the menu it reads is no page's data,
    # though every page reads it; ``ja.json`` is read by the shelf view itself, but it is the
    # words of a language.
    for page in ("shelf", "counter"):
        data = [href for href, _ in links_of(views_ns.read(uri(SITE, page)), "tm:data")]
        assert fs("data", "menu.json") not in data
        assert fs("data", "ja.json") not in data
    for record in ("menu.json", "ja.json"):
        assert links_of(views_ns.read(fs("data", record)), "tm:read-by") == []


# ---- (3) the writer of a record: exact when the record names it ----------------------------


def test_generated_by_is_exact_when_the_record_names_its_writer(git_ns: Namespace) -> None:
    named = git_ns.read(fs("data", "pieces.json"))  # its note names scripts/write-pieces.py
    assert links_of(named, "tm:generated-by") == [(git("scripts", "write-pieces.py"), "exact")]
    assert titled(named, "tm:generated-by", git("scripts", "write-pieces.py")) == [
        "the script that writes this record"
    ]
    mentioned = git_ns.read(fs("data", "other.json"))  # scripts/tally.py merely names it
    assert links_of(mentioned, "tm:generated-by") == [(git("scripts", "tally.py"), "inferred")]
    # Both ends, at the same confidence: the scripts, read from the repository, name the records.
    writer = git_ns.read(git("scripts", "write-pieces.py"))
    assert links_of(writer, "tm:generates") == [(fs("data", "pieces.json"), "exact")]
    tally = git_ns.read(git("scripts", "tally.py"))
    assert links_of(tally, "tm:generates") == [(fs("data", "other.json"), "inferred")]
    # deploy.sh names both records and writes neither.
    assert links_of(git_ns.read(git("scripts", "deploy.sh")), "tm:generates") == []


def test_generated_by_needs_the_git_mount(views_ns: Namespace) -> None:
    # Without a git mount there is nowhere for the link to point.
    assert links_of(views_ns.read(fs("data", "pieces.json")), "tm:generated-by") == []


# ---- (4) page → view: exact, and "one of several" when it renders many --------------------


def test_page_to_view_says_when_the_view_renders_several_pages(git_ns: Namespace) -> None:
    views = git("tmsite", "site", "views.py")
    explorer = git("tmsite", "site", "explorer.py")
    alone = "the view that renders this page"
    several = "the view that renders this page (one of several it renders)"
    cases = [
        # one route, nothing captured: the view renders this page alone
        ((SITE, "pieces"), views, alone),
        ((SITE, "explore"), explorer, alone),
        # one route that captures part of the path (the asset's name)
        ((SITE, "static", "explorer", "explorer.css"), explorer, several),
        # nothing captured, but two routes name the view (``/`` and ``/ja/``)
        ((SITE,), views, several),
        # the documents route captures the slug
        ((SITE, "docs", "nes", "pile"), views, several),
    ]
    for path, view, title in cases:
        page = git_ns.read(uri(*path, collection=len(path) == 1, **{"as": "stat"}))
        assert (view, "exact") in links_of(page, "tm:source"), path
        assert titled(page, "tm:source", view) == [title], path


def test_page_to_view_only_when_the_checkout_holds_the_module(
    git_ns: Namespace, checkout: Path
) -> None:
    # Another repository served as the checkout has no view module of this site: no link that
    # would be refused.
    for module in VIEW_MODULES:
        (checkout / module).unlink()
    page = git_ns.read(uri(SITE, "pieces", **{"as": "stat"}))
    assert links_of(page, "tm:source") == []


# ---- (5) alternate between two sites serving the same page --------------------------------


def test_two_sites_serving_a_page_are_alternates_both_ways(two_sites_ns: Namespace) -> None:
    here = uri(SITE, "docs", "nes", "pile")
    there = uri(BETA, "docs", "nes", "pile")
    first = two_sites_ns.read(here)
    assert (there, None) in links_of(first, "alternate")
    assert titled(first, "alternate", there) == [f"the same page on {BETA}"]
    second = two_sites_ns.read(there)
    assert second.body == first.body
    assert (here, None) in links_of(second, "alternate")
    assert titled(second, "alternate", here) == [f"the same page on {SITE}"]
    # The other language's page is on the same site, not across.
    assert titled(second, "alternate", uri(BETA, "ja", "docs", "nes", "pile")) == [
        "the same page in Japanese"
    ]
    # One reader per route: only the first site's page names the record it reads.
    assert links_of(two_sites_ns.read(uri(SITE, "pieces")), "tm:data") == [
        (fs("data", "pieces.json"), "inferred")
    ]
    assert links_of(two_sites_ns.read(uri(BETA, "pieces")), "tm:data") == []
    assert links_of(two_sites_ns.read(fs("data", "pieces.json")), "tm:read-by") == [
        (uri(SITE, "pieces"), "inferred")
    ]
