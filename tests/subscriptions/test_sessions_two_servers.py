"""A session across two real ``python -m tmsite.serve`` processes sharing one database (as two
machines share theirs): the subscribe is answered by one, the GET stream held by the other, a
real file edited in the served checkout reaches it through the fs watcher; after a cut, the
reconnect with ``Last-Event-ID`` on the first is replayed what the second kept, and a newer
stream on either takes over. A session ended on one is refused by the other within the other's
memo window (``TM_SESSION_MEMO``) and a second."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.oplog.servers import migrate, server_env
from tests.serve.test_serve_process import Running, serve
from tests.subscriptions.sessions_helpers import (
    SseEvents,
    initialize,
    rpc,
    stream_headers,
    until,
    updated,
)

pytestmark = [pytest.mark.spec("SUB2"), pytest.mark.slow]

A_MD = "tm://tinymachines/fs/docs/a.md"


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("two") / "box"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# a\n")
    var_dir = root.parent / "var"
    migrate(server_env(var_dir))
    return root, var_dir


@pytest.fixture(scope="module")
def servers(box: tuple[Path, Path]) -> Iterator[tuple[Running, Running]]:
    root, var_dir = box
    extra = {
        "TM_CHECKOUT": str(root),
        "TM_FS_ROOTS": "docs",
        "TM_SESSION_POLL": "0.2",
        "TM_LISTEN_IDLE": "15",  # a stream not taken over would end, idle, this late
    }
    with (
        serve(var_dir, root.parent / "one.log", **extra) as one,
        serve(var_dir, root.parent / "two.log", **extra) as two,
    ):
        yield one, two


def _kept(server: Running) -> int:
    """The last event number kept for any session (one session in this test)."""
    with sqlite3.connect(server.database) as db:
        found = db.execute("SELECT MAX(seq) FROM tm_subscriptions_event").fetchone()[0]
    return int(found or 0)


class Prober:
    """Edits ``a.md`` every 0.3 s until stopped (until the watch has had its first look)."""

    def __init__(self, path: Path) -> None:
        self.path, self.stop = path, threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        for attempt in range(100):
            self.path.write_text(f"# a, edit {attempt}\n")
            if self.stop.wait(0.3):
                return

    def __enter__(self) -> Prober:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def test_subscribed_on_one_told_on_the_other_replayed_on_the_first(
    servers: tuple[Running, Running], box: tuple[Path, Path]
) -> None:
    one, two = servers
    a = box[0] / "docs" / "a.md"
    url_one, url_two = f"{one.url}/api/mcp", f"{two.url}/api/mcp"
    with httpx.Client(timeout=httpx.Timeout(20, read=20)) as client:
        session, result = initialize(client, url_one)
        assert result["capabilities"]["resources"]["subscribe"] is True
        done = rpc(client, url_one, "resources/subscribe", 1, session=session, uri=A_MD)
        assert done.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        with (
            client.stream("GET", url_two, headers=stream_headers(session)) as response,
            Prober(a),
        ):
            assert response.status_code == 200
            event_id, message = SseEvents(response).message()
        assert (event_id, message) == ("1", updated(A_MD))
        # cut: the second server goes on watching and keeping the session's events
        with Prober(a):
            until(lambda: _kept(one) >= 2, 20)
        time.sleep(1)  # the last edits' events are kept too
        kept = _kept(one)
        with client.stream("GET", url_one, headers=stream_headers(session, last="1")) as response:
            events = SseEvents(response)
            replayed = [events.message() for _ in range(kept - 1)]
            assert replayed == [(str(n), updated(A_MD)) for n in range(2, kept + 1)]
            # a newer stream, on the other server, takes over: this one ends
            with (
                Prober(a),
                httpx.Client(timeout=20) as other,
                other.stream("GET", url_two, headers=stream_headers(session)) as newer,
            ):
                assert newer.status_code == 200
                started = time.monotonic()
                events.rest()  # it ends
                assert time.monotonic() - started < 6  # by the first server's next poll
                later_id, later = SseEvents(newer).message()
        assert later == updated(A_MD)
        assert int(later_id or 0) > kept
        ended = client.delete(url_two, headers={"Mcp-Session-Id": session})
        assert ended.status_code == 204
        # the first refuses it once its memo of the session is older than its window (1 s)
        until(lambda: rpc(client, url_one, "ping", 9, session=session).status_code == 404, 2.0)


def test_a_session_ended_on_one_is_refused_by_the_other_within_the_memo_window(
    servers: tuple[Running, Running],
) -> None:
    one, two = servers
    first, second = f"{one.url}/api/mcp", f"{two.url}/api/mcp"
    with httpx.Client(timeout=10) as client:
        session, _ = initialize(client, first)
        for _ in range(3):  # checked live by the first, then trusted for its window (1 s)
            assert rpc(client, first, "ping", 1, session=session).status_code == 200
        assert rpc(client, second, "ping", 1, session=session).status_code == 200
        ended = client.delete(
            second, headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        )
        assert ended.status_code == 204
        at = time.monotonic()
        refused = rpc(client, second, "ping", 2, session=session)
        assert refused.status_code == 404  # where it was ended: at once
        assert refused.json()["error"]["code"] == -32600
        while (answer := rpc(client, first, "ping", 3, session=session)).status_code == 200:
            assert time.monotonic() - at < 2.0, "still answered past the memo's window + 1 s"
            time.sleep(0.05)
        assert time.monotonic() - at < 2.0
        assert answer.status_code == 404 and answer.json()["id"] == 3
