"""Kept answers of small file reads: given in the event loop, byte for byte the built answer.

A real server (``tmsite.serve.app`` on uvicorn, in this process) over a checkout made for the
test: the first read of a file is built on a request thread, the next ones are given in the
loop from the kept answer; each must be the answer the ordinary path builds with nothing kept
(same body, same headers), also after the file is edited (in size, in place with its times put
back, swapped through a symlink) and after the links another mount gives it change.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core import signals

from tests.kept_reads import answer_kept
from tests.serve.inthread import served
from tmsite.mcp import prepared
from tmsite.mounts import namespace as namespace_module
from tmsite.mounts import registry
from tmsite.mounts.fs import mount as fs_mount
from tmsite.serve.app import Application

pytestmark = [
    pytest.mark.spec("T7", "FS", "OP5"),
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

HOST = "tinymachines"
#: A time well in the past, so each file is settled and its answer kept.
LONG_AGO = time.time() - 3600
#: Headers the server writes itself (not the application's).
SERVER_HEADERS = frozenset({"date", "server"})


def _write(path: Path, text: str, when: float = LONG_AGO) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (when, when), follow_symlinks=False)


@pytest.fixture
def checkout(tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Writing a file sets its change time to now, which no utime puts back: the files of
    # these tests are kept at once (the wait for a file to settle has its own test).
    monkeypatch.setattr(fs_mount, "SETTLE_SECONDS", 0.0)
    _write(tmp_path / "docs" / "guide.md", "# Guide\n\nFirst words.\n")
    _write(tmp_path / "docs" / "deep" / "notes.txt", "plain text, é and 🔑\n")
    _write(tmp_path / "data" / "record.json", '{"a": [1, 2, 3]}\n')
    _write(tmp_path / "notes" / "todo.md", "- one\n- two\n")
    settings.TM_CHECKOUT = tmp_path
    settings.TM_FS_ROOTS = ["docs", "data", "notes"]
    settings.TM_MOUNTS = ["fs", "trail"]
    registry.reset()
    prepared.clear()
    return tmp_path


@pytest.fixture
def base(checkout: Path) -> Iterator[str]:
    with served(Application()) as url:
        yield url


@pytest.fixture
def threaded() -> Iterator[list[str]]:
    """One item per request a thread answered (Django's ``request_started``)."""
    seen: list[str] = []

    def started(sender: Any, environ: dict[str, Any], **kwargs: Any) -> None:
        seen.append(str(environ.get("PATH_INFO")))

    signals.request_started.connect(started, dispatch_uid="tm-test-read-memo")
    try:
        yield seen
    finally:
        signals.request_started.disconnect(dispatch_uid="tm-test-read-memo")


def _post(base: str, uri: str, rid: int) -> tuple[bytes, dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": rid, "method": "resources/read", "params": {"uri": uri}}
    reply = httpx.post(
        f"{base}/api/mcp",
        content=json.dumps(body),
        headers={"Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    headers = {k: v for k, v in reply.headers.items() if k not in SERVER_HEADERS}
    return reply.content, headers


def _ordinary(base: str, uri: str, rid: int) -> tuple[bytes, dict[str, str]]:
    """The answer built with nothing kept or looked up: what every read got before."""
    saved = prepared.variant
    prepared.variant = lambda *args: None  # type: ignore[assignment]
    try:
        return _post(base, uri, rid)
    finally:
        prepared.variant = saved  # type: ignore[assignment]


def _uri(*path: str) -> str:
    return f"tm://{HOST}/fs/" + "/".join(path)


ADDRESSES = [
    _uri("docs", "guide.md"),
    _uri("docs", "deep", "notes.txt"),
    _uri("data", "record.json"),
    _uri("notes", "todo.md"),
]


def _kept_and_given_in_the_loop(base: str, uri: str, threaded: list[str]) -> bytes:
    """Read ``uri`` three times: built on a thread, then twice in the loop; all alike."""
    before = len(threaded)
    first, first_headers = _post(base, uri, 1)
    assert len(threaded) == before + 1, "the first read is built on a thread"
    assert answer_kept(uri), "and kept"
    again, headers = _post(base, uri, 1)
    third, _ = _post(base, uri, 1)
    assert len(threaded) == before + 1, "the next ones are given in the loop"
    assert first == again == third
    assert headers == first_headers
    ordinary, ordinary_headers = _ordinary(base, uri, 1)
    assert again == ordinary
    assert headers == ordinary_headers
    return again


def _text(answer: bytes) -> str:
    return str(json.loads(answer)["result"]["contents"][0]["text"])


def test_a_kept_read_is_the_built_read_byte_for_byte(base: str, threaded: list[str]) -> None:
    for uri in ADDRESSES:
        answer = _kept_and_given_in_the_loop(base, uri, threaded)
        assert json.loads(answer)["result"]["contents"][0]["uri"] == uri
    spliced, _ = _post(base, ADDRESSES[0], 77)  # another id, spliced into the kept text
    assert json.loads(spliced)["id"] == 77
    assert spliced == _ordinary(base, ADDRESSES[0], 77)[0]


def test_an_edited_file_is_read_anew(base: str, checkout: Path, threaded: list[str]) -> None:
    guide = checkout / "docs" / "guide.md"
    uri = _uri("docs", "guide.md")
    assert "First words." in _text(_kept_and_given_in_the_loop(base, uri, threaded))
    _write(guide, "# Guide\n\nLonger words than before.\n", LONG_AGO + 60)
    assert "Longer words" in _text(_kept_and_given_in_the_loop(base, uri, threaded))
    # The same size and the same times put back: only the change time tells.
    _write(guide, "# Guide\n\nLonger WORDS than before.\n", LONG_AGO + 60)
    assert "Longer WORDS" in _text(_kept_and_given_in_the_loop(base, uri, threaded))


def test_a_symlink_swapped_is_followed_anew(base: str, checkout: Path, threaded: list[str]) -> None:
    link = checkout / "docs" / "current.md"
    link.symlink_to("guide.md")
    uri = _uri("docs", "current.md")
    assert "First words." in _text(_kept_and_given_in_the_loop(base, uri, threaded))
    link.unlink()
    link.symlink_to("deep/notes.txt")
    assert "plain text" in _text(_kept_and_given_in_the_loop(base, uri, threaded))


def test_a_file_gone_is_refused_not_given(base: str, checkout: Path, threaded: list[str]) -> None:
    uri = _uri("notes", "todo.md")
    _kept_and_given_in_the_loop(base, uri, threaded)
    (checkout / "notes" / "todo.md").unlink()
    body = {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": uri}}
    reply = httpx.post(
        f"{base}/api/mcp",
        content=json.dumps(body),
        headers={"Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"},
    )
    assert reply.json()["error"]["data"]["reason"] == "not-found"


def test_a_file_changed_just_now_is_read_not_kept(
    base: str, checkout: Path, threaded: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fs_mount, "SETTLE_SECONDS", 2.0)
    _write(checkout / "docs" / "fresh.md", "just written\n", LONG_AGO)  # changed: now
    uri = _uri("docs", "fresh.md")
    first, _ = _post(base, uri, 1)
    second, _ = _post(base, uri, 1)
    assert first == second == _ordinary(base, uri, 1)[0]
    assert len(threaded) == 3, "each read built on a thread"
    assert not answer_kept(uri)


def test_a_new_link_from_another_mount_reaches_the_kept_read(
    base: str, checkout: Path, threaded: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _uri("docs", "guide.md")
    answer = _kept_and_given_in_the_loop(base, uri, threaded)
    assert "tm:step-of" not in answer.decode()
    trail = {
        "title": "Read the guide",
        "description": "One step: the guide.",
        "steps": [{"uri": uri, "note": "the guide itself"}],
    }
    _write(checkout / "notes" / "trails" / "guide.json", json.dumps(trail))
    # Within the second the links are trusted the kept answer stands; once it has passed,
    # the links are compared again (on a thread: they may ask the database) and differ.
    monkeypatch.setattr(namespace_module, "LINKS_RECHECK_SECONDS", 0.0)
    before = len(threaded)
    fresh, _ = _post(base, uri, 1)
    assert len(threaded) == before + 1, "links due are compared on a thread, not in the loop"
    assert "tm:step-of" in fresh.decode()
    assert fresh == _ordinary(base, uri, 1)[0]
    monkeypatch.setattr(namespace_module, "LINKS_RECHECK_SECONDS", 3600.0)
    again, _ = _post(base, uri, 1)
    assert again == fresh and len(threaded) == before + 2, "kept again, given in the loop"


def test_addresses_spelled_otherwise_are_not_kept() -> None:
    from tmsite.mcp.protocol import CallContext

    ctx = CallContext(version="2025-11-25", transport="http")
    for uri in (
        _uri("docs", ""),
        _uri("docs", "guide.md") + "?as=stat",
        _uri("docs", "guide.md") + "#top",
        "tm://elsewhere/fs/docs/guide.md",
        f"tm://{HOST}/kinds/file",  # a mount that vouches for no read
    ):
        assert prepared.variant("resources/read", {"uri": uri}, ctx) is None, uri


def test_a_file_swapped_for_a_symlink_out_of_its_root_is_refused(
    base: str, checkout: Path, tmp_path_factory: pytest.TempPathFactory, threaded: list[str]
) -> None:
    uri = _uri("docs", "guide.md")
    _kept_and_given_in_the_loop(base, uri, threaded)
    outside = tmp_path_factory.mktemp("outside") / "secret.md"
    _write(outside, "# Guide\n\nFirst words.\n")  # the same text, out of every root
    guide = checkout / "docs" / "guide.md"
    guide.unlink()
    guide.symlink_to(outside)
    body = {"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": uri}}
    reply = httpx.post(
        f"{base}/api/mcp",
        content=json.dumps(body),
        headers={"Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"},
    )
    assert reply.json()["error"]["data"]["reason"] == "out-of-root"


def test_a_directory_swapped_for_a_symlink_is_followed_anew(
    base: str, checkout: Path, threaded: list[str]
) -> None:
    uri = _uri("docs", "deep", "notes.txt")
    assert "plain text" in _text(_kept_and_given_in_the_loop(base, uri, threaded))
    _write(checkout / "docs" / "other" / "notes.txt", "other text, the same size...\n")
    (checkout / "docs" / "deep").rename(checkout / "docs" / "deep-old")
    (checkout / "docs" / "deep").symlink_to("other")
    assert "other text" in _text(_kept_and_given_in_the_loop(base, uri, threaded))
