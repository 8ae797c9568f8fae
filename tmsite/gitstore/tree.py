"""Reading trees and blobs at a commit: lookup, listing, content, sizes, ``.gitmodules``.

Spec: GIT.
"""

from __future__ import annotations

import io
import stat
from collections.abc import Iterable

from dulwich.config import ConfigFile, parse_submodules

from tmsite.gitstore.cache import read_get, read_put
from tmsite.gitstore.errors import GitError, NotABlob, NotATree, PathNotFound
from tmsite.gitstore.paths import join, normalise
from tmsite.gitstore.repo import BLOB, TYPE_NAMES, GitRepo
from tmsite.gitstore.types import Kind, Node, TreeEntry

MODE_TREE = 0o040000
MODE_SUBMODULE = 0o160000
MAX_DEPTH = 8
#: Kinds whose listing entries carry a size.
SIZED = ("blob", "symlink")


def kind_of(mode: int) -> Kind:
    """The kind of a tree entry from its mode."""
    if stat.S_IFMT(mode) == MODE_SUBMODULE:
        return "submodule"
    if stat.S_ISDIR(mode):
        return "tree"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "blob"


def is_tree_mode(mode: int) -> bool:
    """Whether a mode is a directory's (not a submodule's)."""
    return mode & 0o170000 == MODE_TREE


def entry_at(repo: GitRepo, tree: str, parts: tuple[str, ...]) -> tuple[int, str] | None:
    """The ``(mode, id)`` at ``parts`` under tree ``tree``, or None when absent.

    Only trees are descended into (never a symlink or a submodule); ``()`` is the tree itself.
    """
    mode, sha = MODE_TREE, tree
    for part in parts:
        if not is_tree_mode(mode):
            return None
        found = repo.tree_entry(sha, part.encode("utf-8", "surrogateescape"))
        if found is None:
            return None
        mode, sha = found
    return mode, sha


class PathReader:
    """The entry at one path under many root trees, as a history walk asks for it.

    Only the trees on the path are read, each scanned up to the name wanted, and the answer
    is remembered per (depth, tree id): trees repeat from commit to commit, so a subtree the
    walk has met before answers from a dictionary without reading anything.
    """

    def __init__(self, repo: GitRepo, parts: tuple[str, ...]) -> None:
        self.repo = repo
        self.names = tuple(part.encode("utf-8", "surrogateescape") for part in parts)
        self._memo: list[dict[str, tuple[int, str] | None]] = [{} for _ in parts]

    def entry(self, tree: str) -> tuple[int, str] | None:
        """The ``(mode, id)`` at the path under root tree ``tree``, or None when absent."""
        if not self.names:
            return MODE_TREE, tree
        return self._at(0, tree)

    def _at(self, depth: int, tree: str) -> tuple[int, str] | None:
        memo = self._memo[depth]
        if tree in memo:
            return memo[tree]
        found = self.repo.tree_entry(tree, self.names[depth])
        if found is not None and depth + 1 < len(self.names):
            found = self._at(depth + 1, found[1]) if is_tree_mode(found[0]) else None
        memo[tree] = found
        return found


def child_names(repo: GitRepo, tree: str) -> list[str]:
    """The names of a tree's children, directories marked with a trailing ``/``."""
    return [
        name + "/" if kind_of(mode) == "tree" else name
        for name, (mode, _sha) in repo.tree(tree).items()
    ]


def lookup(repo: GitRepo, commit: str, path: Iterable[str] | str) -> Node:
    """What ``path`` (segments or a slash-separated path; ``""``: the root) is at ``commit``.

    Symlinks are reported as themselves, never followed.

    Raises:
        OutOfRoot, HostileName: the path is refused by :func:`normalise`.
        PathNotFound: with the deepest existing directory and its children.
    """
    parts = normalise(path)
    key = (repo.path, commit, join(parts), "node")
    cached = read_get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    mode, sha = MODE_TREE, repo.commit(commit).tree
    for depth, part in enumerate(parts):
        found = repo.tree(sha).get(part) if kind_of(mode) == "tree" else None
        if found is None:
            if kind_of(mode) == "tree":
                parent, siblings = join(parts[:depth]), child_names(repo, sha)
            else:
                parent = join(parts[: depth - 1])
                parent_tree = entry_at(repo, repo.commit(commit).tree, parts[: depth - 1])
                siblings = child_names(repo, parent_tree[1]) if parent_tree else []
            raise PathNotFound(join(parts), parent, siblings)
        mode, sha = found
    kind = kind_of(mode)
    node = Node(kind, mode, sha, repo.size(sha) if kind in SIZED else None, join(parts))
    return read_put(key, node, 200)


def read_blob(repo: GitRepo, sha: str, start: int | None = None, end: int | None = None) -> bytes:
    """The content of a blob (a file, or a symlink's target text), or ``[start:end]`` of it.

    The object is read once per call; blobs up to 512 KiB stay cached, so a repeated read
    costs a lookup.

    Raises:
        NotABlob: ``sha`` names a tree, commit or tag.
    """
    kind = repo.object_type(sha)
    if kind != BLOB:
        raise NotABlob(sha, TYPE_NAMES.get(kind, "object"))
    return repo.blob(sha)[start:end]  # a whole slice of bytes is the bytes, not a copy


def blob_size(repo: GitRepo, sha: str) -> int:
    """The size in bytes of a blob (cached)."""
    kind = repo.object_type(sha)
    if kind != BLOB:
        raise NotABlob(sha, TYPE_NAMES.get(kind, "object"))
    return repo.size(sha)


def _walk(
    repo: GitRepo, tree: str, prefix: str, depth: int, max_depth: int, out: list[TreeEntry]
) -> None:
    items = repo.tree(tree).items()
    dirs = sorted((n, m, s) for n, (m, s) in items if is_tree_mode(m))
    rest = sorted((n, m, s) for n, (m, s) in items if not is_tree_mode(m))
    for name, mode, sha in dirs:
        path = f"{prefix}{name}"
        out.append(TreeEntry(name, path, "tree", mode, sha, None, depth))
        if depth < max_depth:
            _walk(repo, sha, path + "/", depth + 1, max_depth, out)
    kinds = [kind_of(mode) for _name, mode, _sha in rest]
    sized = [sha for (_name, _mode, sha), kind in zip(rest, kinds, strict=True) if kind in SIZED]
    sizes = iter(repo.sizes(sized))
    for (name, mode, sha), kind in zip(rest, kinds, strict=True):
        size = next(sizes) if kind in SIZED else None
        out.append(TreeEntry(name, f"{prefix}{name}", kind, mode, sha, size, depth))


def list_tree(
    repo: GitRepo, commit: str, path: Iterable[str] | str = "", depth: int = 1
) -> list[TreeEntry]:
    """The entries under a directory at ``commit``.

    Order: at each level directories first, then the other entries, each group by name; with
    ``depth`` > 1 a directory's descendants follow it directly (pre-order). Hostile names
    (``..``, ``.``, ``.git``, names with separators) are never listed or descended into.
    Blob and symlink sizes are filled in (cached per object). ``depth`` is 1 to 8 levels.

    Raises:
        ValueError: ``depth`` out of range (callers refuse it; it is never clamped).
        NotATree: the path is a blob, symlink or submodule.
        PathNotFound, OutOfRoot, HostileName: as :func:`lookup`.
    """
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be 1 to {MAX_DEPTH}")
    node = lookup(repo, commit, path)
    if node.kind != "tree":
        raise NotATree(node.path, node.kind)
    key = (repo.path, node.sha, depth, "tree")
    cached = read_get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    out: list[TreeEntry] = []
    _walk(repo, node.sha, node.path + "/" if node.path else "", 1, depth, out)
    return read_put(key, out, 100 + 160 * len(out))


def gitmodules(repo: GitRepo, commit: str) -> dict[str, str]:
    """Submodule path → url, from ``.gitmodules`` at ``commit`` (empty when there is none).

    Raises:
        GitError: the file is there but cannot be parsed.
    """
    key = (repo.path, commit, ".gitmodules", "gitmodules")
    cached = read_get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    found = entry_at(repo, repo.commit(commit).tree, (".gitmodules",))
    result: dict[str, str] = {}
    if found is not None and kind_of(found[0]) == "blob":
        try:
            config = ConfigFile.from_file(io.BytesIO(repo.blob(found[1])))
            for sm_path, url, _name in parse_submodules(config):
                result[sm_path.decode("utf-8", "replace")] = url.decode("utf-8", "replace")
        except (ValueError, KeyError) as exc:
            raise GitError(f".gitmodules could not be parsed: {exc}") from exc
    return read_put(key, result, 100 + 100 * len(result))
