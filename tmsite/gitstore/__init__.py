"""A read-only, transport-neutral git library on dulwich's plumbing.

It knows nothing of ``tm://`` addresses: the ``git`` mount calls it and translates its
exceptions (:mod:`tmsite.gitstore.errors`) into rejections. No shell and no subprocess: objects
are read through dulwich's ``Repo``, object store and pack classes only (see
:mod:`tmsite.gitstore.repo`), never its porcelain, and client text
is never handed to a revision parser — refs are checked by shape (:func:`validate_ref`) and then
matched against names read from the ref store.

Public API:

* ``open_repo(path) -> GitRepo`` — a handle, safe to share between threads (one lock around
  dulwich, caches shared process-wide); close it or use it as a context manager.
* ``validate_ref(text) -> RefText`` — shape check before any lookup; raises ``BadRef``.
* ``list_refs(repo) -> (branches, tags)`` — short names, sorted.
* ``resolve(repo, at, default_ref=None) -> Resolved(commit, label, is_default)`` — ``None`` or
  ``HEAD``, a tag or branch, a full or abbreviated (≥ 4) commit id, or an ISO date/datetime;
  raises ``BadRef``, ``NoSuchRef`` (with ``nearest``), ``AmbiguousRef``.
* ``has_commit(repo, sha) -> bool``.
* ``normalise(path) -> tuple[str, ...]`` — raises ``OutOfRoot``, ``HostileName``.
* ``lookup(repo, commit, path) -> Node(kind, mode, sha, size, path)`` — raises
  ``PathNotFound(path, deepest_existing, siblings)``.
* ``read_blob(repo, sha, start=None, end=None) -> bytes``; ``blob_size(repo, sha) -> int`` —
  raise ``NotABlob``.
* ``list_tree(repo, commit, path="", depth=1) -> list[TreeEntry]`` — depth 1–8 (``ValueError``
  outside), directories first; raises ``NotATree``.
* ``log(repo, commit, path="", n=20) -> list[LogEntry]`` — n 1–100 (``ValueError`` outside),
  ``git log -- path`` semantics (see :mod:`tmsite.gitstore.history`), no e-mail addresses;
  stopped past its allowance, ``OverBudget.progress`` is a ``Walked`` (entries found, commits
  walked).
* ``blame(repo, commit, path, lines=None) -> Blame`` (``BlameLine`` records) — full commit ids, of
  every line or of ``(first, last)`` alone (see :mod:`tmsite.gitstore.blame`);
  ``line_count(repo, blob)`` — the lines it counts.
* ``gitmodules(repo, commit) -> dict[path, url]``.
* ``looks_binary(first_bytes)``, ``guess_mime(name, first_bytes)``, ``is_text_mime(mime)`` —
  from :mod:`tmsite.mime`, the one table every mount that holds files types by.
* ``clear_caches()`` — empty the in-process caches (:mod:`tmsite.gitstore.cache`).

Reads at a commit are immutable and cached in process memory, bounded by bytes.
"""

from tmsite.gitstore.blame import blame, line_count
from tmsite.gitstore.cache import clear_all as clear_caches
from tmsite.gitstore.errors import (
    AmbiguousRef,
    BadRef,
    GitError,
    GitStoreError,
    HostileName,
    NoSuchRef,
    NotABlob,
    NotACommit,
    NotATree,
    OutOfRoot,
    PathNotFound,
)
from tmsite.gitstore.history import Walked, log
from tmsite.gitstore.paths import normalise
from tmsite.gitstore.refs import (
    RefText,
    has_commit,
    list_refs,
    nearest_refs,
    rank_nearest,
    resolve,
    validate_ref,
)
from tmsite.gitstore.repo import GitRepo, open_repo
from tmsite.gitstore.tree import blob_size, gitmodules, list_tree, lookup, read_blob
from tmsite.gitstore.types import Blame, BlameLine, LogEntry, Node, Resolved, TreeEntry
from tmsite.mime import guess_mime, is_text_mime, looks_binary

__all__ = [
    "AmbiguousRef",
    "BadRef",
    "Blame",
    "BlameLine",
    "GitError",
    "GitRepo",
    "GitStoreError",
    "HostileName",
    "LogEntry",
    "NoSuchRef",
    "Node",
    "NotABlob",
    "NotACommit",
    "NotATree",
    "OutOfRoot",
    "PathNotFound",
    "RefText",
    "Resolved",
    "TreeEntry",
    "Walked",
    "blame",
    "blob_size",
    "clear_caches",
    "gitmodules",
    "guess_mime",
    "has_commit",
    "is_text_mime",
    "line_count",
    "list_refs",
    "list_tree",
    "log",
    "looks_binary",
    "lookup",
    "nearest_refs",
    "normalise",
    "open_repo",
    "rank_nearest",
    "read_blob",
    "resolve",
    "validate_ref",
]
