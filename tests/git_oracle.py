"""The git CLI as a test oracle: the one place that finds it, runs it, or says it is missing.

tmsite never runs git (an audit rule fails any test in which it does); tests may, to compare
an answer with what git itself says. Where git is not installed such a test is skipped, with a
message naming what provides it — but not under ``CI=true``, where a missing oracle fails the
test: a CI run that skipped its oracles would report a comparison it never made.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.services import missing

MISSING = "the git CLI is the oracle for this test and is not on PATH"


def git_cli() -> str:
    """The git CLI's path; without one, skip the test (fail it under ``CI=true``)."""
    found = shutil.which("git")
    if found is None:
        missing(MISSING, "apt-get install git")
    return found


def run_git(repo: Path, *args: str, timeout: float = 60, stdin: str | None = None) -> str:
    """``git -C repo args…`` (``stdin`` its input), its output (UTF-8, bad bytes replaced)."""
    done = subprocess.run(
        [git_cli(), "-C", str(repo), *args],
        capture_output=True,
        check=True,
        timeout=timeout,
        input=stdin.encode("utf-8") if stdin is not None else None,
    )
    return done.stdout.decode("utf-8", "replace")


#: Mark a test that compares with the git CLI: it is skipped (failed under CI) before its
#: fixtures are built when there is no git.
needs_git = pytest.mark.usefixtures("git_oracle")


def diff_flags(tmp: Path, old: bytes, new: bytes) -> tuple[list[bool], list[bool]]:
    """git's own diff of two texts as blame makes it (no context lines, Myers, indent
    heuristic): for each line of ``old`` and of ``new``, whether it is changed."""
    (tmp / "old").write_bytes(old)
    (tmp / "new").write_bytes(new)
    done = subprocess.run(
        [
            *(git_cli(), "-c", "diff.algorithm=myers", "-c", "diff.indentHeuristic=true"),
            *("diff", "--no-index", "--no-color", "--no-ext-diff", "-U0", "old", "new"),
        ],
        cwd=tmp,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode in (0, 1), done.stderr
    gone = [False] * (old.count(b"\n") + (bool(old) and not old.endswith(b"\n")))
    added = [False] * (new.count(b"\n") + (bool(new) and not new.endswith(b"\n")))
    for line in done.stdout.split(b"\n"):
        if line.startswith(b"@@ "):
            minus, plus = line.split(b" ")[1:3]
            for flags, spec in ((gone, minus[1:]), (added, plus[1:])):
                first, _comma, count = spec.partition(b",")
                size = int(count) if count else 1
                flags[int(first) - 1 : int(first) - 1 + size] = [True] * size
    return gone, added
