"""Signed cursors: bound to one listing, refused when forged, edited, foreign or expired."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core import signing

from tests.namespace.world import HOST, body_of
from tmsite.core import cursor as cursors
from tmsite.core.errors import BadCursor
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("NS6")

SCOPE = f"tm://{HOST}/fs/docs/"


def test_issue_and_redeem_round_trip() -> None:
    for offset in (0, 1, 500, 10**9):
        assert cursors.redeem(cursors.issue(SCOPE, offset), SCOPE) == offset


@pytest.mark.parametrize(
    ("cursor", "why"),
    [
        ("", "empty"),
        ("x" * 600, "too long"),
        ("MTA", "not one this server issued"),
        ("abc.def:ghi:jkl", "not one this server issued"),
    ],
)
def test_forged_cursors_are_refused(cursor: str, why: str) -> None:
    with pytest.raises(BadCursor) as refused:
        cursors.redeem(cursor, SCOPE, SCOPE)
    assert refused.value.data["reason"] == "bad-cursor"
    assert refused.value.data["uri"] == SCOPE
    assert "nextCursor" in refused.value.data["expected"]
    assert why in refused.value.message


def test_edited_cursor_is_refused() -> None:
    good = cursors.issue(SCOPE, 500)
    value = good.rpartition(":")[0]
    digest, _, _ = value.partition(".")
    bigger = good.replace(f"{digest}.1f4", f"{digest}.fffff", 1)
    assert bigger != good
    flipped = good[:-1] + ("A" if good[-1] != "A" else "B")
    for edited in (bigger, flipped, good + "x", good[1:]):
        with pytest.raises(BadCursor) as refused:
            cursors.redeem(edited, SCOPE)
        assert "not one this server issued" in refused.value.message


def test_cursor_from_another_listing_is_refused() -> None:
    good = cursors.issue(SCOPE, 500)
    with pytest.raises(BadCursor) as refused:
        cursors.redeem(good, f"tm://{HOST}/fs/data/")
    assert "another listing" in refused.value.message


def test_cursor_signed_with_another_key_is_refused(settings: object) -> None:
    good = cursors.issue(SCOPE, 500)
    settings.SECRET_KEY = "another-key-" + "k" * 40  # type: ignore[attr-defined]
    with pytest.raises(BadCursor) as refused:
        cursors.redeem(good, SCOPE)
    assert "not one this server issued" in refused.value.message


def test_expired_cursor_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    then = time.time() - cursors.MAX_AGE_SECONDS - 60
    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: then))
    old = cursors.issue(SCOPE, 500)
    monkeypatch.undo()
    with pytest.raises(BadCursor) as refused:
        cursors.redeem(old, SCOPE)
    assert "expired" in refused.value.message
    fresh_then = time.time() - cursors.MAX_AGE_SECONDS + 60
    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: fresh_then))
    fresh = cursors.issue(SCOPE, 500)
    monkeypatch.undo()
    assert cursors.redeem(fresh, SCOPE) == 500


def test_listing_cursors_through_the_namespace(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "data").mkdir()
    for i in range(1203):
        (docs / f"f{i:04d}.txt").write_text(str(i))
    (tmp_path / "data" / "one.txt").write_text("1")
    ns = Namespace(HOST, {"fs": FsMount(HOST, tmp_path, ["docs", "data"])})
    seen: list[str] = []
    uri: str | None = SCOPE
    pages = 0
    while uri is not None:
        body = body_of(ns.read(uri))
        seen += [child["name"] for child in body["children"]]
        assert body["uri"] == SCOPE
        uri = body.get("next")
        pages += 1
    assert pages == 3
    assert seen == sorted(p.name for p in docs.iterdir())
    cursor = body_of(ns.read(SCOPE))["nextCursor"]
    for bad in (
        f"tm://{HOST}/fs/data/?cursor={cursor}",
        f"{SCOPE}?as=raw&cursor={cursor}",
        f"{SCOPE}?cursor={cursor[:-1]}",
        f"{SCOPE}?cursor=",
    ):
        with pytest.raises(BadCursor) as refused:
            ns.read(bad)
        assert refused.value.data["uri"] == bad
