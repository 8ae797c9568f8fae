"""What a map-named read through the mcp mount costs next to calling the tool directly.

Registers the demo server in a throwaway SQLite database, probes it and derives its map, then,
in the same run, alternates a map-named read (``mcp/elements/element/Fe``: map lookup, schema
check, the call through the warm stdio client, the answer shaped into a thing with links and
provenance, the namespace's link order and cap) with the same ``get_element`` call made through
the official SDK's ``mcp.Client`` over stdio. Prints per-read medians and their ratio, then the
cost of a cold start (the warm client closed: spawn, handshake, call, shape).

    python bench/mcp_mount.py [--reads 300] [--colds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
os.environ["TM_VAR_DIR"] = tempfile.mkdtemp(prefix="tm-bench-")
# The SDK client needs an event loop; the mount is synchronous and runs in the same thread.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from mcp import Client as SdkClient  # noqa: E402
from mcp import StdioServerParameters  # noqa: E402

from tmsite.mounts.mcp.mount import McpMount  # noqa: E402
from tmsite.mounts.namespace import Namespace  # noqa: E402
from tmsite.servers import pool  # noqa: E402
from tmsite.servers.connect import probe_record  # noqa: E402
from tmsite.servers.index import rederive  # noqa: E402
from tmsite.servers.models import McpServer  # noqa: E402

ARGV = [sys.executable, "-m", "tmsite.demo.mcp_server"]
URI = "tm://bench/mcp/elements/element/Fe"


def setup() -> Namespace:
    call_command("migrate", verbosity=0)
    server = McpServer.objects.create(name="elements", command=ARGV[0], args=ARGV[1:])
    assert probe_record(server).outcome == "answered"
    rederive(server)
    return Namespace("bench", {"mcp": McpMount("bench")})


async def warm(ns: Namespace, reads: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    sdk: list[float] = []
    params = StdioServerParameters(command=ARGV[0], args=ARGV[1:], cwd=ROOT)
    async with SdkClient(params) as theirs:
        for _ in range(20):
            ns.read(URI)
            await theirs.call_tool("get_element", {"symbol": "Fe"})
        for _ in range(reads):
            start = time.perf_counter()
            mine = ns.read(URI)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            other = await theirs.call_tool("get_element", {"symbol": "Fe"})
            sdk.append(time.perf_counter() - start)
            assert other.structured_content is not None
            assert mine.body["symbol"] == other.structured_content["symbol"]
    return ours, sdk


def cold(ns: Namespace, colds: int) -> list[float]:
    out = []
    for _ in range(colds):
        pool.close_all()
        start = time.perf_counter()
        ns.read(URI)
        out.append(time.perf_counter() - start)
    pool.close_all()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--colds", type=int, default=5)
    args = parser.parse_args()
    ns = setup()
    ours, sdk = asyncio.run(warm(ns, args.reads))
    colds = cold(ns, args.colds)
    mine, theirs = statistics.median(ours), statistics.median(sdk)
    print(f"map-named read, warm stdio client   median {mine * 1e3:7.3f} ms  ({args.reads} reads)")
    print(f"get_element via the official SDK     median {theirs * 1e3:7.3f} ms")
    print(f"overhead ratio (mount / SDK)          {mine / theirs:7.2f}x")
    print(
        f"cold start (spawn+handshake+read)    median {statistics.median(colds) * 1e3:7.1f} ms"
        f"  ({args.colds} starts)"
    )


if __name__ == "__main__":
    main()
