"""What tmsite's MCP client costs next to the official SDK client, on the same server.

Calls one demo-server tool (``get_element``) many times through a warm ``tmsite.mcpclient``
client and, in the same run, through the official SDK's ``mcp.Client`` over stdio; prints the
per-call medians and their ratio. Then measures a cold start: spawn, handshake and one call,
for both clients (closing is not timed).

    python bench/mcp_client_overhead.py [--calls 300] [--colds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from mcp import Client as SdkClient
from mcp import StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tmsite.mcpclient import Client  # noqa: E402

ARGV = [sys.executable, "-m", "tmsite.demo.mcp_server"]
ARGS = {"symbol": "Fe"}


async def warm(calls: int) -> tuple[list[float], list[float]]:
    """Both clients open at once, their calls alternating, so load drift hits both alike."""
    ours: list[float] = []
    sdk: list[float] = []
    params = StdioServerParameters(command=ARGV[0], args=ARGV[1:], cwd=ROOT)
    async with SdkClient(params) as theirs:
        with Client.stdio(ARGV, cwd=ROOT) as client:
            for _ in range(20):
                client.call_tool("get_element", ARGS)
                await theirs.call_tool("get_element", ARGS)
            for _ in range(calls):
                start = time.perf_counter()
                mine = client.call_tool("get_element", ARGS)
                ours.append(time.perf_counter() - start)
                start = time.perf_counter()
                other = await theirs.call_tool("get_element", ARGS)
                sdk.append(time.perf_counter() - start)
                assert mine.structured == other.structured_content
    return ours, sdk


def ours_cold() -> float:
    start = time.perf_counter()
    with Client.stdio(ARGV, cwd=ROOT) as client:
        client.call_tool("get_element", ARGS)
        elapsed = time.perf_counter() - start
    return elapsed


async def sdk_cold() -> float:
    start = time.perf_counter()
    params = StdioServerParameters(command=ARGV[0], args=ARGV[1:], cwd=ROOT)
    async with SdkClient(params) as client:
        await client.call_tool("get_element", ARGS)
        elapsed = time.perf_counter() - start
    return elapsed


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--colds", type=int, default=5)
    opts = parser.parse_args()

    ours, sdk = asyncio.run(warm(opts.calls))
    ours_med, sdk_med = statistics.median(ours), statistics.median(sdk)
    print(f"warm call, median of {opts.calls} (get_element over stdio)")
    print(f"  tmsite.mcpclient   {ms(ours_med)}   p90 {ms(statistics.quantiles(ours, n=10)[-1])}")
    print(f"  official SDK       {ms(sdk_med)}   p90 {ms(statistics.quantiles(sdk, n=10)[-1])}")
    print(f"  ratio ours/SDK     {ours_med / sdk_med:8.2f}")

    ours_c: list[float] = []
    sdk_c: list[float] = []
    for _ in range(opts.colds):  # interleaved, so drift in machine load hits both alike
        ours_c.append(ours_cold())
        sdk_c.append(asyncio.run(sdk_cold()))
    print(f"cold start: spawn + handshake + one call, median of {opts.colds}")
    print(f"  tmsite.mcpclient   {ms(statistics.median(ours_c))}")
    print(f"  official SDK       {ms(statistics.median(sdk_c))}")


if __name__ == "__main__":
    main()
