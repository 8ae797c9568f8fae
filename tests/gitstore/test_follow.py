"""Blame and log across renames, checked line for line against ``git blame`` and ``git log
--follow`` on a repository with renames, copies, merges and files never renamed.

History (days after the base time; merges named ``m``)::

    r1 ─ r2 ─ r3 ─ r4 ────── m1 ─ r6 ─ r7 ─ r8 ─ m2 ─ r10     main
               \\           /                  /
                s1 ─ s2 ───┘         t1 ─ t2 ─┘               side, topic

* ``notes.txt``: created in r1, renamed to ``doc/notes.md`` in r3 with edits (a content rename),
  edited on both sides of m1, moved again to ``manual/notes.md`` in r7 unchanged (exact);
* ``lib/util.py``: renamed to ``src/util.py`` on the side branch (s1) while main edits it (r4),
  brought together in m1;
* ``copy.txt``: a copy of ``doc/notes.md`` made in r6 (the original stays: not followed);
* ``weak.txt``: ``old.txt`` rewritten past recognition as it moved (under 50%: a new file);
* ``plain.txt``: never renamed, edited in many commits and on the topic branch;
* ``twin/a.txt`` and ``twin/b.txt``: the same blob, one deleted and ``c.txt`` added with it.

Spec: ANY2.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.git_oracle import needs_git, run_git
from tests.gitstore.builder import Builder
from tests.gitstore.conftest import DAY, blame_lines
from tmsite import gitstore
from tmsite.gitstore.renames import renamed_from

pytestmark = pytest.mark.spec("ANY2")

NOTES = [f"note {i:02d}: something worth keeping" for i in range(1, 31)]
UTIL = [f"def helper_{i}(x):\n    return x + {i}" for i in range(12)]
PLAIN = [f"plain line {i}" for i in range(1, 16)]


def _build(root: Path) -> dict[str, str]:
    b = Builder.init(str(root))
    c: dict[str, bytes] = {}
    notes = list(NOTES)
    util = list(UTIL)
    plain = list(PLAIN)
    c["r1"] = b.commit(
        "r1",
        {
            "notes.txt": blame_lines(*notes),
            "lib/util.py": blame_lines(*util),
            "plain.txt": blame_lines(*plain),
            "old.txt": blame_lines(*(f"old {i}" for i in range(10))),
            "twin/a.txt": b"twin\ncontent\n",
            "twin/b.txt": b"twin\ncontent\n",
        },
        when=0,
    )
    plain[2] = "plain line 3, edited in r2"
    notes[0] = "note 01: edited before the move"
    c["r2"] = b.commit(
        "r2",
        {"plain.txt": blame_lines(*plain), "notes.txt": blame_lines(*notes)},
        [c["r1"]],
        when=DAY,
    )
    notes[5] = "note 06: edited as it moved"
    notes.append("note 31: added as it moved")
    c["r3"] = b.commit(
        "r3",
        {"notes.txt": None, "doc/notes.md": blame_lines(*notes)},
        [c["r2"]],
        when=2 * DAY,
    )
    side_util = list(util)
    side_util[3] = "def helper_3(x):\n    return x * 3  # side"
    c["s1"] = b.commit(
        "s1",
        {"lib/util.py": None, "src/util.py": blame_lines(*side_util)},
        [c["r3"]],
        when=3 * DAY,
    )
    side_notes = list(notes)
    side_notes[10] = "note 11: edited on the side"
    c["s2"] = b.commit("s2", {"doc/notes.md": blame_lines(*side_notes)}, [c["s1"]], when=4 * DAY)
    util[8] = "def helper_8(x):\n    return x - 8  # main"
    notes[20] = "note 21: edited on main"
    plain[7] = "plain line 8, edited in r4"
    c["r4"] = b.commit(
        "r4",
        {
            "lib/util.py": blame_lines(*util),
            "doc/notes.md": blame_lines(*notes),
            "plain.txt": blame_lines(*plain),
        },
        [c["r3"]],
        when=5 * DAY,
    )
    merged_util = list(util)
    merged_util[3] = side_util[3]
    notes[10] = side_notes[10]
    c["m1"] = b.commit(
        "m1",
        {
            "lib/util.py": None,
            "src/util.py": blame_lines(*merged_util),
            "doc/notes.md": blame_lines(*notes),
        },
        [c["r4"], c["s2"]],
        when=6 * DAY,
    )
    c["r6"] = b.commit(
        "r6",
        {
            "copy.txt": blame_lines(*notes),
            "old.txt": None,
            "weak.txt": blame_lines("old 0", *(f"new {i}" for i in range(12))),
        },
        [c["m1"]],
        when=7 * DAY,
    )
    c["r7"] = b.commit(
        "r7",
        {"doc/notes.md": None, "manual/notes.md": blame_lines(*notes)},
        [c["r6"]],
        when=8 * DAY,
    )
    plain[11] = "plain line 12, edited in r8"
    c["r8"] = b.commit(
        "r8",
        {"plain.txt": blame_lines(*plain), "twin/a.txt": None, "c.txt": b"twin\ncontent\n"},
        [c["r7"]],
        when=9 * DAY,
    )
    topic = list(plain)
    topic[0] = "plain line 1, edited on topic"
    c["t1"] = b.commit("t1", {"plain.txt": blame_lines(*topic)}, [c["r4"]], when=5 * DAY + 100)
    topic[14] = "plain line 15, edited on topic"
    c["t2"] = b.commit("t2", {"plain.txt": blame_lines(*topic)}, [c["t1"]], when=9 * DAY + 50)
    plain[0] = topic[0]
    plain[14] = topic[14]
    c["m2"] = b.commit("m2", {"plain.txt": blame_lines(*plain)}, [c["r8"], c["t2"]], when=10 * DAY)
    notes[29] = "note 30: edited at last"
    c["r10"] = b.commit("r10", {"manual/notes.md": blame_lines(*notes)}, [c["m2"]], when=11 * DAY)
    b.set_ref("refs/heads/main", c["r10"])
    b.set_ref("refs/heads/side", c["s2"])
    b.set_ref("refs/heads/topic", c["t2"])
    b.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    return {name: sha.decode() for name, sha in c.items()}


@pytest.fixture(scope="module")
def renames(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("renames") / "repo"
    return root, _build(root)


def _porcelain(text: str) -> list[tuple[str, str, str]]:
    """(commit, path in that commit, text) per final line of ``git blame --porcelain``."""
    out = []
    files: dict[str, str] = {}
    current = ""
    for line in text.split("\n"):
        head = re.match(r"^([0-9a-f]{40}) \d+ \d+", line)
        if head:
            current = head.group(1)
        elif line.startswith("filename "):
            files[current] = line[len("filename ") :]
        elif line.startswith("\t"):
            out.append((current, files[current], line[1:]))
    return out


#: (start commit, file there): every file at every branch tip and at the commits around moves.
CASES = [
    *(
        ("r10", path)
        for path in (
            "manual/notes.md",
            "src/util.py",
            "copy.txt",
            "weak.txt",
            "plain.txt",
            "c.txt",
            "twin/b.txt",
        )
    ),
    *(("s2", path) for path in ("doc/notes.md", "src/util.py", "plain.txt", "twin/a.txt")),
    *(("t2", path) for path in ("doc/notes.md", "lib/util.py", "plain.txt")),
    *(("r7", path) for path in ("manual/notes.md", "src/util.py", "copy.txt", "weak.txt")),
    *(("m1", path) for path in ("doc/notes.md", "src/util.py", "old.txt")),
    *(("r3", path) for path in ("doc/notes.md", "lib/util.py")),
]


def _oracle_log(root: Path, at: str, path: str) -> list[tuple[str, str, str | None]]:
    """(commit, path there, renamed or copied from) per entry of ``git log --follow
    --name-status``."""
    out: list[tuple[str, str, str | None]] = []
    commit = ""
    text = run_git(root, "log", "--follow", "--format=%H", "--name-status", at, "--", path)
    for line in text.split("\n"):
        if re.fullmatch(r"[0-9a-f]{40}", line):
            commit = line
        elif line and line[0] in "AMDRCT" and commit:
            fields = line.split("\t")
            out.append((commit, fields[-1], fields[1] if line[0] in "RC" else None))
            commit = ""
    return out


@needs_git
@pytest.mark.parametrize(("start", "path"), CASES)
def test_log_follows_as_git_log_follow(
    renames: tuple[Path, dict[str, str]], start: str, path: str
) -> None:
    root, c = renames
    oracle = _oracle_log(root, c[start], path)
    with gitstore.open_repo(root) as repo:
        mine = gitstore.log(repo, c[start], path, n=100)
        assert [(e.commit, e.path, e.renamed_from) for e in mine] == oracle
        assert [e.commit for e in gitstore.log(repo, c[start], path, n=2)] == [
            commit for commit, _path, _older in oracle[:2]
        ]


@needs_git
@pytest.mark.parametrize(("start", "path"), CASES)
def test_blame_follows_as_git_blame(
    renames: tuple[Path, dict[str, str]], start: str, path: str
) -> None:
    root, c = renames
    oracle = _porcelain(run_git(root, "blame", "--porcelain", c[start], "--", path))
    with gitstore.open_repo(root) as repo:
        mine = gitstore.blame(repo, c[start], path)
    assert [(b.commit, b.path, b.text) for b in mine] == oracle


def test_a_rename_reaches_the_first_commit(renames: tuple[Path, dict[str, str]]) -> None:
    """Across a content rename, a merge and an exact move, lines keep their first commit."""
    root, c = renames
    with gitstore.open_repo(root) as repo:
        lines = {
            b.text: (b.commit, b.path) for b in gitstore.blame(repo, c["r10"], "manual/notes.md")
        }
        log = gitstore.log(repo, c["r10"], "manual/notes.md", n=100)
    assert lines["note 02: something worth keeping"] == (c["r1"], "notes.txt")
    assert lines["note 01: edited before the move"] == (c["r2"], "notes.txt")
    assert lines["note 06: edited as it moved"] == (c["r3"], "doc/notes.md")
    assert lines["note 11: edited on the side"] == (c["s2"], "doc/notes.md")
    assert lines["note 30: edited at last"] == (c["r10"], "manual/notes.md")
    moves = {e.commit: (e.renamed_from, e.parent) for e in log if e.renamed_from}
    assert moves == {c["r7"]: ("doc/notes.md", c["r6"]), c["r3"]: ("notes.txt", c["r2"])}
    assert log[-1].commit == c["r1"] and log[-1].path == "notes.txt"


def test_copies_are_followed_by_log_alone(renames: tuple[Path, dict[str, str]]) -> None:
    """``git log --follow`` finds copies (``--find-copies-harder``); ``git blame`` only renames;
    a file rewritten past half of its bytes is a new file for both."""
    root, c = renames
    with gitstore.open_repo(root) as repo:
        r6, m1 = repo.commit(c["r6"]), repo.commit(c["m1"])
        notes_md = repo.tree(repo.tree(m1.tree)["doc"][1])["notes.md"][1]
        assert renamed_from(repo, m1.tree, r6.tree, "copy.txt") is None
        assert renamed_from(repo, m1.tree, r6.tree, "copy.txt", copies=True) == (
            "doc/notes.md",
            notes_md,
        )
        assert renamed_from(repo, m1.tree, r6.tree, "weak.txt", copies=True) is None
        r7, r8 = repo.commit(c["r7"]), repo.commit(c["r8"])
        twin = repo.tree(repo.tree(r7.tree)["twin"][1])["a.txt"][1]
        # twin/b.txt holds the same blob and stays: the deleted twin/a.txt is preferred.
        assert renamed_from(repo, r7.tree, r8.tree, "c.txt", copies=True) == ("twin/a.txt", twin)
        log = gitstore.log(repo, c["r10"], "copy.txt", n=100)
        blame = gitstore.blame(repo, c["r10"], "copy.txt")
    assert (log[0].commit, log[0].renamed_from) == (c["r6"], "doc/notes.md")
    assert log[-1].commit == c["r1"]
    assert {line.commit for line in blame} == {c["r6"]}


#: (start, file, first, last): ranges across renames, merges, and past the end.
RANGES = [
    ("r10", "manual/notes.md", 1, 5),
    ("r10", "manual/notes.md", 10, 31),
    ("r10", "src/util.py", 6, 9),
    ("r10", "plain.txt", 1, 1),
    ("r10", "plain.txt", 12, 40),
    ("m1", "doc/notes.md", 20, 22),
]


@needs_git
@pytest.mark.parametrize(("start", "path", "first", "last"), RANGES)
def test_a_range_is_blamed_alone_as_git_blame_l(
    renames: tuple[Path, dict[str, str]], start: str, path: str, first: int, last: int
) -> None:
    root, c = renames
    gitstore.clear_caches()
    with gitstore.open_repo(root) as repo:
        whole = gitstore.blame(repo, c[start], path)
        mine = gitstore.blame(repo, c[start], path, (first, last))
    end = min(last, len(whole))
    oracle = _porcelain(
        run_git(root, "blame", "--porcelain", f"-L{first},{end}", c[start], "--", path)
    )
    assert [(b.commit, b.path, b.text) for b in mine] == oracle
    assert mine == whole[first - 1 : end]
