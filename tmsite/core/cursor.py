"""Opaque, signed cursors bound to what they list.

A cursor carries an offset and a short digest of the listing it belongs to (the identity URI
and the parameters that shape the listing), signed with the box's key. A cursor from another
listing, an edited one, or one past its age is refused ``bad-cursor``: it is never guessed.

Spec: NS6.
"""

from __future__ import annotations

import hashlib

from django.core import signing

from tmsite.core.errors import BadCursor

_SALT = "tmsite.cursor"
#: A cursor is good for a day: long enough for any walk, short enough not to be a bookmark.
MAX_AGE_SECONDS = 24 * 3600
MAX_CURSOR_LENGTH = 512


def _scope_digest(scope: str) -> str:
    return hashlib.blake2s(scope.encode("utf-8", "surrogateescape"), digest_size=6).hexdigest()


def issue(scope: str, offset: int) -> str:
    """A cursor for the page starting at ``offset`` of the listing named ``scope``."""
    signer = signing.TimestampSigner(salt=_SALT)
    return signer.sign(f"{_scope_digest(scope)}.{offset:x}")


def redeem(cursor: str, scope: str, uri: str | None = None) -> int:
    """The offset a cursor stands for, if this server issued it for ``scope``.

    Raises:
        BadCursor: forged, edited, expired, or issued for another listing.
    """
    expected = "an opaque cursor taken from a nextCursor or next field of this same listing"
    if not cursor or len(cursor) > MAX_CURSOR_LENGTH:
        raise BadCursor(uri, "the cursor is empty or too long", expected=expected)
    signer = signing.TimestampSigner(salt=_SALT)
    try:
        value = signer.unsign(cursor, max_age=MAX_AGE_SECONDS)
    except signing.SignatureExpired as exc:
        raise BadCursor(uri, "the cursor has expired; list again", expected=expected) from exc
    except signing.BadSignature as exc:
        raise BadCursor(uri, "the cursor is not one this server issued", expected=expected) from exc
    digest, _, offset_hex = value.partition(".")
    if digest != _scope_digest(scope):
        raise BadCursor(uri, "the cursor belongs to another listing", expected=expected)
    try:
        return int(offset_hex, 16)
    except ValueError as exc:  # pragma: no cover - only a signed value reaches here
        raise BadCursor(uri, "the cursor is not one this server issued", expected=expected) from exc
