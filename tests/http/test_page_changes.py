"""Changes of pages, told on the bus: a page of this site made from a markdown file, followed
through the fs mount's watch of that file; a static site's page, fetched again from a real
static server over loopback and told when what a visitor gets changed."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.http.conftest import DEMO, DEMO_DIR, HOST, SITE, configure, uri
from tests.waiting import wait_until
from tmsite.bus import changes
from tmsite.demo.static_site import server
from tmsite.mounts import registry
from tmsite.mounts.fs import watch as fswatch
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.http.mount import HttpMount
from tmsite.mounts.http.watch import PageWatcher, tick
from tmsite.mounts.namespace import Namespace
from tmsite.subscriptions.records import StampWatcher

pytestmark = pytest.mark.spec("SUB3")


class Heard:
    def __init__(self) -> None:
        self.uris: list[str] = []
        self.cond = threading.Condition()

    def __call__(self, change: changes.Change) -> None:
        if change.uri is not None and change.uri.startswith(f"tm://{HOST}/http/"):
            with self.cond:
                self.uris.append(change.uri)
                self.cond.notify_all()

    def wait(self, predicate: Callable[[list[str]], bool], timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: predicate(self.uris), timeout)


@pytest.fixture
def heard() -> Iterator[Heard]:
    got = Heard()
    remove = changes.add_listener(got)
    yield got
    remove()


def _watcher(ns: Namespace, every: float) -> tuple[PageWatcher, StampWatcher]:
    http = ns.mounts["http"]
    assert isinstance(http, HttpMount)
    fetch = StampWatcher(HOST, "http", tick(every), ns.read, changes.publish, threaded=False)
    return PageWatcher(http, fetch.interest), fetch


def test_a_page_made_from_markdown_is_told_when_its_file_changes(
    ns: Namespace, checkout: Path, heard: Heard
) -> None:
    watcher, fetch = _watcher(ns, 3600)
    page = uri(SITE, "docs", "nes", "pile")
    other = uri(SITE, "docs", "nes", "alone")
    fs = ns.mounts["fs"]
    assert isinstance(fs, FsMount)
    fswatch.SOURCE.find = lambda: fs  # the namespace the test serves
    fswatch.SOURCE.start()
    stop = watcher.start()
    try:
        with changes.listening([f"{page}?lines=1-3", other]):
            assert watcher.files() == {
                page: f"tm://{HOST}/fs/docs/nes/pile.md",
                other: f"tm://{HOST}/fs/docs/nes/alone.md",
            }
            assert fetch.watched() == []  # nothing of it is fetched
            wait_until(lambda: fswatch.SOURCE.watching == {"docs"})
            for attempt in range(40):  # until the watch has had its first look
                pile = checkout / "docs" / "nes" / "pile.md"
                pile.write_text(f"# The pile\n\nNow {attempt}.\n")
                if heard.wait(lambda told: page in told, 0.5):
                    break
            assert heard.uris and set(heard.uris) == {page}, heard.uris
            assert "Now" in str(ns.read(page).body)  # a read after the notice: the new text
        # the pages are released, and so are their files: the fs watch stops
        assert watcher.files() == {}
        assert changes.interests(f"tm://{HOST}/fs/") == {}
        wait_until(lambda: fswatch.SOURCE.watching == frozenset())
    finally:
        stop()
        fswatch.SOURCE.stop()


def test_a_page_of_a_root_fs_does_not_serve_is_fetched_instead(
    live_server: Any, settings: Any, checkout: Path
) -> None:
    configure(settings, live_server.url, None, checkout, TM_FS_ROOTS=["data"])
    registry.reset()
    try:
        watcher, fetch = _watcher(registry.namespace(), 3600)
        page = uri(SITE, "docs", "nes", "pile")
        stop = watcher.start()
        with changes.listening([page]):
            assert watcher.files() == {}
            assert fetch.watched() == [page]
            assert fetch.poll() == []  # its first fingerprint
            (checkout / "docs" / "nes" / "pile.md").write_text("# The pile\n\nGone.\n")
            assert fetch.poll() == []  # within its interval: not fetched again
        stop()
        assert fetch.watched() == []
    finally:
        registry.reset()


@pytest.fixture
def demo_copy(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A copy of the demo site, served by a real static server on a free loopback port."""
    root = tmp_path / "demo"
    shutil.copytree(DEMO_DIR, root)
    httpd = server(root)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_static_page_is_fetched_again_and_told_when_what_it_serves_changed(
    live_server: Any, settings: Any, checkout: Path, demo_copy: tuple[Path, str], heard: Heard
) -> None:
    root, door = demo_copy
    configure(settings, live_server.url, door, checkout)
    registry.reset()
    try:
        ns = registry.namespace()
        watcher, fetch = _watcher(ns, 0.001)  # a new tick at every poll
        page = uri(DEMO, "notes", "solder.html")
        fenced = uri(DEMO, "drafts", "plan.html")  # robots.txt fences it
        stop = watcher.start()
        with changes.listening([page, f"{page}?as=rendered", fenced]):
            assert watcher.files() == {}
            assert fetch.watched() == [fenced, page]
            assert fetch.poll() == []  # the first fingerprints
            assert fetch.poll() == []  # fetched again, the same: nothing told
            solder = root / "notes" / "solder.html"
            solder.write_text(solder.read_text().replace("</main>", "<p>Flux first.</p></main>"))
            (root / "drafts" / "plan.html").write_text("<main>changed, never read</main>")
            assert fetch.poll() == [page]
            assert heard.uris == [page]
            assert "Flux first." in str(ns.read(page).body)
        stop()
        assert fetch.watched() == []
    finally:
        registry.reset()
