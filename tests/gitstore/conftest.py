"""A real repository, built with dulwich, that every gitstore test reads.

History (``when`` in days after the base time; committer date = author date unless noted)::

    c1 ─ c2 ─────── c3 ─ c4 ─ m1 ─ c5 ─ c6 ─ c7      main (HEAD)
          \\                  /              committed before c5 (clock skew)
           f1 ─ f2 ──────────┘                    feature
    v1 = c2 (lightweight)   v2 = m1 (annotated)   v2-signed → v2 (tag of a tag)
    release/1.0 = c3        hostile = h1 (tree entries "..", ".", ".git" written by hand)

Files: README.md, src/app.py, docs/guide.md (renamed to docs/manual.md in c5), blame.txt
(edited on both sides and in the merge), bin/data.bin (binary), big.bin (300 KiB),
latin1.txt (not UTF-8), link (a symlink to docs/guide.md), deep/a/b/c/d/e/f.txt, and from c4
the submodule vendor/lib (gitlink + .gitmodules), whose pin moves in c5.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dulwich.objects import Tree

from tests.git_oracle import run_git
from tests.gitstore.builder import DIR, FILE, Builder
from tmsite import gitstore

DAY = 86_400


def blame_lines(*lines: str) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


BASE_LINES = [f"line {i:02d}" for i in range(1, 21)]
BIG = bytes((i * 7 + i // 251) % 256 for i in range(300 * 1024))
PIN_1 = "1" * 40
PIN_2 = "2" * 40


@dataclass
class World:
    """The built repository: its path, commit ids by name, and the builder."""

    path: Path
    c: dict[str, str]
    builder: Builder

    def git(self, *args: str) -> str:
        """Run the git CLI on the repository (a test oracle only)."""
        return run_git(self.path, *args)


def build_world(root: Path) -> World:
    b = Builder.init(str(root))
    d = DAY
    c: dict[str, bytes] = {}
    base = list(BASE_LINES)
    c["c1"] = b.commit(
        "c1",
        {
            "README.md": b"# Demo\n",
            "src/app.py": b"print('hello')\n",
            "docs/guide.md": b"# Guide\nRead me.\n",
            "blame.txt": blame_lines(*base),
            "bin/data.bin": bytes(range(256)) * 4,
            "big.bin": BIG,
            "latin1.txt": "café crème\n".encode("latin-1"),
            "link": ("link", "docs/guide.md"),
            "deep/a/b/c/d/e/f.txt": b"deep v1\n",
        },
        when=0,
        message=b"Initial import\n\nWith a body that is not the subject.\n",
    )
    v2 = list(base)
    v2[4] = "line 05 changed in c2"
    c["c2"] = b.commit(
        "c2",
        {"blame.txt": blame_lines(*v2), "docs/new.md": b"new\n"},
        [c["c1"]],
        when=1 * d,
    )
    feat = list(v2)
    feat[2:2] = ["feature A1", "feature A2"]
    c["f1"] = b.commit("f1", {"blame.txt": blame_lines(*feat)}, [c["c2"]], when=2 * d)
    c["f2"] = b.commit(
        "f2",
        {"src/app.py": b"print('feature')\n", "deep/a/b/c/d/e/f.txt": b"deep v2\n"},
        [c["f1"]],
        when=3 * d,
        message=b"Feature work, thanks to bob@example.com\n",
    )
    main3 = list(v2)
    main3[17] = "line 18 changed in c3"
    del main3[11]
    c["c3"] = b.commit("c3", {"blame.txt": blame_lines(*main3)}, [c["c2"]], when=2 * d + d // 2)
    c["c4"] = b.commit(
        "c4",
        {
            "vendor/lib": ("gitlink", PIN_1),
            ".gitmodules": b'[submodule "lib"]\n\tpath = vendor/lib\n'
            b"\turl = https://github.com/tinymachines/lib.git\n",
        },
        [c["c3"]],
        when=4 * d,
    )
    merged = list(main3)
    merged[2:2] = ["feature A1", "feature A2"]
    merged[-1] = "line 20 fixed in merge"
    c["m1"] = b.commit(
        "m1",
        {
            "blame.txt": blame_lines(*merged),
            "src/app.py": b"print('feature')\n",
            "deep/a/b/c/d/e/f.txt": b"deep v2\n",
        },
        [c["c4"], c["f2"]],
        when=5 * d,
        message=b"Merge branch 'feature'\n",
    )
    c["c5"] = b.commit(
        "c5",
        {
            "docs/guide.md": None,
            "docs/manual.md": b"# Guide\nRead me.\n",
            "vendor/lib": ("gitlink", PIN_2),
        },
        [c["m1"]],
        when=6 * d,
    )
    c["c6"] = b.commit(
        "c6", {"README.md": b"# Demo\nSkewed.\n"}, [c["c5"]], when=7 * d, committed=3 * d
    )
    final = [*merged, "line 21 added in c7"]
    c["c7"] = b.commit(
        "c7",
        {"blame.txt": blame_lines(*final), "README.md": b"# Demo\nFinal.\n"},
        [c["c6"]],
        when=8 * d,
        author="Zoë Ünicode <zoe@example.org>".encode(),
    )

    # A commit whose tree holds entries no checkout could: written object by object.
    ok = b._entry(b"fine\n")
    evil = b._entry(b"[core]\n\tworktree = /\n")
    inner = Tree()
    inner.add(b"config", FILE, evil[1])
    b.repo.object_store.add_object(inner)
    hostile = Tree()
    hostile.add(b"ok.txt", FILE, ok[1])
    hostile.add(b"..", DIR, inner.id)
    hostile.add(b".", DIR, inner.id)
    hostile.add(b".git", DIR, inner.id)
    hostile.add(b".GIT", DIR, inner.id)
    hostile.add(b"sub", DIR, inner.id)
    b.repo.object_store.add_object(hostile)
    c["h1"] = b.commit("h1", {}, [c["c1"]], when=d // 2, tree=hostile.id)

    b.set_ref("refs/heads/main", c["c7"])
    b.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    b.set_ref("refs/heads/feature", c["f2"])
    b.set_ref("refs/heads/release/1.0", c["c3"])
    b.set_ref("refs/heads/hostile", c["h1"])
    b.set_ref("refs/tags/v1", c["c2"])
    tag_v2 = b.annotated_tag("v2", c["m1"])
    from dulwich.objects import Tag

    b.annotated_tag("v2-signed", tag_v2, Tag)
    b.repo.close()
    return World(root, {k: v.decode() for k, v in c.items()}, b)


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """The shared, read-only scenario repository."""
    return build_world(tmp_path_factory.mktemp("gitstore") / "repo")


@pytest.fixture
def fresh_world(tmp_path: Path) -> World:
    """A private copy of the scenario, for tests that write into the ref store."""
    return build_world(tmp_path / "repo")


@pytest.fixture
def repo(world: World) -> Iterator[gitstore.GitRepo]:
    """A handle on the shared scenario with empty caches."""
    gitstore.clear_caches()
    handle = gitstore.open_repo(world.path)
    yield handle
    handle.close()
