"""Discovery documents: ``server.json`` against the MCP Registry's own schema, ``/llms.txt``
listing every document of the site (and following a change), each document's markdown."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command
from django.test import Client

pytestmark = [pytest.mark.urls("tests.site.urls"), pytest.mark.spec("OBS4")]

SCHEMA = Path(__file__).parent / "registry" / "server.schema.json"
PUBLIC = "https://box.example.org"
LINK = re.compile(r"^- \[(?P<title>(?:\\.|[^\]\\])*)\]\((?P<url>[^)\s]+)\): (?P<note>.*)$")


def _server_json(tmp_path: Path) -> dict[str, Any]:
    output = tmp_path / "server.json"
    call_command("tm_registry", "server-json", "--output", str(output), stderr=io.StringIO())
    data: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
    return data


def test_server_json_validates_against_the_registry_schema(tmp_path: Path, settings: Any) -> None:
    settings.TM_PUBLIC_URL = PUBLIC
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert schema["$id"].endswith("/2025-12-11/server.schema.json")
    data = _server_json(tmp_path)
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    assert [e.message for e in validator.iter_errors(data)] == []
    assert data["$schema"] == schema["$id"]
    assert data["remotes"] == [{"type": "streamable-http", "url": f"{PUBLIC}/api/mcp"}]
    assert data["name"] == "org.example.box/tinymachines"
    assert data["websiteUrl"] == f"{PUBLIC}/"
    assert {icon["src"] for icon in data["icons"]} == {f"{PUBLIC}/icon.svg", f"{PUBLIC}/icon.png"}
    assert data["title"] and data["description"] and data["version"]


def test_the_schema_refuses_what_the_registry_refuses(tmp_path: Path, settings: Any) -> None:
    # the kept schema is the registry's, with its limits: a long description does not pass
    settings.TM_PUBLIC_URL = PUBLIC
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    data = _server_json(tmp_path)
    data["description"] = "x" * 101
    data["name"] = "no-slash"
    errors = sorted(e.message for e in jsonschema.Draft7Validator(schema).iter_errors(data))
    assert len(errors) == 2
    assert "does not match" in errors[0] and "is too long" in errors[1]


def test_the_command_writes_to_stdout(settings: Any) -> None:
    settings.TM_PUBLIC_URL = PUBLIC
    out = io.StringIO()
    call_command("tm_registry", "server-json", stdout=out)
    assert json.loads(out.getvalue())["remotes"][0]["url"] == f"{PUBLIC}/api/mcp"


def _llms(client: Client) -> tuple[str, list[dict[str, str]]]:
    reply = client.get("/llms.txt")
    assert reply.status_code == 200
    assert reply["Content-Type"] == "text/plain; charset=utf-8"
    text = reply.content.decode()
    links = [m.groupdict() for line in text.splitlines() if (m := LINK.match(line))]
    return text, links


def test_llms_txt_lists_every_document_and_the_endpoint(
    client: Client, checkout: Path, settings: Any
) -> None:
    settings.TM_PUBLIC_URL = PUBLIC
    text, links = _llms(client)
    lines = text.splitlines()
    assert lines[0].startswith("# tinymachines")
    assert lines[2].startswith("> ")
    assert [line for line in lines if line.startswith("## ")] == [
        "## MCP",
        "## Docs",
        "## Docs in Japanese",
    ]
    assert links[0]["url"] == f"{PUBLIC}/api/mcp"
    docs = {link["url"].removeprefix(PUBLIC): (link["title"], link["note"]) for link in links[1:]}
    assert docs == {
        "/docs/index.md": ("Notes", "tm://tinymachines/fs/docs/index.md"),
        "/docs/nes.md": ("NES", "tm://tinymachines/fs/docs/nes/index.md"),
        "/docs/nes/alone.md": ("Alone", "tm://tinymachines/fs/docs/nes/alone.md"),
        "/docs/nes/pile.md": ("The pile", "tm://tinymachines/fs/docs/nes/pile.md"),
        "/ja/docs/nes.md": ("NES（日本語）", "tm://tinymachines/fs/docs/ja/nes/index.md"),
        "/ja/docs/nes/pile.md": ("山", "tm://tinymachines/fs/docs/ja/nes/pile.md"),
    }
    # each link is the markdown the page is made from, as it is
    for path, (_, note) in docs.items():
        reply = client.get(path)
        assert reply.status_code == 200, path
        assert reply["Content-Type"] == "text/markdown; charset=utf-8"
        source = note.removeprefix("tm://tinymachines/fs/")
        assert reply.content == (checkout / source).read_bytes()


def test_llms_txt_follows_the_documents(
    client: Client, checkout: Path, put: Callable[[str, str], Path]
) -> None:
    _, before = _llms(client)
    put("docs/nes/mapper.md", "# Mappers\n\nBank switching.\n")
    put("docs/nes/pile.md", "# The heap\n")
    (checkout / "docs" / "nes" / "alone.md").unlink()
    _, after = _llms(client)
    titles = {link["title"] for link in after}
    assert "Mappers" in titles and "The heap" in titles
    assert "The pile" not in titles and "Alone" not in titles
    assert len(after) == len(before)  # one added, one gone
    assert client.get("/docs/nes/mapper.md").content == b"# Mappers\n\nBank switching.\n"
    assert client.get("/docs/nes/alone.md").status_code == 404


def test_llms_txt_keeps_a_title_inside_its_link(
    client: Client, checkout: Path, put: Callable[[str, str], Path]
) -> None:
    put("docs/nes/odd.md", "# a ](javascript:x) [b\n")
    _, links = _llms(client)
    odd = next(link for link in links if link["url"].endswith("/docs/nes/odd.md"))
    assert odd["title"] == "a \\](javascript:x) \\[b"


@pytest.mark.parametrize(
    "path",
    [
        "/docs/nes/index.md",  # the section's page is /docs/nes.md
        "/docs/nes/nothing.md",
        "/docs/README.md",
        "/docs/_draft.md",
        "/docs/styles/x.md",
        "/docs/../settings.md",
        "/docs/%2e%2e/settings.md",
        "/docs/..%5csettings.md",
        "/docs.md",
    ],
)
def test_only_a_page_s_own_markdown_is_served(
    client: Client, checkout: Path, secret: str, path: str
) -> None:
    reply = client.get(path)
    assert reply.status_code == 404
    assert secret.encode() not in reply.content
