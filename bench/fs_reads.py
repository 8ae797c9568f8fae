"""Benchmark: reads through the ``fs`` mount on a real filesystem.

Run standalone::

    .venv/bin/python bench/fs_reads.py [--repeat 50] [--dir DIR]

It configures Django itself over a temporary checkout (on tmpfs when the machine has one, else
the system temporary directory; ``--dir`` chooses) and times, through ``Namespace.read`` (the
path every surface takes): a small file, a 200 KiB file, a ``?range=`` slice of 64 KiB in the
middle of a 1 GiB sparse file and of a 1 MiB sparse file (the cost must not grow with the file),
and one listing page (500 entries) of a 100,000-entry directory. It prints the median and p99 of
each in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

HOST = "bench"
KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
SLICE = 64 * KIB


def make_checkout(base: Path) -> Path:
    checkout = base / "checkout"
    docs = checkout / "docs"
    crowd = docs / "crowd"
    crowd.mkdir(parents=True)
    (docs / "small.md").write_text("# small\n\nA short page.\n")
    line = "0123456789abcdefghijklmnopqrstuvwxyz" * 2 + "\n"
    (docs / "medium.txt").write_text(line * (200 * KIB // len(line)))
    for name, size in (("sparse-1g.bin", GIB), ("sparse-1m.bin", MIB)):
        with (docs / name).open("wb") as handle:
            handle.truncate(size)
            handle.seek(size // 2)
            handle.write(b"MIDDLE")
    flags = os.O_CREAT | os.O_WRONLY | os.O_EXCL
    for i in range(100_000):
        os.close(os.open(crowd / f"f{i:06d}.txt", flags, 0o644))
    return checkout


def configure(checkout: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
    os.environ["TM_CHECKOUT"] = str(checkout)
    os.environ["TM_FS_ROOTS"] = "docs"
    os.environ["TM_HOST"] = HOST
    os.environ.setdefault("TM_SECRET_KEY", "bench-only-" + "k" * 40)
    import django

    django.setup()


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    action()  # warm: imports, first stat of the directory
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--listing-repeat", type=int, default=10)
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
        from tmsite.mounts.fs.mount import FsMount
        from tmsite.mounts.namespace import Namespace

        # The fs mount alone, configured from settings as the registry does.
        ns = Namespace(HOST, {"fs": FsMount.from_settings(HOST)})
        docs = f"tm://{HOST}/fs/docs/"
        mid_g, mid_m = GIB // 2, MIB // 2
        cases: list[tuple[str, str, int]] = [
            ("small file (24 B)", docs + "small.md", args.repeat),
            ("200 KiB file", docs + "medium.txt", args.repeat),
            (
                "range 64 KiB of 1 GiB sparse",
                f"{docs}sparse-1g.bin?range={mid_g}-{mid_g + SLICE}",
                args.repeat,
            ),
            (
                "range 64 KiB of 1 MiB sparse",
                f"{docs}sparse-1m.bin?range={mid_m}-{mid_m + SLICE}",
                args.repeat,
            ),
            ("listing page of 100,000 entries", docs + "crowd/", args.listing_repeat),
        ]
        rows = []
        for label, uri, repeat in cases:
            content = ns.read(uri)
            assert content.body, uri
            samples = timed(partial(ns.read, uri), repeat)
            rows.append((label, repeat, statistics.median(samples), p99(samples)))
        width = max(len(label) for label, *_ in rows)
        print(f"{'read'.ljust(width)}  {'n':>4}  {'median ms':>10}  {'p99 ms':>9}")
        for label, repeat, median, tail in rows:
            print(f"{label.ljust(width)}  {repeat:>4}  {median:>10.3f}  {tail:>9.3f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
