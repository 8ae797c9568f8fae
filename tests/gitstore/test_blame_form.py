"""A blame is kept in a compact form: a worker that takes it from the shared store unpickles a
handful of objects, however many lines the file has, and reads the same records.

Spec: ANY2.
"""

from __future__ import annotations

import gc
import pickle
from pathlib import Path
from types import ModuleType

import pytest

from tests.gitstore.builder import Builder
from tests.gitstore.conftest import blame_lines
from tmsite import gitstore
from tmsite.gitstore import kept
from tmsite.gitstore.types import Blame, BlameLine

pytestmark = pytest.mark.spec("ANY2")

LINES = 5_000


@pytest.fixture(scope="module")
def long_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A 5,000-line file: every line from the first commit, every third rewritten after."""
    root = tmp_path_factory.mktemp("long") / "repo"
    b = Builder.init(str(root))
    text = [f"line {i} — first" for i in range(LINES)]
    first = b.commit("first", {"long.txt": blame_lines(*text)}, when=0)
    text = [f"line {i} — second" if i % 3 == 0 else line for i, line in enumerate(text)]
    second = b.commit("second", {"long.txt": blame_lines(*text)}, [first], when=60)
    b.set_ref("refs/heads/main", second)
    return root, second.decode()


def _tracked_by_loading(blob: bytes) -> int:
    """Objects the collector tracks that unpickling ``blob`` keeps alive: those the answer
    reaches, its classes and modules aside (counted by walking it, so that what other threads
    make or free meanwhile does not count)."""
    value = pickle.loads(blob)
    seen: set[int] = set()
    todo = [value]
    while todo:
        item = todo.pop()
        if id(item) in seen or not gc.is_tracked(item) or isinstance(item, type | ModuleType):
            continue
        seen.add(id(item))
        todo.extend(gc.get_referents(item))
    return len(seen)


def test_a_kept_blame_loads_as_a_handful_of_objects(long_file: tuple[Path, str]) -> None:
    root, head = long_file
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        found = gitstore.blame(repo, head, "long.txt")
    assert isinstance(found, Blame) and len(found) == LINES
    records = list(found)
    assert [line.line_no for line in records] == list(range(1, LINES + 1))
    assert len({line.commit for line in records}) == 2
    blob = pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(blob) == records
    # a record per line would be thousands of tracked objects; the compact form is a few
    assert _tracked_by_loading(blob) < 20
    assert _tracked_by_loading(pickle.dumps(records, protocol=pickle.HIGHEST_PROTOCOL)) > LINES


def test_a_kept_blame_reads_the_same_from_the_files(
    long_file: tuple[Path, str], tmp_path: Path
) -> None:
    root, head = long_file
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        found = gitstore.blame(repo, head, "long.txt")
    store = kept.FileStore(tmp_path / "git-kept", 1 << 30)
    store.put("a" * 64, found)
    again = store.get("a" * 64)
    assert isinstance(again, Blame) and again == found
    # a cut is a blame of those lines, numbered as in the file
    cut = again[2_999:3_002]
    assert isinstance(cut, Blame)
    assert [(line.line_no, line.text) for line in cut] == [
        (3_000, "line 2999 — first"),
        (3_001, "line 3000 — second"),
        (3_002, "line 3001 — first"),
    ]
    assert again[-1] == found[LINES - 1] and again[0].line_no == 1
    assert Blame.of(list(cut)) == cut and again[10:5] == [] and len(again[LINES:]) == 0


def test_a_blame_of_no_lines_and_of_one_empty_line() -> None:
    assert list(Blame.of([])) == [] and len(Blame.of([])) == 0
    one = BlameLine(line_no=1, commit="c" * 40, author_name="Ada", date="2023-11-14", text="")
    kept_one = pickle.loads(pickle.dumps(Blame.of([one])))
    assert list(kept_one) == [one]
