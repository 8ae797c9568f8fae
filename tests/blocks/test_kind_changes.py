"""Changes of kinds, told on the bus: a kind served again, in this process or (its batch
written) in another; a flush that changes nothing tells nothing; the watcher's own reads are
never counted. Real reads through the namespace, the real counter and rows, the real stamp."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db.models import F

from tests.blocks.conftest import HOST
from tmsite.bus import changes
from tmsite.kinds import counter as counting
from tmsite.kinds.models import KindCount
from tmsite.mounts.kinds import watch
from tmsite.mounts.namespace import Namespace
from tmsite.subscriptions import sources
from tmsite.subscriptions.records import StampWatcher

pytestmark = pytest.mark.spec("SUB3")

T = f"tm://{HOST}"


@pytest.fixture
def kinds(space: Namespace) -> Iterator[StampWatcher]:
    counter = counting.COUNTER
    every, seconds = counter.every, counter.seconds
    counter.reset()
    KindCount.objects.all().delete()
    counter.every, counter.seconds = 10**9, 10.0**9
    watcher = StampWatcher(
        HOST, "kinds", watch.stamp, sources.unseen(space.read), changes.publish, threaded=False
    )
    remove = changes.add_interest_watcher(watcher.interest)
    yield watcher
    remove()
    counter.every, counter.seconds = every, seconds
    counter.reset()


def test_a_kind_is_told_when_it_is_served_again(space: Namespace, kinds: StampWatcher) -> None:
    heard: list[str] = []
    remove = changes.add_listener(lambda c: heard.append(c.uri or ""))
    try:
        space.read(f"{T}/fs/docs/mcp.md")
        space.read(f"{T}/fs/docs/")
        with changes.listening(
            [f"{T}/kinds/file?as=stat", f"{T}/kinds/listing", f"{T}/kinds/kind"]
        ):
            assert kinds.poll() == []  # the first readings
            assert kinds.poll() == []  # its own reads served nothing: kinds/kind is unchanged
            assert counting.COUNTER.pending().keys() == {"file", "listing"}
            space.read(f"{T}/fs/docs/mcp.md")
            assert kinds.poll() == [f"{T}/kinds/file"]
            counting.COUNTER.flush()  # the stamp moves, what the mount reads does not
            assert KindCount.objects.get(kind="file").count == 2
            assert kinds.poll() == []
            # another machine's batch written: no signal here, the stored counts moved
            KindCount.objects.filter(kind="listing").update(count=F("count") + 5)
            assert kinds.poll() == [f"{T}/kinds/listing"]
            assert kinds.poll() == []
    finally:
        remove()
    assert heard == [f"{T}/kinds/file", f"{T}/kinds/listing"]
    assert kinds.watched() == []
