"""The few files the admin and the API docs need are served by the box itself, with DEBUG off
(the embedded default has no other server); nothing outside the packages' static files is."""

from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.spec("OP5")


def test_the_api_docs_page_and_every_file_it_loads_answer() -> None:
    client = Client()
    page = client.get("/api/docs")
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.content.decode())
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    for asset in assets:
        reply = client.get(asset)
        assert reply.status_code == 200, asset
        assert b"".join(reply.streaming_content)


def test_the_admin_stylesheet_and_the_site_stylesheet_answer() -> None:
    client = Client()
    admin_css = client.get("/static/admin/css/base.css")
    assert admin_css.status_code == 200 and admin_css["Content-Type"].startswith("text/css")
    site_css = client.get("/static/site.css")  # a view of the site, not a package file
    assert site_css.status_code == 200 and site_css["Content-Type"].startswith("text/css")


@pytest.mark.parametrize(
    "path",
    [
        "/static/../settings.py",
        "/static/%2e%2e/tmsite/settings.py",
        "/static/admin/../../../../etc/passwd",
        "/static/admin/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/static/%252e%252e/etc/passwd",
        "/static/..%5c..%5cetc%5cpasswd",
        "/static//etc/passwd",
        "/static/admin/css/base.css%00.txt",
        "/static/nothing-here.js",
        "/static/explorer/..%2fsite.css",
        "/static/admin/css/../css/base.css",
        "/static/admin//css/base.css",
        "/static/./admin/css/base.css",
    ],
)
def test_nothing_else_is_served_and_nothing_fails(path: str) -> None:
    reply = Client().get(path)
    assert reply.status_code in (400, 404), (path, reply.status_code)
    body = b"".join(reply.streaming_content) if reply.streaming else reply.content
    assert b"root:" not in body and b"SECRET_KEY" not in body
