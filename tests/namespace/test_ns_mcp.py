"""The namespace over MCP: the codes table per era, resources/* and completion through dispatch."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.namespace.world import HOST, SECRET
from tmsite import operations
from tmsite.core.errors import REASONS, REFUSALS, NotFound
from tmsite.core.parts import READ_CAP
from tmsite.mcp.codes import CODES, code_for, rpc_error
from tmsite.mcp.methods import dispatch
from tmsite.mcp.protocol import (
    INVALID_PARAMS,
    META_LINKS_KEY,
    RESOURCE_NOT_FOUND,
    CallContext,
    RpcError,
)
from tmsite.mounts import registry
from tmsite.mounts.memory.mount import MemoryMount
from tmsite.mounts.namespace import MAP_PAGE_SIZE, Namespace

pytestmark = pytest.mark.spec("RJ1", "RJ2", "NS6", "NS7", "LK1")

OLD = CallContext(version="2025-06-18")
NEW = CallContext(version="2026-07-28")
ERAS = pytest.mark.parametrize("ctx", [OLD, NEW], ids=["2025", "2026"])
DOCS = f"tm://{HOST}/fs/docs/"
ROOTS = [f"tm://{HOST}/fs/{root}/" for root in ("docs", "data", "notes")]
PARAM_REASONS = {"bad-facet", "bad-cursor", "bad-uri", "bad-argument"}


def test_every_reason_has_a_code_in_each_era() -> None:
    assert set(CODES) == set(REASONS) == set(REFUSALS)
    for reason in REASONS:
        assert set(CODES[reason]) == {"2025", "2026"}
        if reason in PARAM_REASONS:
            assert code_for(reason, "2025") == code_for(reason, "2026") == INVALID_PARAMS
        elif reason in {"rate-limited", "queue-full"}:
            assert code_for(reason, "2025") == code_for(reason, "2026") == -32000
        else:
            assert code_for(reason, "2025") == RESOURCE_NOT_FOUND == -32002
            assert code_for(reason, "2026") == INVALID_PARAMS == -32602


def test_rpc_error_carries_the_refusal_data() -> None:
    refusal = NotFound("tm://x/", "gone", nearest=["tm://x/a"])
    for era, code in (("2025", -32002), ("2026", -32602)):
        error = rpc_error(refusal, era)  # type: ignore[arg-type]
        assert error.to_json() == {
            "code": code,
            "message": "gone",
            "data": {"reason": "not-found", "uri": "tm://x/", "nearest": ["tm://x/a"]},
        }


class Refused(NamedTuple):
    code: int
    data: dict[str, Any]


def read_refused(uri: str, ctx: CallContext) -> Refused:
    with pytest.raises(RpcError) as caught:
        dispatch("resources/read", {"uri": uri}, ctx)
    error = caught.value
    assert error.data is not None
    assert SECRET not in json.dumps(error.to_json())
    assert error.code == code_for(error.data["reason"], ctx.era)
    return Refused(error.code, error.data)


@ERAS
def test_read_refusals_through_dispatch(process_namespace: Namespace, ctx: CallContext) -> None:
    resource = RESOURCE_NOT_FOUND if ctx.era == "2025" else INVALID_PARAMS
    typo = read_refused(DOCS + "notez.md", ctx)
    assert typo.code == resource
    assert typo.data == {
        "reason": "not-found",
        "uri": DOCS + "notez.md",
        "nearest": typo.data["nearest"],  # checked below
    }
    assert typo.data["nearest"][0] == DOCS + "notes.md" and len(typo.data["nearest"]) <= 5
    out = read_refused(DOCS + "..%2f..%2fprivate/key.txt", ctx)
    assert out.code == resource
    assert out.data == {
        "reason": "out-of-root",
        "uri": DOCS + "..%2F..%2Fprivate/key.txt",
        "roots": ROOTS,
    }
    escape = read_refused(DOCS + "escape.txt", ctx)
    assert escape.data == {"reason": "out-of-root", "uri": DOCS + "escape.txt", "roots": ROOTS}
    for denied in (DOCS + ".env", DOCS + ".netrc", DOCS + "no-such.pem"):
        assert read_refused(denied, ctx).data == {"reason": "denied", "uri": denied}
    big = read_refused(DOCS + "big.txt", ctx)
    assert big.code == resource
    assert big.data == {
        "reason": "too-large",
        "uri": DOCS + "big.txt",
        "size": 300 * 1024,
        "cap": READ_CAP,
        "range": DOCS + "big.txt?range={start}-{end}",
        "lines": DOCS + "big.txt?lines={first}-{last}",
        "stat": DOCS + "big.txt?as=stat",
    }
    facet = read_refused(DOCS + "notes.md?as=blame", ctx)
    assert facet.code == INVALID_PARAMS
    assert facet.data == {
        "reason": "bad-facet",
        "uri": DOCS + "notes.md?as=blame",
        "valid": ["raw", "stat", "links", "blocks"],
    }
    cursor = read_refused(DOCS + "?cursor=forged", ctx)
    assert cursor.code == INVALID_PARAMS and cursor.data["reason"] == "bad-cursor"
    bad = read_refused("http://example.org/", ctx)
    assert bad.code == INVALID_PARAMS
    assert bad.data == {"reason": "bad-uri", "uri": "http://example.org/"}
    host = read_refused("tm://elsewhere/", ctx)
    assert host.data == {
        "reason": "not-found",
        "uri": "tm://elsewhere/",
        "nearest": [f"tm://{HOST}/"],
    }


@ERAS
def test_read_answers_with_links_in_meta(process_namespace: Namespace, ctx: CallContext) -> None:
    result = dispatch("resources/read", {"uri": DOCS + "notes.md?lines=2-3"}, ctx)
    (item,) = result["contents"]
    assert item == {
        "uri": DOCS + "notes.md?lines=2-3",
        "mimeType": "text/markdown",
        "text": "two\nthree\n",
    }
    rels = {link["rel"] for link in result["_meta"][META_LINKS_KEY]}
    assert {"up", "collection", "describedby"} <= rels
    if ctx.era == "2026":
        assert result["resultType"] == "complete" and result["ttlMs"] > 0
    blob = dispatch("resources/read", {"uri": DOCS + "blob.bin"}, ctx)["contents"][0]
    assert blob["mimeType"] == "application/octet-stream" and "blob" in blob


def test_read_with_a_uri_that_is_not_a_string_is_invalid_params(
    process_namespace: Namespace,
) -> None:
    with pytest.raises(RpcError) as caught:
        dispatch("resources/read", {"uri": 5}, OLD)
    assert caught.value.code == INVALID_PARAMS
    with pytest.raises(RpcError) as caught:
        dispatch("resources/read", {}, NEW)
    assert caught.value.code == INVALID_PARAMS


def walk_map(ctx: CallContext) -> tuple[list[dict[str, Any]], int]:
    resources: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    pages = 0
    while True:
        result = dispatch("resources/list", params, ctx)
        assert len(result["resources"]) <= MAP_PAGE_SIZE
        resources += result["resources"]
        pages += 1
        if "nextCursor" not in result:
            return resources, pages
        assert len(result["resources"]) == MAP_PAGE_SIZE
        params = {"cursor": result["nextCursor"]}


@ERAS
def test_resources_list_is_a_map_paged_100_at_a_time(
    process_namespace: Namespace, checkout: Path, ctx: CallContext
) -> None:
    for i in range(250):
        (checkout / "docs" / "many" / f"d{i:03d}").mkdir(parents=True)
    (checkout / "docs" / "many" / "d000" / "leaf.md").write_text("leaf\n")
    (checkout / "docs" / "mcp.md").write_text("# read me first\n")
    resources, pages = walk_map(ctx)
    uris = [item["uri"] for item in resources]
    help_uri = f"tm://{HOST}/fs/docs/mcp.md"
    expected = {f"tm://{HOST}/", help_uri, f"tm://{HOST}/fs/"}
    for root in ("docs", "data", "notes"):
        for directory, dirnames, _ in os.walk(checkout / root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            rel = Path(directory).relative_to(checkout).as_posix()
            expected.add(f"tm://{HOST}/fs/{rel}/")
    assert len(uris) == len(set(uris)) == len(expected) > 250
    assert set(uris) == expected
    assert pages == -(-len(expected) // MAP_PAGE_SIZE)
    assert uris[:2] == [f"tm://{HOST}/", help_uri], "the root, then the document to read first"
    collections = resources[:1] + resources[2:]
    assert all(item["uri"].endswith("/") for item in collections), "no other leaf on the map"
    assert all(item["mimeType"].startswith("application/vnd.tm.") for item in collections)


@ERAS
def test_resources_list_refuses_a_bad_cursor(
    process_namespace: Namespace, ctx: CallContext
) -> None:
    for cursor in ("forged", "", "x" * 1000):
        with pytest.raises(RpcError) as caught:
            dispatch("resources/list", {"cursor": cursor}, ctx)
        assert caught.value.code == INVALID_PARAMS
        assert caught.value.data is not None and caught.value.data["reason"] == "bad-cursor"


def memory_namespace(monkeypatch: pytest.MonkeyPatch, tree: dict[str, Any]) -> Namespace:
    ns = Namespace(HOST, {"memory": MemoryMount(HOST, tree)})
    monkeypatch.setattr(operations, "namespace", lambda: ns)
    return ns


def test_resources_list_over_a_memory_mount_of_250_directories(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tree = {f"dir{i:03d}": {"a.md": "a"} for i in range(250)}
    memory_namespace(monkeypatch, tree)
    resources, pages = walk_map(NEW)
    uris = [item["uri"] for item in resources]
    assert pages == 3
    assert uris[:2] == [f"tm://{HOST}/", f"tm://{HOST}/memory/"]
    assert uris[2:] == [f"tm://{HOST}/memory/dir{i:03d}/" for i in range(250)]
    # A map cursor is not a listing cursor.
    first = dispatch("resources/list", {}, NEW)["nextCursor"]
    with pytest.raises(RpcError) as caught:
        dispatch("resources/read", {"uri": f"tm://{HOST}/memory/?cursor={first}"}, NEW)
    assert caught.value.data is not None and caught.value.data["reason"] == "bad-cursor"


@ERAS
def test_templates_teach_the_grammar(process_namespace: Namespace, ctx: CallContext) -> None:
    result = dispatch("resources/templates/list", {}, ctx)
    templates = {item["uriTemplate"]: item for item in result["resourceTemplates"]}
    assert list(templates)[:2] == ["tm://", f"tm://{HOST}/"]
    assert f"tm://{HOST}/fs/{{+path}}" in templates
    for item in templates.values():
        assert item["name"] and item["title"] and len(item["description"]) > 20
    if ctx.era == "2026":
        assert result["resultType"] == "complete" and "ttlMs" in result


def complete(
    ctx: CallContext, template: str, name: str, value: str, ref: str = "ref/resource"
) -> dict[str, Any]:
    params = {"ref": {"type": ref, "uri": template}, "argument": {"name": name, "value": value}}
    result: dict[str, Any] = dispatch("completion/complete", params, ctx)["completion"]
    return result


@ERAS
def test_completion_offers_live_values(
    process_namespace: Namespace, checkout: Path, ctx: CallContext
) -> None:
    template = f"tm://{HOST}/fs/{{+path}}"
    assert complete(ctx, template, "path", "d")["values"] == ["docs/", "data/"]
    got = complete(ctx, template, "path", "docs/no")
    assert got == {"values": ["docs/notes.md"], "total": 1, "hasMore": False}
    hidden = complete(ctx, template, "path", "docs/")["values"]
    assert "docs/.env" not in hidden and "docs/.netrc" not in hidden
    assert "docs/guide/" in hidden
    for i in range(250):
        (checkout / "notes" / f"n{i:03d}.md").write_text("n")
    many = complete(ctx, template, "path", "notes/n")
    assert len(many["values"]) == 100 and many["hasMore"] is True and many["total"] > 100
    assert many["values"] == [f"notes/n{i:03d}.md" for i in range(100)]
    assert complete(ctx, template, "as", "s")["values"] == ["stat"]


def test_completion_total_is_exact_when_the_mount_answers_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory_namespace(monkeypatch, {f"f{i:03d}.md": "x" for i in range(250)})
    got = complete(NEW, f"tm://{HOST}/memory/{{+path}}", "path", "f")
    assert got["total"] == 250 and got["hasMore"] is True
    assert got["values"] == [f"f{i:03d}.md" for i in range(100)]


@ERAS
def test_completion_refusals(process_namespace: Namespace, ctx: CallContext) -> None:
    template = f"tm://{HOST}/fs/{{+path}}"
    with pytest.raises(RpcError) as caught:
        complete(ctx, template, "colour", "")
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data == {"reason": "bad-argument", "uri": template, "valid": ["path", "as"]}
    with pytest.raises(RpcError) as caught:
        complete(ctx, f"tm://{HOST}/nope/{{x}}", "x", "")
    assert caught.value.data is not None and caught.value.data["reason"] == "bad-argument"
    assert template in caught.value.data["valid"]
    with pytest.raises(RpcError) as caught:
        dispatch(
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}},
            ctx,
        )
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data == {
        "reason": "bad-argument",
        "valid": ["first-session", "explain-address"],
    }
    with pytest.raises(RpcError) as caught:
        dispatch(
            "completion/complete",
            {"ref": {"type": "ref/other", "name": "p"}, "argument": {"name": "a", "value": ""}},
            ctx,
        )
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data == {"reason": "bad-argument", "valid": ["ref/resource", "ref/prompt"]}
    with pytest.raises(RpcError) as caught:
        dispatch("completion/complete", {"ref": {"type": "ref/resource"}}, ctx)
    assert caught.value.code == INVALID_PARAMS


def test_the_process_namespace_follows_settings(
    process_namespace: Namespace, settings: Any
) -> None:
    assert registry.namespace() is process_namespace
    assert process_namespace.host == HOST and list(process_namespace.mounts) == ["fs"]
    settings.TM_HOST = "another"
    registry.reset()
    assert registry.namespace().host == "another"
