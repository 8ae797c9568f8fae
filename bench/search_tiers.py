"""Benchmark: PostgreSQL's ranking of a word by tiers against ranking every passage that holds it.

Run standalone::

    .venv/bin/python bench/search_tiers.py --database-url postgres://…/db [--corpus 50000]
        [--rounds 3]

It builds the index of ``bench/search.py``'s generated corpus (the same seed and files) in a
PostgreSQL database of its own beside the one named (dropped after), then asks that bench's
searches (the relevance set's questions, the Japanese words and single words drawn from the
corpus) through the path the three doors take, each twice in a row per round: ranked as the
engine ranks (a query of one word by tiers: only the passages that may be among its best) and
ranked over every match (the engine's dialect without its tiers, as before them), the order of
the two swapped each round. It prints each side's p50/p99 a round and checks that every search's
hits are the same on both sides — the first ten and the first 50, addresses and scores — naming
any that differ. The machine's load average is printed with each round: on a shared machine a
round's p99 follows it.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import search as bench  # noqa: E402  (bench/search.py: its corpus, queries and database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", required=True, help="a role that may create databases")
    parser.add_argument("--corpus", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary tree goes")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tm-search-tiers-", dir=args.dir))
    try:
        (base / "var").mkdir()
        with bench.database(args.database_url) as url:
            bench.configure(base / "var", url)
            compare(base, args)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def compare(base: Path, args: argparse.Namespace) -> None:
    from tmsite.mounts.fs.mount import FsMount
    from tmsite.search import answer, engines, index
    from tmsite.search.query import parse_query

    tree = bench.make_corpus(base / "corpus", args.corpus)
    done, seconds = index.timed(index.sync, {"fs": FsMount(bench.HOST, tree, ["docs"])})
    print(f"build: {done.written} documents in {seconds:.1f} s")
    asked, _ = bench.queries(tree, random.Random(1), args.queries)
    tiered = engines.PostgresFts.dialect
    sides = {"tiers": tiered, "every match": replace(tiered, tiered=None)}
    differ: set[str] = set()
    scope = f"tm://{bench.HOST}/"
    for number in range(args.rounds):
        order = list(sides) if number % 2 == 0 else list(sides)[::-1]
        timings: dict[str, list[float]] = {side: [] for side in sides}
        for text in asked:
            hits: dict[str, list[list[tuple[str, float]]]] = {}
            for side in order:
                engines.PostgresFts.dialect = sides[side]
                start = time.perf_counter()
                answer.answer(answer.ask(bench.HOST, text))
                timings[side].append((time.perf_counter() - start) * 1000)
                if number == 0:  # the hits are compared once, outside the timing
                    query = parse_query(text)
                    hits[side] = [
                        [(hit.address, hit.score) for hit in index.search(query, scope, (), want)]
                        for want in (10, 50)
                    ]
            if number == 0 and hits["tiers"] != hits["every match"]:
                differ.add(text)
        engines.PostgresFts.dialect = tiered
        figures = ", ".join(
            f"{side} p50 {bench.percentile(ms, 0.5):.2f} / p99 {bench.percentile(ms, 0.99):.2f} ms"
            for side, ms in timings.items()
        )
        load = os.getloadavg()[0]
        print(f"round {number + 1} ({', then '.join(order)}; load {load:.1f}): {figures}")
    print(
        f"hits (first 10 and first 50, with scores) of {len(set(asked))} searches: "
        + (f"{len(differ)} differ: {sorted(differ)}" if differ else "the same on both sides")
    )


if __name__ == "__main__":
    main()
