"""The express lane gives exactly the answer the endpoint's chain gives, or leaves it to the chain.

Each request is answered twice in this process from the same environ: by
``tmsite.mcp.express.answer`` and by the endpoint's chain (``tmsite.serve.app._run_endpoint``:
the middleware and the view), the prepared answer current for both. Status, every header
(the ``RateLimit`` field's tokens aside: the second answer's bucket has one token fewer) and
the body must be the same, and so must the request-log rows they wrote. Requests the chain
refuses or treats otherwise must be left to it (None).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tmsite.bus import delivery
from tmsite.callers import buckets
from tmsite.mcp import express, prepared
from tmsite.oplog import recorder
from tmsite.oplog.models import RequestLog
from tmsite.serve import app
from tmsite.subscriptions import sessions

pytestmark = [pytest.mark.spec("T1", "T7", "OP1", "OP2"), pytest.mark.django_db]

HOST = "tinymachines"
FORWARDED = "203.0.113.7"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(autouse=True)
def box(settings: Any) -> Iterator[None]:
    settings.TM_HOST = HOST
    settings.TM_RATE_STORE = "memory"
    settings.TM_RATE_EXEMPT = []  # loopback is limited too: the bucket's fields are compared
    buckets._stores.clear()
    prepared.clear()
    yield
    buckets._stores.clear()
    prepared.clear()


def environ(
    method: str = "ping",
    params: dict[str, Any] | None = None,
    *,
    rid: Any = 1,
    version: str | None = "2025-11-25",
    body: bytes | None = None,
    **headers: str,
) -> tuple[dict[str, Any], bytes]:
    """A POST /api/mcp as the ASGI front makes its environ, and its body."""
    if body is None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        body = json.dumps(message).encode()
    fields = {"host": "127.0.0.1:8000", "content-type": "application/json"}
    fields["accept"] = "application/json, text/event-stream"
    fields["content-length"] = str(len(body))
    if version is not None:
        fields["mcp-protocol-version"] = version
    fields.update({name.replace("_", "-"): value for name, value in headers.items()})
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/mcp",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in fields.items()],
        "client": ("127.0.0.1", 50123),
        "server": ("127.0.0.1", 8000),
        "scheme": "http",
        "root_path": "",
    }
    return app.environ_of(scope, body), body


def _rows() -> list[tuple[Any, ...]]:
    recorder.flush()
    fields = ("surface", "method", "kind", "target", "facet", "protocol", "outcome", "status")
    return list(RequestLog.objects.order_by("id").values_list(*fields, "bytes"))


def _comparable(parts: tuple[int, list[tuple[bytes, bytes]], bytes]) -> tuple[Any, ...]:
    status, headers, body = parts
    fields = []
    for name, value in headers:
        if name == b"ratelimit":  # '"tm";r=<tokens left>;t=<seconds>': one token apart
            value = value.split(b";r=")[0]
        if name == b"mcp-session-id":  # a new random session each time
            value = b"<session>"
        fields.append((name, value))
    return status, sorted(fields), body


def both(made: tuple[dict[str, Any], bytes]) -> tuple[Any, ...]:
    """The express answer and the chain's, the same; returns it."""
    environ_, body = made
    with delivery.serving(sessions=True):
        chained = app._parts(app._run_endpoint(dict(environ_, **{"wsgi.input": _input(body)})))
        rows = _rows()
        fast = express.answer(dict(environ_, **{"wsgi.input": _input(body)}), body)
    assert fast is not None, "the express lane left a request it should answer"
    assert _comparable(fast) == _comparable(chained)
    assert _rows() == rows + rows[-1:]  # the same row again
    return _comparable(fast)


def _input(body: bytes) -> Any:
    from io import BytesIO

    return BytesIO(body)


def warm(made: tuple[dict[str, Any], bytes]) -> None:
    """Answer once through the chain, so the prepared answer is built and current."""
    environ_, body = made
    with delivery.serving(sessions=True):
        app._parts(app._run_endpoint(dict(environ_, **{"wsgi.input": _input(body)})))


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("ping", None),
        ("ping", {}),
        ("tools/list", None),
        ("resources/templates/list", {}),
        ("prompts/list", None),
        ("initialize", INIT),
        ("resources/read", {"uri": f"tm://{HOST}/"}),
    ],
)
def test_each_prepared_method_is_answered_as_the_chain_answers_it(
    method: str, params: dict[str, Any] | None
) -> None:
    warm(environ(method, params))
    status, headers, body = both(environ(method, params, rid=7))
    assert status == 200 and json.loads(body)["id"] == 7
    names = [name for name, _ in headers]
    assert b"ratelimit-policy" in names and b"x-content-type-options" in names
    assert (b"mcp-session-id" in names) == (method == "initialize")


@pytest.mark.parametrize(
    "variant",
    [
        {"rid": "a string id"},
        {"rid": "ünïcode ✓"},
        {"rid": 0},
        {"version": None},  # the headerless default
        {"version": "2025-06-18"},
        {"Origin": "http://localhost:5173"},
        {"X-Forwarded-For": FORWARDED},
        {"accept": "*/*"},
        {"content-type": "application/json; charset=UTF-8"},
    ],
    ids=lambda variant: next(iter(variant)) + "=" + str(next(iter(variant.values()))),
)
def test_ids_versions_origins_and_callers_are_answered_as_the_chain_does(
    variant: dict[str, Any],
) -> None:
    warm(environ("tools/list", version=variant.get("version", "2025-11-25")))
    status, headers, _ = both(environ("tools/list", **variant))
    assert status == 200
    if "Origin" in variant:
        assert (b"access-control-allow-origin", b"http://localhost:5173") in headers


def test_a_session_found_live_is_answered_as_the_chain_does_one_not_known_is_left() -> None:
    with delivery.serving(sessions=True):
        token = sessions.issue()
    warm(environ("ping"))
    environ_, body = environ("ping", mcp_session_id=token)
    with delivery.serving(sessions=True):
        assert express.answer(environ_, body) is None  # not checked here yet: the chain asks
    both(environ("ping", mcp_session_id=token))  # the chain found it live; both answer


def test_a_duplicate_key_is_taken_as_the_chain_takes_it_the_last_one() -> None:
    warm(environ("ping"))
    _, _, body = both(environ(body=b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}'))
    assert json.loads(body)["id"] == 2


@pytest.mark.parametrize("method", ["tools/list", "server/discover", "resources/templates/list"])
def test_the_2026_era_is_answered_as_the_chain_does(method: str) -> None:
    params = {"_meta": MODERN_META}
    warm(environ(method, params, version="2026-07-28", mcp_method=method))
    _, _, body = both(environ(method, params, rid=9, version="2026-07-28", mcp_method=method))
    assert "result" in json.loads(body)


def test_a_rate_limited_caller_is_refused_as_the_chain_refuses(settings: Any) -> None:
    settings.TM_RATE_BURST = 2
    settings.TM_RATE_REFILL = 0.001
    warm(environ("ping", X_Forwarded_For=FORWARDED))
    warm(environ("ping", X_Forwarded_For=FORWARDED))  # the bucket is empty now
    _, _, body = both(environ("ping", X_Forwarded_For=FORWARDED))
    error = json.loads(body)["error"]
    assert error["code"] == -32000 and error["data"]["reason"] == "rate-limited"
    assert [row[6] for row in _rows()][-2:] == ["rate-limited", "rate-limited"]


@pytest.mark.parametrize(
    ("why", "made"),
    [
        ("a foreign Origin", lambda: environ(Origin="https://evil.example")),
        ("a Host not served", lambda: environ(host="evil.example")),
        ("a body of another type", lambda: environ(content_type="text/plain")),
        ("a Latin-1 charset", lambda: environ(content_type="application/json; charset=latin-1")),
        ("an Accept without JSON", lambda: environ(accept="text/event-stream")),
        ("a version not served", lambda: environ(version="2024-01-01")),
        ("a session", lambda: environ(mcp_session_id="abc")),
        ("a notification", lambda: environ(body=b'{"jsonrpc":"2.0","method":"ping"}')),
        ("a batch", lambda: environ(body=b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')),
        (
            "params not an object",
            lambda: environ(body=b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}'),
        ),
        ("2026 without its envelope", lambda: environ("tools/list", version="2026-07-28")),
        ("2026 _meta under 2025", lambda: environ("tools/list", {"_meta": MODERN_META})),
        ("a cursor", lambda: environ("prompts/list", {"cursor": "x"})),
        ("a method with no prepared answer", lambda: environ("resources/list")),
        ("a length that is not the body's", lambda: environ(content_length="3")),
    ],
)
def test_what_the_chain_refuses_or_answers_otherwise_is_left_to_it(why: str, made: Any) -> None:
    warm(environ("ping"))
    warm(environ("tools/list"))
    warm(environ("prompts/list"))
    environ_, body = made()
    with delivery.serving(sessions=True):
        assert express.answer(environ_, body) is None, why


def test_under_tls_or_a_redirecting_setting_everything_is_left_to_the_chain(
    settings: Any,
) -> None:
    warm(environ("ping"))
    for name, value in (
        ("TM_TLS", True),
        ("SECURE_SSL_REDIRECT", True),
        ("PREPEND_WWW", True),
        ("DISALLOWED_USER_AGENTS", ["x"]),
    ):
        before = getattr(settings, name)
        setattr(settings, name, value)
        environ_, body = environ("ping")
        with delivery.serving(sessions=True):
            assert express.answer(environ_, body) is None, name
        setattr(settings, name, before)
        with delivery.serving(sessions=True):
            assert express.answer(*environ("ping")) is not None, name
    environ_, body = environ("ping", X_Forwarded_Proto="https")
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    with delivery.serving(sessions=True):
        assert express.answer(environ_, body) is None
