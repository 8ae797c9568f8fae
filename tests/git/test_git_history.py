"""The git mount's history across a rename: ``?as=log`` links the older path, ``?as=blame``
says where a line's path differed.

Spec: ANY2.
"""

from __future__ import annotations

import pytest

from tests.git.scenario import REPO, Scenario
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("ANY2")


def test_a_file_log_follows_its_rename_and_links_the_older_path(
    ns: Namespace, scenario: Scenario
) -> None:
    c = scenario.c
    body = ns.read(REPO + "docs/renamed.md?as=log").body
    commits = body["commits"]
    assert [e["commit"] for e in commits] == [c["c4"], c["c1"]]
    renaming, first = commits
    assert renaming["uri"] == REPO + f"docs/renamed.md?at={c['c4']}"
    assert "path" not in renaming
    assert renaming["renamed_from"] == {
        "path": "docs/old.md",
        "uri": REPO + f"docs/old.md?at={c['m1']}",
    }
    assert ns.read(renaming["renamed_from"]["uri"]).body == "old name\n"
    assert first["path"] == "docs/old.md" and "renamed_from" not in first
    assert first["uri"] == REPO + f"docs/old.md?at={c['c1']}"
    assert ns.read(first["uri"]).body == "old name\n"


def test_blame_lines_carry_the_path_they_had(ns: Namespace, scenario: Scenario) -> None:
    lines = ns.read(REPO + "docs/renamed.md?as=blame").body["lines"]
    assert lines == [
        {
            "line": 1,
            "commit": scenario.c["c1"],
            "author": lines[0]["author"],
            "date": lines[0]["date"],
            "text": "old name",
            "path": "docs/old.md",
        }
    ]
    guide = ns.read(REPO + "docs/guide.md?as=blame").body["lines"]
    assert all("path" not in line for line in guide)
