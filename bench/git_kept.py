"""How long another worker takes to load a kept blame from the shared files.

For each file of ``--files`` in the repository given by ``--repo`` (a bare git directory or a
work tree, read only), computes its blame at HEAD — the answer the git mount keeps for every
worker — and keeps it as ``tmsite.gitstore.kept`` does, in a temporary ``git-kept/``
directory. Then a fresh process, standing for another worker, loads it ``--repeat`` times
(``FileStore.get``: the file read and unpickled), first with a bare heap, then holding
``--heap`` objects the collector tracks (what a worker's caches hold after many reads: the
cost of unpickling many objects there includes the collector's passes over them). Printed:
the kept file's size and the load's min, median and max in milliseconds.

    .venv/bin/python bench/git_kept.py --repo /path/to/git.git [--files Makefile diff.c]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tmsite import gitstore  # noqa: E402
from tmsite.gitstore import kept  # noqa: E402


def keep(repo_path: str, path: str, root: Path) -> tuple[str, int, int]:
    """Blame ``path`` at HEAD and keep it under ``root``: its name, lines and bytes kept."""
    with gitstore.open_repo(repo_path) as repo:
        head = gitstore.resolve(repo, None).commit
        found = gitstore.blame(repo, head, path)
        name = kept.store_key(("blame", repo.path, head, path))
    store = kept.FileStore(root, 1 << 34)
    store.put(name, found)
    size = (root / name[:2] / f"{name}.pickle").stat().st_size
    return name, len(found), size


def load(root: Path, name: str, repeat: int, heap: int) -> list[float]:
    """Milliseconds of each of ``repeat`` loads, ``heap`` tracked objects held meanwhile."""
    held = [[i] for i in range(heap)]
    store = kept.FileStore(root, 1 << 34)
    times: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        value = store.get(name)
        times.append((time.perf_counter() - started) * 1000)
        assert value is not None
        del value
    del held
    gc.collect()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="a repository's path (read only)")
    parser.add_argument("--files", nargs="+", default=["Makefile", "diff.c"])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--heap", type=int, default=2_000_000)
    parser.add_argument("--load", nargs=2, metavar=("ROOT", "NAME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load is not None:  # the other worker
        for heap in (0, args.heap):
            times = load(Path(args.load[0]), args.load[1], args.repeat, heap)
            print(f"{heap:>9,} {min(times):8.1f} {statistics.median(times):8.1f} {max(times):8.1f}")
        return
    with tempfile.TemporaryDirectory(prefix="git-kept-") as folder:
        root = Path(folder)
        for path in args.files:
            name, lines, size = keep(args.repo, path, root)
            print(f"{path}: {lines:,} lines, kept in {size:,} bytes")
            print(f"{'heap':>9} {'min ms':>8} {'median':>8} {'max':>8}")
            other = [sys.executable, __file__, "--repo", args.repo, "--load", folder, name]
            other += ["--repeat", str(args.repeat), "--heap", str(args.heap)]
            done = subprocess.run(other, check=True, capture_output=True, text=True)
            sys.stdout.write(done.stdout)


if __name__ == "__main__":
    main()
