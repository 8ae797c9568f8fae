"""The git mount's settings, parsed once, for the mount and for its start-up check alike.

What the mount is built from and what the start-up check (``tm.E010``–``tm.E014``,
``tm.W010``) looks at are the same reading.

* ``TM_CHECKOUT`` (the settings' default: the project's directory) and ``TM_CHECKOUT_REPO``,
  the name its repository is served under;
* ``TM_GIT_REPOS``: neighbouring repositories, name → path;
* ``TM_GIT_DEFAULT_REFS``: a pinned default revision per repository;
* ``TM_IMPORTS_FILE``: the import manifest (default ``<checkout>/data/imports.json``; empty:
  none).

What can be judged from the values alone is judged here (a problem per mistake, in the order
configured); what needs a repository opened is left to the check.

Spec: GIT.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core import checks

from tmsite import gitstore

#: A served repository's name: one plain URI segment.
REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_NOT_A_MAPPING = "TM_GIT_REPOS must map repository names to paths"


@dataclass(frozen=True)
class Neighbour:
    """One ``TM_GIT_REPOS`` entry: its name and path, or why it is refused."""

    name: str
    path: Path
    problem: checks.CheckMessage | None = None


@dataclass(frozen=True)
class GitSettings:
    """The git settings as read.

    Attributes:
        checkout: The served checkout.
        checkout_name: The name its repository is served under; None when not a plain name
            (``checkout_problem`` says so).
        entries: Every ``TM_GIT_REPOS`` entry, in order, each well-formed or with its problem.
        default_refs: Repository name → pinned ref; empty when not a mapping.
        imports_file: The import manifest, or None for none.
        checkout_problem: ``TM_CHECKOUT_REPO`` is not a plain name (``tm.E011``).
        repos_problem: ``TM_GIT_REPOS`` is not a mapping (``tm.E010``).
        default_refs_problem: ``TM_GIT_DEFAULT_REFS`` is not a mapping (``tm.E013``).
    """

    checkout: Path
    checkout_name: str | None
    entries: tuple[Neighbour, ...]
    default_refs: dict[str, str]
    imports_file: Path | None
    checkout_problem: checks.CheckMessage | None = None
    repos_problem: checks.CheckMessage | None = None
    default_refs_problem: checks.CheckMessage | None = None

    @property
    def neighbours(self) -> dict[str, Path]:
        """The well-formed neighbours, name → path."""
        return {e.name: e.path for e in self.entries if e.problem is None}


def is_repository(path: Path) -> bool:
    """Whether ``path`` opens as a git repository (a work tree or a bare one)."""
    try:
        gitstore.open_repo(path).close()
    except gitstore.GitError:
        return False
    return True


def read_settings() -> GitSettings:
    """The git settings, read and judged by their values (no repository opened)."""
    checkout = Path(settings.TM_CHECKOUT)
    raw_name = getattr(settings, "TM_CHECKOUT_REPO", "tmsite")
    checkout_name = (
        raw_name if isinstance(raw_name, str) and REPO_NAME.fullmatch(raw_name) else None
    )
    checkout_problem = None
    if checkout_name is None:
        checkout_problem = checks.Error(
            f"TM_CHECKOUT_REPO {raw_name!r} is not a plain name",
            hint="letters, digits, '.', '_' and '-', starting with a letter or digit",
            id="tm.E011",
        )
    configured = getattr(settings, "TM_GIT_REPOS", None) or {}
    repos_problem = None
    if not isinstance(configured, Mapping):
        repos_problem = checks.Error(
            _NOT_A_MAPPING, hint='for example {"nes": "/srv/nes"}', id="tm.E010"
        )
        configured = {}
    pinned = getattr(settings, "TM_GIT_DEFAULT_REFS", None) or {}
    default_refs_problem = None
    if not isinstance(pinned, Mapping):
        default_refs_problem = checks.Error(
            "TM_GIT_DEFAULT_REFS must map repository names to refs", id="tm.E013"
        )
        pinned = {}
    imports = getattr(settings, "TM_IMPORTS_FILE", checkout / "data" / "imports.json")
    return GitSettings(
        checkout,
        checkout_name,
        tuple(_neighbour(name, path, raw_name) for name, path in configured.items()),
        {str(name): str(ref) for name, ref in pinned.items()},
        Path(imports) if imports else None,
        checkout_problem,
        repos_problem,
        default_refs_problem,
    )


def _neighbour(name: object, path: object, checkout_name: object) -> Neighbour:
    if not isinstance(name, str) or not isinstance(path, (str, Path)):
        return Neighbour(str(name), Path(), checks.Error(_NOT_A_MAPPING, id="tm.E010"))
    if not REPO_NAME.fullmatch(name) or name == checkout_name:
        problem = checks.Error(
            f"TM_GIT_REPOS: {name!r} is not a plain name or clashes with the checkout's",
            hint="letters, digits, '.', '_' and '-'; not TM_CHECKOUT_REPO",
            id="tm.E011",
        )
        return Neighbour(name, Path(path), problem)
    return Neighbour(name, Path(path))
