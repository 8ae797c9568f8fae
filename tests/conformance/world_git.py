"""The git world: the canonical scenario committed to a dulwich-built repository.

The repository ``scen`` holds the scenario under ``alpha/``, plus, to be refused or hidden: a
denied ``alpha/.env`` and a tree entry named ``..`` (written object by object, as no checkout
could) both holding the secret.
"""

from __future__ import annotations

import json
from pathlib import Path

from dulwich.objects import Blob, Tree

from tests.conformance.worlds import HOST, NOTES, RECORD, SECRET, World
from tests.gitstore.builder import DIR, FILE, Builder
from tmsite.mounts.git.mount import GitMount


def world(tmp: Path) -> World:
    b = Builder.init(str(tmp / "scen"))
    first = b.commit(
        "start",
        {
            "alpha/beta/deep.md": b"# deep\n",
            "alpha/notes.md": NOTES.encode(),
            "alpha/record.json": json.dumps(RECORD).encode(),
            "alpha/.env": SECRET.encode(),
        },
        when=0,
    )
    secret = Blob.from_string(SECRET.encode())
    b.repo.object_store.add_object(secret)
    inner = Tree()
    inner.add(b"key.txt", FILE, secret.id)
    b.repo.object_store.add_object(inner)
    flat = b.snapshots[first.decode()]
    root = b.repo.object_store[b.write_tree(flat)]
    assert isinstance(root, Tree)
    root.add(b"..", DIR, inner.id)
    b.repo.object_store.add_object(root)
    head = b.commit("hostile entry", {}, [first], when=60, tree=root.id)
    b.set_ref("refs/heads/main", head)
    b.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    b.repo.close()
    base = f"tm://{HOST}/git/scen/alpha/"
    return World(
        mount=GitMount(HOST, {"scen": tmp / "scen"}),
        collection=base,
        leaf=base + "notes.md",
        typo=base + "notez.md",
        json_leaf=base + "record.json",
        hostile={
            base + "../../key.txt": "out-of-root",
            base + "%2e%2e/%2e%2e/key.txt": "out-of-root",
            f"tm://{HOST}/git/scen/%2e%2e/key.txt": "out-of-root",
            base + "..%2f..%2fkey.txt": "out-of-root",
            base + "..%5c..%5ckey.txt": "out-of-root",
            base + ".env": "denied",
            base + "notes.md%00.txt": "out-of-root",
            f"tm://{HOST}/git/scen//key.txt": "out-of-root",
            f"tm://{HOST}/git/scen/.git/config": "denied",
            # decoded once, this is the plain name "%2e%2e", which the tree does not hold
            f"tm://{HOST}/git/scen/%252e%252e/key.txt": "not-found",
        },
        secret=SECRET,
        unoffered_facet="diff",
        complete_context={"repo": "scen"},
        complete_skip=1,
        indexed=True,
        indexed_as=f"tm://{HOST}/git/scen/?at={first.decode()}&as=log&n=1",
    )
