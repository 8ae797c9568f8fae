"""Receipts: the signed, unguessable token a proposer reads its proposal by.

A receipt is ``tm://<host>/proposals/<token>``, the token a random 128-bit id signed with the
box's key under a salt naming the host (Django ``signing``), so a token cannot be guessed,
forged or carried to another host. A token whose signature fails, or whose proposal is gone
(expired and swept), reads as ``not-found`` like any address that is not there.

Spec: PROP1, PROP2, PROP3.
"""

from __future__ import annotations

import re
import secrets

from django.core import signing

_ID = re.compile(r"[0-9a-f]{32}")
SEP = "."


def _signer(host: str) -> signing.Signer:
    return signing.Signer(salt=f"tmsite.proposals.receipt:{host}", sep=SEP)


def new_id() -> str:
    """A fresh receipt id: 32 hex digits."""
    return secrets.token_hex(16)


def token(host: str, receipt: str) -> str:
    """The signed token of receipt id ``receipt`` on ``host``."""
    return _signer(host).sign(receipt)


def receipt_of(host: str, text: str) -> str | None:
    """The receipt id a token signs, or None (not a token, or not signed by this box)."""
    if SEP not in text or len(text) > 100:
        return None
    try:
        value = _signer(host).unsign(text)
    except signing.BadSignature:
        return None
    return value if _ID.fullmatch(value) else None
