"""A checkout of trails served by the project's own routes, and maintainers to correct them."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from tmsite.mcp.protocol import META_LINKS_KEY
from tmsite.mounts import registry

HOST = "tinymachines"
T = f"tm://{HOST}/trail"
A = f"tm://{HOST}/fs/docs/a.md"
B = f"tm://{HOST}/fs/docs/b.md"
C = f"tm://{HOST}/fs/docs/c.md"


def trail_json(steps: list[tuple[str, str]], title: str = "A walk") -> str:
    return json.dumps(
        {"title": title, "description": "d", "steps": [{"uri": u, "note": n} for u, n in steps]}
    )


@pytest.fixture
def checkout(tmp_path: Path, settings: Any) -> Path:
    """docs/a.md, b.md, c.md; notes/trails/walk.json (a, then b) and broken.json (no JSON)."""
    root = tmp_path / "checkout"
    (root / "docs").mkdir(parents=True)
    for name in "abc":
        (root / "docs" / f"{name}.md").write_text(f"# {name}\n")
    trails = root / "notes" / "trails"
    trails.mkdir(parents=True)
    (trails / "walk.json").write_text(trail_json([(A, "first a"), (B, "then b")]))
    (trails / "broken.json").write_text("{not json")
    settings.TM_HOST = HOST
    settings.TM_CHECKOUT = root
    settings.TM_FS_ROOTS = ["docs", "notes"]
    settings.TM_MOUNTS = ["fs", "trail"]
    registry.reset()
    return root


def staff(name: str, *perms: str) -> User:
    """A staff user (not a superuser) with the named permissions of the trails app."""
    user = User.objects.create_user(name, password="x", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="tm_trails", codename__in=perms)
    )
    return user


@pytest.fixture
def maintainer(db: None) -> User:
    return staff("maintainer", "view_trail", "change_trail", "add_trail", "view_trailcorrection")


def browser(user: User) -> Client:
    """A logged-in browser that sends the CSRF token only when the form carries it."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def form(client: Client, url: str) -> dict[str, Any]:
    """The form's inputs as the browser would post them (the CSRF token, checked boxes)."""
    page = client.get(url)
    assert page.status_code == 200, page.status_code
    text = page.content.decode()
    data: dict[str, Any] = {}
    for tag in re.findall(r"<input[^>]*>", text):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if not name or 'type="submit"' in tag:
            continue
        if 'type="checkbox"' in tag and "checked" not in tag:
            continue
        data[name.group(1)] = html.unescape(value.group(1)) if value else "on"
    for name, value in re.findall(
        r'<textarea[^>]*name="([^"]+)"[^>]*>\s*(.*?)</textarea>', text, re.S
    ):
        data[name] = html.unescape(value)
    return data


def steps_of(data: dict[str, Any]) -> list[dict[str, str]]:
    steps = json.loads(data["steps_text"])
    assert isinstance(steps, list)
    return steps


def mcp_read(uri: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``resources/read`` over the MCP endpoint: the item, and its links."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    reply = Client().post(
        "/api/mcp",
        json.dumps(body),
        content_type="application/json",
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    assert reply.status_code == 200, reply.content
    answer = json.loads(reply.content)
    assert "result" in answer, answer
    item = answer["result"]["contents"][0]
    return item, list(answer["result"]["_meta"][META_LINKS_KEY])


def mcp_error(uri: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    reply = Client().post(
        "/api/mcp",
        json.dumps(body),
        content_type="application/json",
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    answer = json.loads(reply.content)
    assert "error" in answer, answer
    error: dict[str, Any] = answer["error"]
    return error


def trail_body(name: str) -> dict[str, Any]:
    item, _ = mcp_read(f"{T}/{name}")
    body: dict[str, Any] = json.loads(item["text"])
    return body


def step_of(uri: str) -> list[tuple[str, str]]:
    """The ``tm:step-of`` links of ``uri``'s read: (trail, title)."""
    _, links = mcp_read(uri)
    return [(lk["href"], lk.get("title", "")) for lk in links if lk["rel"] == "tm:step-of"]
