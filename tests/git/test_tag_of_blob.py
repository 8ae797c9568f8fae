"""A tag that points at a blob (git.git's ``junio-gpg-pub``) is refused saying so.

Spec: ANY3, GIT.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import Blob

from tests.gitstore.builder import Builder
from tmsite.core.errors import NoSuchRef
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("ANY3", "GIT")

HOST = "tinymachines"
REPO = f"tm://{HOST}/git/tmsite/"


@pytest.fixture
def ns(tmp_path: Path, settings: Any) -> Iterator[Namespace]:
    builder = Builder.init(str(tmp_path / "repo"))
    sha = builder.commit("first", {"README.md": b"hello\n", "key.asc": b"public key\n"}, when=0)
    builder.set_ref("refs/heads/main", sha)
    builder.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    blob = Blob.from_string(b"public key\n")
    builder.annotated_tag("key-tag", blob.id, Blob)
    builder.set_ref("refs/tags/key-light", blob.id)
    builder.annotated_tag("v1", sha)
    builder.repo.close()
    settings.TM_HOST = HOST
    settings.TM_MOUNTS = ["git"]
    settings.TM_CHECKOUT = tmp_path / "repo"
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {}
    settings.TM_GIT_DEFAULT_REFS = {}
    settings.TM_IMPORTS_FILE = None
    registry.reset()
    yield registry.namespace()
    registry.reset()


@pytest.mark.parametrize("tag", ["key-tag", "key-light"])
def test_a_tag_of_a_blob_is_refused_saying_what_it_points_at(ns: Namespace, tag: str) -> None:
    uri = f"{REPO}README.md?at={tag}"
    with pytest.raises(NoSuchRef) as refused:
        ns.read(uri)
    data = refused.value.data
    assert data["reason"] == "no-such-ref" and data["uri"] == uri
    assert data["tagged"] == "blob"
    assert str(refused.value).startswith(f"the tag {tag!r} points at a blob, not a commit")
    assert "no branch, tag, commit or date" not in str(refused.value)
    assert f"{REPO}README.md?at={tag}" not in data["nearest"]  # never the refused ref itself
    assert ns.read(f"{REPO}README.md?at=v1").body == "hello\n"  # a tag of a commit reads
