"""Benchmark the http mount: page reads, and link computation as the site grows.

1. A real gunicorn (one gthread worker, 8 threads) serves this project's site; the mount reads
   one docs page as text and as stat, N times each, through the namespace, against the same page
   fetched with a plain httpx client and extracted with BeautifulSoup (lxml) in the same run.
2. The links of one page (its markdown, its view, alternates; the markdown's renders-as), with
   no fetch, for a checkout of 10 and of 2,000 docs pages: the cost must not grow with the site.

Run: ``.venv/bin/python bench/http_reads.py [N]`` (needs beautifulsoup4 and lxml for the
baseline; without them the baseline is skipped and said so).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


PORT = free_port()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.http.gunicorn_settings")
os.environ["TM_TEST_PORT"] = str(PORT)
os.environ.setdefault("TM_RATE_LIMIT", "0")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from django.conf import settings  # noqa: E402

from tmsite.mounts import registry  # noqa: E402
from tmsite.mounts.namespace import Namespace  # noqa: E402

SITE = "tinymachines.ai"
PAGE = "/docs/namespace"


def timed(label: str, count: int, call: Callable[[], object]) -> tuple[float, float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    samples.sort()
    p50 = statistics.median(samples) * 1000
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1000
    print(f"  {label:<44} {count / sum(samples):8.0f}/s  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms")
    return p50, p99


def reads(count: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TM_SECRET_KEY": "bench"}
    with tempfile.TemporaryDirectory() as var:
        env["TM_VAR_DIR"] = var
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT, env=env, check=True,
        )  # fmt: skip
        gunicorn = Path(sys.executable).parent / "gunicorn"
        process = subprocess.Popen(
            [str(gunicorn), "tmsite.wsgi", "--bind", f"127.0.0.1:{PORT}", "--workers", "1",
             "--worker-class", "gthread", "--threads", "8"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{PORT}"
            for _ in range(200):
                try:
                    httpx.get(base + "/robots.txt", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            registry.reset()
            ns = registry.namespace()
            uri = f"tm://{settings.TM_HOST}/http/{SITE}{PAGE}"
            ns.read(uri)
            print(f"page reads of {PAGE}, {count} each, one gunicorn worker (8 threads):")
            timed("http mount, ?as=text", count, lambda: ns.read(uri))
            timed("http mount, ?as=stat", count, lambda: ns.read(uri + "?as=stat"))
            try:
                from bs4 import BeautifulSoup
            except ImportError:
                print("  (baseline skipped: beautifulsoup4/lxml are not installed)")
                return
            with httpx.Client(headers={"Host": SITE}) as client:

                def baseline() -> str:
                    html = client.get(base + PAGE).text
                    soup = BeautifulSoup(html, "lxml")
                    main = soup.find("main") or soup.body
                    for tag in main.find_all(["nav", "aside", "script", "style"]):
                        tag.decompose()
                    return str(main.get_text("\n", strip=True))

                timed("httpx + BeautifulSoup(lxml), main text", count, baseline)
                timed("httpx GET alone (keep-alive client)", count, lambda: client.get(base + PAGE))
        finally:
            process.terminate()
            process.wait(timeout=20)


def links(count: int) -> None:
    from tmsite.mounts.fs.mount import FsMount
    from tmsite.mounts.http.fetch import FrontDoor
    from tmsite.mounts.http.mount import HttpMount, Site

    print("links of one page (no fetch), as the site grows:")
    for size in (10, 2000):
        with tempfile.TemporaryDirectory() as tmp:
            checkout = Path(tmp)
            for index in range(size):
                path = checkout / "docs" / f"part{index % 20}" / f"page{index}.md"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"# Page {index}\n")
            (checkout / "data").mkdir()
            settings.TM_CHECKOUT = checkout
            host = settings.TM_HOST
            http = HttpMount(
                host, [Site(SITE, "self", FrontDoor.parse(f"http://127.0.0.1:{PORT}"))]
            )
            ns = Namespace(host, {"fs": FsMount(host, checkout, ["docs", "data"]), "http": http})
            site = http.sites[SITE]
            page = "/docs/part3/page3"
            identity = http.page_uri(SITE, page)
            markdown = ns.mounts["fs"].uri("docs", "part3", "page3.md")

            def compute(
                http: HttpMount = http,
                site: Site = site,
                identity: object = identity,
                ns: Namespace = ns,
                markdown: object = markdown,
                page: str = page,
            ) -> None:
                http._page_links(site, page, identity, None)  # type: ignore[arg-type]
                ns.links_into(markdown)  # type: ignore[arg-type]

            compute()
            timed(f"{size:>5} docs pages", count, compute)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    reads(n)
    links(n)
