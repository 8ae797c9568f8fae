"""A closed-loop HTTP/1.1 load generator for JSON-RPC POST endpoints.

``N`` connections each send one request, wait for the whole answer, check it, and send the next,
for a fixed time. Every connection is a keep-alive socket driven by one event loop (uvloop when
installed); requests are prepared once as bytes, answers are read by ``Content-Length`` (or
chunked framing) and parsed by orjson where installed, so the client spends little CPU and both
servers see exactly the same bytes. Every answer is checked: HTTP 200, a JSON object whose
``jsonrpc`` is ``"2.0"``, whose ``id`` is the one sent and which carries a ``result`` (and no
``error``). Anything else counts as an error, and a connection that errs is reopened.

Only loopback targets are accepted: this is a benchmark of local servers.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

try:  # the bench extra pins it: a 24 KB answer is checked in a quarter of json's time
    import orjson

    _fast_loads: Callable[[bytes], Any] | None = orjson.loads
except ImportError:
    _fast_loads = None

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
#: Upper bounds that keep a run finite whatever the arguments.
MAX_SECONDS = 600.0
MAX_CONNECTIONS = 512
#: A single answer that takes longer than this is an error and the connection is reopened.
READ_TIMEOUT = 30.0


class BadAnswer(Exception):
    """An answer that is not a JSON-RPC result for the request sent."""


@dataclass
class Target:
    """Where to POST: loopback host, port and path, plus the headers every request carries."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme != "http" or parts.hostname not in LOOPBACK or parts.port is None:
            raise ValueError(f"only http://<loopback>:<port>/ targets are allowed, not {self.url}")
        self.host = parts.hostname
        self.port = parts.port
        self.path = parts.path or "/"

    def request_bytes(self, body: bytes) -> bytes:
        """One complete HTTP/1.1 keep-alive POST carrying ``body``."""
        lines = [
            f"POST {self.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            "Connection: keep-alive",
        ]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


@dataclass
class Result:
    """What one timed run measured."""

    requests: int
    errors: int
    seconds: float
    latencies_ns: list[int]
    response_bytes: int
    first_error: str = ""

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def percentile_ms(self, pct: float) -> float:
        """Nearest-rank percentile of the successful requests' latencies, in milliseconds."""
        if not self.latencies_ns:
            return float("nan")
        ordered = sorted(self.latencies_ns)
        rank = max(1, min(len(ordered), round(pct / 100.0 * len(ordered) + 0.5)))
        return ordered[rank - 1] / 1e6


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Read one HTTP/1.1 response; return its status and body."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, _, header_block = head.partition(b"\r\n")
    status = int(status_line.split(b" ", 2)[1])
    length = -1
    chunked = False
    for line in header_block.split(b"\r\n"):
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value.strip())
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        return status, b"".join(parts)
    if length < 0:
        raise BadAnswer(f"HTTP {status} without Content-Length or chunked framing")
    return status, await reader.readexactly(length)


def check_answer(status: int, body: bytes, request_id: int, refusal: bool = False) -> None:
    """Raise ``BadAnswer`` unless this is an HTTP 200 JSON-RPC result for ``request_id``.

    With ``refusal``, the answer must instead be a JSON-RPC error (in an HTTP 200) for it.
    """
    if status != 200:
        raise BadAnswer(f"HTTP {status}: {body[:200]!r}")
    try:
        message = _loads(body)
    except ValueError as exc:
        raise BadAnswer(f"not JSON: {body[:200]!r}") from exc
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise BadAnswer(f"not a JSON-RPC message: {body[:200]!r}")
    if message.get("id") != request_id:
        raise BadAnswer(f"id {message.get('id')!r} answers request {request_id}")
    if refusal:
        error = message.get("error")
        if (
            "result" in message
            or not isinstance(error, dict)
            or not isinstance(error.get("code"), int)
        ):
            raise BadAnswer(f"not a refusal: {body[:300]!r}")
        return
    if "error" in message or not isinstance(message.get("result"), dict):
        raise BadAnswer(f"not a result: {body[:300]!r}")


def _loads(body: bytes) -> Any:
    """The JSON value of ``body``: orjson's parse where installed, else (and past it) json's.

    What orjson refuses and ``json`` takes (a lone surrogate's escape) is read by ``json``, so
    the check is the same whichever parser runs.
    """
    if _fast_loads is not None:
        try:
            return _fast_loads(body)
        except ValueError:
            pass
    return json.loads(body)


def _body(method: str, params: dict[str, object] | None, request_id: int) -> bytes:
    message: dict[str, object] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode()


async def _connection(
    target: Target,
    requests: list[tuple[int, bytes]],
    deadline: float,
    stats: dict[str, object],
    latencies: list[int],
    refusal: bool = False,
) -> None:
    """One closed-loop connection: request, full answer, check, repeat until the deadline."""
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    turn = 0
    try:
        while time.monotonic() < deadline:
            request_id, payload = requests[turn % len(requests)]
            turn += 1
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(target.host, target.port)
                assert reader is not None
                started = time.perf_counter_ns()
                writer.write(payload)
                async with asyncio.timeout(READ_TIMEOUT):  # no task per answer
                    status, body = await _read_answer(reader)
                elapsed = time.perf_counter_ns() - started
                check_answer(status, body, request_id, refusal)
            except (
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                TimeoutError,
                ValueError,
                BadAnswer,
            ) as exc:
                stats["errors"] = int(stats["errors"]) + 1  # type: ignore[call-overload]
                if not stats["first_error"]:
                    stats["first_error"] = f"{type(exc).__name__}: {exc}"
                if writer is not None:
                    writer.close()
                reader = writer = None
                await asyncio.sleep(0.01)
                continue
            if time.monotonic() <= deadline:
                latencies.append(elapsed)
                stats["bytes"] = int(stats["bytes"]) + len(body)  # type: ignore[call-overload]
    finally:
        if writer is not None:
            writer.close()


async def _run(
    target: Target,
    method: str,
    params: dict[str, object] | None,
    seconds: float,
    connections: int,
    refusal: bool = False,
) -> Result:
    # A few distinct ids per connection, so a misrouted answer cannot pass the id check.
    stats: dict[str, object] = {"errors": 0, "bytes": 0, "first_error": ""}
    latencies: list[int] = []
    deadline = time.monotonic() + seconds
    tasks = []
    for index in range(connections):
        ids = [index * 4 + k + 1 for k in range(4)]
        requests = [(i, target.request_bytes(_body(method, params, i))) for i in ids]
        tasks.append(_connection(target, requests, deadline, stats, latencies, refusal))
    await asyncio.gather(*tasks)
    return Result(
        requests=len(latencies),
        errors=int(stats["errors"]),  # type: ignore[call-overload]
        seconds=seconds,
        latencies_ns=latencies,
        response_bytes=int(stats["bytes"]) // max(1, len(latencies)),  # type: ignore[call-overload]
        first_error=str(stats["first_error"]),
    )


def run(
    target: Target,
    method: str,
    params: dict[str, object] | None = None,
    *,
    seconds: float = 5.0,
    connections: int = 8,
    refusal: bool = False,
) -> Result:
    """Drive ``target`` with ``connections`` closed-loop connections for ``seconds``.

    With ``refusal``, every answer must be a JSON-RPC error (a miss, measured for its cost).
    Requests counted are those answered before the deadline, so requests per second is that
    count over ``seconds``; answers still in flight at the deadline are checked but not counted.
    """
    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"seconds must be in (0, {MAX_SECONDS}]")
    if not 0 < connections <= MAX_CONNECTIONS:
        raise ValueError(f"connections must be in [1, {MAX_CONNECTIONS}]")
    return _event_loop_run(_run(target, method, params, seconds, connections, refusal))


def _event_loop_run(main: Coroutine[Any, Any, Result]) -> Result:
    """Run ``main`` on uvloop when it is installed, else on asyncio's own loop.

    On uvloop the client costs the machine about a third less, which is left to the server
    measured: client and server share the machine's cores.
    """
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
