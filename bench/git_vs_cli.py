"""Benchmark: tmsite.gitstore against the git CLI on a generated repository.

Run standalone::

    .venv/bin/python bench/git_vs_cli.py [--commits 5000] [--rebuild] [--repeat 5]

It builds (or reuses) ``bench/out/bench-repo``: a real repository written object by object with
dulwich into one pack — 2,000 files in 40 directories, at least 5,000 commits with a merge every
250, a tag every 500 (every other one annotated), a 1,000-line file seven directories deep that
changes in 200 commits, and a rarely changed file beside it; like ``git gc``, it writes a
commit-graph file (``--no-commit-graph`` removes it, to time walks that inflate every commit).
git 2.39 refuses the file dulwich writes ("improper chunk offset(s)") and walks without it;
``--graph-writer git`` has the git CLI write the file instead, so that both sides read one.

``--repo PATH`` is the large-repository mode: a real repository given by its path (a clone of
git/git, say), read as it is, never rebuilt or written. It times blame (three files), a file's
log following renames (``git log --follow``), a whole-history log, a read at ``?at=2015-01-01``
(``git rev-list -1 --before`` and ``git cat-file``), the root tree to depth 3 (``git ls-tree -r
-t -l``, which lists deeper) and the largest directory's listing, beside the git CLI. Give the
repository a commit-graph with changed-path Bloom filters first (``manage.py tm_git maintain``
or ``git commit-graph write --reachable --changed-paths``): both sides read it. ``maintain``
also writes each pack's size table, which listings read and git has no counterpart of; the
header line says how many packs have one.
``bench/git_agreement.py`` checks the answers line for line on files of the same repository.

Each operation is timed *cold* (in-process caches cleared and a new repository handle opened,
so pack indexes are read again; the OS page cache is warm, as it is for git) and *warm* (the
same call again on the same handle), and the same question is put to the git CLI as a process
in the same run, each git run right after a cold one so that a loaded machine slows both
alike. The table shows medians in milliseconds and the ratios to the CLI, in wall time and in
CPU time (ours: this process's; git's: the child process's, without the cost of starting it
from Python).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dulwich.objects import Blob, Commit, ShaFile, Tag, Tree  # noqa: E402
from dulwich.repo import Repo  # noqa: E402

from tmsite import gitstore  # noqa: E402

OUT = HERE / "out"
REPO = OUT / "bench-repo"
DEEP_DIR = "deep/l1/l2/l3/l4/l5/l6"
BIG = f"{DEEP_DIR}/big.txt"
RARE = f"{DEEP_DIR}/rare.txt"
START = int(datetime(2020, 1, 1, tzinfo=UTC).timestamp())
HOUR = 3600
FILE, DIR = 0o100644, 0o040000


class State:
    """The working tree as nested dicts, re-hashed along changed paths only."""

    def __init__(self, objects: list[ShaFile]) -> None:
        self.root: dict[str, object] = {}
        self.objects = objects
        self.tree_ids: dict[int, bytes] = {}

    def set(self, path: str, data: bytes) -> None:
        blob = Blob.from_string(data)
        self.objects.append(blob)
        *dirs, name = path.split("/")
        node = self.root
        for part in dirs:
            node = node.setdefault(part, {})  # type: ignore[assignment]
            self.tree_ids.pop(id(node), None)
        node[name] = blob.id
        self.tree_ids.pop(id(self.root), None)

    def write(self, node: dict[str, object] | None = None) -> bytes:
        node = self.root if node is None else node
        known = self.tree_ids.get(id(node))
        if known is not None:
            return known
        tree = Tree()
        for name, value in node.items():
            if isinstance(value, dict):
                tree.add(name.encode(), DIR, self.write(value))
            else:
                assert isinstance(value, bytes)
                tree.add(name.encode(), FILE, value)
        self.objects.append(tree)
        self.tree_ids[id(node)] = tree.id
        return tree.id


def write_commit_graph(repo: Repo) -> None:
    """Write the commit-graph file (dulwich computes generations recursively)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 50_000))
    try:
        repo.object_store.write_commit_graph()
    finally:
        sys.setrecursionlimit(limit)


def build(commits: int) -> None:
    """Write the benchmark repository (one pack, refs, HEAD)."""
    rng = random.Random(6502)
    if REPO.exists():
        shutil.rmtree(REPO)
    REPO.mkdir(parents=True)
    repo = Repo.init(str(REPO))
    objects: list[ShaFile] = []
    state = State(objects)
    files = [f"src/mod{d:02d}/file{f:02d}.txt" for d in range(40) for f in range(50)]
    versions = dict.fromkeys(files, 0)
    for path in files:
        state.set(path, f"{path}\nversion 0\n".encode())
    big = [f"line {i:04d} of the big file, revision 0" for i in range(1000)]
    state.set(BIG, ("\n".join(big) + "\n").encode())
    state.set(RARE, b"rare 0\n")
    big_every = max(1, commits // 200)

    def make_commit(parents: list[bytes], i: int, message: str) -> bytes:
        c = Commit()
        c.tree = state.write()
        c.parents = parents
        c.author = f"Dev {i % 7} <dev{i % 7}@example.org>".encode()
        c.committer = b"Bench <bench@example.org>"
        c.author_time = c.commit_time = START + i * HOUR
        c.author_timezone = c.commit_timezone = 0
        c.message = message.encode()
        objects.append(c)
        return c.id

    head = make_commit([], 0, "initial import\n")
    tags: list[tuple[str, bytes, bool]] = []
    for i in range(1, commits):
        path = rng.choice(files)
        versions[path] += 1
        state.set(path, f"{path}\nversion {versions[path]}\n".encode())
        message = f"change {path} ({i})\n"
        if i % big_every == 0:
            for _ in range(3):
                k = rng.randrange(len(big))
                big[k] = f"line {k:04d} of the big file, revision {i}"
            state.set(BIG, ("\n".join(big) + "\n").encode())
            message = f"revise big.txt ({i})\n"
        if i % (commits // 5) == 0:
            state.set(RARE, f"rare {i}\n".encode())
        if i % 250 == 0:
            # A side commit on the previous state, then a merge bringing it in.
            side = make_commit([head], i, f"side work ({i})\n")
            head = make_commit([head, side], i, f"merge side ({i})\n")
        else:
            head = make_commit([head], i, message)
        if i % 500 == 0:
            tags.append((f"v{i // 500}", head, (i // 500) % 2 == 0))
    repo.object_store.add_objects([(o, None) for o in objects])
    repo.refs[b"refs/heads/main"] = head
    repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    for name, target, annotated in tags:
        if annotated:
            tag = Tag()
            tag.tagger = b"Bench <bench@example.org>"
            tag.message = f"release {name}\n".encode()
            tag.name = name.encode()
            tag.tag_time = START
            tag.tag_timezone = 0
            tag.object = (Commit, target)
            repo.object_store.add_object(tag)
            repo.refs[f"refs/tags/{name}".encode()] = tag.id
        else:
            repo.refs[f"refs/tags/{name}".encode()] = target
    # git gc writes a commit-graph by default; so does this build, with dulwich.
    write_commit_graph(repo)
    (OUT / f"built-{commits}").write_text("ok\n")
    repo.close()


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one call: this process's CPU and its children's (git's)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    c0 = time.process_time()
    fn()
    cpu = time.process_time() - c0
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall * 1000, cpu * 1000


def interleaved(
    ours: Callable[[], object], theirs: Callable[[], object], repeat: int
) -> tuple[float, float, float, float]:
    """Medians of wall and CPU ms for ours and theirs, run alternately so load hits both."""
    runs: list[tuple[float, float, float, float]] = []
    for _ in range(repeat):
        mine = timed(ours)
        other = timed(theirs)
        runs.append((*mine, *other))
    medians = [statistics.median(run[k] for run in runs) for k in range(4)]
    return medians[0], medians[1], medians[2], medians[3]


LARGE_BLAME = ("refs.c", "Makefile", "Documentation/git-log.adoc")
LARGE_FOLLOW = "Documentation/git-log.adoc"
LARGE_WHOLE = "COPYING"
LARGE_DATE = "2015-01-01"
Case = tuple[str, Callable[[gitstore.GitRepo], object], Callable[[], object]]


def large_cases(repo: Path, git: str) -> list[Case]:
    """The large-repository operations, each beside its git CLI question."""

    def cli(*argv: str) -> Callable[[], object]:
        return lambda: subprocess.run(
            [git, "-C", str(repo), *argv], capture_output=True, check=True
        )

    def head(r: gitstore.GitRepo) -> str:
        return gitstore.resolve(r, None).commit

    listing = subprocess.run(
        [git, "-C", str(repo), "ls-tree", "-d", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    counts = []
    for row in filter(None, listing):
        name = row.partition("\t")[2]
        inside = subprocess.run(
            [git, "-C", str(repo), "ls-tree", "HEAD", f"{name}/"], capture_output=True, check=True
        ).stdout.count(b"\n")
        counts.append((inside, name))
    entries, biggest = max(counts)
    until = f"{LARGE_DATE}T23:59:59Z"

    def at_date(r: gitstore.GitRepo) -> bytes:
        commit = gitstore.resolve(r, LARGE_DATE).commit
        return gitstore.read_blob(r, gitstore.lookup(r, commit, "Makefile").sha)

    def cli_at_date() -> None:
        sha = subprocess.run(
            [git, "-C", str(repo), "rev-list", "-1", f"--before={until}", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        cli("cat-file", "blob", f"{sha}:Makefile")()

    fmt = "--format=%H%x00%an%x00%aI%x00%s"
    cases: list[Case] = [
        (
            f"blame {path}",
            lambda r, path=path: gitstore.blame(r, head(r), path),
            cli("blame", "--porcelain", "HEAD", "--", path),
        )
        for path in LARGE_BLAME
    ]
    cases += [
        (
            f"log --follow {LARGE_FOLLOW.rsplit('/', 1)[-1]} n=20",
            lambda r: gitstore.log(r, head(r), LARGE_FOLLOW, n=20),
            cli("log", "--follow", "-n", "20", fmt, "HEAD", "--", LARGE_FOLLOW),
        ),
        (
            f"log --follow {LARGE_WHOLE} (whole history)",
            lambda r: gitstore.log(r, head(r), LARGE_WHOLE, n=20),
            cli("log", "--follow", "-n", "20", fmt, "HEAD", "--", LARGE_WHOLE),
        ),
        (
            "log of t/ n=100 (a directory)",
            lambda r: gitstore.log(r, head(r), "t", n=100),
            cli("log", "-n", "100", fmt, "HEAD", "--", "t"),
        ),
        (f"read Makefile ?at={LARGE_DATE}", at_date, cli_at_date),
        (
            "tree of the root, depth 3",
            lambda r: gitstore.list_tree(r, head(r), "", depth=3),
            cli("ls-tree", "-r", "-t", "-l", "HEAD"),
        ),
        (
            f"list {biggest}/ ({entries} entries)",
            lambda r: gitstore.list_tree(r, head(r), biggest),
            cli("ls-tree", "-l", "HEAD", f"{biggest}/"),
        ),
    ]
    return cases


def run_cases(
    repo: Path, cases: list[Case], repeat: int
) -> list[tuple[str, float, float, float, float, float]]:
    """Cold (caches cleared, a new handle), warm and CLI times of each case."""
    rows = []
    for name, ours, theirs in cases:

        def cold(ours: Callable[[gitstore.GitRepo], object] = ours) -> None:
            gitstore.clear_caches()
            with gitstore.open_repo(repo) as r:
                ours(r)

        cold_ms, cold_cpu, cli_ms, cli_cpu = interleaved(cold, theirs, repeat)
        with gitstore.open_repo(repo) as handle:
            ours(handle)
            warm_ms = median_ms(lambda ours=ours, handle=handle: ours(handle), repeat * 4)
        rows.append((name, cold_ms, warm_ms, cli_ms, cold_cpu, cli_cpu))
        print(
            f"  {name}: cold {cold_ms:.0f} ms, warm {warm_ms:.2f} ms, git {cli_ms:.0f} ms",
            flush=True,
        )
    return rows


def print_rows(
    rows: list[tuple[str, float, float, float, float, float]], repeat: int, git: str
) -> None:
    print()
    header = (
        f"{'operation':40} {'cold ms':>9} {'warm ms':>9} {'git ms':>8} "
        f"{'cold/git':>9} {'warm/git':>9} {'cold cpu':>9} {'git cpu':>8} {'cpu/git':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, cold_ms, warm_ms, cli_ms, cold_cpu, cli_cpu in rows:
        print(
            f"{name:40} {cold_ms:9.2f} {warm_ms:9.3f} {cli_ms:8.2f} "
            f"{cold_ms / cli_ms:8.2f}× {warm_ms / cli_ms:8.3f}× "
            f"{cold_cpu:9.1f} {cli_cpu:8.1f} {cold_cpu / max(cli_cpu, 0.1):7.2f}×"
        )
    print()
    print(
        f"python {sys.version.split()[0]}, "
        f"dulwich {'.'.join(map(str, __import__('dulwich').__version__))}, "
        f"{subprocess.run([git, '--version'], capture_output=True, text=True).stdout.strip()}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
        f"medians of {repeat} (warm: {repeat * 4}) runs; cold and git alternate, "
        f"cpu = this process's CPU time for ours, the git process's for git"
    )


def large(repo: Path, git: str, repeat: int) -> None:
    """The large-repository mode (see the module docstring)."""
    graph = repo / "objects" / "info" / "commit-graph"
    if not graph.exists():
        graph = repo / ".git" / "objects" / "info" / "commit-graph"
    verified = subprocess.run(
        [git, "-C", str(repo), "commit-graph", "verify"], capture_output=True, text=True
    )
    with gitstore.open_repo(repo) as probe:
        found = probe.graph()
        filters = found is not None and found.has_filters
        packs = probe.size_tables()
        tables = sum(table is not None for table in packs)
    print(
        f"commit-graph: {'yes' if graph.exists() else 'no'}; git verifies it: "
        f"{'yes' if verified.returncode == 0 else 'no'}; Bloom filters read: "
        f"{'yes' if filters else 'no'}; size tables: {tables} of {len(packs)} packs"
    )
    count = subprocess.run(
        [git, "-C", str(repo), "rev-list", "--count", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"repository: {repo}, {count} commits")
    rows = run_cases(repo, large_cases(repo, git), repeat)
    print_rows(rows, repeat, git)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repo", type=Path, default=None, help="a real repository: the large-repository mode"
    )
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-commit-graph", action="store_true")
    parser.add_argument(
        "--graph-writer",
        choices=["dulwich", "git"],
        default="dulwich",
        help="who writes the commit-graph (git cannot read dulwich's)",
    )
    args = parser.parse_args()
    git = shutil.which("git")
    if git is None:
        sys.exit("the git CLI is needed for the comparison")
    if args.repo is not None:
        large(args.repo, git, args.repeat)
        return
    if args.rebuild or not (OUT / f"built-{args.commits}").exists():
        t0 = time.perf_counter()
        build(args.commits)
        print(f"built {REPO.relative_to(HERE.parent)} in {time.perf_counter() - t0:.1f} s")

    graph = REPO / ".git" / "objects" / "info" / "commit-graph"

    def git_reads_graph() -> bool:
        done = subprocess.run(
            [git, "-C", str(REPO), "commit-graph", "verify"], capture_output=True, text=True
        )
        return done.returncode == 0 and "improper" not in done.stderr

    if args.no_commit_graph:
        graph.unlink(missing_ok=True)
    elif args.graph_writer == "git":
        if not graph.exists() or not git_reads_graph():
            graph.unlink(missing_ok=True)
            subprocess.run(
                [git, "-C", str(REPO), "commit-graph", "write", "--reachable"],
                capture_output=True,
                check=True,
            )
    elif not graph.exists() or git_reads_graph():
        graph.unlink(missing_ok=True)
        with Repo(str(REPO)) as writer:
            write_commit_graph(writer)
    if graph.exists():
        readable = "yes" if git_reads_graph() else "no, git walks without it"
        print(f"commit-graph: written by {args.graph_writer}; git reads it: {readable}")
    else:
        print("commit-graph: no")

    def cli(*argv: str) -> Callable[[], object]:
        return lambda: subprocess.run(
            [git, "-C", str(REPO), *argv], capture_output=True, check=True
        )

    with gitstore.open_repo(REPO) as probe:
        head = gitstore.resolve(probe, None).commit
        count = int(
            subprocess.run(
                [git, "-C", str(REPO), "rev-list", "--count", "HEAD"],
                capture_output=True,
                check=True,
            ).stdout
        )
        files = int(
            subprocess.run(
                f"{git} -C {REPO} ls-tree -r HEAD | wc -l",
                shell=True,  # bench only, not the library
                capture_output=True,
                check=True,
            ).stdout
        )
        old = subprocess.run(
            [git, "-C", str(REPO), "rev-list", "--skip=4000", "-1", "HEAD"],
            capture_output=True,
            check=True,
            text=True,
        ).stdout.strip()
    mid_time = START + (args.commits // 2) * HOUR + HOUR // 2
    mid_iso = datetime.fromtimestamp(mid_time, tz=UTC).isoformat()
    print(f"repository: {count} commits, {files} files; HEAD {head[:12]}")

    cases: list[tuple[str, Callable[[gitstore.GitRepo], object], Callable[[], object]]] = [
        (
            "log n=20, deep file (200 revs)",
            lambda r: gitstore.log(r, gitstore.resolve(r, None).commit, BIG, n=20),
            cli("log", "-n", "20", "--format=%H%x00%an%x00%aI%x00%s", "HEAD", "--", BIG),
        ),
        (
            "log n=20, deep rare file (5 revs)",
            lambda r: gitstore.log(r, gitstore.resolve(r, None).commit, RARE, n=20),
            cli("log", "-n", "20", "--format=%H%x00%an%x00%aI%x00%s", "HEAD", "--", RARE),
        ),
        (
            "blame 1,000-line file",
            lambda r: gitstore.blame(r, gitstore.resolve(r, None).commit, BIG),
            cli("blame", "--porcelain", "HEAD", "--", BIG),
        ),
        (
            "tree at tag v5, one level",
            lambda r: gitstore.list_tree(r, gitstore.resolve(r, "v5").commit, "src/mod07"),
            cli("ls-tree", "-l", "v5", "src/mod07/"),
        ),
        (
            "tree at tag v5, whole (depth 8)",
            lambda r: gitstore.list_tree(r, gitstore.resolve(r, "v5").commit, "", depth=8),
            cli("ls-tree", "-r", "-t", "-l", "v5"),
        ),
        (
            "blob at an old commit",
            lambda r: gitstore.read_blob(
                r, gitstore.lookup(r, gitstore.resolve(r, old[:12]).commit, BIG).sha
            ),
            cli("show", f"{old[:12]}:{BIG}"),
        ),
        (
            "date → commit (mid-history)",
            lambda r: gitstore.resolve(r, mid_iso),
            cli("rev-list", "-1", "--first-parent", f"--before={mid_time} +0000", "HEAD"),
        ),
    ]

    print_rows(run_cases(REPO, cases, args.repeat), args.repeat, git)


if __name__ == "__main__":
    main()
