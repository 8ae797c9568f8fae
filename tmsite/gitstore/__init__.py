"""A read-only, transport-neutral git library on dulwich's plumbing.

It knows nothing of ``tm://`` addresses: the ``git`` mount calls it and translates its
exceptions (:mod:`tmsite.gitstore.errors`) into rejections. No shell and no subprocess: objects
are read through dulwich's ``Repo``, object store and pack classes only (see
:mod:`tmsite.gitstore.repo`), never its porcelain, and client text
is never handed to a revision parser — refs are checked by shape (:func:`validate_ref`) and then
matched against names read from the ref store.

The public API is ``__all__``: a handle (``open_repo``, safe to share between threads), refs
checked by shape (``validate_ref``) then resolved (``resolve``: a branch, tag, commit id or
ISO date), and reads at a commit — ``lookup``, ``list_tree``, ``read_blob``, ``log`` (``git
log -- path``, :mod:`tmsite.gitstore.history`), ``blame`` (:mod:`tmsite.gitstore.blame`),
``gitmodules``; never an e-mail address. The mime helpers are :mod:`tmsite.mime`'s, the one
table every mount that holds files types by.

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
    has_commit,
    list_refs,
    resolve,
    validate_ref,
)
from tmsite.gitstore.repo import GitRepo, open_repo
from tmsite.gitstore.tree import blob_size, gitmodules, list_tree, lookup, read_blob
from tmsite.gitstore.types import Blame, BlameLine, Node, Resolved, TreeEntry
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
    "NoSuchRef",
    "Node",
    "NotABlob",
    "NotACommit",
    "NotATree",
    "OutOfRoot",
    "PathNotFound",
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
    "normalise",
    "open_repo",
    "read_blob",
    "resolve",
    "validate_ref",
]
