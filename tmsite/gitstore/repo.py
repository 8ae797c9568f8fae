"""The repository handle: dulwich plumbing behind one lock, parsed objects behind caches.

A :class:`GitRepo` wraps one dulwich ``Repo``. Every touch of dulwich (the object store, the
refs container) happens under the handle's lock, because dulwich's pack readers share file
positions and were not safe for concurrent reads; what is read is parsed once and kept in the
process-wide :data:`~tmsite.gitstore.cache.OBJECTS` cache, keyed by the repository's path and
the object id, so threads and later handles on the same repository share it.

Commits and trees are parsed here from the raw object text (never ``parse_object`` on client
text, never porcelain): a commit keeps only what the library uses — its tree, parents, author
name and dates, and subject — and never the e-mail addresses.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from types import TracebackType

from dulwich.commit_graph import CommitGraph
from dulwich.errors import NotGitRepository
from dulwich.objects import ObjectID, RawObjectID, parse_tree
from dulwich.pack import Pack, PackFileDisappeared
from dulwich.refs import Ref
from dulwich.repo import Repo

from tmsite.gitstore.cache import OBJECTS
from tmsite.gitstore.errors import GitError

#: Object type numbers of the git object format.
COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
TYPE_NAMES = {COMMIT: "commit", TREE: "tree", BLOB: "blob", TAG: "tag"}

#: Blobs up to this size are kept in the object cache.
CACHED_BLOB_BYTES = 512 * 1024


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What the library keeps of a commit object.

    Attributes:
        tree: The root tree id.
        parents: The parent commit ids, in order.
        author_name: The author's name, decoded, no e-mail.
        author_time: Author time, seconds since the epoch (UTC).
        author_tz: Author time-zone offset in seconds east of UTC.
        commit_time: Committer time, seconds since the epoch (UTC).
        subject: The first paragraph of the message on one line.
    """

    tree: str
    parents: tuple[str, ...]
    author_name: str
    author_time: int
    author_tz: int
    commit_time: int
    subject: str


#: A parsed tree: name → (mode, id), in the tree's own (git) order, hostile names left out.
TreeData = dict[str, tuple[int, str]]


def is_hostile_name(name: str) -> bool:
    """Whether a tree entry name is one the library never returns or descends into.

    Refused: the empty name, ``.``, ``..``, ``.git`` in any letter case, and names holding
    ``/``, ``\\`` or NUL (a well-formed tree cannot contain those, a crafted one can).
    """
    return (
        name in ("", ".", "..")
        or name.lower() == ".git"
        or "/" in name
        or "\\" in name
        or "\0" in name
    )


def _split_ident(value: bytes) -> tuple[bytes, int, int]:
    """Name, time and offset from an ``author``/``committer`` header value."""
    lt = value.find(b"<")
    gt = value.rfind(b">")
    name = value[:lt].strip() if lt >= 0 else value.strip()
    rest = value[gt + 1 :].split() if gt >= 0 else []
    when = 0
    tz = 0
    if rest:
        try:
            when = int(rest[0])
        except ValueError:
            when = 0
    if len(rest) > 1:
        text = rest[1]
        sign = -1 if text.startswith(b"-") else 1
        digits = text.lstrip(b"+-")
        if len(digits) == 4 and digits.isdigit():
            tz = sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return name, when, tz


def _decode(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def parse_commit(raw: bytes) -> CommitInfo:
    """Parse the text of a commit object into a :class:`CommitInfo`."""
    head, _sep, message = raw.partition(b"\n\n")
    tree = b""
    parents: list[str] = []
    author = b""
    committer = b""
    encoding = "utf-8"
    for line in head.split(b"\n"):
        if not line or line[:1] == b" ":
            continue  # continuation of a multi-line header (gpgsig, mergetag)
        key, _space, value = line.partition(b" ")
        if key == b"tree":
            tree = value
        elif key == b"parent":
            parents.append(value.decode("ascii"))
        elif key == b"author":
            author = value
        elif key == b"committer":
            committer = value
        elif key == b"encoding":
            encoding = value.decode("ascii", "replace").strip() or "utf-8"
    author_name, author_time, author_tz = _split_ident(author)
    _cname, commit_time, _ctz = _split_ident(committer)
    paragraph: list[bytes] = []
    for line in message.lstrip(b"\n").split(b"\n"):
        if not line.strip():
            break
        paragraph.append(line.strip())
    return CommitInfo(
        tree=tree.decode("ascii"),
        parents=tuple(parents),
        author_name=_decode(author_name, encoding),
        author_time=author_time,
        author_tz=author_tz,
        commit_time=commit_time,
        subject=_decode(b" ".join(paragraph), encoding),
    )


class GitRepo:
    """A read-only handle on one git repository, safe to share between threads.

    Use :func:`open_repo` to make one; close it (or use it as a context manager) to release
    the pack files. All methods take full 40-hex object ids, never client text.

    Attributes:
        path: The real path of the repository's git directory — the cache key.
    """

    def __init__(self, repo: Repo) -> None:
        self._repo = repo
        self._lock = threading.RLock()
        self.path = os.path.realpath(repo.commondir())
        self.worktree: str | None = None if repo.bare else os.path.realpath(repo.path)
        try:
            self._packs: list[Pack] = list(repo.object_store.packs)
        except OSError as exc:
            raise GitError(f"the packs could not be read: {exc.__class__.__name__}") from exc
        self._graph: CommitGraph | None = None
        self._graph_read = False

    # -- life cycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Release the pack files."""
        with self._lock:
            self._repo.close()

    def __enter__(self) -> GitRepo:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- raw access (under the lock) -------------------------------------------------------

    def raw(self, sha: str) -> tuple[int, bytes]:
        """The type number and content of an object.

        Raises:
            GitError: the object is missing or unreadable.
        """
        try:
            binary = bytes.fromhex(sha)
        except ValueError as exc:
            raise GitError(f"not an object id: {sha!r}") from exc
        try:
            with self._lock:
                # The packs first, straight through each pack's index: the object store's own
                # lookup also re-checks for a multi-pack index and pack limits on every call.
                for pack in self._packs:
                    try:
                        return pack.get_raw(RawObjectID(binary))
                    except (KeyError, PackFileDisappeared):
                        continue
                return self._repo.object_store.get_raw(ObjectID(sha.encode("ascii")))
        except KeyError as exc:
            raise GitError(f"object {sha} is missing from the repository") from exc
        except (OSError, ValueError, AssertionError) as exc:
            raise GitError(f"object {sha} could not be read: {exc.__class__.__name__}") from exc

    def contains(self, sha: str) -> bool:
        """Whether the object store holds ``sha`` (a full 40-hex id)."""
        with self._lock:
            return ObjectID(sha.encode("ascii")) in self._repo.object_store

    def iter_prefix(self, prefix: str, limit: int = 64) -> list[str]:
        """Up to ``limit`` object ids starting with the hex ``prefix``."""
        found: list[str] = []
        with self._lock:
            for sha in self._repo.object_store.iter_prefix(prefix.encode("ascii")):
                text = sha.decode("ascii")
                if text not in found:
                    found.append(text)
                if len(found) >= limit:
                    break
        return found

    def refs(self) -> dict[str, str]:
        """Every ref's full name → the id it points at (symbolic refs followed).

        Ref names are only ever read from the ref store here, never built from client text.
        """
        out: dict[str, str] = {}
        with self._lock:
            container = self._repo.refs
            try:
                names = container.allkeys()
            except OSError as exc:
                raise GitError(f"refs could not be read: {exc.__class__.__name__}") from exc
            for name in names:
                try:
                    target = container[Ref(name)]
                except (KeyError, OSError, ValueError):
                    continue
                try:
                    out[name.decode("utf-8")] = target.decode("ascii")
                except UnicodeDecodeError:
                    continue
        return out

    # -- parsed, cached objects -----------------------------------------------------------

    def object_type(self, sha: str) -> int:
        """The type number of an object (cached)."""
        key = (self.path, "type", sha)
        cached = OBJECTS.get(key)
        if cached is not None:
            return int(cached)
        type_num, data = self.raw(sha)
        OBJECTS.put((self.path, "size", sha), len(data), 64)
        return int(OBJECTS.put(key, type_num, 64))

    def commit(self, sha: str) -> CommitInfo:
        """The parsed commit ``sha``.

        Raises:
            GitError: it is missing or is not a commit.
        """
        key = (self.path, "commit", sha)
        info = OBJECTS.get(key)
        if info is not None:
            return info  # type: ignore[no-any-return]
        type_num, data = self.raw(sha)
        if type_num != COMMIT:
            raise GitError(f"object {sha} is a {TYPE_NAMES.get(type_num, '?')}, not a commit")
        parsed = parse_commit(data)
        return OBJECTS.put(key, parsed, 200 + len(parsed.subject) + 48 * len(parsed.parents))

    def walk_info(self, sha: str) -> tuple[str, tuple[str, ...], int]:
        """A commit's root tree, parents and committer time — what history walks need.

        Read from the repository's commit-graph file when it has one (no object is inflated),
        else from the parsed commit.
        """
        if not self._graph_read:
            with self._lock:
                try:
                    self._graph = self._repo.object_store.get_commit_graph()
                except (OSError, ValueError, KeyError):
                    self._graph = None  # a missing or damaged commit-graph only costs speed
                self._graph_read = True
        if self._graph is not None:
            entry = self._graph.get_entry_by_oid(ObjectID(sha.encode("ascii")))
            if entry is not None:
                return (
                    entry.tree_id.decode("ascii"),
                    tuple(p.decode("ascii") for p in entry.parents),
                    int(entry.commit_time),
                )
        info = self.commit(sha)
        return info.tree, info.parents, info.commit_time

    def tree(self, sha: str) -> TreeData:
        """The parsed tree ``sha`` (hostile names left out).

        Raises:
            GitError: it is missing or is not a tree.
        """
        key = (self.path, "tree", sha)
        data = OBJECTS.get(key)
        if data is not None:
            return data  # type: ignore[no-any-return]
        type_num, raw = self.raw(sha)
        if type_num != TREE:
            raise GitError(f"object {sha} is a {TYPE_NAMES.get(type_num, '?')}, not a tree")
        parsed: TreeData = {}
        for name_b, mode, entry_sha in parse_tree(raw, 20):
            name = name_b.decode("utf-8", "surrogateescape")
            if is_hostile_name(name):
                continue
            parsed[name] = (mode, entry_sha.decode("ascii"))
        return OBJECTS.put(key, parsed, 3 * len(raw) + 100)

    def blob(self, sha: str) -> bytes:
        """The content of blob ``sha`` (small blobs cached).

        Raises:
            GitError: it is missing or is not a blob.
        """
        key = (self.path, "blob", sha)
        data = OBJECTS.get(key)
        if data is not None:
            return data  # type: ignore[no-any-return]
        type_num, raw = self.raw(sha)
        if type_num != BLOB:
            raise GitError(f"object {sha} is a {TYPE_NAMES.get(type_num, '?')}, not a blob")
        OBJECTS.put((self.path, "size", sha), len(raw), 64)
        if len(raw) <= CACHED_BLOB_BYTES:
            OBJECTS.put(key, raw, len(raw) + 64)
        return raw

    def size(self, sha: str) -> int:
        """The size in bytes of object ``sha`` (cached once known)."""
        key = (self.path, "size", sha)
        cached = OBJECTS.get(key)
        if cached is not None:
            return int(cached)
        type_num, raw = self.raw(sha)
        OBJECTS.put((self.path, "type", sha), type_num, 64)
        if type_num == BLOB and len(raw) <= CACHED_BLOB_BYTES:
            OBJECTS.put((self.path, "blob", sha), raw, len(raw) + 64)
        return int(OBJECTS.put(key, len(raw), 64))


def open_repo(path: str | os.PathLike[str]) -> GitRepo:
    """Open the repository at ``path`` (a work tree or a bare repository) read-only.

    Raises:
        GitError: there is no readable repository there.
    """
    try:
        repo = Repo(os.fspath(path))
    except NotGitRepository as exc:
        raise GitError("not a git repository") from exc
    except OSError as exc:
        raise GitError(f"the repository could not be opened: {exc.__class__.__name__}") from exc
    return GitRepo(repo)
