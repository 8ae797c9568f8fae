"""Fixtures for the http mount: this project's site over live loopback HTTP, a static site
served by a real static server, and the process namespace reading both.

The served checkout (a temporary one):

```
<checkout>/
  docs/index.md           /docs, /ja/docs (fallback)
  docs/nes/index.md       /docs/nes, /ja/docs/nes (shadowed by docs/ja/nes/index.md)
  docs/nes/pile.md        /docs/nes/pile, /ja/docs/nes/pile (shadowed)
  docs/nes/alone.md       /docs/nes/alone, /ja/docs/nes/alone (fallback)
  docs/ja/nes/index.md, docs/ja/nes/pile.md
  data/pieces.json        read by the pieces view; its note names scripts/write-pieces.py
  data/other.json         read by nobody; named by scripts/tally.py's text
  scripts/write-pieces.py, scripts/tally.py, scripts/deploy.sh
  secret.txt              outside the served roots
```
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tmsite.demo.static_site import server
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace

HOST = "testbox"
SITE = "tinymachines.ai"
DEMO = "demo.tinymachines.ai"
SECRET = "HTTP-MOUNT-SECRET-5e1f"
DEMO_DIR = Path(__file__).resolve().parents[2] / "demo_sites" / DEMO

PILE = """# The pile

What is in the pile.

- one
- two

```
a  b
c
```
"""


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build_checkout(root: Path) -> Path:
    write(root, "docs/index.md", "# Notes\n\nThe notebook.\n")
    write(root, "docs/nes/index.md", "# NES\n\nThe NES section.\n")
    write(root, "docs/nes/pile.md", PILE)
    write(root, "docs/nes/alone.md", "# Alone\n\nOnly in English.\n")
    write(root, "docs/ja/nes/index.md", "# NES（日本語）\n\nNES の節。\n")
    write(root, "docs/ja/nes/pile.md", "# 山\n\nスプライトの話。\n")
    pieces = {"note": "Written by scripts/write-pieces.py; do not edit.", "pieces": []}
    write(root, "data/pieces.json", json.dumps(pieces))
    write(root, "data/other.json", json.dumps({"rows": []}))
    write(root, "scripts/write-pieces.py", "print('pieces')\n")
    write(root, "scripts/tally.py", "OUT = 'data/other.json'\n")
    write(root, "scripts/deploy.sh", "# mentions other.json and pieces.json\n")
    write(root, "secret.txt", SECRET)
    (root / "notes").mkdir()
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return build_checkout(tmp_path / "checkout")


@pytest.fixture
def demo_door() -> Iterator[str]:
    """The demo static site, served by a real static server on a free loopback port."""
    httpd = server(DEMO_DIR)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def configure(settings: Any, door: str, demo_door: str | None, checkout: Path, **more: Any) -> None:
    sites: dict[str, dict[str, str]] = {SITE: {"kind": "self", "front_door": door}}
    if demo_door is not None:
        sites[DEMO] = {"kind": "static", "front_door": demo_door}
    settings.TM_SITES = sites
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, SITE, "beta.tinymachines.ai"]
    settings.TM_HOST = HOST
    settings.TM_CHECKOUT = checkout
    settings.TM_FS_ROOTS = ["docs", "data", "notes"]
    settings.TM_MOUNTS = more.pop("mounts", ["fs", "http"])
    settings.TM_HTTP_DEADLINE = more.pop("deadline", 10.0)
    for key, value in more.items():
        setattr(settings, key, value)


@pytest.fixture
def ns(live_server: Any, settings: Any, checkout: Path, demo_door: str) -> Iterator[Namespace]:
    """The process namespace: fs over the checkout, http over the live site and the demo."""
    configure(settings, live_server.url, demo_door, checkout)
    registry.reset()
    yield registry.namespace()
    registry.reset()


def uri(*path: str, collection: bool = False, **params: str) -> str:
    from tmsite.core.uri import build

    return build(HOST, "http", path, collection=collection, params=params)
