"""A served checkout and two neighbours, built with dulwich, for the git mount tests.

``checkout`` (served as ``tmsite``; a work tree whose files match HEAD, plus one untracked file)::

    c1 ── c2 ── c3 ───────── m1 ── c4 ── c5 ── c6          main (HEAD)
           \\                /              committed before c5 (clock skew)
            f1 ── f2 ───────┘                              feature
    v1 = c2 (lightweight)   v2 = m1 (annotated)   hostile = h1 (tree entries "..", ".git")

Days after the base time: c1 0, c2 1, f1 2, f2 3, c3 2.5, m1 5, c4 6, c5 7 (committed at day 3),
c6 8. Files: docs/guide.md (changes in c2 and c6), docs/old.md renamed to docs/renamed.md in
c4, docs/record.json (changes in c2), docs/blob.bin (binary), docs/big.bin (300 KiB),
docs/latin1.txt (not UTF-8), ``docs/caf\\xe9.txt`` (a name that is not UTF-8), docs/link.md (a
symlink to guide.md), docs/.env (denied), docs/nes/pile.md (imported from ``nes-bench``),
data/imports.json (the manifest), notes/n.md, README.md (outside the fs roots), and from c3 the
submodule vendor/lib pinned to ``lib``'s first commit, moved to its second in c4.

``nes-bench``: docs/pile.md in two commits. ``lib``: two commits.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from dulwich.objects import Tree
from dulwich.repo import Repo

from tests.git_oracle import run_git
from tests.gitstore.builder import DIR, FILE, Builder
from tmsite.mounts import registry
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.git.mount import GitMount
from tmsite.mounts.namespace import Namespace

HOST = "gitbox"
DAY = 86_400
BASE = 1_700_000_000
SECRET = "GIT-SECRET-5e1f"
BIG = bytes((i * 7 + i // 251) % 256 for i in range(300 * 1024))
BLOB = bytes(range(256)) * 4
LATIN1 = "café crème\n".encode("latin-1")
ODD_NAME = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
ROOT = f"tm://{HOST}/git/"
REPO = f"tm://{HOST}/git/tmsite/"
FS = f"tm://{HOST}/fs/"
MANIFEST = {
    "about": "test imports",
    "imports": [{"repo": "nes-bench", "path": "docs/pile.md", "to": "docs/nes/pile.md"}],
}


@dataclass
class Scenario:
    root: Path
    checkout: Path
    c: dict[str, str]
    lib: dict[str, str]
    nes: dict[str, str]

    def mount(self, **kwargs: object) -> GitMount:
        return GitMount(
            HOST,
            {
                "tmsite": self.checkout,
                "nes-bench": self.root / "nes-bench",
                "lib": self.root / "lib",
            },
            checkout_repo="tmsite",
            imports_file=self.checkout / "data" / "imports.json",
            **kwargs,  # type: ignore[arg-type]
        )

    def namespace(self, **kwargs: object) -> Namespace:
        fs = FsMount(HOST, self.checkout, ["docs", "data", "notes"])
        return registry.compose(HOST, {"fs": fs, "git": self.mount(**kwargs)})

    def git(self, *args: str, repo: Path | None = None) -> str:
        """The git CLI on a repository (a test oracle only)."""
        return run_git(repo or self.checkout, *args)


class RawNameBuilder(Builder):
    """A builder whose tree entry names may hold bytes that are not UTF-8."""

    def entry_name(self, name: str) -> bytes:
        """Surrogate escapes in ``name`` stand for the raw bytes they were decoded from."""
        return name.encode("utf-8", "surrogateescape")


def _simple(path: Path, files: list[dict[str, bytes]]) -> dict[str, str]:
    b = Builder.init(str(path))
    out: dict[str, str] = {}
    parent: list[bytes] = []
    for i, changes in enumerate(files):
        sha = b.commit(f"{path.name} {i + 1}", dict(changes), parent, when=i * DAY)
        out[f"c{i + 1}"] = sha.decode()
        parent = [sha]
    b.set_ref("refs/heads/main", parent[0])
    b.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    b.repo.close()
    return out


def build(root: Path) -> Scenario:
    lib = _simple(root / "lib", [{"lib.c": b"int x;\n"}, {"lib.c": b"int x, y;\n"}])
    nes = _simple(
        root / "nes-bench",
        [{"docs/pile.md": b"# The pile\n"}, {"docs/pile.md": b"# The pile\nMore.\n"}],
    )
    checkout = root / "checkout"
    os.makedirs(checkout)
    b = RawNameBuilder(Repo.init(str(checkout)))
    c: dict[str, bytes] = {}
    gitmodules = b'[submodule "lib"]\n\tpath = vendor/lib\n\turl = https://example.org/tm/lib.git\n'
    c["c1"] = b.commit(
        "c1",
        {
            "README.md": b"# Checkout\n",
            "docs/guide.md": b"# Guide\nfirst\n",
            "docs/old.md": b"old name\n",
            "docs/record.json": json.dumps({"a": [1, {"b": 1}]}).encode(),
            "docs/blob.bin": BLOB,
            "docs/big.bin": BIG,
            "docs/latin1.txt": LATIN1,
            f"docs/{ODD_NAME}": b"odd name\n",
            "docs/link.md": ("link", "guide.md"),
            "docs/.env": SECRET.encode(),
            "docs/nes/pile.md": b"# The pile\n",
            "data/imports.json": json.dumps(MANIFEST).encode(),
            "notes/n.md": b"note\n",
        },
        when=0,
        message=b"Initial import\n\nBody text, not the subject.\n",
    )
    c["c2"] = b.commit(
        "c2",
        {
            "docs/guide.md": b"# Guide\nsecond\nline three\n",
            "docs/record.json": json.dumps({"a": [1, {"b": 2}]}).encode(),
        },
        [c["c1"]],
        when=1 * DAY,
    )
    c["f1"] = b.commit("f1", {"notes/f.md": b"feature\n"}, [c["c2"]], when=2 * DAY)
    c["f2"] = b.commit(
        "f2",
        {"notes/f.md": b"feature two\n"},
        [c["f1"]],
        when=3 * DAY,
        message=b"Feature work, thanks to bob@example.com\n",
    )
    c["c3"] = b.commit(
        "c3",
        {"vendor/lib": ("gitlink", lib["c1"]), ".gitmodules": gitmodules},
        [c["c2"]],
        when=2 * DAY + DAY // 2,
    )
    c["m1"] = b.commit(
        "m1",
        {"notes/f.md": b"feature two\n"},
        [c["c3"], c["f2"]],
        when=5 * DAY,
        message=b"Merge branch 'feature'\n",
    )
    c["c4"] = b.commit(
        "c4",
        {
            "docs/old.md": None,
            "docs/renamed.md": b"old name\n",
            "vendor/lib": ("gitlink", lib["c2"]),
        },
        [c["m1"]],
        when=6 * DAY,
    )
    c["c5"] = b.commit(
        "c5", {"README.md": b"# Checkout\nskewed\n"}, [c["c4"]], when=7 * DAY, committed=3 * DAY
    )
    c["c6"] = b.commit(
        "c6",
        {"docs/guide.md": b"# Guide\nsecond\nline three\nfourth\n"},
        [c["c5"]],
        when=8 * DAY,
        author="Zoë Ünicode <zoe@example.org>".encode(),
    )
    # A commit whose tree holds entries no checkout could.
    evil = b._entry(b"[core]\n\tworktree = /\n")
    inner = Tree()
    inner.add(b"config", FILE, evil[1])
    b.repo.object_store.add_object(inner)
    hostile = Tree()
    hostile.add(b"ok.txt", FILE, b._entry(b"fine\n")[1])
    for name in (b"..", b".", b".git", b".GIT"):
        hostile.add(name, DIR, inner.id)
    b.repo.object_store.add_object(hostile)
    c["h1"] = b.commit("h1", {}, [c["c1"]], when=DAY // 2, tree=hostile.id)

    b.set_ref("refs/heads/main", c["c6"])
    b.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    b.set_ref("refs/heads/feature", c["f2"])
    b.set_ref("refs/heads/hostile", c["h1"])
    b.set_ref("refs/tags/v1", c["c2"])
    b.annotated_tag("v2", c["m1"])
    # An option-shaped branch, written into the ref store by hand.
    (checkout / ".git" / "refs" / "heads" / "-n").write_text(c["c1"].decode() + "\n")
    # The work tree: HEAD's files on disk (and one untracked file).
    for path, (mode, sha) in b.snapshots[c["c6"].decode()].items():
        target = checkout.joinpath(*path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        data = b.repo.object_store[sha].as_raw_string() if mode != 0o160000 else None
        if mode == 0o120000:
            assert data is not None
            os.symlink(data.decode(), target)
        elif data is not None:
            target.write_bytes(data)
        else:
            target.mkdir(exist_ok=True)
    (checkout / "docs" / "untracked.md").write_text("not committed\n")
    b.repo.close()
    return Scenario(root, checkout, {k: v.decode() for k, v in c.items()}, lib, nes)
