"""kinds/ counts the reads a test made: per kind, media types, relations; batched writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.blocks.conftest import HOST
from tmsite.core.errors import NotFound
from tmsite.kinds import counter as counting
from tmsite.kinds.models import KindCount
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("KINDS")

T = f"tm://{HOST}"


@pytest.fixture
def fresh(space: Namespace) -> Iterator[counting.KindCounter]:
    """The process counter, emptied, with a batch that never falls due by itself."""
    counter = counting.COUNTER
    every, seconds = counter.every, counter.seconds
    counter.reset()
    KindCount.objects.all().delete()
    counter.every, counter.seconds = 10**9, 10.0**9
    yield counter
    counter.every, counter.seconds = every, seconds
    counter.reset()


def kind(space: Namespace, name: str) -> dict[str, Any]:
    body = space.read(f"{T}/kinds/{name}").body
    assert isinstance(body, dict)
    return body


def test_kinds_count_the_reads_made(space: Namespace, fresh: counting.KindCounter) -> None:
    with CaptureQueriesContext(connection) as queries:  # counting touches no table on the way
        for _ in range(3):
            space.read(f"{T}/fs/docs/mcp.md")
        space.read(f"{T}/fs/data/pieces.json")
        space.read(f"{T}/fs/docs/mcp.md?as=stat")
        space.read(f"{T}/fs/docs/")
    assert not [q for q in queries.captured_queries if "kindcount" in q["sql"].lower()]
    space.read(f"{T}/fs/docs/mcp.md?as=blocks&of=stat")  # one blocks read: stat read inside
    with pytest.raises(NotFound):
        space.read(f"{T}/fs/docs/nosuch.md")  # a refusal serves nothing
    listing = space.read(f"{T}/kinds/").body
    assert [c["name"] for c in listing["children"]] == ["blocks", "file", "listing", "stat"]
    counts = {c["name"]: c["count"] for c in listing["children"]}
    assert counts == {"blocks": 1, "file": 4, "listing": 1, "stat": 1}
    file = kind(space, "file")
    assert file["mediaTypes"] == {"application/json": 1, "text/markdown": 3}
    assert file["rels"]["up"] == 4 and file["rels"]["describedby"] == 4
    assert file["firstServed"] <= file["lastServed"]
    assert kind(space, "listing")["count"] == 2  # kinds/ itself, served after it was counted
    assert kind(space, "kind")["count"] == 2  # kinds/file and kinds/listing, before this one
    with pytest.raises(NotFound) as refused:
        space.read(f"{T}/kinds/blame")  # never served: absent
    assert refused.value.data["nearest"]


def test_counts_reach_the_database_in_a_batch_after_a_request(
    transactional_db: None, space: Namespace, fresh: counting.KindCounter
) -> None:
    fresh.every = 3
    client = Client()
    with transaction.atomic():  # inside someone's transaction a batch waits
        for _ in range(3):
            space.read(f"{T}/fs/docs/mcp.md")
        fresh.flush_if_due()
        assert not KindCount.objects.exists()
    fresh.reset()
    for _ in range(2):
        space.read(f"{T}/fs/docs/mcp.md")
    assert not KindCount.objects.exists()  # not due yet: nothing written
    uri = quote(f"{T}/fs/docs/mcp.md?as=stat", safe="")
    assert client.get(f"/api/v1/resolve?uri={uri}").status_code == 200
    rows = {row.kind: row for row in KindCount.objects.all()}
    assert rows["file"].count == 2 and rows["stat"].count == 1
    assert rows["file"].media_types == {"text/markdown": 2}
    assert fresh.pending() == {}
    space.read(f"{T}/fs/docs/mcp.md")
    assert kind(space, "file")["count"] == 3  # the stored two and the pending one


def test_a_failed_flush_keeps_its_counts(space: Namespace, fresh: counting.KindCounter) -> None:
    space.read(f"{T}/fs/docs/mcp.md")
    original = counting.write

    def broken(batch: Any) -> None:
        raise RuntimeError("the database is away")

    counting.write = broken
    try:
        assert fresh.flush() is False
    finally:
        counting.write = original
    assert fresh.pending()["file"].count == 1
    assert fresh.flush() is True
    assert KindCount.objects.get(kind="file").count == 1
