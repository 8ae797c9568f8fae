"""A standing search is told when its hits change, not when anything below its scope does.

A client listens to ``…/fs/docs/?as=search&q=aardvark``: a file written below ``docs/`` that
the search does not find tells it nothing; a new file it finds, and that file removed, each
tell it once the index holds the change (its next read is the new answer). Real checkout, the
fs watch and this process's search keeper as a serving worker starts them, the official Python
SDK 2.x client listening over loopback HTTP.

Spec: SRCH4, SUB1, SUB3.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated

from tests.subscriptions.helpers import HOST, own_box, write_files
from tests.waiting import wait_until
from tmsite.search import index
from tmsite.search.query import parse_query
from tmsite.subscriptions import sources

pytestmark = [pytest.mark.spec("SRCH4", "SUB1", "SUB3")]

STANDING = f"tm://{HOST}/fs/docs/?as=search&q=aardvark"


@pytest.fixture
def box(tmp_path: Path, settings: Any) -> Iterator[Path]:
    files = {"docs/index.md": "# Index\n\nA heron.\n", "notes/n.md": "# Note\n"}
    root = write_files(tmp_path / "box", files)
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()
    settings.TM_MOUNTS = ["fs"]
    settings.TM_SEARCH_POLL, settings.TM_SEARCH_FULL_EVERY = 0.2, 3600
    settings.TM_SUB_RECORDS_POLL = 0.2
    with own_box(settings, root, ["docs", "notes"], fs_watch=True, fresh_sources=True):
        keeper = sources.serve()
        assert keeper is not None
        try:
            wait_until(lambda: keeper.walks == 1)
            yield root
        finally:
            sources.stop()


def found(word: str) -> list[str]:
    return [hit.uri for hit in index.search(parse_query(word), f"tm://{HOST}/", (), 10)]


def test_a_standing_search_is_told_when_its_hits_change_and_only_then(
    listen_url: str, box: Path
) -> None:
    docs = box / "docs"

    async def next_told(sub: Any, seconds: float, word: str) -> tuple[object, list[str]]:
        """What the stream tells within ``seconds``, and what a search finds once it did."""
        told = None
        with anyio.move_on_after(seconds):
            told = await sub.__anext__()
        return told, await anyio.to_thread.run_sync(found, word)

    async def scenario() -> list[tuple[object, list[str]]]:
        told = []
        async with (
            Client(listen_url) as client,
            client.listen(resource_subscriptions=[STANDING]) as sub,
        ):
            (docs / "other.md").write_text("# Other\n\nA bittern, no aardvark here.\n")
            (docs / "index.md").write_text("# Index\n\nA heron and an egret.\n")
            (box / "notes" / "n.md").write_text("# Note\n\nAn aardvark, out of scope.\n")
            # the first is a hit (told); the other two change nothing the search finds
            told.append(await next_told(sub, 5, "aardvark"))
            (docs / "index.md").write_text("# Index\n\nA heron, an egret, a crane.\n")
            told.append(await next_told(sub, 2, "crane"))
            (docs / "other.md").unlink()
            told.append(await next_told(sub, 5, "aardvark"))
        return told

    first, quiet, removed = anyio.run(scenario)
    assert first[0] == ResourceUpdated(STANDING)
    assert f"tm://{HOST}/fs/docs/other.md" in first[1]  # told once a read finds it
    assert quiet == (None, [f"tm://{HOST}/fs/docs/index.md"])  # indexed, and not told
    assert removed == (ResourceUpdated(STANDING), [f"tm://{HOST}/fs/notes/n.md"])
