"""Completion says the true total, or leaves it out when a mount's limit cut the values.

A directory of 6,000 files (past fs's 5,000 looked at) and a tree of 300 entries (past git's
101), asked through MCP's ``completion/complete`` and REST ``/api/v1/complete``: cut values
report no ``total`` and ``hasMore: true``; a list under the limit reports its true count.

Spec: ANY3, NS8.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.gitstore.builder import Builder
from tmsite.mcp.methods import dispatch
from tmsite.mcp.protocol import CallContext
from tmsite.mounts import registry

pytestmark = pytest.mark.spec("ANY3", "NS8")

HOST = "tinymachines"
FS = f"tm://{HOST}/fs/{{+path}}"
GIT = f"tm://{HOST}/git/{{repo}}/{{+path}}{{?at,as,n}}"
FILES = {f"docs/many/f{i:05d}.txt": b"x\n" for i in range(6000)} | {
    f"docs/tree/t{i:03d}.md": b"y\n" for i in range(300)
}


@pytest.fixture
def box(tmp_path: Path, settings: Any) -> Iterator[None]:
    root = tmp_path / "checkout"
    builder = Builder.init(str(root))
    sha = builder.commit("files", dict(FILES), when=0)
    builder.set_ref("refs/heads/main", sha)
    builder.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    builder.repo.close()
    for path, content in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)
    settings.TM_HOST = HOST
    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_MOUNTS = ["fs", "git"]
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {}
    settings.TM_GIT_DEFAULT_REFS = {}
    settings.TM_IMPORTS_FILE = None
    registry.reset()
    yield
    registry.reset()


def mcp(template: str, value: str, context: dict[str, str] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "ref": {"type": "ref/resource", "uri": template},
        "argument": {"name": "path", "value": value},
    }
    if context:
        params["context"] = {"arguments": context}
    answer: dict[str, Any] = dispatch(
        "completion/complete", params, CallContext(version="2025-11-25")
    )["completion"]
    return answer


def rest(template: str, value: str) -> dict[str, Any]:
    got = Client().get(
        "/api/v1/complete", {"template": template, "argument": "path", "value": value}
    )
    assert got.status_code == 200, got.content
    answer: dict[str, Any] = got.json()
    return answer


@pytest.mark.django_db
def test_values_cut_at_a_limit_report_no_total(box: None) -> None:
    for answer in (mcp(FS, "docs/many/f"), rest(FS, "docs/many/f")):
        assert "total" not in answer  # 6,000 match; the 5,000 looked at are not the count
        assert answer["hasMore"] is True and len(answer["values"]) == 100
    cut = mcp(GIT, "docs/tree/t", {"repo": "tmsite"})
    assert "total" not in cut and cut["hasMore"] is True


@pytest.mark.django_db
def test_values_under_the_limit_report_the_true_total(box: None) -> None:
    for answer in (mcp(FS, "docs/many/f0001"), rest(FS, "docs/many/f0001")):
        assert answer["total"] == 10 and answer["hasMore"] is False
    under = mcp(GIT, "docs/tree/t2", {"repo": "tmsite"})
    assert under["total"] == 100 and under["hasMore"] is False
