"""The search suite runs on both engines: SQLite (the test database) and PostgreSQL.

PostgreSQL is ``TM_TEST_DATABASE_URL`` (a role that may create databases): each test gets a
database of its own, with the index's tables made as the migration makes them, dropped after.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.db import connections

from tests.services import missing, own_database
from tmsite.mounts.fs.mount import FsMount
from tmsite.search import index
from tmsite.settings import database_from_url

ENGLISH = """# Connecting a client

How to connect Claude Code to the box: add the MCP endpoint.

## Transport

The streamable HTTP transport carries every request.
"""
PATTERNS = """# Patterns

Some games poll the pad once a frame: the pad-poll pattern.
"""
TITLED = """# Bresenham lines

A page about drawing.
"""
MENTIONS = """# Other things

Drawing is mentioned once in passing, with bresenham and much else besides and more words.
"""
JAPANESE = """# 接続

クライアントを接続する方法。検索の使い方も説明します。
"""


def write_docs(checkout: Path) -> None:
    docs = checkout / "docs"
    (docs / "ja").mkdir(parents=True)
    (docs / "connect.md").write_text(ENGLISH)
    (docs / "patterns.md").write_text(PATTERNS)
    (docs / "bresenham.md").write_text(TITLED)
    (docs / "other.md").write_text(MENTIONS)
    (docs / "ja" / "connect.md").write_text(JAPANESE)
    (docs / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 120)) + "zebra\n")
    (docs / ".env").write_text("SECRETWORD\n")
    (docs / "id_rsa").write_text("SECRETWORD\n")
    (docs / "server.pem").write_text("SECRETWORD\n")
    (docs / ".ssh").mkdir()
    (docs / ".ssh" / "notes.md").write_text("# SECRETWORD\n")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    write_docs(tmp_path)
    return tmp_path


@pytest.fixture
def fs(checkout: Path) -> FsMount:
    return FsMount("test", checkout, ["docs"])


@pytest.fixture(params=["sqlite", "postgresql"])
def using(request: pytest.FixtureRequest) -> Iterator[str]:
    """The database alias the index lives in, on each engine in turn."""
    if request.param == "sqlite":
        request.getfixturevalue("db")
        yield "default"
        return
    url = os.environ.get("TM_TEST_DATABASE_URL")
    if not url:
        missing("no PostgreSQL: TM_TEST_DATABASE_URL is not set", "source .ci/services.sh as root")
    with own_database(url, "tm_search") as own:
        alias = f"search_{urlsplit(own).path.strip('/')}"
        both = {"default": {"ENGINE": "django.db.backends.dummy"}, alias: database_from_url(own)}
        connections.settings[alias] = connections.configure_settings(both)[alias]
        try:
            with request.getfixturevalue("django_db_blocker").unblock():
                index.create(alias)
                yield alias
                connections[alias].close()
        finally:
            del connections[alias]
            del connections.settings[alias]
