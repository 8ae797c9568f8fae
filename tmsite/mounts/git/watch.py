"""Refs moving and new commits, seen for the git URIs someone listens to.

A :class:`RefWatcher` is told which ``tm://<host>/git/…`` URIs are listened to (its
:meth:`~RefWatcher.interest` is the bus's interest watcher) and, while any are, polls the refs
they read every ``interval`` seconds through :mod:`tmsite.gitstore` (dulwich plumbing; never a
subprocess). What a URI reads at:

* no ``at=`` (or ``at=HEAD``): the repository's default — its pinned ``TM_GIT_DEFAULT_REFS``
  entry, else ``HEAD``; it fires when that moves;
* ``at=<branch or tag name>`` that names a ref now: that ref; it fires when that ref moves;
* ``at=<commit id>`` or ``at=<date>``: a fixed commit. It never fires, and no ref is read for it.

When a watched ref moves from commit A to B, the watcher compares what each listened URI names
at A and at B (its tree entry: a blob, a tree, a submodule pin) and calls ``publish`` with the
URI when they differ; for a listened collection (a directory, a repository root, the mount's
root ``git/``) it publishes each changed path beneath it instead (a file, symlink or
submodule, at most :data:`MAX_CHANGES` a move; past that, the collection itself). URIs keep
their ``at=`` label, so they are the ones subscribers hold. The first poll of a ref only notes
where it is. Before publishing, the git mount is told to forget the refs it resolved, so a read
right after the change is told reads the new commit.

Spec: SUB3, GIT.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tmsite import gitstore
from tmsite.core.errors import Refusal
from tmsite.core.uri import parse
from tmsite.gitstore.tree import entry_at, is_tree_mode
from tmsite.mounts.git import uris as git_uris

log = logging.getLogger("tmsite.subscriptions.git")

#: Seconds between two polls of the watched refs.
DEFAULT_INTERVAL = 0.5
#: The most changed paths published beneath one collection for one move.
MAX_CHANGES = 200

Publish = Callable[[str], None]


@dataclass(frozen=True)
class Watched:
    """One listened URI, as the watcher reads it.

    Attributes:
        uri: the URI as listened to, canonical, without its views' parameters (``at=`` kept).
        repo: the repository's name, or None for the mount's root (every repository).
        parts: the path in the repository.
        collection: whether the URI names a collection.
        label: its ``at=`` (None for the default).
    """

    uri: str
    repo: str | None
    parts: tuple[str, ...]
    collection: bool
    label: str | None


#: Moves on when a ref is seen to move (:func:`refs_moved`): what the git mount resolved before
#: is not trusted any more, so a read right after a change is told reads the change.
REFS_SEEN = [0]


def refs_moved() -> None:
    """A ref was seen to move (the ref watcher): forget every ref resolved in this process."""
    REFS_SEEN[0] += 1


class RefWatcher:
    """Polls the refs the listened git URIs read and publishes the URIs whose content moved.

    Args:
        host: the host whose ``git/`` URIs are watched (others are ignored).
        repos: repository name → its path, as served.
        default_refs: repository name → its pinned default ref.
        publish: what is called with each changed URI (the bus's ``publish``).
        interval: seconds between polls.
        threaded: poll in a thread of its own while anything is listened to (False: only when
            :meth:`poll` is called).
    """

    def __init__(
        self,
        host: str,
        repos: Mapping[str, str | Path],
        publish: Publish,
        *,
        default_refs: Mapping[str, str] | None = None,
        interval: float = DEFAULT_INTERVAL,
        threaded: bool = True,
    ) -> None:
        self.host = host
        self.threaded = threaded
        self.paths = {name: Path(path) for name, path in repos.items()}
        self.default_refs = dict(default_refs or {})
        self.publish = publish
        self.interval = interval
        self.polls = 0
        self._lock = threading.Lock()
        self._watched: dict[str, Watched] = {}
        #: Watched URI → the listened URIs it stands for (its views: ``?as=log``, ``?lines=``…).
        self._held: dict[str, set[str]] = {}
        #: (repository, label) → the commit it was at when last polled.
        self._at: dict[tuple[str, str | None], str] = {}
        self._handles: dict[str, gitstore.GitRepo] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- interest ----------------------------------------------------------------------

    def interest(self, uri: str, present: bool) -> None:
        """The bus's interest watcher: ``uri`` gained its first listener, or lost its last."""
        watched = self._watched_of(uri)
        if watched is None:
            return
        with self._lock:
            held = self._held.setdefault(watched.uri, set())
            if present:
                held.add(uri)
                self._watched[watched.uri] = watched
            else:
                held.discard(uri)
                if held:
                    return  # another view of the same URI is still listened to
                del self._held[watched.uri]
                self._watched.pop(watched.uri, None)
                keys = {(r, w.label) for w in self._watched.values() for r in self._repos(w)}
                for key in list(self._at):
                    if key not in keys:
                        del self._at[key]
            start = present and self.threaded and self._thread is None
            if start:
                self._thread = threading.Thread(target=self._run, name="tm-git-refs", daemon=True)
        if start and self._thread is not None:
            self._thread.start()
        if present:  # note where its ref is now, so the first move is seen
            self._wake.set()

    def watched(self) -> list[str]:
        """The URIs watched now."""
        with self._lock:
            return sorted(self._watched)

    def _watched_of(self, uri: str) -> Watched | None:
        try:
            parsed = parse(uri)
        except Refusal:
            return None
        if parsed.host != self.host or parsed.mount != git_uris.MOUNT:
            return None
        label = parsed.param("at")
        if label == "HEAD":
            label = None
        if label is not None and not _names_a_ref(label):
            return None  # a commit id or a date: a fixed commit, never moves
        text = parsed.keeping("at").text  # views of one URI are watched as that URI
        if not parsed.path:
            return Watched(text, None, (), True, label)
        if parsed.path[0] not in self.paths:
            return None
        return Watched(text, parsed.path[0], parsed.path[1:], parsed.collection, label)

    def _repos(self, watched: Watched) -> list[str]:
        return [watched.repo] if watched.repo is not None else sorted(self.paths)

    def arm(self, deadline: float) -> bool:
        """Note where each watched ref is now, if not yet: a later move is seen (the bus's arm).

        Reads in the calling thread; ``deadline`` is not needed (a ref is read at once).
        """
        with self._lock:
            watched = list(self._watched.values())
            keys = {(r, w.label) for w in watched for r in self._repos(w)} - set(self._at)
        for repo_name, label in sorted(keys, key=str):
            commit = self._commit(repo_name, label)
            if commit is not None:
                with self._lock:
                    self._at.setdefault((repo_name, label), commit)
        return True

    # ---- polling -----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            with self._lock:
                if not self._watched:
                    self._thread = None
                    return
            try:
                self.poll()
            except Exception:  # a poll that fails is logged; the next one tries again
                log.exception("polling the git refs failed")

    def poll(self) -> list[str]:
        """Read every watched ref once; publish what moved. Returns the URIs published."""
        with self._lock:
            watched = list(self._watched.values())
        self.polls += 1
        keys = sorted({(r, w.label) for w in watched for r in self._repos(w)}, key=str)
        published: list[str] = []
        for repo_name, label in keys:
            commit = self._commit(repo_name, label)
            if commit is None:
                continue
            with self._lock:
                before = self._at.get((repo_name, label))
                self._at[(repo_name, label)] = commit
            if before is None or before == commit:
                continue
            refs_moved()  # a read right after this is told must not see the old commit
            for one in watched:
                if one.label == label and repo_name in self._repos(one):
                    for uri in self._changed(repo_name, one, before, commit):
                        if uri not in published:  # a file and its directory both listened
                            published.append(uri)
                            self.publish(uri)
        return published

    def _handle(self, name: str) -> gitstore.GitRepo:
        handle = self._handles.get(name)
        if handle is None:
            handle = gitstore.open_repo(self.paths[name])
            self._handles[name] = handle
        return handle

    def _commit(self, name: str, label: str | None) -> str | None:
        """The commit ``label`` names in repository ``name`` now, or None when it names none."""
        try:
            found = gitstore.resolve(self._handle(name), label, self.default_refs.get(name))
        except gitstore.GitStoreError:  # gone, or not a ref (any more): nothing moves
            return None
        return found.commit

    def _changed(self, name: str, watched: Watched, before: str, after: str) -> list[str]:
        """The URIs to publish for ``watched`` when ``name``'s ref moved ``before`` → ``after``."""
        repo = self._handle(name)
        try:
            old = entry_at(repo, repo.commit(before).tree, watched.parts)
            new = entry_at(repo, repo.commit(after).tree, watched.parts)
        except gitstore.GitStoreError:
            return []
        if old == new:
            return []
        if not watched.collection:
            return [watched.uri]
        changed: list[str] = []
        for path in _diff(repo, _tree(old), _tree(new), watched.parts):
            if len(changed) >= MAX_CHANGES:
                return [watched.uri]
            uri = git_uris.path_uri(self.host, name, path, at=watched.label)
            changed.append(str(uri))
        return changed or [watched.uri]


def _names_a_ref(label: str) -> bool:
    """Whether ``at=`` text may name a ref (a name), not a fixed commit (hex id, date)."""
    try:
        checked = gitstore.validate_ref(label)
    except gitstore.GitStoreError:
        return False
    if checked.kind == "date":
        return False
    return not (4 <= len(label) <= 40 and all(c in "0123456789abcdefABCDEF" for c in label))


def _tree(entry: tuple[int, str] | None) -> str | None:
    """The id of a tree entry that is a directory, else None."""
    return entry[1] if entry is not None and is_tree_mode(entry[0]) else None


def _diff(
    repo: gitstore.GitRepo, old: str | None, new: str | None, prefix: tuple[str, ...]
) -> Iterator[tuple[str, ...]]:
    """The paths beneath two trees (either may be absent) whose entries differ, files first."""
    if old == new:
        return
    before = repo.tree(old) if old is not None else {}
    after = repo.tree(new) if new is not None else {}
    below: list[tuple[str, str | None, str | None]] = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        a_tree, b_tree = _tree(a), _tree(b)
        if (a is not None and a_tree is None) or (b is not None and b_tree is None):
            yield (*prefix, name)  # a file, symlink or submodule came, went or changed
        if a_tree is not None or b_tree is not None:
            below.append((name, a_tree, b_tree))
    for name, a_tree, b_tree in below:
        yield from _diff(repo, a_tree, b_tree, (*prefix, name))
