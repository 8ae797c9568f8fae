"""Benchmark: the search index — build time and size, query latency, freshness, against git grep.

Run standalone::

    .venv/bin/python bench/search.py                    # this checkout's docs/, data/, notes/
    .venv/bin/python bench/search.py --corpus 50000     # and a generated corpus of 50,000 files

It configures Django over a temporary ``TM_VAR_DIR`` (SQLite, the embedded default; or the
PostgreSQL database ``--database-url`` names) and, for each tree:

* builds the index from the fs mount's documents and prints the time, the documents and
  passages, the database's growth in bytes and the process's peak RSS growth;
* asks ``--queries`` searches (default 200: the relevance set's questions and single words
  drawn from the tree, English and Japanese) through the same path the three doors take
  (:func:`tmsite.search.answer.answer`: the engine, then the snippets) and prints p50/p99 of
  their wall time, in process;
* runs ``git grep -n -i -F`` for the same single-word queries on the same tree (a git
  repository made for it when the tree is not one), the peer a client would otherwise use,
  and prints its p50/p99 (a subprocess each: what a client pays for it);
* times a full walk of the tree with nothing changed (what the keeper's safety net costs);
* measures freshness: the change sources and the keeper started as the box starts them (the
  fs, git and entity mounts served), ``--changes`` times each (p50, p99 and max): a file
  rewritten with a new word, until a search finds it and no longer finds the word it replaced;
  a file removed, until its word is no longer found; a commit made (with dulwich) in a
  repository the git mount serves, until its message is found; an entity record corrected as
  the admin corrects it, until the corrected text is found and the text it replaced is not.

With ``--database-url`` (a role that may create databases) the bench makes a database of its
own beside the one named, migrates it and drops it at the end.
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
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.services import own_database  # noqa: E402

HOST = "bench"
SYLLABLES = ("ka", "to", "ri", "mo", "ne", "sa", "lu", "vi", "do", "pe", "zu", "ga", "chi", "ro")
JAPANESE = ("検索", "接続", "購読", "拒否", "提案", "上限", "一覧", "文法")


def configure(var: Path, database_url: str | None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    os.environ["TM_VAR_DIR"] = str(var)
    os.environ["TM_HOST"] = HOST
    os.environ.setdefault("TM_SECRET_KEY", "bench-only-" + "k" * 40)
    if database_url:
        os.environ["TM_DATABASE_URL"] = database_url
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from tmsite.entities.loaders import fill, read_checkout

    fill(read_checkout(HERE.parent))


@contextmanager
def database(url: str | None) -> Iterator[str | None]:
    """A PostgreSQL database of the bench's own beside the one ``url`` names, dropped after."""
    if not url:
        yield None
        return
    with own_database(url, "tm_search_bench") as own:
        try:
            yield own
        finally:
            from django.db import connections

            connections.close_all()


def word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def make_corpus(base: Path, count: int, seed: int = 6502) -> Path:
    """``count`` markdown files of made-up words (a few Japanese), 100 to a directory."""
    rng = random.Random(seed)
    vocabulary = [word(rng) for _ in range(20_000)]
    for i in range(count):
        directory = base / "docs" / f"d{i // 100:04d}"
        directory.mkdir(parents=True, exist_ok=True)
        lines = [f"# {' '.join(rng.choices(vocabulary, k=3))}", ""]
        for _ in range(rng.randint(5, 30)):
            words = rng.choices(vocabulary, k=rng.randint(4, 12))
            if rng.random() < 0.05:
                words.append(rng.choice(JAPANESE))
            lines.append(" ".join(words))
        (directory / f"f{i:06d}.md").write_text("\n".join(lines) + "\n")
    return base


def db_bytes() -> int:
    from django.db import connection

    if connection.vendor == "sqlite":
        name = Path(str(connection.settings_dict["NAME"]))
        return sum(p.stat().st_size for p in name.parent.glob(name.name + "*"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('search_passage')")
        return int(cursor.fetchone()[0])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def queries(tree: Path, rng: random.Random, count: int) -> tuple[list[str], list[str]]:
    """(every query, the single-word ones git grep is asked too)."""
    from tests.search.relevance import QUESTIONS

    texts = []
    for path in sorted(tree.rglob("*.md"))[:400]:
        texts += path.read_text(errors="replace").split()
    words = sorted({w.strip(".,:;`()[]*#|\"'").lower() for w in texts if len(w) > 4})
    words = [w for w in words if w.isalpha()] or ["search"]
    single = [rng.choice(words) for _ in range(count - len(QUESTIONS) - len(JAPANESE))]
    return [q for q, _ in QUESTIONS] + list(JAPANESE) + single, single + list(JAPANESE)


def git_tree(tree: Path) -> Path:
    if (tree / ".git").exists():
        return tree
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", "init", "-q", str(tree)], check=True, env=env)
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True, env=env)
    return tree


def measure(label: str, tree: Path, roots: list[str], count: int, changes: int) -> None:
    from tmsite.mounts.fs.mount import FsMount
    from tmsite.search import answer, index

    mount = FsMount(HOST, tree, roots)
    index.clear()
    before_bytes, before_rss = db_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    done, seconds = index.timed(index.sync, {"fs": mount})
    grown = db_bytes() - before_bytes
    rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_rss) / 1024
    passages = sum(index.status()["passages"].values())
    print(f"\n== {label}: {tree}")
    print(
        f"build: {done.written} documents, {passages} passages in {seconds:.2f} s; "
        f"index {grown / 1e6:.1f} MB; peak RSS +{rss:.0f} MB"
    )
    rng = random.Random(1)
    asked, literal = queries(tree, rng, count)
    timings = []
    for text in asked:
        start = time.perf_counter()
        answer.answer(answer.ask(HOST, text))
        timings.append((time.perf_counter() - start) * 1000)
    print(
        f"search ({len(asked)} queries, in process): p50 {percentile(timings, 0.5):.2f} ms, "
        f"p99 {percentile(timings, 0.99):.2f} ms"
    )
    if shutil.which("git"):
        repo = git_tree(tree)
        grep = []
        for text in literal:
            start = time.perf_counter()
            subprocess.run(
                ["git", "-C", str(repo), "grep", "-n", "-i", "-F", text, "--", *roots],
                capture_output=True,
                check=False,
            )
            grep.append((time.perf_counter() - start) * 1000)
        ours = [t for t, q in zip(timings, asked, strict=True) if q in set(literal)]
        print(
            f"git grep -n -i ({len(literal)} literal queries, a subprocess each): "
            f"p50 {percentile(grep, 0.5):.2f} ms, p99 {percentile(grep, 0.99):.2f} ms; "
            f"search on the same: p50 {percentile(ours, 0.5):.2f} ms, "
            f"p99 {percentile(ours, 0.99):.2f} ms"
        )
    _, walk = index.timed(index.sync, {"fs": mount})
    print(f"a full walk with nothing changed (the safety net's cost): {walk:.2f} s")
    freshness(tree, roots, changes)


def served_repository(path: Path) -> Path:
    """A repository the git mount serves, ``main`` at one commit (dulwich; no subprocess)."""
    from dulwich.repo import Repo

    Repo.init(str(path), mkdir=True).close()
    with Repo(str(path)) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    commit(path, "Start the served repository")
    return path


def commit(path: Path, message: str) -> str:
    """A new commit on ``main`` of the repository at ``path`` (its tree empty): a push, seen
    from the box."""
    from dulwich.objects import Commit, Tree
    from dulwich.repo import Repo

    with Repo(str(path)) as repo:
        tree = Tree()
        repo.object_store.add_object(tree)
        made = Commit()
        made.tree = tree.id
        made.parents = [repo.refs[b"refs/heads/main"]] if b"refs/heads/main" in repo.refs else []
        made.author = made.committer = b"Bench <bench@example.org>"
        made.author_time = made.commit_time = int(time.time())
        made.author_timezone = made.commit_timezone = 0
        made.message = message.encode() + b"\n"
        repo.object_store.add_object(made)
        repo.refs[b"refs/heads/main"] = made.id
    return made.id.decode()


def correct(word: str) -> None:
    """The pad-poll pattern's description corrected to mention ``word``, as the admin does."""
    from tmsite.entities import corrections
    from tmsite.entities import models as m

    pattern = m.Pattern.objects.get(key="pad-poll")
    pattern.description = f"Polls the pad with the {word} routine."
    corrections.correct("pattern", "pad-poll", pattern, ["description"], None)


def until(done: Callable[[], bool], bound: float = 30.0) -> float:
    """Seconds until ``done()`` (``bound`` at most)."""
    start = time.perf_counter()
    while not done() and time.perf_counter() - start < bound:
        time.sleep(0.01)
    return time.perf_counter() - start


def freshness(tree: Path, roots: list[str], changes: int) -> None:
    """Seconds from a change to the search answering as the change says, by kind of change.

    The keeper runs as the box runs it (``sources.serve``: the change sources and the keeper
    over this process's namespace, here the fs mount serving ``tree``, the git mount serving a
    repository made beside it and the entity mount), after its first round.
    """
    from django.conf import settings

    from tmsite.mounts import registry
    from tmsite.search import answer, index
    from tmsite.subscriptions import sources

    repo = served_repository(tree.parent / f"{tree.name}-served")
    settings.TM_CHECKOUT, settings.TM_FS_ROOTS = tree, roots
    settings.TM_MOUNTS, settings.TM_GIT_REPOS = ["entity", "fs", "git"], {"served": repo}
    registry.reset()
    keeper = sources.serve()
    assert keeper is not None, "another process keeps this machine's index"
    while keeper.walks < 1:
        time.sleep(0.05)
    rng = random.Random(2)
    lags: dict[str, list[float]] = {
        "a changed file (new word found, old word gone)": [],
        "a new file (its word found)": [],
        "a removed file (its word gone)": [],
        "a new commit (its message found)": [],
        "a corrected record (new text found, old text gone)": [],
    }
    changed, new, removed, committed, corrected = lags.values()
    target = next(iter(sorted((tree / roots[0]).rglob("*.md"))))
    original = target.read_text()

    def found(word: str) -> bool:
        return bool(index.search(answer.parse_query(word), f"tm://{HOST}/", (), 1))

    def now_and_not(fresh: str, old: str | None = None) -> Callable[[], bool]:
        return lambda: found(fresh) and (old is None or not found(old))

    def replacing(word: str, n: int) -> Callable[[], bool]:
        """``word`` n found, ``word`` n - 1 (the text it replaced) not."""
        return now_and_not(f"{word}{n}x", f"{word}{n - 1}x" if n else None)

    try:
        for n in range(changes):
            target.write_text(original + f"\nfreshword{n}x\n")
            changed.append(until(replacing("freshword", n)))
            doomed = tree / roots[0] / f"doomed{n}.md"
            doomed.write_text(f"# Doomed\n\nThe doomword{n}x file.\n")
            new.append(until(now_and_not(f"doomword{n}x")))
            doomed.unlink()
            removed.append(until(lambda n=n: not found(f"doomword{n}x")))
            commit(repo, f"Tune the commitword{n}x routine")
            committed.append(until(now_and_not(f"commitword{n}x")))
            correct(f"corrword{n}x")
            corrected.append(until(replacing("corrword", n)))
            time.sleep(rng.random() * 0.3)
    finally:
        sources.stop()
        target.write_text(original)
        registry.reset()
    print(
        f"freshness ({changes} of each, the keeper as the box runs it, {keeper.walks} full walk):"
    )
    for what, seconds in lags.items():
        print(
            f"  {what}: p50 {statistics.median(seconds):.2f} s, "
            f"p99 {percentile(seconds, 0.99):.2f} s, max {max(seconds):.2f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=int, default=0, help="also a generated corpus this big")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument(
        "--database-url",
        default=None,
        help="PostgreSQL instead of SQLite: a database made beside the one this names (a role "
        "that may create databases), dropped after",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary trees go")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tm-search-bench-", dir=args.dir))
    try:
        (base / "var").mkdir()
        with database(args.database_url) as url:
            configure(base / "var", url)
            run(base, args)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(base: Path, args: argparse.Namespace) -> None:
    roots = ["docs", "data", "notes"]
    checkout = base / "checkout"  # a copy: the freshness rounds rewrite a file
    for root in roots:
        shutil.copytree(HERE.parent / root, checkout / root)
    measure("this checkout's roots", checkout, roots, args.queries, args.changes)
    if args.corpus:
        start = time.perf_counter()
        tree = make_corpus(base / "corpus", args.corpus)
        print(f"\n(generated {args.corpus} files in {time.perf_counter() - start:.1f} s)")
        measure(f"{args.corpus} generated files", tree, ["docs"], args.queries, args.changes)


if __name__ == "__main__":
    main()
