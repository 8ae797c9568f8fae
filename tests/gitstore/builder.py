"""Build real git repositories with dulwich, object by object, for the gitstore tests.

The builder writes blobs, trees, commits and tags straight into the object store, so tests can
make what a porcelain would refuse: clock skew, hostile tree entry names, option-shaped refs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from dulwich.objects import Blob, Commit, Tag, Tree
from dulwich.repo import Repo

FILE = 0o100644
EXEC = 0o100755
LINK = 0o120000
GITLINK = 0o160000
DIR = 0o040000

#: A file's content (bytes), a symlink (("link", target)), or a submodule pin (("gitlink", sha)).
Content = bytes | tuple[str, str]


@dataclass
class Builder:
    """Writes commits from flat snapshots ``{path: content}``."""

    repo: Repo
    base_time: int = 1_700_000_000
    snapshots: dict[str, dict[str, tuple[int, bytes]]] = field(default_factory=dict)

    @classmethod
    def init(cls, path: str) -> Builder:
        os.makedirs(path, exist_ok=True)
        return cls(Repo.init(path))

    def _entry(self, content: Content) -> tuple[int, bytes]:
        if isinstance(content, bytes):
            blob = Blob.from_string(content)
            self.repo.object_store.add_object(blob)
            return FILE, blob.id
        kind, value = content
        if kind == "link":
            blob = Blob.from_string(value.encode())
            self.repo.object_store.add_object(blob)
            return LINK, blob.id
        if kind == "gitlink":
            return GITLINK, value.encode("ascii")
        raise ValueError(kind)

    def entry_name(self, name: str) -> bytes:
        """A tree entry's name as stored (UTF-8)."""
        return name.encode()

    def write_tree(self, flat: Mapping[str, tuple[int, bytes]]) -> bytes:
        """Write nested trees for a flat ``{path: (mode, sha)}`` map; returns the root id."""
        children: dict[str, dict[str, tuple[int, bytes]]] = {}
        tree = Tree()
        for path, (mode, sha) in flat.items():
            head, sep, rest = path.partition("/")
            if sep:
                children.setdefault(head, {})[rest] = (mode, sha)
            else:
                tree.add(self.entry_name(head), mode, sha)
        for name, sub in children.items():
            tree.add(self.entry_name(name), DIR, self.write_tree(sub))
        self.repo.object_store.add_object(tree)
        return tree.id

    def commit(
        self,
        name: str,
        changes: Mapping[str, Content | None],
        parents: list[bytes] | None = None,
        *,
        base: bytes | None = None,
        when: int,
        committed: int | None = None,
        author: bytes = b"Ada Lovelace <ada@example.org>",
        message: bytes | None = None,
        tree: bytes | None = None,
    ) -> bytes:
        """Commit ``changes`` on top of ``base`` (default: the first parent's snapshot)."""
        parents = parents or []
        start = base if base is not None else (parents[0] if parents else None)
        flat = dict(self.snapshots[start.decode()]) if start is not None else {}
        for path, content in changes.items():
            if content is None:
                flat.pop(path, None)
            else:
                flat[path] = self._entry(content)
        c = Commit()
        c.tree = tree if tree is not None else self.write_tree(flat)
        c.parents = parents
        c.author = author
        c.committer = b"Grace Hopper <grace@example.org>"
        c.author_time = self.base_time + when
        c.commit_time = self.base_time + (committed if committed is not None else when)
        c.author_timezone = 9 * 3600
        c.commit_timezone = 0
        c.encoding = b"UTF-8"
        c.message = message if message is not None else name.encode() + b"\n"
        self.repo.object_store.add_object(c)
        self.snapshots[c.id.decode()] = flat
        return c.id

    def set_ref(self, ref: str, sha: bytes) -> None:
        self.repo.refs[ref.encode()] = sha

    def annotated_tag(self, name: str, target: bytes, target_class: type = Commit) -> bytes:
        tag = Tag()
        tag.tagger = b"Grace Hopper <grace@example.org>"
        tag.message = f"release {name}\n".encode()
        tag.name = name.encode()
        tag.tag_time = self.base_time
        tag.tag_timezone = 0
        tag.object = (target_class, target)
        self.repo.object_store.add_object(tag)
        self.set_ref(f"refs/tags/{name}", tag.id)
        return tag.id
