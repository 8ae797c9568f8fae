"""``TM_DATABASE_URL`` as dj-database-url reads it: query options kept, a bad URL a start-up check.

The parse is the real one; the start-up is a real process (``manage.py check``, ``runserver``,
gunicorn with the deploy config), started with the variable set, as a maintainer would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.oplog.servers import free_port, server_env
from tmsite.settings import database_from_url

pytestmark = pytest.mark.spec("OP5")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgres://tm:s%40cret%2Fx@db.internal:5433/tmsite?sslmode=require&connect_timeout=5",
            {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "tmsite",
                "USER": "tm",
                "PASSWORD": "s@cret/x",
                "HOST": "db.internal",
                "PORT": "5433",
                "OPTIONS": {"sslmode": "require", "connect_timeout": 5},
                "CONN_MAX_AGE": 60,
            },
        ),
        (
            "postgresql://db.internal/tmsite",
            {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "tmsite",
                "HOST": "db.internal",
                "PORT": "",
                "CONN_MAX_AGE": 60,
            },
        ),
        (
            "postgres://tm@[::1]:5432/tm?options=-c%20search_path%3Dbox&sslmode=verify-full",
            {
                "HOST": "::1",
                "PORT": "5432",
                "OPTIONS": {"options": "-c search_path=box", "sslmode": "verify-full"},
            },
        ),
        (
            "sqlite:////srv/tmsite/db.sqlite3",
            {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": "/srv/tmsite/db.sqlite3",
                "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
            },
        ),
        (
            "sqlite:///tmsite.sqlite3?timeout=5",
            {"NAME": "tmsite.sqlite3", "OPTIONS": {"timeout": 5, "transaction_mode": "IMMEDIATE"}},
        ),
    ],
)
def test_a_url_becomes_the_database_it_names(url: str, expected: dict[str, object]) -> None:
    config = database_from_url(url)
    assert {key: config.get(key) for key in expected} == expected
    if "OPTIONS" not in expected:
        assert "OPTIONS" not in config


def _env(tmp_path: Path, url: str) -> dict[str, str]:
    return server_env(tmp_path / "var", TM_DATABASE_URL=url, PYTHONPATH=str(ROOT))


def test_query_options_reach_the_driver_in_a_real_process(tmp_path: Path) -> None:
    url = "postgres://tm:pw@127.0.0.1:1/tmsite?sslmode=require&connect_timeout=5"
    script = (
        "import json; from django.db import connection; "
        "params = connection.get_connection_params(); "
        "print(json.dumps({k: params[k] for k in ('sslmode', 'connect_timeout', 'dbname')}))"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env=_env(tmp_path, url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "sslmode": "require",
        "connect_timeout": 5,
        "dbname": "tmsite",
    }


@pytest.mark.parametrize(
    "url", ["postgres://tm:pw@db.internal:5432/tmsite?sslmode=require", "sqlite:////tmp/x.sqlite3"]
)
def test_a_good_url_passes_the_start_up_checks(tmp_path: Path, url: str) -> None:
    done = _check(tmp_path, url)
    assert done.returncode == 0, done.stderr
    assert "tm.E002" not in done.stdout + done.stderr


def _check(tmp_path: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=_env(tmp_path, url),
        capture_output=True,
        text=True,
        timeout=120,
    )


#: A bad URL, and what the check says of it. None of them may be repeated in the message: the
#: password "pa" or "Zq9" must not appear anywhere in what the process prints.
MALFORMED = [
    (
        "postgres://tm:Zq9@db.internal:54x2/tmsite",
        "it does not parse as a URL (what stands as its port is not a number from 0 to 65535)",
    ),
    (
        "postgres://tm:pa/Zq9@db.internal/tmsite",
        "it does not parse as a URL (what stands as its port is not a number from 0 to 65535)",
    ),
    ("postgres://tm:Zq9@[::1/tmsite", "it does not parse as a URL (Invalid IPv6 URL)"),
    (
        "mysql://tm:Zq9@db.internal/tmsite",
        "its scheme 'mysql' is not one the box runs on (postgres:// or sqlite://)",
    ),
    ("db.internal:5432/tmsite", "it is not a URL: it must start with postgres:// or sqlite://"),
    (
        "postgres://tm:Zq9@db.internal:5432",
        "it names no database (the path after the host, e.g. /tmsite)",
    ),
    ("sqlite://", "it names no SQLite file (an in-memory database is not shared)"),
]


@pytest.mark.parametrize(("url", "reason"), MALFORMED)
def test_a_malformed_url_is_the_check_tm_e002_not_a_traceback(
    tmp_path: Path, url: str, reason: str
) -> None:
    done = _check(tmp_path, url)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert f"?: (tm.E002) TM_DATABASE_URL cannot be used: {reason}\n" in said
    assert "HINT: Set TM_DATABASE_URL to postgres://user:password@host:5432/name" in said
    assert "Traceback" not in said
    assert "Zq9" not in said and "pa/" not in said


def test_runserver_stops_on_it_before_serving(tmp_path: Path) -> None:
    url, reason = MALFORMED[0]
    done = subprocess.run(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{free_port()}"],
        cwd=ROOT,
        env=_env(tmp_path, url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert f"(tm.E002) TM_DATABASE_URL cannot be used: {reason}" in done.stderr
    assert "Starting development server" not in done.stdout
    assert "Traceback" not in done.stderr


def test_gunicorn_with_the_deploy_config_stops_on_it_before_any_worker(tmp_path: Path) -> None:
    url, reason = MALFORMED[3]
    done = subprocess.run(
        [
            str(BIN / "gunicorn"),
            "tmsite.wsgi",
            "--config",
            str(ROOT / "deploy" / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{free_port()}",
        ],
        cwd=ROOT,
        env={**_env(tmp_path, url), "GUNICORN_LOG_LEVEL": "info"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Error: the start-up checks failed:" in done.stderr
    assert f"(tm.E002) TM_DATABASE_URL cannot be used: {reason}" in done.stderr
    assert "Booting worker" not in done.stderr
    assert "Traceback" not in done.stderr
