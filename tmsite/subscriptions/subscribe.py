"""``resources/subscribe`` and ``resources/unsubscribe`` (2025-11-25, ``server/resources``).

Answered where streams are delivered (``python -m tmsite.serve``) for a request carrying a valid
``Mcp-Session-Id`` (:mod:`tmsite.subscriptions.sessions`); the changes are told on the session's
GET stream (:mod:`tmsite.subscriptions.sessionstream`), wherever it is held. In this order:

1. served here: under a WSGI server (gunicorn, Django's live server) there is no stream to
   tell of changes: ``-32601`` saying where streams are served (as
   :data:`tmsite.subscriptions.listen.NOT_HERE`);
2. a session: without one, ``-32600`` (``data.reason`` ``no-session``) saying to initialize
   first and send its ``Mcp-Session-Id`` (a session id that is not valid never gets here: the
   endpoint answers it 404);
3. the URI, checked as a listen checks each of its own
   (:func:`tmsite.subscriptions.listen.check_uri`): a refusal is that URI's refusal;
4. the session's cap on subscribed URIs (``Limits.uris_per_caller``, ``TM_LISTEN_URIS_PER_CALLER``,
   256): ``-32000`` with ``data`` ``{"reason": "too-many-subscriptions", "cap":
   "uris-per-session", "limit"}``.

Both are idempotent and answer ``{}``: subscribing twice keeps one subscription, unsubscribing
from a URI never subscribed to is fine. The subscription is a row keyed by the session's hash;
the stream's worker learns it from the database (at once, when it is this process).

Spec: SUB2.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from tmsite.core.errors import BadUri
from tmsite.mcp import methods
from tmsite.mcp.codes import rpc_error
from tmsite.mcp.protocol import INVALID_REQUEST, METHOD_NOT_FOUND, CallContext, Era, RpcError
from tmsite.subscriptions import delivery, listen, sessions, sessionstream
from tmsite.subscriptions.models import URI_MAX, SessionSubscription

NOT_HERE = (
    "{method} is not answered by this server process: it answers one request at a time on a "
    "thread and holds no streams, so there is no session stream to tell of changes. Streams "
    "are served by `python -m tmsite.serve`."
)
NO_SESSION = (
    "{method} needs a session: send initialize first, then send the Mcp-Session-Id header it "
    "answered with this request; the changes are told on the session's GET stream."
)


def _session(method: str, ctx: CallContext) -> sessions.Session:
    if ctx.transport != "http" or not delivery.here():
        raise RpcError(METHOD_NOT_FOUND, NOT_HERE.format(method=method))
    session = sessions.current()
    if session is None:
        raise RpcError(INVALID_REQUEST, NO_SESSION.format(method=method), {"reason": "no-session"})
    return session


def _uri(params: dict[str, Any], ctx: CallContext) -> str:
    uri = params.get("uri")
    refusal = listen.check_uri(uri)
    if refusal is None and isinstance(uri, str) and len(uri) > URI_MAX:
        refusal = BadUri(uri[:200], f"a subscribed URI may be at most {URI_MAX} characters")
    if refusal is not None:
        raise rpc_error(refusal, ctx.era)
    assert isinstance(uri, str)
    return uri


def subscribe(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The method table's handler of ``resources/subscribe``."""
    session = _session("resources/subscribe", ctx)
    uri = _uri(params, ctx)
    limit = listen.Limits.current().uris_per_caller
    with transaction.atomic():
        mine = SessionSubscription.objects.filter(session=session.key)
        if not mine.filter(uri=uri).exists():
            if mine.count() >= limit:
                raise listen.cap_refusal("too-many-subscriptions", "uris-per-session", limit)
            try:
                with transaction.atomic():
                    SessionSubscription.objects.create(
                        session=session.key, uri=uri, expires=session.expires_at
                    )
            except IntegrityError:  # the same subscription, made at the same moment
                pass
    sessionstream.wake()
    return {}


def unsubscribe(params: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
    """The method table's handler of ``resources/unsubscribe``."""
    session = _session("resources/unsubscribe", ctx)
    uri = _uri(params, ctx)
    SessionSubscription.objects.filter(session=session.key, uri=uri).delete()
    sessionstream.wake()
    return {}


def install() -> None:
    """Put both methods in the method table (the initialize era only)."""
    era: frozenset[Era] = frozenset({"2025"})
    methods.METHODS.setdefault("resources/subscribe", methods.Method(subscribe, era))
    methods.METHODS.setdefault("resources/unsubscribe", methods.Method(unsubscribe, era))
