"""The MCP endpoint under ``python -m tmsite.serve`` on a box served over TLS (``TM_TLS``).

The ASGI application answers ``/api/mcp`` without Django's middleware, so it judges which
requests came over TLS as ``callers/tls.py`` and Django do: ``X-Forwarded-Proto`` believed from
a trusted proxy only, the box's own loopback reads counted as https. Those are answered with
the HSTS field Django's ``SecurityMiddleware`` gives (a prepared answer still in the event
loop); one that did not come over TLS is redirected to https, as Django redirects it. Each
answer is held against the one the site's WSGI application (the whole ``MIDDLEWARE``) gives
the same request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler

from tmsite import wsgi
from tmsite.serve.app import Application, environ_of

pytestmark = [pytest.mark.spec("T1", "OP5"), pytest.mark.django_db(transaction=True)]

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
HSTS = "max-age=31536000; includeSubDomains; preload"
#: The fields Django's middleware may add or change, and where a redirect points.
COMPARED = (
    "location",
    "strict-transport-security",
    "x-content-type-options",
    "referrer-policy",
    "cross-origin-opener-policy",
    "content-type",
)


def _tls(settings: Any) -> None:
    """The settings an https ``TM_PUBLIC_URL`` gives (``tmsite/settings.py``)."""
    settings.TM_TLS = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 365 * 24 * 3600
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True


def _tls_no_redirect(settings: Any) -> None:
    _tls(settings)
    settings.SECURE_SSL_REDIRECT = False


def _tls_exempt(settings: Any) -> None:
    _tls(settings)
    settings.SECURE_REDIRECT_EXEMPT = [r"^api/mcp$"]


def _plain(settings: Any) -> None:
    """The embedded default: an http front door (no TLS header believed, no HSTS)."""


SETTINGS: dict[str, Callable[[Any], None]] = {
    "tls": _tls,
    "tls-no-redirect": _tls_no_redirect,
    "tls-exempt": _tls_exempt,
    "plain": _plain,
}

#: (the socket's peer, the scope's scheme, the forwarding headers).
REQUESTS: dict[str, tuple[str, str, dict[str, str]]] = {
    "proxy-https": (
        "127.0.0.1",
        "http",
        {"x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.9"},
    ),
    "proxy-http": (
        "127.0.0.1",
        "http",
        {"x-forwarded-proto": "http", "x-forwarded-for": "203.0.113.9"},
    ),
    "proxy-listed-first": (
        "127.0.0.1",
        "http",
        {"x-forwarded-proto": "https, http", "x-forwarded-for": "203.0.113.9"},
    ),
    "proxy-http-for-loopback": (
        "127.0.0.1",
        "http",
        {"x-forwarded-proto": "http", "x-forwarded-for": "127.0.0.1"},
    ),
    "proxy-http-over-tls": (
        "127.0.0.1",
        "https",
        {"x-forwarded-proto": "http", "x-forwarded-for": "203.0.113.9"},
    ),
    "loopback": ("127.0.0.1", "http", {}),
    "loopback-v6": ("::1", "http", {}),
    "stranger-says-https": ("203.0.113.9", "http", {"x-forwarded-proto": "https"}),
    "stranger-underscored": ("203.0.113.9", "http", {"x_forwarded_proto": "https"}),
    "stranger-forwards-loopback": ("203.0.113.9", "http", {"x-forwarded-for": "127.0.0.1"}),
    "stranger-over-tls": ("203.0.113.9", "https", {}),
    "stranger": ("203.0.113.9", "http", {}),
}


@pytest.fixture
def site(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], list[str]]]:
    """The site's WSGI application loaded under the test's settings; the paths it served."""
    settings.ALLOWED_HOSTS = ["box.example"]
    served: list[str] = []
    loaded: list[WSGIHandler] = []

    def application(environ: dict[str, Any], start_response: Any) -> Any:
        if not loaded:  # its middleware read the settings the test gave
            loaded.append(WSGIHandler())
        served.append(environ["PATH_INFO"])
        return loaded[0](environ, start_response)

    monkeypatch.setattr(wsgi, "application", application)
    yield lambda: served


@pytest.fixture
def threaded() -> Iterator[list[str]]:
    """One item per request a thread answered (Django's ``request_started``)."""
    seen: list[str] = []

    def started(sender: Any, environ: dict[str, Any], **kwargs: Any) -> None:
        seen.append(str(environ.get("PATH_INFO")))

    signals.request_started.connect(started, dispatch_uid="tm-test-serve-tls")
    try:
        yield seen
    finally:
        signals.request_started.disconnect(dispatch_uid="tm-test-serve-tls")


def _scope(peer: str, scheme: str, headers: dict[str, str]) -> dict[str, Any]:
    fields = {
        "host": "box.example",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "content-length": str(len(PING)),
        "mcp-protocol-version": "2025-11-25",
        **headers,
    }
    return {
        "type": "http",
        "method": "POST",
        "scheme": scheme,
        "path": "/api/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in fields.items()],
        "client": (peer, 50000),
        "server": ("127.0.0.1", 8000),
    }


def _asgi(app: Application, scope: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """One ping to the ASGI application: status, fields, body."""
    sent: list[MutableMapping[str, Any]] = []
    bodies = [{"type": "http.request", "body": PING, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if bodies:
            return bodies.pop()
        await asyncio.Event().wait()  # the client stays until it is answered
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    answer = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    return sent[0]["status"], answer, b"".join(m.get("body", b"") for m in sent[1:])


def _django(scope: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """The same ping through the site's WSGI application, middleware and all."""
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        started["status"] = int(status.split(" ", 1)[0])
        started["headers"] = {name.lower(): value for name, value in headers}

    result = WSGIHandler()(environ_of(scope, PING), start_response)
    try:
        body = b"".join(result)
    finally:
        result.close()  # type: ignore[attr-defined]
    return started["status"], started["headers"], body


def _compared(status: int, fields: dict[str, str], body: bytes) -> tuple[Any, ...]:
    return (status, {k: fields.get(k) for k in COMPARED}, json.loads(body) if body else None)


def _ask(peer: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return _asgi(Application(), _scope(peer, "http", headers))


@pytest.mark.parametrize("configured", sorted(SETTINGS))
def test_each_answer_is_the_one_django_gives(
    configured: str, settings: Any, site: Callable[[], list[str]]
) -> None:
    SETTINGS[configured](settings)
    app = Application()
    for name, (peer, scheme, headers) in REQUESTS.items():
        scope = _scope(peer, scheme, headers)
        asgi = _compared(*_asgi(app, scope))
        assert asgi == _compared(*_django(scope)), name
    redirected = {name for name, _ in REQUESTS.items() if configured == "tls" and _redirects(name)}
    # only a redirect goes through Django's handler: every other answer is the endpoint's own
    assert len(site()) == len(redirected)


def _redirects(name: str) -> bool:
    return name in {
        "proxy-http",
        "proxy-http-over-tls",
        "stranger-says-https",
        "stranger-underscored",
        "stranger-forwards-loopback",
        "stranger",
    }


def test_a_request_over_tls_from_the_proxy_is_answered_in_the_loop_with_hsts(
    settings: Any, site: Callable[[], list[str]], threaded: list[str]
) -> None:
    _tls(settings)
    forwarded = {"x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.9"}
    status, fields, body = _ask("127.0.0.1", **forwarded)
    assert (status, json.loads(body)) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
    assert fields["strict-transport-security"] == HSTS
    assert fields["x-content-type-options"] == "nosniff"
    threaded.clear()
    status, fields, _ = _ask("127.0.0.1", **forwarded)  # its answer prepared by now
    assert status == 200 and fields["strict-transport-security"] == HSTS
    assert threaded == [] and site() == []  # answered in the event loop


def test_the_box_reading_itself_over_loopback_counts_as_tls(
    settings: Any, site: Callable[[], list[str]]
) -> None:
    _tls(settings)
    status, fields, _ = _ask("127.0.0.1")
    assert status == 200 and fields["strict-transport-security"] == HSTS
    # through nginx on this machine over plain http, forwarded for loopback: the same
    status, fields, _ = _ask("127.0.0.1", x_forwarded_proto="http", x_forwarded_for="127.0.0.1")
    assert status == 200 and fields["strict-transport-security"] == HSTS
    assert site() == []


def test_a_proto_header_from_a_peer_not_trusted_is_redirected_to_https(
    settings: Any, site: Callable[[], list[str]]
) -> None:
    _tls(settings)
    status, fields, body = _ask("203.0.113.9", **{"x-forwarded-proto": "https"})
    assert status == 301 and body == b""
    assert fields["location"] == "https://box.example/api/mcp"
    assert "strict-transport-security" not in fields
    assert site() == ["/api/mcp"]  # Django's handler


def test_without_tls_no_hsts_is_sent(settings: Any, site: Callable[[], list[str]]) -> None:
    status, fields, _ = _ask("127.0.0.1", **{"x-forwarded-proto": "https"})
    assert status == 200 and "strict-transport-security" not in fields
    assert site() == []
