"""The REST twin of the prompts: ``/api/v1/prompts``, ``/api/v1/prompts/{name}`` (arguments
as query parameters) and ``/api/v1/prompts/{name}/complete``, over real loopback HTTP.

Each answer is compared with what its MCP twin answers on the same live server; a refusal has
the REST status for its reason and the same fields the JSON-RPC error carries in ``data``.

Spec: PR1.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.http.conftest import HOST
from tests.prompts.conftest import PAGE, SOURCE
from tests.prompts.test_prompts_mcp import error, result

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("PR1")]

VERSION = "2025-11-25"


def rest(http: httpx.Client, box: str, path: str, **query: str) -> httpx.Response:
    return http.get(box.removesuffix("/mcp") + "/v1" + path, params=query)


def ok(reply: httpx.Response) -> Any:
    assert reply.status_code == 200, reply.content
    assert reply.headers["content-type"].startswith("application/json")
    return reply.json()


def spelled(rpc_error: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC error as a REST refusal body spells it."""
    return {"error": rpc_error["message"], **rpc_error["data"]}


def test_the_list_is_prompts_list(box: str, http: httpx.Client) -> None:
    listed = ok(rest(http, box, "/prompts"))
    assert listed == result(http, box, VERSION, "prompts/list")["prompts"]
    assert [p["name"] for p in listed] == ["first-session", "explain-address"]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("first-session", {"page": PAGE}),
        ("first-session", {"page": PAGE, "template": f"tm://{HOST}/fs/{{+path}}"}),
        ("explain-address", {"address": SOURCE}),
    ],
)
def test_a_prompt_is_prompts_get(
    box: str, http: httpx.Client, name: str, arguments: dict[str, str]
) -> None:
    got = ok(rest(http, box, f"/prompts/{name}", **arguments))
    assert got == result(http, box, VERSION, "prompts/get", name=name, arguments=arguments)
    kinds = [message["content"]["type"] for message in got["messages"]]
    assert kinds == ["text", "resource", "resource"][: len(kinds)] and len(kinds) >= 2


@pytest.mark.parametrize(
    ("name", "arguments", "status"),
    [
        ("nope", {}, 400),
        ("first-session", {}, 400),
        ("first-session", {"page": PAGE, "colour": "red"}, 400),
        ("first-session", {"page": SOURCE}, 400),
        ("explain-address", {"address": "https://example.invalid/"}, 400),
        ("explain-address", {"address": f"tm://{HOST}/fs/docs/nes/pyle.md"}, 404),
        ("explain-address", {"address": f"tm://{HOST}/fs/../secret.txt"}, 404),
    ],
)
def test_refusals_have_the_status_of_their_reason_and_the_same_fields(
    box: str, http: httpx.Client, name: str, arguments: dict[str, str], status: int
) -> None:
    reply = rest(http, box, f"/prompts/{name}", **arguments)
    assert reply.status_code == status, reply.content
    twin = error(http, box, VERSION, "prompts/get", name=name, arguments=arguments)
    assert reply.json() == spelled(twin)


@pytest.mark.parametrize(
    ("name", "argument", "value"),
    [
        ("first-session", "page", f"tm://{HOST}/http/"),
        ("first-session", "template", ""),
        ("explain-address", "address", f"tm://{HOST}/fs/docs/"),
    ],
)
def test_completion_is_completion_complete_on_ref_prompt(
    box: str, http: httpx.Client, name: str, argument: str, value: str
) -> None:
    got = ok(rest(http, box, f"/prompts/{name}/complete", argument=argument, value=value))
    twin = result(
        http,
        box,
        VERSION,
        "completion/complete",
        ref={"type": "ref/prompt", "name": name},
        argument={"name": argument, "value": value},
    )["completion"]
    assert got == twin and got["values"]


def test_completion_refusals(box: str, http: httpx.Client) -> None:
    reply = rest(http, box, "/prompts/explain-address/complete", argument="page")
    assert reply.status_code == 400
    assert reply.json() == {
        "error": "the prompt explain-address has no argument 'page'",
        "reason": "bad-argument",
        "valid": ["address"],
    }
    reply = rest(http, box, "/prompts/explain-address/complete", value="tm://")
    assert reply.status_code == 400
    body = reply.json()
    assert body["reason"] == "bad-argument"
    assert body["error"].startswith(
        "prompts/explain-address/complete was called with parameters it cannot take: argument"
    )
