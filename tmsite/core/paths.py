"""The rules for paths of the served checkout: the deny-list, shown names, root containment.

The deny-list is the operator's: ``TM_DENY`` (patterns matched against each path segment,
``default`` for :data:`DEFAULT_DENY`, ``!pattern`` to name one back). The defaults hide names
shaped like secrets — keys, ``.env``, credential stores — and leave public source alone.

The fs mount serves the checkout's allow-listed roots; the git mount reads the same files at a
revision (``fs/…?at=``) and links a repository's files to their working copies. Both apply
these rules, so a name refused in one is refused in the other. Nothing here raises a
namespace refusal: :class:`PathRefused` says why, and the mount turns it into one.

Spec: FS, ANY3.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from tmsite.core.settled import settled

#: What the deny-list holds unless ``TM_DENY`` says otherwise: names shaped like secrets, not
#: every name containing a word. A pattern matches one path segment (a file or directory name),
#: case-insensitively (``.GIT`` is ``.git`` to a case-insensitive filesystem); ``!pattern``
#: names back what an earlier pattern denies.
DEFAULT_DENY: tuple[str, ...] = (
    # environment files and credential stores
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    "*.env",
    ".git-credentials",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".htpasswd",
    ".npmrc",
    ".pypirc",
    ".my.cnf",
    # private keys and key stores
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    # directories of keys, tokens and a repository's own insides
    ".git",
    ".ssh",
    ".gnupg",
    ".aws",
    ".docker",
    ".kube",
    # look-alikes of the parent segment ("...", "..∕x"): never a traversal, never served
    "..*",
    # databases, local notes and bytecode: never the checkout's public source
    "*.db",
    "*.sqlite",
    "*.sqlite3",
    "*.local.md",
    "__pycache__",
)
#: The word in ``TM_DENY`` that stands for :data:`DEFAULT_DENY`.
DEFAULTS = "default"
#: Why a segment that could leave its root is refused.
PLAIN_NAMES = "paths are plain names: no '.', '..', empty segments, '/', '\\' or NUL"
#: Why a denied name is refused (the same words whether it exists or not).
NOT_OFFERED = "it exists or not; either way it is not offered"
#: Why a path whose resolved form (through symlinks) is outside its root is refused.
OUTSIDE = "the path leads outside its root"


class DenyList:
    """Name patterns in order: a name is denied when the last pattern it matches denies it."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(_expand(patterns))
        rules = [(p.startswith("!"), p.removeprefix("!")) for p in self.patterns]
        self._rules = tuple(
            (allow, re.compile(fnmatch.translate(pattern), re.IGNORECASE))
            for allow, pattern in rules
            if pattern
        )
        self.denies = lru_cache(maxsize=8192)(self._denies)

    def _denies(self, name: str) -> bool:
        denied = False
        for allow, rule in self._rules:
            if rule.match(name):
                denied = not allow
        return denied


def _expand(patterns: Sequence[str]) -> list[str]:
    """``default`` in a configured list stands for :data:`DEFAULT_DENY`."""
    out: list[str] = []
    for pattern in patterns:
        out.extend(DEFAULT_DENY if pattern == DEFAULTS else [pattern])
    return out


@settled
def deny_list() -> DenyList:
    """The deny-list in force: ``TM_DENY`` (patterns; ``default`` for the defaults)."""
    configured = getattr(settings, "TM_DENY", None)
    return DenyList([DEFAULTS] if configured is None else configured)


def denied_name(name: str) -> bool:
    """Whether one path segment matches the deny-list (:func:`deny_list`)."""
    return deny_list().denies(name)


def display(name: str) -> str:
    """A file name fit for JSON: bytes that are not UTF-8 shown as U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def plain(segment: str) -> bool:
    r"""Whether a decoded segment is a plain name (no ``.``, ``..``, empty, ``/``, ``\``, NUL)."""
    return segment not in {"", ".", ".."} and not any(ch in segment for ch in "/\\\x00")


class PathRefused(Exception):
    """A path the rules refuse.

    Attributes:
        why: The sentence for people.
        denied: Refused by the deny-list (else: it leaves the roots).
        unknown_root: Its first segment is not a served root.
    """

    def __init__(self, why: str, *, denied: bool = False, unknown_root: bool = False) -> None:
        super().__init__(why)
        self.why = why
        self.denied = denied
        self.unknown_root = unknown_root


class CheckoutRoots:
    """The allow-listed roots of a checkout, resolved once.

    Were a root later swapped for a symlink elsewhere, paths under it would resolve outside
    the resolved root and be refused: the cache can only fail closed.
    """

    def __init__(self, checkout: Path, names: Sequence[str]) -> None:
        self.checkout = checkout.resolve()
        self.names = tuple(names)
        self.paths = {root: (self.checkout / root).resolve() for root in self.names}

    def serves(self, root: str) -> bool:
        """Whether ``root`` is one of the allow-listed roots."""
        return root in self.paths

    def check_plain(self, segments: Sequence[str]) -> None:
        """Refuse a segment that could leave its root (raises :class:`PathRefused`)."""
        if not all(plain(segment) for segment in segments):
            raise PathRefused(PLAIN_NAMES)

    def check_named(self, segments: Sequence[str]) -> None:
        """Refuse an unknown root, then a denied name among the asked segments."""
        if not segments or segments[0] not in self.paths:
            raise PathRefused(f"only {', '.join(self.names)} are served", unknown_root=True)
        if any(denied_name(segment) for segment in segments):
            raise PathRefused(NOT_OFFERED, denied=True)

    def resolve(self, segments: Sequence[str]) -> Path:
        """``<root>/<path>`` checked and resolved (symlinks followed) inside its root.

        Order: plain segments, a served root, the deny-list on the asked names, the resolved
        path inside the resolved root (a component check: ``docs-old`` is not in ``docs``),
        the deny-list on the resolved names.

        Raises:
            PathRefused: at the first rule the path breaks.
        """
        self.check_plain(segments)
        self.check_named(segments)
        root_path = self.paths[segments[0]]
        resolved = Path(os.path.realpath(root_path.joinpath(*segments[1:])))
        if not resolved.is_relative_to(root_path):
            raise PathRefused(OUTSIDE)
        if any(denied_name(part) for part in resolved.relative_to(root_path).parts):
            raise PathRefused(NOT_OFFERED, denied=True)
        return resolved
