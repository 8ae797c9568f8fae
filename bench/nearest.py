"""Benchmark: what one ``not-found`` costs in a crowded directory (the ``nearest`` ranking).

Run standalone::

    .venv/bin/python bench/nearest.py [--repeat 20] [--dir DIR]

It configures Django itself over a temporary checkout (on tmpfs when the machine has one, else
the system temporary directory; ``--dir`` chooses) with two directories under ``docs/``, one of
5,000 names and one of 100,000, and reads, through ``Namespace.read`` (the path every surface
takes), a file that is not there in each: the refusal ranks the directory's names for
``nearest``. It prints the median and p99 CPU time (``time.process_time``) of one miss in
milliseconds, with the first ``nearest`` answer, and the wall time alongside. CPU time is what
a caller who only asks for missing names costs the machine; the directory's scan is kept per
mtime, so the warm-up miss pays it and the measured ones do not.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

HOST = "bench"
#: (label, directory, names in it)
CROWDS = (("5,000 names", "crowd5k", 5_000), ("100,000 names", "crowd100k", 100_000))
WORDS = ("alpha", "bravo", "delta", "echo", "kilo", "lima", "oscar", "sierra", "tango")


def name_of(i: int) -> str:
    """A plausible file name: a word, a number, an extension (many near-ties, like real dirs)."""
    return f"{WORDS[i % len(WORDS)]}-{i:06d}.{('md', 'txt', 'json')[i % 3]}"


def make_checkout(base: Path) -> Path:
    checkout = base / "checkout"
    flags = os.O_CREAT | os.O_WRONLY | os.O_EXCL
    for _, directory, count in CROWDS:
        crowd = checkout / "docs" / directory
        crowd.mkdir(parents=True)
        for i in range(count):
            os.close(os.open(crowd / name_of(i), flags, 0o644))
    return checkout


def configure(checkout: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    os.environ["TM_CHECKOUT"] = str(checkout)
    os.environ["TM_FS_ROOTS"] = "docs"
    os.environ["TM_HOST"] = HOST
    os.environ.setdefault("TM_SECRET_KEY", "bench-only-" + "k" * 40)
    import django

    django.setup()


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    shm = Path("/dev/shm")
    base_dir = args.dir or (shm if shm.is_dir() and os.access(shm, os.W_OK) else None)
    base = Path(tempfile.mkdtemp(prefix="tmsite-bench-", dir=base_dir))
    try:
        started = time.perf_counter()
        checkout = make_checkout(base)
        print(f"checkout in {base} built in {time.perf_counter() - started:.1f} s")
        configure(checkout)
        from tmsite.core.errors import NotFound
        from tmsite.mounts.fs.mount import FsMount
        from tmsite.mounts.namespace import Namespace

        ns = Namespace(HOST, {"fs": FsMount.from_settings(HOST)})
        rows = []
        for label, directory, count in CROWDS:
            # A typo of a name in the middle of the directory: one letter dropped.
            wanted = name_of(count // 2).replace("-", "", 1)
            uri = f"tm://{HOST}/fs/docs/{directory}/{wanted}"

            def miss(uri: str = uri) -> list[str]:
                try:
                    ns.read(uri)
                except NotFound as refusal:
                    return list(refusal.helpers["nearest"])
                raise AssertionError(f"{uri} was found")

            first = miss()  # warm: the directory's scan, imports
            cpu: list[float] = []
            wall: list[float] = []
            for _ in range(args.repeat):
                began_cpu, began_wall = time.process_time(), time.perf_counter()
                miss()
                cpu.append((time.process_time() - began_cpu) * 1000)
                wall.append((time.perf_counter() - began_wall) * 1000)
            best = first[0].rsplit("/", 1)[-1] if first else "-"
            rows.append((label, args.repeat, statistics.median(cpu), p99(cpu), wall, best))
        width = max(len(label) for label, *_ in rows)
        print(
            f"{'miss in a directory of'.ljust(width)}  {'n':>4}  {'CPU median ms':>13}  "
            f"{'CPU p99 ms':>10}  {'wall median ms':>14}  first nearest"
        )
        for label, repeat, median, tail, wall, best in rows:
            print(
                f"{label.ljust(width)}  {repeat:>4}  {median:>13.2f}  {tail:>10.2f}  "
                f"{statistics.median(wall):>14.2f}  {best}"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
