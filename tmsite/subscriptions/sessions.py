"""2025-11-25 sessions: a signed, expiring ``Mcp-Session-Id``, for subscriptions alone.

A session exists only so that a 2025-era client can subscribe to resources and be told of their
changes on the session's GET stream (``basic/transports`` "Session Management",
``server/resources`` "Subscriptions"). Everything else stays stateless: a request without a
session id is answered exactly as before, and the 2026-07-28 era never gets one.

* **Issued** by ``initialize`` (2025 era) where streams are delivered
  (``Asked.delivers``, :mod:`tmsite.bus.delivery`), in the ``Mcp-Session-Id`` header: a
  token signed with Django's signing (salt :data:`SALT`) carrying a random id and an expiry
  (``TM_SESSION_TTL`` seconds from the handshake, a day unless set). Visible ASCII only
  (base64url and ``:``). Any machine with the box's secret key validates it; nothing is
  remembered for it.
* **Refused** with HTTP 404 (the client initializes again) when it is not one this box signed,
  was altered, has expired, or was ended.
* **Ended** by ``DELETE`` with it (204): a row (:class:`~tmsite.subscriptions.models.SessionEnd`,
  kept until the token's own expiry) makes every machine answer it 404 from then on, and the
  session's subscriptions, stream record and kept events are deleted.
* **Checked once a window**: each process remembers the sessions it looked up (:data:`MEMO`):
  one found live is trusted for ``TM_SESSION_MEMO`` seconds (1) without the database, so a
  request carrying it costs no query and may be answered in the event loop; one ended (here, or
  found ended) is refused from then on. A session ended on another machine is refused here
  within that window.

Rows are keyed by :func:`key_of`, a hash of the session's random id: never the caller.

Spec: SUB2.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.core import signing
from django.db import transaction

from tmsite.bus import env

#: The salt of the session tokens' signatures (no other signed value of the box verifies).
SALT = "tmsite.subscriptions.session"
HEADER = "Mcp-Session-Id"
#: The most sessions :data:`MEMO` remembers at once.
MEMO_MAX = 50_000
GONE_SENTENCE = (
    "This Mcp-Session-Id is not a session of this server, or it has expired or was ended: send "
    "initialize again, without it, for a new session."
)


def ttl() -> float:
    """Seconds a session lives from its ``initialize`` (``TM_SESSION_TTL``, a day unless set)."""
    return env.positive("TM_SESSION_TTL", 86400.0)


@dataclass(frozen=True)
class Session:
    """A valid session: its row key (a hash of its random id) and its expiry (epoch seconds)."""

    key: str
    expires: float

    @property
    def expires_at(self) -> dt.datetime:
        """The expiry as an aware datetime (what rows carry, to be pruned after it)."""
        return dt.datetime.fromtimestamp(self.expires, tz=dt.UTC)


def key_of(random_id: str) -> str:
    """The key a session's rows are stored under: a hash of its random id."""
    return hashlib.sha256(random_id.encode()).hexdigest()


def issue() -> str:
    """A new session's ``Mcp-Session-Id``: a random id and its expiry, signed."""
    payload = {"s": secrets.token_urlsafe(18), "e": int(time.time() + ttl())}
    return signing.dumps(payload, salt=SALT, compress=False)


def read(token: str) -> Session | None:
    """The session ``token`` names when it is signed by this box and not expired (no database)."""
    if not token or len(token) > 256 or not token.isascii():
        return None
    try:
        value = signing.loads(token, salt=SALT)
    except (signing.BadSignature, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    random_id, expires = value.get("s"), value.get("e")
    if not isinstance(random_id, str) or not isinstance(expires, int):
        return None
    if expires <= time.time():
        return None
    return Session(key_of(random_id), float(expires))


def memo_seconds() -> float:
    """How long a session checked live is trusted without the database (``TM_SESSION_MEMO``)."""
    return env.positive("TM_SESSION_MEMO", 1.0)


class _Memo:
    """The sessions this process checked: ended (for good), or live as of when (monotonic).

    A live check is trusted for :func:`memo_seconds`; an end is final. Bounded: past
    :data:`MEMO_MAX` entries it starts again empty.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checked: dict[str, float | None] = {}  # key → live as of, or None: ended

    def live(self, key: str) -> bool | None:
        """True: checked live within the window; False: ended; None: not known now."""
        with self._lock:
            if key not in self._checked:
                return None
            at = self._checked[key]
        if at is None:
            return False
        return True if time.monotonic() - at < memo_seconds() else None

    def note(self, key: str, live: bool) -> None:
        with self._lock:
            if len(self._checked) >= MEMO_MAX:
                self._checked.clear()
            if live and self._checked.get(key, 0.0) is None:
                return  # ended here: an older check that found it live does not revive it
            self._checked[key] = time.monotonic() if live else None


MEMO = _Memo()


def valid(token: str) -> Session | None:
    """:func:`read`, and not ended by its client: one row looked up, unless :data:`MEMO` knows.

    A session ended on another machine may be answered as live for up to ``TM_SESSION_MEMO``
    seconds after this process last looked; one ended here is refused at once.
    """
    from tmsite.subscriptions.models import SessionEnd  # the endpoint imports this before Django

    session = read(token)
    if session is None:
        return None
    known = MEMO.live(session.key)
    if known is None:
        known = not SessionEnd.objects.filter(key=session.key).exists()
        MEMO.note(session.key, known)
    return session if known else None


def known_live(token: str) -> bool:
    """Whether ``token`` is a session this process checked live within the window (no query)."""
    session = read(token)
    return session is not None and MEMO.live(session.key) is True


def end(session: Session) -> None:
    """End ``session`` for every machine: its token is refused from now on; its rows go."""
    from tmsite.subscriptions.models import (
        SessionEnd,
        SessionEvent,
        SessionStream,
        SessionSubscription,
    )

    now = dt.datetime.now(tz=dt.UTC)
    MEMO.note(session.key, live=False)  # refused here at once
    with transaction.atomic():
        SessionEnd.objects.update_or_create(
            key=session.key, defaults={"expires": session.expires_at}
        )
        SessionSubscription.objects.filter(session=session.key).delete()
        SessionStream.objects.filter(session=session.key).delete()
        SessionEvent.objects.filter(session=session.key).delete()
    prune(now)


def prune(now: dt.datetime | None = None) -> None:
    """Delete the rows of sessions past their expiry (their tokens are refused anyway)."""
    from tmsite.subscriptions.models import SessionEnd, SessionStream, SessionSubscription

    now = now or dt.datetime.now(tz=dt.UTC)
    SessionEnd.objects.filter(expires__lte=now).delete()
    SessionSubscription.objects.filter(expires__lte=now).delete()
    SessionStream.objects.filter(expires__lte=now).delete()


# --- the GET stream's hand-off ---------------------------------------------------------------


@dataclass
class StreamOffer:
    """What the ASGI server offers the endpoint for one ``GET``: it can hold a stream.

    The endpoint checks the request (``Origin``, ``Host``, the session, ``Accept``) and, when a
    stream is to be opened, sets ``session``, ``caller`` and ``log``; the server then holds it.
    """

    accept: str
    last_event_id: str | None
    session: Session | None = None
    caller: str = ""
    log: Callable[[int, int, str], None] | None = field(default=None)


def accepts_stream(accept: str) -> bool:
    """Whether ``Accept`` lists ``text/event-stream`` (or a wildcard over it) with q > 0."""
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        if media.lower() not in ("text/event-stream", "text/*", "*/*"):
            continue
        if any(p.replace(" ", "").lower() in ("q=0", "q=0.0", "q=0.00", "q=0.000") for p in params):
            continue
        return True
    return False
