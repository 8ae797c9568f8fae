"""The admin off the public front door: nginx with ``deploy/nginx/admin-allowlist.conf`` included
in the shipped server block, in front of a live server, asked from an allowed loopback address
and from one it does not allow (127.0.0.2: loopback, but not on the list)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.servers import ROOT, nginx

pytestmark = [pytest.mark.spec("OP4", "OP5"), pytest.mark.slow]

DEPLOY = ROOT / "deploy" / "nginx"


@pytest.mark.django_db(transaction=True)
def test_nginx_serves_the_admin_only_to_the_addresses_it_allows(
    live_server: Any, tmp_path: Path
) -> None:
    upstream = live_server.url.replace("localhost", "127.0.0.1")
    with nginx([upstream], tmp_path, include=DEPLOY / "admin-allowlist.conf") as base:
        inside = httpx.get(f"{base}/admin/login/", timeout=30)
        assert inside.status_code == 200 and "csrfmiddlewaretoken" in inside.text
        outside = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"))
        with outside:
            for path in ("/admin/", "/admin/login/", "/admin/tm_oplog/loginevent/"):
                refused = outside.get(base + path, timeout=30)
                assert refused.status_code == 403, path
                assert "csrfmiddlewaretoken" not in refused.text  # nginx's answer, not tmsite's
            assert outside.get(f"{base}/api/v1/health", timeout=30).status_code == 200
            assert outside.get(f"{base}/static/admin/css/base.css", timeout=30).status_code == 200
