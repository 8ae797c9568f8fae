"""The pages over real loopback HTTP, as the ``http`` mount will fetch them."""

from __future__ import annotations

import http.client
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.urls("tests.site.urls"), pytest.mark.slow, pytest.mark.spec("OP3")]


def fetch(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def raw_get(base: str, path: str) -> tuple[int, bytes]:
    """GET a path exactly as written (urllib would not normalise it, but be explicit)."""
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_accept_encoding=True)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_page_over_loopback(live_server: Any, checkout: Path, secret: str) -> None:
    base = live_server.url
    status, headers, body = fetch(base + "/docs/nes/pile")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["ETag"] and headers["Last-Modified"]
    text = body.decode()
    assert "<title>The pile · tinymachines</title>" in text
    main = text[text.index("<main") : text.index("</main>")]
    assert '<h2 id="sprite-zero">' in main and '<span class="k">def</span>' in main
    assert "<nav" not in main and "<nav" in text

    status, head_headers, head_body = fetch(base + "/docs/nes/pile", method="HEAD")
    assert status == 200 and head_body == b""
    assert head_headers["ETag"] == headers["ETag"]
    assert int(head_headers["Content-Length"]) == len(body)

    status, _, body = fetch(base + "/ja/docs/nes/alone")
    assert status == 200 and b'lang="en"' in body and b"Only in English." in body

    status, _, body = fetch(base + "/sitemap.xml")
    assert status == 200
    locs = re.findall(r"<loc>([^<]*)</loc>", body.decode())
    assert base + "/docs/nes/pile" in locs and base + "/ja/docs/nes/alone" in locs

    status, _, body = fetch(base + "/robots.txt")
    assert status == 200 and f"Sitemap: {base}/sitemap.xml".encode() in body

    status, headers, _ = fetch(base + "/static/site.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")

    status, _, body = fetch(base + "/docs/nes/nothing")
    assert status == 404 and b"<main" in body

    for path in ["/docs/../settings", "/docs/%2e%2e/settings", "/docs/..%5csettings"]:
        status, body = raw_get(base, path)
        assert status == 404, path
        assert secret.encode() not in body
