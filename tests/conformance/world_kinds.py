"""The kinds world: a counter that has seen reads of three kinds (``kinds/`` lists them).

The collection is ``kinds/`` (leaves only); the leaf is ``kinds/file``, read as
``application/vnd.tm.kind+json``. The counts are real: the world's namespace served them
(held in memory, never stored).
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance.worlds import HOST, World
from tmsite.core.types import vnd
from tmsite.kinds.counter import KindCounter
from tmsite.mounts.kinds.mount import KindsMount
from tmsite.mounts.memory.mount import MemoryMount
from tmsite.mounts.namespace import Namespace


def world(tmp: Path) -> World:
    counter = KindCounter(every=10**9, seconds=10**9)  # this world's counts stay in memory
    memory = MemoryMount(HOST, {"notes.md": "one\n", "beta": {"deep.md": "# deep\n"}})
    space = Namespace(HOST, {"memory": memory})
    for uri in ("memory/", "memory/notes.md", "memory/notes.md?as=stat", "memory/beta/"):
        counter.record(space.read(f"tm://{HOST}/{uri}"))
    base = f"tm://{HOST}/kinds/"
    return World(
        mount=KindsMount(HOST, counter, store=False),
        collection=base,
        leaf=base + "file",
        typo=base + "fiel",
        hostile={
            base + "..%2fmemory/notes.md": "not-found",
            base + "%2e%2e/": "not-found",
            base + "file%00": "not-found",
        },
        first_child=None,
        child_names=("file", "listing", "stat"),
        leaf_text=None,
        leaf_type=vnd("kind"),
        leaf_pointer=("/count", 1),
        sub_collection=None,
        completion=("kind", "li", ["listing"]),
    )
