"""The stdio transport: a server as a child process speaking newline-delimited JSON-RPC.

The child is started from an argument list (never a shell) in its own session, so its whole
process group can be killed; its environment holds only allow-listed names copied from ours plus
explicit values. One reader thread turns stdout into messages (blank lines skipped; any other line
that is not JSON is a protocol error; a line over the byte cap is too large); another drains
stderr into the log, capped, keeping a short tail to explain failures. Writes go through a
non-blocking pipe under the call's deadline. Any fault that leaves the stream unusable — a
deadline passed, a protocol error, an oversize message, the child gone — kills the process group
and closes the transport; later calls fail with :class:`Unreachable` naming the first fault.

Spec: MCP.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import select
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tmsite.mcpclient import jsonrpc
from tmsite.mcpclient.errors import (
    McpClientError,
    PeerError,
    ProtocolError,
    TooDeep,
    TooLarge,
    Unreachable,
)
from tmsite.mcpclient.limits import Deadline, Limits

log = logging.getLogger("tmsite.mcpclient.stdio")

DEFAULT_ENV_ALLOW: tuple[str, ...] = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")

_EOF = object()
_KILL_GRACE = 1.0


def build_env(
    allow: Iterable[str],
    explicit: Mapping[str, str] | None,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The child's environment: allow-listed names present in ``source``, then explicit values.

    Raises:
        ValueError: a name or value holds NUL or ``=`` in a name.
    """
    base = os.environ if source is None else source
    env = {name: base[name] for name in allow if name in base}
    env.update(explicit or {})
    for name, value in env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"invalid environment entry {name!r}")
    return env


class StdioTransport:
    """One child process and the JSON-RPC stream over its stdin and stdout."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None,
        env: Mapping[str, str],
        limits: Limits,
        shutdown_timeout: float,
        on_server_request: Callable[[str], None],
        on_notification: Callable[[str, Any], None] | None = None,
    ) -> None:
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("argv must be a non-empty list of strings (no shell is used)")
        if any("\0" in a for a in argv):
            raise ValueError("argv must not contain NUL")
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(env)
        self.limits = limits
        self.shutdown_timeout = shutdown_timeout
        self._on_server_request = on_server_request
        self._on_notification = on_notification
        self._proc: subprocess.Popen[bytes] | None = None
        self._queue: queue.Queue[Any] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._ids = 0
        self._broken: McpClientError | None = None
        self._stderr_tail: collections.deque[bytes] = collections.deque()
        self._stderr_tail_size = 0
        self._tail_lock = threading.Lock()
        self.forced_shutdown = False

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The child's pid (also its process-group id), once started."""
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        """Spawn the child.

        Raises:
            Unreachable: the program or working directory does not exist or cannot be run.
        """
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
                close_fds=True,
                bufsize=0,
            )
        except OSError as exc:
            raise Unreachable("spawn", f"could not start {self.argv[0]!r}: {exc}") from None
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        os.set_blocking(self._proc.stdin.fileno(), False)
        for target, name in ((self._read_stdout, "stdout"), (self._drain_stderr, "stderr")):
            thread = threading.Thread(
                target=target, name=f"mcp-stdio-{name}-{self._proc.pid}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        """End the child: close stdin, wait up to the shutdown deadline, then kill its group."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            self._close_stdin()
            try:
                proc.wait(timeout=self.shutdown_timeout)
            except subprocess.TimeoutExpired:
                self.forced_shutdown = True
                log.warning(
                    "MCP server %r ignored EOF for %.1fs; terminating its group",
                    self.argv[0],
                    self.shutdown_timeout,
                )
                self._signal_group(signal.SIGTERM)
                try:
                    proc.wait(timeout=_KILL_GRACE)
                except subprocess.TimeoutExpired:
                    self._signal_group(signal.SIGKILL)
                    proc.wait()
        self._finish()
        if self._broken is None:
            self._broken = Unreachable("closed", "the connection was closed")

    def kill(self, reason: McpClientError) -> None:
        """Kill the child's process group at once and mark the transport broken by ``reason``."""
        if self._broken is None:
            self._broken = reason
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            self._signal_group(signal.SIGKILL)
            proc.wait()
        self._finish()

    def _finish(self) -> None:
        # Whatever the leader left in its group goes too (a grandchild holding a pipe open).
        self._signal_group(signal.SIGKILL)
        self._close_stdin()
        for thread in self._threads:
            thread.join(timeout=2.0)
        proc = self._proc
        if proc is not None:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    def _close_stdin(self) -> None:
        if self._proc is not None and self._proc.stdin is not None and not self._proc.stdin.closed:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()

    # -- exchange --------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: jsonrpc.JSONObject | None,
        deadline: Deadline,
        headers: Mapping[str, str] | None = None,
    ) -> jsonrpc.JSONObject:
        """Send one request and wait for its answer within ``deadline``.

        Raises:
            PeerError: the server answered with a JSON-RPC error (the transport stays usable).
            Timeout, ProtocolError, TooLarge, Unreachable: the transport is now closed.
        """
        del headers  # HTTP routing headers have no stdio form
        self._ids += 1
        sent_id = self._ids
        message = jsonrpc.request(sent_id, method, params)
        try:
            self._write(message, deadline)
            while True:
                reply = self._next(deadline, method)
                kind = jsonrpc.classify(reply)
                if kind == "request":
                    self._on_server_request(reply["method"])
                    self._write(jsonrpc.answer_to(reply), deadline)
                elif kind == "response":
                    return jsonrpc.result_of(reply, sent_id, method)
        except PeerError:
            raise
        except McpClientError as exc:
            self.kill(exc)
            raise

    def notify(
        self,
        method: str,
        params: jsonrpc.JSONObject | None,
        deadline: Deadline,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Send one notification."""
        del headers
        message = jsonrpc.notification(method, params)
        try:
            self._write(message, deadline)
        except McpClientError as exc:
            self.kill(exc)
            raise

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise Unreachable("closed", f"the connection was closed after: {self._broken}")
        if self._proc is None:
            raise Unreachable("closed", "the server was never started")

    def _write(self, message: jsonrpc.JSONObject, deadline: Deadline) -> None:
        self._check_usable()
        assert self._proc is not None and self._proc.stdin is not None
        data = memoryview(jsonrpc.encode(message) + b"\n")
        fd = self._proc.stdin.fileno()
        while data:
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                select.select([], [fd], [], min(deadline.remaining(), 0.5))
                continue
            except (BrokenPipeError, OSError):
                raise self._exited(str(message.get("method", "a response"))) from None
            data = data[written:]

    def _next(self, deadline: Deadline, method: str) -> Any:
        try:
            item = self._queue.get(timeout=deadline.remaining())
        except queue.Empty:
            raise deadline.expired() from None
        if item is _EOF:
            raise self._exited(method)
        if isinstance(item, McpClientError):
            raise item
        return item

    def _exited(self, method: str) -> Unreachable:
        code: int | None = None
        if self._proc is not None:
            try:
                code = self._proc.wait(timeout=_KILL_GRACE)
            except subprocess.TimeoutExpired:
                code = None
        tail = self.stderr_tail()
        how = f"exited with code {code}" if code is not None else "closed its stdout"
        detail = f"the server {how} before answering {method}"
        if tail:
            detail += f"; stderr ends: {tail}"
        return Unreachable("exited", detail, exit_code=code)

    # -- reader threads --------------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        limit = self.limits.max_message_bytes
        buf = bytearray()
        scanned = 0
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                if buf.strip() and not self._deliver(bytes(buf)):
                    return
                self._queue.put(_EOF)
                return
            buf += chunk
            while (newline := buf.find(b"\n", scanned)) >= 0:
                line = bytes(buf[:newline])
                del buf[: newline + 1]
                scanned = 0
                if not self._deliver(line):
                    return
            scanned = len(buf)
            if len(buf) > limit:
                self._queue.put(TooLarge("message", limit, len(buf)))
                return

    def _deliver(self, line: bytes) -> bool:
        """Queue one stdout line as a message; False once the stream is unusable."""
        line = line.strip()
        if not line:
            return True
        try:
            message = jsonrpc.decode(
                line, self.limits.max_message_bytes, max_depth=self.limits.max_depth
            )
            if self._on_notification is not None and _is_notification(message):
                self._tell(message)  # as it arrives, whether a request is waiting or not
                return True
            self._queue.put(message)
        except (TooLarge, TooDeep) as exc:
            self._queue.put(exc)
            return False
        except ProtocolError as exc:
            self._queue.put(
                ProtocolError("stdout carried a line that is not JSON-RPC", exc.excerpt)
            )
            return False
        return True

    def _tell(self, message: dict[str, Any]) -> None:
        assert self._on_notification is not None
        try:
            self._on_notification(message["method"], message.get("params"))
        except Exception:  # a listener's fault is not the stream's
            log.exception("a notification listener failed on %s", message["method"])

    def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        fd = self._proc.stderr.fileno()
        logged = 0
        cap = self.limits.max_stderr_log_bytes
        pending = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                if pending and logged < cap:
                    log.info(
                        "[%s stderr] %s", self.argv[0], pending[:1000].decode("utf-8", "replace")
                    )
                return
            self._keep_tail(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if len(pending) > 4096:
                lines.append(pending)
                pending = b""
            for line in lines:
                if logged >= cap:
                    break
                logged += len(line) + 1
                log.info("[%s stderr] %s", self.argv[0], line[:1000].decode("utf-8", "replace"))
                if logged >= cap:
                    log.warning(
                        "[%s stderr] %d-byte log cap reached; the rest is dropped",
                        self.argv[0],
                        cap,
                    )

    def _keep_tail(self, chunk: bytes) -> None:
        with self._tail_lock:
            self._stderr_tail.append(chunk)
            self._stderr_tail_size += len(chunk)
            while (
                self._stderr_tail_size - len(self._stderr_tail[0]) >= self.limits.stderr_tail_bytes
            ):
                self._stderr_tail_size -= len(self._stderr_tail.popleft())

    def stderr_tail(self) -> str:
        """The last few hundred bytes of stderr, for error reports."""
        with self._tail_lock:
            data = b"".join(self._stderr_tail)[-self.limits.stderr_tail_bytes :]
        return data.decode("utf-8", "replace").strip()


__all__ = ["DEFAULT_ENV_ALLOW", "StdioTransport", "build_env"]


def _is_notification(message: Any) -> bool:
    """Whether a decoded message is a well-formed JSON-RPC notification."""
    try:
        return jsonrpc.classify(message) == "notification"
    except ProtocolError:
        return False
