"""Benchmark: a warm read through the git mount against the gitstore call underneath it.

Run standalone (after ``bench/git_vs_cli.py`` has built ``bench/out/bench-repo``, or with
``--build``)::

    .venv/bin/python bench/git_mount.py [--repeat 200]

Both sides are *warm*: every cache is filled by a first call, then each operation is timed
``--repeat`` times and the median reported. The library column is the gitstore call the mount
makes (resolve the ref, look the path up, read / log / blame / list); the mount column is the
whole ``Namespace.read`` of the URI: parsing, parameter checks, ref validation, path checks,
resolution, the cached body, links, parts, the read cap and link order. The difference is what
the namespace and the mount add to a read whose answer is already known.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

if not settings.configured:
    settings.configure(SECRET_KEY="bench-only", USE_TZ=True)
    django.setup()

import git_vs_cli  # noqa: E402

from tmsite import gitstore  # noqa: E402
from tmsite.mounts.git.mount import GitMount  # noqa: E402
from tmsite.mounts.namespace import Namespace  # noqa: E402

HOST = "bench"


def median_us(fn: Callable[[], object], repeat: int) -> float:
    fn()
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--build", action="store_true", help="build the repository first")
    args = parser.parse_args()
    if args.build or not git_vs_cli.REPO.exists():
        git_vs_cli.build(5000)
    mount = GitMount(HOST, {"bench": git_vs_cli.REPO})
    ns = Namespace(HOST, {"git": mount})
    repo = gitstore.open_repo(git_vs_cli.REPO)
    base = f"tm://{HOST}/git/bench/"
    big, rare = git_vs_cli.BIG, git_vs_cli.RARE

    # The library column is given the commit: resolving a ref reads the ref store from disk
    # on every call (its own row below), which the mount does once a second at most.
    tip = gitstore.resolve(repo, None).commit
    v5 = gitstore.resolve(repo, "v5").commit

    def head() -> str:
        return tip

    def raw(path: str, commit: str) -> Callable[[], object]:
        def call() -> object:
            node = gitstore.lookup(repo, commit, path)
            return gitstore.read_blob(repo, node.sha)

        return call

    cases: list[tuple[str, Callable[[], object], str]] = [
        (
            "resolve HEAD (ref store read)",
            lambda: gitstore.resolve(repo, None),
            base + "?as=log&n=1",
        ),
        ("file raw at HEAD (rare.txt)", raw(rare, tip), base + rare),
        ("file raw at tag v5 (big.txt, 40 KiB)", raw(big, v5), base + big + "?at=v5"),
        (
            "stat (big.txt)",
            lambda: gitstore.lookup(repo, head(), big),
            base + big + "?as=stat",
        ),
        (
            "log n=20 (big.txt, 200 revisions)",
            lambda: gitstore.log(repo, head(), big, n=20),
            base + big + "?as=log",
        ),
        (
            "log n=100 (repository root)",
            lambda: gitstore.log(repo, head(), "", n=100),
            base + "?as=log&n=100",
        ),
        (
            "blame lines 1-100 (1,000-line file)",
            lambda: gitstore.blame(repo, head(), big),
            base + big + "?as=blame&lines=1-100",
        ),
        (
            "tree at tag v5, one level (50 files)",
            lambda: gitstore.list_tree(repo, v5, "src/mod07"),
            base + "src/mod07/?at=v5",
        ),
        ("lines 10-20 (big.txt)", raw(big, tip), base + big + "?lines=10-20"),
    ]
    print(f"{'operation':42} {'library µs':>11} {'mount µs':>10} {'added µs':>9} {'ratio':>6}")
    for label, library, uri in cases:
        lib = median_us(library, args.repeat)
        via = median_us(lambda uri=uri: ns.read(uri), args.repeat)  # type: ignore[misc]
        print(f"{label:42} {lib:11.1f} {via:10.1f} {via - lib:9.1f} {via / lib:6.1f}")
    repo.close()


if __name__ == "__main__":
    main()
