"""The http world: the canonical scenario as a static site, served over loopback for real.

A site the box serves but did not build: its files under ``tmp/site``, served by
:mod:`tmsite.demo.static_site` on a free loopback port (the site's front door), listed by its
``sitemap.xml``, fenced by its ``robots.txt``, described by its manifest. Beside the listed
files, a fenced file and an unlisted one hold the secret.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from tests.conformance.worlds import HOST, NOTES, RECORD, SECRET, World
from tmsite.demo.static_site import server
from tmsite.mounts.http.fetch import FrontDoor
from tmsite.mounts.http.mount import HttpMount, Site

SITE = "static.example"


def build_site(root: Path) -> None:
    files = {
        "alpha/notes.md": NOTES,
        "alpha/record.json": json.dumps(RECORD),
        "alpha/beta/deep.md": "# deep\n",
        "alpha/fenced.md": SECRET,
        "private/key.txt": SECRET,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    listed = ["alpha/notes.md", "alpha/record.json", "alpha/beta/deep.md", "alpha/fenced.md"]
    urls = "".join(f"<url><loc>https://{SITE}/{rel}</loc></url>" for rel in listed)
    (root / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    )
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /alpha/fenced.md\n")
    manifest = {
        "pages": {
            f"/{rel}": {"size": len((root / rel).read_bytes()), "files": [rel]}
            for rel in listed
            if rel != "alpha/fenced.md"
        }
    }
    (root / ".well-known").mkdir()
    (root / ".well-known" / "tm-manifest.json").write_text(json.dumps(manifest))


def world(tmp: Path) -> World:
    root = tmp / "site"
    build_site(root)
    httpd = server(root)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    door = FrontDoor.parse(f"http://127.0.0.1:{httpd.server_address[1]}")
    mount = HttpMount(HOST, [Site(SITE, "static", door)], deadline=5.0)
    base = f"tm://{HOST}/http/{SITE}/alpha/"
    port = httpd.server_address[1]
    return World(
        mount=mount,
        collection=base,
        leaf=base + "notes.md",
        typo=base + "notez.md",
        json_leaf=base + "record.json",
        # a page path is plain segments (bad-uri before any fetch); a path under Disallow is
        # denied, one not in the sitemap or on a site not configured is not-found
        hostile={
            base + "../../private/key.txt": "bad-uri",
            base + "%2e%2e/%2e%2e/private/key.txt": "bad-uri",
            base + "..%2f..%2fprivate/key.txt": "bad-uri",
            base + "..%5c..%5cprivate%5ckey.txt": "bad-uri",
            base + "fenced.md": "denied",
            f"tm://{HOST}/http/{SITE}/private/key.txt": "not-found",
            f"tm://{HOST}/http/127.0.0.1/private/key.txt": "not-found",
            f"tm://{HOST}/http/127.0.0.1%3A{port}/private/key.txt": "not-found",
            base + "notes.md%00.txt": "bad-uri",
        },
        secret=SECRET,
        complete_context={"site": SITE},
        complete_skip=1,
    )
