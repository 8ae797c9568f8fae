"""The listen-streams bench runs end to end with small counts: every stream acknowledged, every
change heard, nothing told that was not asked for, and each of its figures printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.spec("SUB1"),
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "listen_streams.py"
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def test_the_listen_bench_runs_and_prints_its_figures() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--streams", "20", "--workers", "1", "--seconds", "0.5",
         "--connections", "2", "--edits", "3", "--deadline", "240"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    assert re.search(r"^acks: 20/20 in ", out, re.M), out
    assert "TM_LISTEN_STREAMS_PER_CALLER=20" in out
    rss = re.search(rf"with all open: {NUMBER} KiB per stream \({NUMBER} KiB marginal\)", out)
    assert rss is not None, out
    for label in ("no streams", "streams open", "streams closed"):
        row = re.search(rf"^  {label} +{NUMBER} +{NUMBER} +{NUMBER} +0$", out, re.M)
        assert row is not None, (label, out)
        rps, p50, p99 = (float(x) for x in row.groups())
        assert rps > 0 and p50 <= p99
    ratio = re.search(rf"ping rps with the streams open / without: {NUMBER}", out)
    assert ratio is not None and float(ratio.group(1)) > 0, out
    # 20 streams: 18 on files, one on docs/ (the 10th), one on the git URI (the last)
    for label, changes, told in (("file edit", 3, 6), ("git branch moved", 3, 3)):
        line = re.search(
            rf"^{label} → notification: {changes} changes, {told} notifications, 0 missed: "
            rf"p50 {NUMBER} ms, p99 {NUMBER} ms",
            out,
            re.M,
        )
        assert line is not None, (label, out)
        assert 0 < float(line.group(1)) <= float(line.group(2))
    assert re.search(r"^notifications not asked for: 0$", out, re.M), out
