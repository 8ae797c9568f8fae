"""Entity read latency at the large record set (5,000 routines, pad-poll in 2,000 of them).

Run: ``.venv/bin/python bench/entity_reads.py [--rounds N]``. It builds a throwaway SQLite
database in a temporary directory, loads the generated records, and times reads through the
namespace (the path every surface takes): a pattern with 2,026 links (capped to 100), a game, a
routine, a listing page, ``?as=links`` pages and ``?as=set`` pages of 500 whole members.
Prints the median and 95th percentile per read, and the SQL queries each costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tm-bench-"))
    os.environ["TM_VAR_DIR"] = str(work)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    call_command("migrate", verbosity=0)
    from tests.entities.conftest import dump, make_large
    from tests.entitymount.conftest import HOST, make_space
    from tmsite.entities.loaders import fill, parse_records

    autopsy, lessons = make_large(games=10, per_game=500, hot="pad-poll", hot_count=2000)
    checkout = work / "checkout"
    (checkout / "data").mkdir(parents=True)
    (checkout / "data" / "autopsy.json").write_bytes(dump(autopsy))
    (checkout / "data" / "lessons.json").write_bytes(dump(lessons))
    records = parse_records(dump(autopsy), dump(lessons))
    started = time.perf_counter()
    fill(records)
    print(f"loaded 5,000 routines in {time.perf_counter() - started:.2f} s")
    ns = make_space(checkout)
    game = records.games[0]
    e = f"tm://{HOST}/entity"
    pad = f"{e}/pattern/pad-poll"
    reads = {
        "pattern (2,026 links, capped)": pad,
        "game": f"{e}/game/{game.key}",
        "routine": f"{e}/game/{game.key}/routine/{game.routines[0].key}",
        "routine listing page (500)": f"{e}/game/{game.key}/routine/",
        "?as=links page (500)": pad + "?as=links&rel=tm:instance",
        "?as=set page (500 routines)": pad + "?as=set&rel=tm:instance",
        "?as=set page (500, game)": f"{e}/game/{game.key}?as=set&rel=routine",
        "?as=set (10 games)": pad + "?as=set&rel=tm:found-in",
    }
    print(f"{'read':34} {'median ms':>10} {'p95 ms':>8} {'queries':>8} {'bytes':>8}")
    for label, uri in reads.items():
        content = ns.read(uri)
        with CaptureQueriesContext(connection) as ctx:
            ns.read(uri)
        times = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            content = ns.read(uri)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        from tmsite.core.parts import wire_size

        print(
            f"{label:34} {statistics.median(times):10.2f} {p95:8.2f} "
            f"{len(ctx.captured_queries):8d} {wire_size(content):8d}"
        )


if __name__ == "__main__":
    main()
