"""Blame and log against the git CLI, line for line, on files of a real repository.

Run standalone::

    .venv/bin/python bench/git_agreement.py --repo /path/to/repo [--files 20] [--ref HEAD]
        [--path FILE ...]

For each file (those given with ``--path``, then a fixed sample of the tracked text files up
to ``--files``) it asks ``gitstore.log`` (n=100) and ``gitstore.blame`` and the git CLI
(``git log --follow -n 100`` and ``git blame --porcelain``) the same question, and prints per
file whether the commits (and, for blame, each line's commit and path) agree, with the share of
blame lines that agree and the time each side took. The CLI is the oracle only.
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tmsite import gitstore  # noqa: E402

DEFAULT_PATHS = [
    "Documentation/git-log.adoc",
    "Documentation/git-blame.adoc",
    "COPYING",
    "refs.c",
    "Makefile",
]


def git(repo: str, *args: str) -> str:
    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, check=True)
    return done.stdout.decode("utf-8", "replace")


def porcelain(text: str) -> list[tuple[str, str]]:
    """(commit, path in it) per final line of ``git blame --porcelain``."""
    out: list[tuple[str, str]] = []
    files: dict[str, str] = {}
    current = ""
    for line in text.split("\n"):
        head = re.match(r"^([0-9a-f]{40}) \d+ \d+", line)
        if head:
            current = head.group(1)
        elif line.startswith("filename "):
            files[current] = line[len("filename ") :]
        elif line.startswith("\t"):
            out.append((current, files[current]))
    return out


def sample(repo: str, ref: str, count: int) -> list[str]:
    """A fixed sample of tracked files under 64 KiB, text by extension."""
    listing = git(repo, "ls-tree", "-r", "-l", ref).splitlines()
    files = []
    for row in listing:
        meta, _tab, path = row.partition("\t")
        size = meta.split()[3]
        if (
            size.isdigit()
            and int(size) < 64 * 1024
            and re.search(r"\.(c|h|sh|adoc|txt|perl|py)$", path)
        ):
            files.append(path)
    return random.Random(2026).sample(files, min(count, len(files)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--ref", default="HEAD")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--path", action="append", default=[])
    args = parser.parse_args()
    paths = args.path or list(DEFAULT_PATHS)
    paths += [p for p in sample(args.repo, args.ref, args.files) if p not in paths]
    paths = paths[: max(args.files, len(args.path or []))]
    head = git(args.repo, "rev-parse", args.ref).strip()
    agree_log = agree_blame = 0
    print(f"{'file':44} {'log':>9} {'blame lines':>16} {'ours s':>7} {'git s':>6}")
    with gitstore.open_repo(args.repo) as repo:
        for path in paths:
            t0 = time.perf_counter()
            mine_log = [e.commit for e in gitstore.log(repo, head, path, n=100)]
            mine_blame = [(b.commit, b.path) for b in gitstore.blame(repo, head, path)]
            ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            their_log = git(
                args.repo, "log", "--follow", "-n", "100", "--format=%H", head, "--", path
            ).split()
            their_blame = porcelain(git(args.repo, "blame", "--porcelain", head, "--", path))
            theirs = time.perf_counter() - t0
            same_lines = sum(a == b for a, b in zip(mine_blame, their_blame, strict=False))
            log_ok = mine_log == their_log
            blame_ok = mine_blame == their_blame
            agree_log += log_ok
            agree_blame += blame_ok
            print(
                f"{path[-44:]:44} {'same' if log_ok else 'DIFFERS':>9} "
                f"{same_lines:>6}/{len(their_blame):<6}{'' if blame_ok else ' ≠':2} "
                f"{ours:7.2f} {theirs:6.2f}",
                flush=True,
            )
    print(f"log agrees on {agree_log}/{len(paths)} files, blame on {agree_blame}/{len(paths)}")


if __name__ == "__main__":
    main()
