"""The deny-list is the operator's: secret-shaped names refused, public source read.

A checkout whose ``docs/`` holds a file for every default pattern (a name it matches), each
holding the secret, and the public names a real project has (``credential.c``, ``.mailmap``,
``.github/``, ``git-credential.adoc``, ``secret-sharing.md``…). It is a repository too, built
with dulwich, so both mounts that apply the rules are asked: ``fs`` now and ``git`` at its
commit. Every default denied name is refused ``denied`` (and its history), listed redacted; every
public name reads. ``TM_DENY`` adds a pattern, names one back with ``!``, or replaces the list.

Spec: ANY3, FS.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gitstore.builder import Builder
from tmsite.core.errors import Denied
from tmsite.core.paths import DEFAULT_DENY, denied_name
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("ANY3", "FS")

HOST = "tinymachines"
SECRET = "the-secret-3c1f9b"


def example(pattern: str) -> str:
    """A name the pattern matches: each ``*`` made a word."""
    return pattern.replace("*", "x")


#: A name for every default pattern that denies (``!`` patterns name back, tested below).
DENIED = sorted({example(p) for p in DEFAULT_DENY if not p.startswith("!")})
#: Names of public source the old list hid (a word in the name, or a leading dot).
PUBLIC = [
    "credential.c",
    "credential-store.c",
    "git-credential.adoc",
    "secret-sharing.md",
    "secrets.md",
    "keys.md",
    ".mailmap",
    ".gitignore",
    ".clang-format",
    ".editorconfig",
    ".env.example",
    "environment.md",
    "pem-format.md",
]
PUBLIC_DIRS = {".github/workflows/ci.yml": "on: push\n"}


@pytest.fixture
def ns(tmp_path: Path, settings: Any) -> Iterator[Namespace]:
    checkout = tmp_path / "checkout"
    files: dict[str, bytes] = {f"docs/{name}": SECRET.encode() for name in DENIED}
    files |= {f"docs/{name}": f"public {name}\n".encode() for name in PUBLIC}
    files |= {f"docs/{path}": text.encode() for path, text in PUBLIC_DIRS.items()}
    builder = Builder.init(str(checkout))
    sha = builder.commit("all", dict(files), when=0)
    builder.set_ref("refs/heads/main", sha)
    builder.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    builder.repo.close()
    for path, content in files.items():
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_bytes(content)
    settings.TM_HOST = HOST
    settings.TM_CHECKOUT = checkout
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_MOUNTS = ["fs", "git"]
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {}
    settings.TM_GIT_DEFAULT_REFS = {}
    settings.TM_IMPORTS_FILE = None
    registry.reset()
    yield registry.namespace()
    registry.reset()


def fs(name: str, query: str = "") -> str:
    return f"tm://{HOST}/fs/docs/{name}{query}"


def git(name: str, query: str = "") -> str:
    return f"tm://{HOST}/git/tmsite/docs/{name}{query}"


def test_every_default_pattern_has_a_name_it_denies() -> None:
    assert len(DENIED) >= 30
    for name in DENIED:
        assert denied_name(name), name
    for name in (".GIT", ".Env", "ID_RSA", "Server.PEM"):  # as a case-insensitive disk has it
        assert denied_name(name), name


@pytest.mark.parametrize("name", DENIED)
def test_every_default_denied_name_is_refused_in_fs_and_git(ns: Namespace, name: str) -> None:
    for uri in (
        fs(name),
        fs(name, "?as=stat"),
        fs(name, "?range=0-4"),
        git(name),
        git(name, "?as=log"),
        git(name, "?as=blame"),
        git(name, "?at=main&as=stat"),
    ):
        with pytest.raises(Denied) as refused:
            ns.read(uri)
        assert refused.value.data == {"reason": "denied", "uri": uri}
        assert SECRET not in json.dumps(refused.value.data)


@pytest.mark.parametrize("name", [*PUBLIC, *PUBLIC_DIRS])
def test_public_names_read_in_fs_and_git(ns: Namespace, name: str) -> None:
    expected = PUBLIC_DIRS.get(name, f"public {name}\n")
    assert ns.read(fs(name)).body == expected
    assert ns.read(git(name)).body == expected
    log = ns.read(git(name, "?as=log")).body
    assert isinstance(log, dict) and len(log["commits"]) == 1


def test_listings_show_denied_names_redacted_and_public_names_whole(ns: Namespace) -> None:
    for listing in (fs(""), git("")):
        body = ns.read(listing).body
        assert isinstance(body, dict)
        children = {child["name"].rstrip("/"): child for child in body["children"]}
        for name in DENIED:
            if listing == git("") and name == ".git":
                assert name not in children  # a tree entry git itself refuses: never listed
                continue
            assert children[name]["redacted"] is True, (listing, name)
            assert "mimeType" not in children[name] and "size" not in children[name]
        for name in [*PUBLIC, ".github"]:
            assert "redacted" not in children[name], (listing, name)
        assert SECRET not in json.dumps(body)


def test_the_operator_adds_names_back_and_replaces_the_list(ns: Namespace, settings: Any) -> None:
    settings.TM_DENY = ["default", "*.adoc", "!.netrc"]
    registry.reset()
    served = registry.namespace()
    with pytest.raises(Denied):
        served.read(fs("git-credential.adoc"))
    assert served.read(git(".netrc")).body == SECRET
    with pytest.raises(Denied):
        served.read(git("id_rsax"))  # the defaults still hold
    settings.TM_DENY = ["*.md"]  # replaced: the defaults are gone
    registry.reset()
    served = registry.namespace()
    assert served.read(fs(".env")).body == SECRET
    with pytest.raises(Denied):
        served.read(fs("keys.md"))
