"""The trail mount's change source: the trail index's version and the trail files on disk.

The version row moves when the index is rebuilt or a trail is corrected; the files' sizes and
times when one is edited. The trail models' saves and deletes wake the watcher in the process
that saved.

Spec: SUB3, SRCH1.
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path

from tmsite.trails import index

#: The models whose saves and deletes wake the watcher in the process that saved.
SENDERS = ("tm_trails.Trail", "tm_trails.TrailCorrection")


def stamp(checkout: Path | None = None) -> Hashable:
    """The trail index's version and the trail files as they are on disk."""
    return (index.version(), tuple(index.scan(checkout).items()))
