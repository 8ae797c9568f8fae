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
* measures freshness: the change sources and the keeper started as the box starts them, a
  file rewritten with a new word, the time until a search finds it and no longer finds the
  word it replaced, ``--changes`` times (p50, p99 and max).
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

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

    call_command("migrate", "tm_search", verbosity=0)


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


def freshness(tree: Path, roots: list[str], changes: int) -> None:
    """Seconds from a file rewritten to its new word found and its old word gone.

    The keeper runs as the box runs it (``sources.serve``: the change sources and the keeper
    over this process's namespace, here serving ``tree``), after its first round.
    """
    from django.conf import settings

    from tmsite.mounts import registry
    from tmsite.search import answer, index
    from tmsite.subscriptions import sources

    settings.TM_CHECKOUT, settings.TM_FS_ROOTS, settings.TM_MOUNTS = tree, roots, ["fs"]
    registry.reset()
    keeper = sources.serve()
    assert keeper is not None, "another process keeps this machine's index"
    while keeper.walks < 1:
        time.sleep(0.05)
    rng = random.Random(2)
    lags = []
    target = next(iter(sorted((tree / roots[0]).rglob("*.md"))))
    original = target.read_text()

    def found(word: str) -> bool:
        return bool(index.search(answer.parse_query(word), f"tm://{HOST}/", (), 1))

    try:
        for n in range(changes):
            fresh, old = f"freshword{n}x", f"freshword{n - 1}x"
            target.write_text(original + f"\n{fresh}\n")
            start = time.perf_counter()
            while not found(fresh) or (n and found(old)):
                time.sleep(0.01)
                if time.perf_counter() - start > 30:
                    break
            lags.append(time.perf_counter() - start)
            time.sleep(rng.random() * 0.3)
    finally:
        sources.stop()
        target.write_text(original)
    print(
        f"freshness ({changes} changed files: new word found, old word gone; the keeper told "
        f"by the fs watch, {keeper.walks} full walk): p50 {statistics.median(lags):.2f} s, "
        f"p99 {percentile(lags, 0.99):.2f} s, max {max(lags):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=int, default=0, help="also a generated corpus this big")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument(
        "--database-url",
        default=None,
        help="PostgreSQL instead of SQLite: a database of its own (its search tables are made "
        "and emptied)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary trees go")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tm-search-bench-", dir=args.dir))
    try:
        (base / "var").mkdir()
        configure(base / "var", args.database_url)
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
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
