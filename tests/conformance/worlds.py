"""One world per mount kind: the canonical scenario, built for real in that mount.

The canonical scenario every world lays out (names may differ where a mount has its own):

    <collection>/            a collection with both kinds of child
    ├── beta/                a sub-collection
    │   └── deep.md
    ├── notes.md             a text leaf: "one\\ntwo\\nthree\\n"
    └── record.json          {"a": [1, {"b": 2}]}

plus, where the mount can hold it, a secret outside the served roots that no answer may show.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tmsite.mounts.base import Mount

HOST = "test"
NOTES = "one\ntwo\nthree\n"
RECORD = {"a": [1, {"b": 2}]}
SECRET = "TOP-SECRET-0xC0FFEE"


@dataclass
class World:
    mount: Mount
    collection: str
    leaf: str
    typo: str
    json_leaf: str | None = None
    #: Hostile URIs and the one reason each is refused with: ``out-of-root`` where a path
    #: leaves the roots a mount serves, ``not-found`` (with nearest) where the mount is keyed
    #: by names and the name is simply not one of them, ``denied``, ``bad-uri``.
    hostile: dict[str, str] = field(default_factory=dict)
    secret: str | None = None
    #: Other mounts the namespace needs beside this one (links into them, for instance).
    others: list[Mount] = field(default_factory=list)
    #: A facet the leaf does not offer (``blame`` is offered by git files).
    unoffered_facet: str = "blame"
    #: Completion: the other template arguments, and how many leading segments of the
    #: collection's path are not part of the ``path`` argument (git's repository name).
    complete_context: dict[str, str] = field(default_factory=dict)
    complete_skip: int = 0
    # Where a mount's things do not fit the canonical scenario (entities, offbox nodes, trails
    # are JSON things in collections that hold one kind of child), these say what stands for it.
    # The defaults are the canonical scenario, so the file-like mounts are checked as before.
    #: The first child of ``collection`` (a sub-collection), or None when it holds leaves only.
    first_child: str | None = "beta/"
    #: Children ``collection`` must list.
    child_names: tuple[str, ...] = ("notes.md", "record.json")
    #: The text ``leaf`` reads as, or None for a leaf that reads as JSON of ``leaf_type``.
    leaf_text: str | None = NOTES
    leaf_type: str | None = None
    #: A pointer into the JSON ``leaf`` and the value it must find there.
    leaf_pointer: tuple[str, object] | None = None
    #: The collection holding ``sub_collection`` (default ``collection``); None: the mount has
    #: no collection below another.
    sub_parent: str | None = None
    sub_collection: str | None = "beta/"
    #: (argument, typed, expected) for the first template, instead of the ``path`` check.
    completion: tuple[str, str, list[str]] | None = None
    #: Whether the mount offers its things to the search index (``documents``): then ``leaf``
    #: is among them, with its text (``leaf_text``, by lines; else words of its own, whole).
    indexed: bool = False
    #: A document the mount offers, read whole, to check instead of ``leaf`` when the leaf is
    #: not one (the git mount offers commits, not files).
    indexed_as: str | None = None


def _discover() -> dict[str, Callable[[Path], World]]:
    """Every ``world_<kind>.py`` beside this file: its ``world(tmp)`` builds that kind's world."""
    found: dict[str, Callable[[Path], World]] = {}
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name.startswith("world_"):
            loaded = importlib.import_module(f"tests.conformance.{module.name}")
            found[module.name.removeprefix("world_")] = loaded.world
    return dict(sorted(found.items()))


WORLDS: dict[str, Callable[[Path], World]] = _discover()
