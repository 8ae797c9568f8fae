"""A box served over TLS: one setting (an https ``TM_PUBLIC_URL``) passes ``check --deploy``.

With it, plain http is redirected to https, HSTS and Secure cookies are on, and
``X-Forwarded-Proto`` is believed from a trusted proxy only; the box's own loopback reads (the
http mount at ``TM_FRONT_DOOR``) are never redirected. Without it the embedded default over
plain http is as it was, and ``check --deploy`` lists what is missing.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import Client

from tests.oplog.servers import ROOT, free_port, gunicorn, json_lines, migrate, read, server_env

pytestmark = pytest.mark.spec("OP5")

PUBLIC = "https://tinymachines.ai"
HSTS = "max-age=31536000; includeSubDomains; preload"
VISITOR = "203.0.113.7"  # documentation range (RFC 5737), as nginx forwards a caller


def _check_deploy(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = server_env(
        tmp_path / "var",
        TM_SECRET_KEY=secrets.token_urlsafe(50),  # as long and random as check --deploy asks
        TM_ALLOWED_HOSTS="tinymachines.ai",
        **extra,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_deploy_is_clean_with_an_https_public_url(tmp_path: Path) -> None:
    done = _check_deploy(tmp_path, TM_PUBLIC_URL=PUBLIC)
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout + done.stderr


def test_check_deploy_lists_what_is_missing_without_it(tmp_path: Path) -> None:
    done = _check_deploy(tmp_path)  # TM_PUBLIC_URL defaults to the http loopback door
    assert done.returncode == 1
    found = set(re.findall(r"\(security\.(W\d+)\)", done.stderr))
    assert found == {"W004", "W008", "W012", "W016"}, done.stderr


@pytest.fixture
def tls(settings: Any) -> Any:
    """The settings an https ``TM_PUBLIC_URL`` gives (settings.py works them out at start)."""
    settings.TM_TLS = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    return settings


def _get(**meta: str) -> Any:
    return Client().get("/static/site.css", HTTP_HOST="tinymachines.ai", **meta)


def test_a_visitor_over_http_is_redirected_over_https_answered_with_hsts(tls: Any) -> None:
    plain = _get(HTTP_X_FORWARDED_FOR=VISITOR, HTTP_X_FORWARDED_PROTO="http")
    assert plain.status_code == 301
    assert plain["Location"] == "https://tinymachines.ai/static/site.css"
    secure = _get(HTTP_X_FORWARDED_FOR=VISITOR, HTTP_X_FORWARDED_PROTO="https")
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == HSTS


def test_forwarded_proto_is_believed_from_a_trusted_proxy_only(tls: Any) -> None:
    # a peer that is no trusted proxy says it came over TLS: not believed, redirected
    claimed = _get(REMOTE_ADDR=VISITOR, HTTP_X_FORWARDED_PROTO="https")
    assert claimed.status_code == 301
    tls.TM_RATE_TRUSTED_PROXIES = [VISITOR]  # the same peer, now the operator's proxy
    believed = _get(REMOTE_ADDR=VISITOR, HTTP_X_FORWARDED_PROTO="https")
    assert believed.status_code == 200


@pytest.mark.parametrize(
    "meta",
    [
        {},  # this server's own loopback door, as the embedded default reads itself
        {"HTTP_X_FORWARDED_FOR": "127.0.0.1", "HTTP_X_FORWARDED_PROTO": "http"},  # via nginx
        {"REMOTE_ADDR": "::1"},
    ],
    ids=["direct", "through-nginx", "ipv6"],
)
def test_the_box_reading_itself_over_loopback_is_not_redirected(
    tls: Any, meta: dict[str, str]
) -> None:
    assert _get(**meta).status_code == 200


def test_without_tls_plain_http_is_served_as_it_was() -> None:
    plain = _get(HTTP_X_FORWARDED_FOR=VISITOR, HTTP_X_FORWARDED_PROTO="http")
    assert plain.status_code == 200
    assert "Strict-Transport-Security" not in plain


@pytest.mark.slow
def test_a_tls_box_reads_its_own_pages_over_loopback_http(tmp_path: Path) -> None:
    """gunicorn with the deploy config and an https public URL: the http mount fetches the
    site's page from ``TM_FRONT_DOOR`` over plain http and gets the page, while a forwarded
    visitor over http is sent to https and the cookies the admin sets are Secure."""
    port = free_port()
    env = server_env(
        tmp_path / "var", TM_FRONT_DOOR=f"http://127.0.0.1:{port}", TM_PUBLIC_URL=PUBLIC
    )
    migrate(env)
    log = tmp_path / "gunicorn.log"
    page = "tm://tinymachines/http/tinymachines.ai/docs"
    with gunicorn(env, workers=1, log=log, port=port, threads=None) as base:
        body = read(base, page).json()
        visitor = {"Host": "tinymachines.ai", "X-Forwarded-For": VISITOR}
        plain = httpx.get(f"{base}/docs", headers={**visitor, "X-Forwarded-Proto": "http"})
        login = httpx.get(f"{base}/admin/login/", headers={**visitor, "X-Forwarded-Proto": "https"})
    assert "result" in body, body
    [content] = body["result"]["contents"]
    assert "tmsite" in content["text"].lower()
    [line] = [line for line in json_lines(log) if line["method"] == "resources/read"]
    assert line["outcome"] == "ok"
    assert plain.status_code == 301 and plain.headers["location"] == f"{PUBLIC}/docs"
    assert login.status_code == 200 and login.headers["strict-transport-security"] == HSTS
    cookie = login.headers["set-cookie"]
    assert cookie.startswith("csrftoken=") and "; Secure" in cookie
