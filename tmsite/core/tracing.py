"""OpenTelemetry traces, when the standard ``OTEL_*`` variables ask for them; else nothing.

Traces are on when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, ``console``) or an
OTLP endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
the exporter then ``otlp``: protobuf over HTTP), and off when neither is, when
``OTEL_TRACES_EXPORTER`` is ``none`` or ``OTEL_SDK_DISABLED`` is ``true``. Everything else is
the SDK's own reading of the variables: ``OTEL_SERVICE_NAME`` (``tmsite`` unless set),
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``, the exporter's headers,
timeout and compression.

Off, no part of OpenTelemetry is imported and each call here is one test of a module-level
flag: :func:`span` and :func:`server` hand back one shared empty context manager. On, the SDK is
set up once per process, at its first span (a forked worker sets up its own).

What the box traces (``tmsite.oplog.hooks``, the namespace, the http mount's fetch, the MCP
client): one server span per request named by the MCP conventions (``{mcp.method.name}
{target}``), continuing the client's trace from ``params._meta.traceparent``/``tracestate``
(SEP-414) or else the HTTP ``traceparent`` header; child spans for the mount read, the page
fetch, the peer call (whose request carries the context on in its ``_meta``) and the database.
No span names a caller: no address, agent, session or token.

Spec: OBS2.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

#: The W3C Trace Context keys SEP-414 carries in ``_meta``, as HTTP carries them in headers.
KEYS = ("traceparent", "tracestate")
_NOTHING: AbstractContextManager[Any] = contextlib.nullcontext()
#: Whether traces are on (None: not decided yet in this process), and what makes them.
_state: dict[str, Any] = {"on": None, "tracer": None, "provider": None}


def enabled() -> bool:
    """Whether this process traces (decided once, from the environment)."""
    on = _state["on"]
    if on is None:
        on = _state["on"] = asked(os.environ)
    return bool(on)


def asked(env: Mapping[str, str]) -> bool:
    """Whether the ``OTEL_*`` variables in ``env`` turn traces on (see the module's text)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    return bool(exporter) or bool(endpoint)


def install(provider: Any) -> None:
    """Trace into ``provider`` (an SDK ``TracerProvider``): for tests; None turns traces off."""
    _state.update(on=provider is not None, provider=provider, tracer=None)


def _tracer() -> Any:
    tracer = _state["tracer"]
    if tracer is None:
        provider = _state["provider"] or _made_provider()
        tracer = _state["tracer"] = provider.get_tracer("tmsite")
    return tracer


def _made_provider() -> Any:
    """The SDK's provider as the ``OTEL_*`` variables describe it, with its exporter."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    resource = Resource.create(
        {"service.name": os.environ.get("OTEL_SERVICE_NAME") or "tmsite"},
    )
    provider = TracerProvider(resource=resource)
    names = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "otlp"
    for name in (part.strip() for part in names.split(",")):
        if name == "console":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        elif name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    _state["provider"] = provider
    return provider


def shutdown() -> None:
    """Send the spans still held (the worker stops); nothing when traces are off."""
    provider = _state["provider"]
    if provider is not None:
        with contextlib.suppress(Exception):
            provider.force_flush()


# --- spans ------------------------------------------------------------------------------------


def server(
    name: str, carriers: tuple[Mapping[str, Any] | None, ...], attributes: Mapping[str, Any]
) -> AbstractContextManager[Any]:
    """The server span of one request, continuing the first carrier with a ``traceparent``."""
    if not _state["on"] and not enabled():
        return _NOTHING
    return _server(name, carriers, attributes)


@contextlib.contextmanager
def _server(
    name: str, carriers: tuple[Mapping[str, Any] | None, ...], attributes: Mapping[str, Any]
) -> Iterator[Any]:
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    parent = None
    for carrier in carriers:
        found = _context_of(carrier)
        if found:
            parent = extract(found)
            break
    with _tracer().start_as_current_span(
        name, context=parent, kind=SpanKind.SERVER, attributes=dict(attributes)
    ) as current:
        yield current


def _context_of(carrier: Mapping[str, Any] | None) -> dict[str, str]:
    """The trace context keys of ``carrier`` that are text (anything else is ignored)."""
    if not isinstance(carrier, Mapping):
        return {}
    found = {key: carrier.get(key) for key in KEYS}
    text = {key: value[:512] for key, value in found.items() if isinstance(value, str)}
    return text if "traceparent" in text else {}


def span(
    name: str, attributes: Mapping[str, Any], client: bool = False
) -> AbstractContextManager[Any]:
    """A child span of the one current (``client``: a call to another service)."""
    if not _state["on"]:
        return _NOTHING
    return _child(name, client, attributes)


@contextlib.contextmanager
def _child(name: str, client: bool, attributes: Mapping[str, Any]) -> Iterator[Any]:
    from opentelemetry.trace import SpanKind

    kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
    with _tracer().start_as_current_span(name, kind=kind, attributes=dict(attributes)) as current:
        yield current


def note(**attributes: Any) -> None:
    """Set attributes on the current span (nothing when traces are off)."""
    if not _state["on"]:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(attributes)


def outcome(value: str) -> None:
    """How the current request ended: ``ok``, or its reason as the span's ``error.type``."""
    if not _state["on"]:
        return
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    current = trace.get_current_span()
    current.set_attribute("tm.outcome", value)
    if value not in ("ok", "accepted"):
        current.set_attribute("error.type", value)
        current.set_status(Status(StatusCode.ERROR))


def carried(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``meta`` with the current span's context added (``_meta`` of a request to a peer).

    None stays None when traces are off or no span is current.
    """
    if not _state["on"]:
        return None if meta is None else dict(meta)
    from opentelemetry.propagate import inject

    out = dict(meta or {})
    found: dict[str, str] = {}
    inject(found)
    for key in KEYS:
        if key in found:
            out[key] = found[key]
    return out if out or meta is not None else None


def http_carrier(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The trace context of an HTTP request's headers (its ``META``)."""
    if not _state["on"] and not enabled():
        return None
    return {key: meta.get(f"HTTP_{key.upper()}") for key in KEYS}


def header_carrier(headers: Mapping[str, str]) -> dict[str, Any] | None:
    """The trace context of an HTTP request's headers, by lower-cased name."""
    if not _state["on"] and not enabled():
        return None
    return {key: headers.get(key) for key in KEYS}
