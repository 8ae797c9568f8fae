"""The admin off the public front door: nginx with ``deploy/nginx/admin-allowlist.conf`` included
in the shipped server block, in front of a live server, asked from an allowed loopback address
and from one it does not allow (127.0.0.2: loopback, but not on the list)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.oplog.servers import NGINX_SITE, ROOT, free_port, wait_for
from tests.services import missing

pytestmark = [pytest.mark.spec("OP4", "OP5"), pytest.mark.slow]

DEPLOY = ROOT / "deploy" / "nginx"


def _site(port: int, work: Path) -> Path:
    """tmsite.conf as shipped, on a loopback port, with the allow-list included in its server."""
    site = (DEPLOY / "tmsite.conf").read_text()
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};").replace("listen [::]:80;", "")
    marker = "    location /api/ {"
    assert marker in site
    include = f"    include {DEPLOY / 'admin-allowlist.conf'};\n\n"
    path = work / "site.conf"
    path.write_text(site.replace(marker, include + marker, 1))
    return path


@pytest.mark.django_db(transaction=True)
def test_nginx_serves_the_admin_only_to_the_addresses_it_allows(
    live_server: Any, tmp_path: Path
) -> None:
    binary = os.environ.get("TM_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).is_file():
        missing(f"nginx is not installed at {binary}", "apt-get install nginx")
    port = free_port()
    upstream = live_server.url.removeprefix("http://").replace("localhost", "127.0.0.1")
    conf = NGINX_SITE.format(
        dir=tmp_path, servers=f"        server {upstream};", site=_site(port, tmp_path)
    )
    (tmp_path / "nginx.conf").write_text(conf)
    process = subprocess.Popen(
        [binary, "-c", str(tmp_path / "nginx.conf"), "-g", "daemon off;", "-p", str(tmp_path)],
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/api/v1/health")
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
    finally:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
