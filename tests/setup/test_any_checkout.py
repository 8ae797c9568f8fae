"""Any checkout: ``make run`` serves a repository that has none of this site's records.

The other repository is built with dulwich in a temporary directory: a README, ``docs/`` and
``src/`` (with public names the old deny-list hid: ``credential.c``, ``.mailmap``, ``.github/``),
a secret-shaped ``.env``, two commits and a tag — no ``data/`` at all. ``TM_CHECKOUT`` and
``TM_FS_ROOTS`` point the box at it. In-process, every tool answers (an empty overview saying
why), the root names no help document that does not exist and leaves ``offbox/`` out, and the
records load says what is absent. Over ``make run``, ``manage.py check`` agrees with what starts,
every tool and ``GET /api/v1/overview`` answer, and a walk over the links finds none dead.

Spec: ANY1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import deque
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core.management import call_command
from dulwich import porcelain

from tests.setup.test_make_run import ROOT, Output, free_port, make, make_env
from tests.wire_schema import check_http
from tmsite import operations
from tmsite.core.errors import NotFound
from tmsite.mcp import lifecycle
from tmsite.mounts import registry

pytestmark = pytest.mark.spec("ANY1")

HOST = "tinymachines"
LINKS = "tinymachines.ai/links"
FILES = {
    "README.md": b"# Another project\n\nNot this site's.\n",
    "docs/guide.md": b"# Guide\n\nSee the [source](../src/main.c).\n",
    "docs/notes/later.md": b"# Later\n",
    "src/main.c": b"int main(void) { return 0; }\n",
    "src/credential.c": b"/* public source about credential helpers */\n",
    ".mailmap": b"Ada <ada@example.org>\n",
    ".github/workflows/ci.yml": b"on: push\n",
    ".env": b"TOKEN=not-for-anyone\n",
}
ROOTS = "docs,src"


def build_other(root: Path) -> Path:
    """A repository nobody here wrote: two commits, a tag, none of this site's records."""
    porcelain.init(str(root))
    first = {k: v for k, v in FILES.items() if not k.startswith("docs/notes")}
    for files, message in ((first, b"first"), (FILES, b"second")):
        for name, content in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        porcelain.add(str(root), paths=[str(root / name) for name in files])
        porcelain.commit(
            str(root), message=message, author=b"A <a@example.org>", committer=b"A <a@example.org>"
        )
    porcelain.tag_create(str(root), b"v1.0")
    return root


@pytest.fixture
def other(tmp_path: Path, settings: Any) -> Any:
    checkout = build_other(tmp_path / "other")
    settings.TM_CHECKOUT = checkout
    settings.TM_FS_ROOTS = ROOTS.split(",")
    settings.TM_PIECES_FILE = checkout / "data" / "pieces.json"
    settings.TM_IMPORTS_FILE = checkout / "data" / "imports.json"
    registry.reset()
    yield checkout
    registry.reset()


@pytest.mark.django_db
def test_the_records_load_says_what_the_checkout_does_not_have(other: Path) -> None:
    out = StringIO()
    call_command("tm_load_records", stdout=out)
    said = out.getvalue()
    assert f"{other} has no data/autopsy.json or data/lessons.json" in said
    assert "loaded 0 patterns, 0 games, 0 routines, 0 instances, 0 lessons" in said


@pytest.mark.django_db
def test_every_tool_answers_plainly_without_the_pieces(other: Path) -> None:
    call_command("tm_load_records", stdout=StringIO())
    overview = operations.overview()
    assert overview.total == 0 and overview.pieces == []
    assert overview.note is not None
    assert "no pieces record (data/pieces.json, TM_PIECES_FILE)" in overview.note
    assert overview.start_here == f"tm://{HOST}/"  # no guide in this checkout: the root
    with pytest.raises(NotFound) as refused:
        operations.piece("chip-api")
    assert refused.value.data["reason"] == "not-found"
    assert refused.value.data["valid"] == []
    assert "no pieces record" in str(refused.value)
    licensing = operations.licensing()
    assert licensing["summary"].startswith("Nothing to license: the served checkout has no")
    assert licensing["per_piece"] == []


@pytest.mark.django_db
def test_the_root_names_only_what_this_checkout_has(other: Path) -> None:
    call_command("tm_load_records", stdout=StringIO())
    root = operations.read(f"tm://{HOST}/")
    assert isinstance(root.body, dict)
    assert "help" not in root.body
    assert all(link.rel != "help" for link in root.links)
    names = [child["name"] for child in root.body["children"]]
    assert "offbox/" not in names and "fs/" in names and "git/" in names
    assert "fs/docs/mcp.md" not in lifecycle.instructions()
    assert operations.help_uri() is None
    mapped = [entry.uri for entry in operations.resource_map(None).entries]
    assert f"tm://{HOST}/offbox/" not in mapped
    offbox = operations.read(f"tm://{HOST}/offbox/")
    assert isinstance(offbox.body, dict)
    assert offbox.body["children"] == []
    assert offbox.body["absent"] == (
        "the served checkout has no data/lineage.json: nothing is named as kept off the box"
    )
    entity = operations.read(f"tm://{HOST}/entity/")
    assert isinstance(entity.body, dict)
    assert "no records are loaded" in str(entity.body["absent"])
    fs = next(t for t in operations.templates() if t.name == "fs")
    assert "Files under the checkout's docs/ and src/." in fs.description
    assert "data/" not in fs.description
    fs_entry = next(c for c in root.body["children"] if c["name"] == "fs/")
    assert fs_entry["what"].endswith("allow-listed roots (docs and src).")


@pytest.mark.django_db
def test_with_the_guide_the_root_and_instructions_name_it(other: Path) -> None:
    (other / "docs" / "mcp.md").write_text("# How to use this server\n")
    registry.reset()
    root = operations.read(f"tm://{HOST}/")
    assert isinstance(root.body, dict)
    assert root.body["help"] == f"tm://{HOST}/fs/docs/mcp.md"
    assert f"The first document to read is tm://{HOST}/fs/docs/mcp.md." in lifecycle.instructions()
    assert "How to use this server" in str(operations.read(root.body["help"]).body)


# ---- make run against the other checkout --------------------------------------------------


def rpc(http: httpx.Client, url: str, method: str, **params: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = http.post(url, json=body, headers={"MCP-Protocol-Version": "2025-11-25"})
    assert answer.status_code == 200, answer.text
    check_http(
        answer.request.headers,
        answer.request.content,
        answer.headers.get("content-type", ""),
        answer.content,
    )
    got: dict[str, Any] = answer.json()
    return got


TOOL_CALLS: dict[str, dict[str, Any]] = {
    "overview": {},
    "piece": {"key": "chip-api"},
    "licensing": {},
    "resolve": {"uri": f"tm://{HOST}/fs/docs/guide.md"},
    "search": {"query": "guide"},
    "propose": {
        "kind": "address",
        "uri": f"tm://{HOST}/fs/docs/install.md",
        "expected": "how to install it",
    },
}
#: What ``search`` finds in this checkout once its keeper has indexed it: files, a commit.
SEARCHED = {
    "guide": f"tm://{HOST}/fs/docs/guide.md",
    "credential": f"tm://{HOST}/fs/src/credential.c",
    "second": f"tm://{HOST}/git/tmsite/?at=",
}


def searched(
    http: httpx.Client, url: str, query: str, wanted: str, seconds: float = 60
) -> list[str]:
    """The documents ``search`` answers for ``query``, once one starts with ``wanted`` (the
    keeper indexes in rounds) or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while True:
        got = rpc(http, url, "tools/call", name="search", arguments={"query": query})
        answer = json.loads(got["result"]["content"][0]["text"])
        assert not got["result"].get("isError", False), answer
        documents = [hit["document"] for hit in answer["hits"]]
        if any(d.startswith(wanted) for d in documents) or time.monotonic() > deadline:
            return documents
        time.sleep(0.5)


#: Addresses the walk must reach: this checkout's files, its history, its pages.
WALKED = (
    f"tm://{HOST}/fs/src/main.c",
    f"tm://{HOST}/fs/docs/notes/later.md",
    f"tm://{HOST}/fs/src/credential.c",
    f"tm://{HOST}/git/tmsite/.mailmap",
    f"tm://{HOST}/git/tmsite/.github/workflows/ci.yml",
)


def walk_links(http: httpx.Client, url: str, limit: int) -> tuple[list[str], list[tuple[str, str]]]:
    """Read from the root along every link and listed child, breadth first.

    Returns the addresses read and the links (from, to) whose target was refused.
    """
    start = f"tm://{HOST}/"
    queue, seen, dead = deque([(start, "")]), {start}, []
    read: list[str] = []
    while queue and len(read) < limit:
        uri, came_from = queue.popleft()
        got = rpc(http, url, "resources/read", uri=uri)
        read.append(uri)
        if "error" in got:
            dead.append((came_from, f"{uri}: {got['error']['message']}"))
            continue
        hrefs = [link["href"] for link in got["result"].get("_meta", {}).get(LINKS, [])]
        content = got["result"]["contents"][0]
        if content["mimeType"].endswith("+json") and "text" in content:
            body = json.loads(content["text"])
            children = body.get("children", []) if isinstance(body, dict) else []
            hrefs += [c["uri"] for c in children if isinstance(c, dict) and not c.get("redacted")]
        for href in hrefs:
            if href not in seen:
                seen.add(href)
                queue.append((href, uri))
    return read, dead


@pytest.mark.slow
def test_make_run_serves_another_repository(tmp_path: Path) -> None:
    checkout = build_other(tmp_path / "other")
    var_dir = tmp_path / "var"
    env = {**make_env(var_dir), "TM_CHECKOUT": str(checkout), "TM_FS_ROOTS": ROOTS}
    checked = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no issues" in checked.stdout
    port, demo_port = free_port(), free_port()
    started = subprocess.Popen(
        make("run", f"PORT={port}", f"DEMO_PORT={demo_port}", "WORKERS=1", "THREADS=4"),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output = Output(started)
    try:
        output.wait_for("tmsite is serving", 240, started)
        assert "has no data/autopsy.json or data/lessons.json" in output.text()
        assert "Traceback" not in output.text()
        site = f"http://127.0.0.1:{port}"
        url = f"{site}/api/mcp"
        with httpx.Client(timeout=60) as http:
            instructions = rpc(
                http,
                url,
                "initialize",
                protocolVersion="2025-11-25",
                capabilities={},
                clientInfo={"name": "any", "version": "1"},
            )["result"]["instructions"]
            assert "mcp.md" not in instructions
            tools = rpc(http, url, "tools/list")["result"]["tools"]
            assert {tool["name"] for tool in tools} == set(TOOL_CALLS)
            for name, arguments in TOOL_CALLS.items():
                got = rpc(http, url, "tools/call", name=name, arguments=arguments)
                assert "result" in got, (name, got)
                answer = json.loads(got["result"]["content"][0]["text"])
                assert got["result"].get("isError", False) == (name == "piece"), (name, answer)
            assert answer["new"] is True  # the proposal was kept
            for query, document in SEARCHED.items():
                found = searched(http, url, query, document)
                assert any(d.startswith(document) for d in found), (query, found)
            secret = searched(http, url, "TOKEN", f"tm://{HOST}/", seconds=0)
            assert not any(".env" in d for d in secret), secret
            overview = http.get(f"{site}/api/v1/overview")
            assert overview.status_code == 200, overview.text
            assert overview.json()["total"] == 0 and "no pieces record" in overview.json()["note"]
            guide = rpc(http, url, "resources/read", uri=f"tm://{HOST}/fs/docs/guide.md")
            assert guide["result"]["contents"][0]["text"].startswith("# Guide")
            read, dead = walk_links(http, url, limit=600)
            assert dead == [], "\n".join(map(str, dead))
            for address in WALKED:
                assert address in read, (address, read)
            assert f"tm://{HOST}/offbox/" not in read
            env_file = rpc(http, url, "resources/read", uri=f"tm://{HOST}/git/tmsite/.env")
            assert env_file["error"]["data"]["reason"] == "denied"
    finally:
        try:
            os.killpg(started.pid, signal.SIGINT)
            started.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(started.pid, signal.SIGKILL)
            started.wait()
        except ProcessLookupError:
            pass
        output.thread.join(timeout=10)
    assert "make run: stopped." in output.text(), output.text()
