"""When a repository last changed, as listings and the map say it: its default commit's time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from dulwich.repo import Repo
from mcp_types import _v2025_11_25 as v2025
from mcp_types import _v2026_07_28 as v2026

from tests.git.scenario import HOST, ROOT, Scenario
from tmsite.mcp.convert import resource
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("GIT", "NS7")


def head_time(scenario: Scenario, name: str) -> str:
    """The commit time of the repository's HEAD, read with dulwich itself."""
    path = scenario.checkout if name == "tmsite" else scenario.root / name
    repo = Repo(str(path))
    seconds = repo[repo.head()].commit_time
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_repositories_listing_dates_each_by_its_newest_commit(
    ns: Namespace, scenario: Scenario
) -> None:
    body: Any = ns.read(ROOT).body
    listed = {child["name"]: child for child in body["children"]}
    assert set(listed) == {"tmsite/", "nes-bench/", "lib/"}
    times = {name: head_time(scenario, name.rstrip("/")) for name in listed}
    assert len(set(times.values())) > 1, "the repositories' times differ, so each is its own"
    for name, child in listed.items():
        assert child["annotations"] == {"lastModified": times[name]}, name


def test_the_map_dates_the_repositories_the_same_way(ns: Namespace, scenario: Scenario) -> None:
    page = ns.resource_map(None)
    roots = {e.uri: e for e in page.entries if e.uri.startswith(ROOT) and e.uri.count("/") == 5}
    assert set(roots) == {f"tm://{HOST}/git/{n}/" for n in ("tmsite", "nes-bench", "lib")}
    for uri, entry in roots.items():
        item = resource(entry)
        name = uri.removeprefix(ROOT).rstrip("/")
        assert item["annotations"] == {"lastModified": head_time(scenario, name)}
        for model in (v2025.Resource, v2026.Resource):
            parsed = model.model_validate(item)
            assert parsed.annotations is not None
            assert parsed.annotations.last_modified == head_time(scenario, name)


def test_a_tree_listing_sizes_its_files_by_their_blobs(ns: Namespace) -> None:
    body: Any = ns.read(f"{ROOT}tmsite/docs/").body
    guide = next(c for c in body["children"] if c["name"] == "guide.md")
    read = ns.read(f"{ROOT}tmsite/docs/guide.md")
    assert isinstance(read.body, str)
    assert guide["size"] == len(read.body.encode())
