"""What a test needs from the machine and cannot start itself: one rule for when it is missing.

``make test`` must pass on a machine without root, a browser, PostgreSQL, Redis or nginx, so a
test that needs one of them is skipped, with a message naming what provides it. Under
``CI=true`` (``.ci/run`` installs and starts all of them) a missing part fails the test instead:
a CI run that skipped would report checks it never made.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn
from urllib.parse import urlsplit, urlunsplit

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``), where nothing may be skipped for a missing part."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def missing(what: str, provides: str) -> NoReturn:
    """Skip the test for lack of ``what`` (``provides`` says how to get it); fail it in CI."""
    message = f"{what} ({provides})"
    if in_ci():
        pytest.fail(f"{message}; under CI=true a missing part fails instead of skipping")
    pytest.skip(message)


@contextmanager
def own_database(url: str, prefix: str) -> Iterator[str]:
    """A new PostgreSQL database beside the one ``url`` names (and may create databases),
    named ``prefix`` and a random tail; yields its URL and drops it after.

    An autovacuum worker still in it at the end, another role's process that ``FORCE`` may not
    end, is waited out for up to ten seconds.
    """
    import psycopg

    name = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        for _ in range(40):
            try:
                with psycopg.connect(url, autocommit=True) as admin:
                    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                break
            except psycopg.errors.InsufficientPrivilege:
                time.sleep(0.25)
        else:
            raise AssertionError(f"the database {name} could not be dropped")
