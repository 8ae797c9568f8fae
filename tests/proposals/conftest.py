"""A box to propose to: a checkout of docs and a trail, the shipped entities, a maintainer.

The namespace serves ``entity``, ``fs``, ``proposals`` and ``trail`` over a checkout in the
test's own directory; the rate limit's store is this process's memory (no file in ``var/``).
"""

from __future__ import annotations

import html
import json
import re
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from tests.explorer.conftest import page  # noqa: F401  (fixture: a headless Chromium page)
from tests.oplog.test_log_lines import written  # noqa: F401  (fixture: the request log's lines)
from tests.subscriptions.conftest import asgi_url, listen_url  # noqa: F401  (fixtures: streams)
from tmsite.callers import buckets
from tmsite.entities.loaders import fill, parse_records
from tmsite.kinds import counter as kind_counter
from tmsite.mcp import tools
from tmsite.mounts import registry

ROOT = Path(__file__).resolve().parents[2]
HOST = "tinymachines"
BASE = f"tm://{HOST}"
A = f"{BASE}/fs/docs/a.md"
B = f"{BASE}/fs/docs/b.md"
C = f"{BASE}/fs/docs/c.md"
PATTERN = f"{BASE}/entity/pattern/pad-poll"


@pytest.fixture
def box(tmp_path: Path, settings: Any) -> Path:
    """docs/a.md, b.md, c.md, mcp.md; notes/trails/walk.json (a, then b); the shipped entities."""
    root = tmp_path / "checkout"
    (root / "docs").mkdir(parents=True)
    for name in "abc":
        (root / "docs" / f"{name}.md").write_text(f"# {name}\n")
    (root / "docs" / "mcp.md").write_text("# Read me first\n")  # the root links it help
    trails = root / "notes" / "trails"
    trails.mkdir(parents=True)
    steps = [{"uri": A, "note": "first a"}, {"uri": B, "note": "then b"}]
    (trails / "walk.json").write_text(
        json.dumps({"title": "A walk", "description": "d", "steps": steps})
    )
    settings.TM_HOST = HOST
    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = ["docs", "notes"]
    settings.TM_MOUNTS = ["entity", "fs", "proposals", "trail"]
    settings.TM_RATE_STORE = "memory"
    buckets._stores.clear()
    registry.reset()
    fill(
        parse_records(
            (ROOT / "data/autopsy.json").read_bytes(), (ROOT / "data/lessons.json").read_bytes()
        )
    )
    yield root
    registry.reset()
    buckets._stores.clear()


def maintainer() -> User:
    """A staff user (not a superuser) who may view and decide proposals."""
    user = User.objects.create_user("maintainer", password="x", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=["tm_proposals", "tm_entities"],
            codename__in=["view_proposal", "change_proposal", "view_pattern", "change_pattern"],
        )
    )
    return user


def browser(user: User) -> Client:
    """A logged-in browser that sends the CSRF token only when the form carries it."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def form(client: Client, url: str) -> dict[str, Any]:
    """The form's inputs as the browser would post them (the CSRF token, text areas)."""
    reply = client.get(url)
    assert reply.status_code == 200, reply.status_code
    text = reply.content.decode()
    data: dict[str, Any] = {}
    for tag in re.findall(r"<input[^>]*>", text):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if not name or 'type="submit"' in tag or 'type="checkbox"' in tag:
            continue
        data[name.group(1)] = html.unescape(value.group(1)) if value else ""
    for name, value in re.findall(
        r'<textarea[^>]*name="([^"]+)"[^>]*>\s*(.*?)</textarea>', text, re.S
    ):
        data[name] = html.unescape(value)
    return data


def propose(**arguments: Any) -> dict[str, Any]:
    """``tools/call propose`` in this process: the tool result."""
    return tools.run("propose", arguments)


def answer(result: dict[str, Any]) -> dict[str, Any]:
    """The JSON a tool result carries (its error's fields too)."""
    value: dict[str, Any] = json.loads(result["content"][0]["text"])
    return value


def read(uri: str) -> dict[str, Any]:
    """A read as the resolve tool answers it (links in the body)."""
    result = tools.run("resolve", {"uri": uri})
    assert not result["isError"], result
    value: dict[str, Any] = result["structuredContent"]
    return value


def walk(start: str = f"{BASE}/", limit: int = 400) -> dict[str, str]:
    """Every address reachable from ``start`` through links, outside the entity mount but for
    the pattern and its links, each read's JSON as served."""
    seen: dict[str, str] = {}
    queue = deque([start])
    with kind_counter.quiet():
        while queue and len(seen) < limit:
            uri = queue.popleft()
            if uri in seen:
                continue
            result = tools.run("resolve", {"uri": uri})
            seen[uri] = json.dumps(result, sort_keys=True)
            if result["isError"]:
                continue
            for link in result["structuredContent"]["links"]:
                href = link["href"]
                if "/entity/" in href and not href.startswith(PATTERN):
                    continue
                if "?" in href or href in seen:
                    continue
                queue.append(href)
    return seen
