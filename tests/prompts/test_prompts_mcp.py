"""``prompts/list``, ``prompts/get`` and ``completion/complete`` on ``ref/prompt``, over real
loopback HTTP, in the initialize era (2025-11-25) and the stateless era (2026-07-28).

Every answer is validated against the protocol's schema for the revision it was served in; an
embedded resource is compared with what ``resources/read`` answers for the same URI; every
refusal is asserted whole (code, message, ``data``).

Spec: PR1.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp_types.methods import validate_server_result

from tests.http.conftest import HOST, SITE
from tests.prompts.conftest import FS_TEMPLATE, PAGE, SOURCE
from tests.transport.transport_helpers import modern_headers, modern_request, post

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("PR1")]

ERAS = ("2025-11-25", "2026-07-28")
PROMPTS = ["first-session", "explain-address"]
LINKS = "tinymachines.ai/links"
SITES = [f"tm://{HOST}/http/", f"tm://{HOST}/http/{SITE}/"]


def ask(http: httpx.Client, url: str, version: str, method: str, **params: Any) -> dict[str, Any]:
    """One request in ``version``'s era; the whole JSON-RPC answer (HTTP 200 either way)."""
    if version == "2026-07-28":
        name = {"prompts/get": params.get("name"), "resources/read": params.get("uri")}.get(method)
        body = modern_request(method, 1, **params)
        reply = post(http, url, body, headers=modern_headers(method, name))
    else:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = post(http, url, body, headers={"MCP-Protocol-Version": version})
    assert reply.status == 200, reply.content
    answer: dict[str, Any] = reply.json()
    assert answer["id"] == 1
    return answer


def result(http: httpx.Client, url: str, version: str, method: str, **params: Any) -> Any:
    answer = ask(http, url, version, method, **params)
    assert "error" not in answer, answer
    validate_server_result(method, version, answer["result"])
    return answer["result"]


def error(http: httpx.Client, url: str, version: str, method: str, **params: Any) -> Any:
    answer = ask(http, url, version, method, **params)
    assert "result" not in answer, answer
    return answer["error"]


@pytest.mark.parametrize("version", ERAS)
def test_the_capability_is_declared(box: str, http: httpx.Client, version: str) -> None:
    if version == "2026-07-28":
        caps = result(http, box, version, "server/discover")["capabilities"]
    else:
        init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}}
        caps = result(http, box, version, "initialize", **init)["capabilities"]
    assert caps["prompts"] == {"listChanged": False}
    assert "completions" in caps


@pytest.mark.parametrize("version", ERAS)
def test_prompts_list(box: str, http: httpx.Client, version: str) -> None:
    listed = result(http, box, version, "prompts/list")
    assert [p["name"] for p in listed["prompts"]] == PROMPTS
    first, explain = listed["prompts"]
    assert [(a["name"], a["required"]) for a in first["arguments"]] == [
        ("page", True),
        ("template", False),
    ]
    assert [(a["name"], a["required"]) for a in explain["arguments"]] == [("address", True)]
    for prompt in listed["prompts"]:
        assert prompt["title"] and prompt["description"]
        assert all(a["title"] and a["description"] for a in prompt["arguments"])
    assert "nextCursor" not in listed
    if version == "2026-07-28":
        assert listed["resultType"] == "complete"
        assert listed["ttlMs"] == 300_000 and listed["cacheScope"] == "public"
    else:
        assert not {"resultType", "ttlMs", "cacheScope"} & set(listed)


def _read(http: httpx.Client, url: str, version: str, uri: str) -> dict[str, Any]:
    """What ``resources/read`` answers, as an embedded resource carries it: item and links."""
    read = result(http, url, version, "resources/read", uri=uri)
    return {"resource": read["contents"][0], "_meta": {LINKS: read["_meta"][LINKS]}}


@pytest.mark.parametrize("version", ERAS)
def test_first_session_walks_to_the_source_with_what_the_box_answers(
    box: str, http: httpx.Client, version: str
) -> None:
    got = result(http, box, version, "prompts/get", name="first-session", arguments={"page": PAGE})
    assert (
        got["description"] == f"The first session, from a cold connection to the source of {PAGE}"
    )
    walk, page, source = got["messages"]
    assert walk["role"] == page["role"] == source["role"] == "user"
    text = walk["content"]["text"]
    steps = [line for line in text.splitlines() if line[:2] in {f"{n}." for n in range(1, 7)}]
    assert [step[:2] for step in steps] == ["1.", "2.", "3.", "4.", "5.", "6."]
    # this checkout has no docs/mcp.md: the instructions name no guide, the root instead
    assert f"The instructions say to start at tm://{HOST}/." in steps[0]
    templates = result(http, box, version, "resources/templates/list")["resourceTemplates"]
    assert f"2. `resources/templates/list`: {len(templates)} templates" in steps[1]
    assert f"The one used below is {FS_TEMPLATE}" in steps[1]
    assert f"3. Read tm://{HOST}/http/{SITE}/docs/nes/:" in steps[2]
    # the typed prefix is the source's own; the value is what completion/complete answers
    assert '{"name": "path", "value": "docs/nes/pi"}' in steps[3]
    completed = result(
        http,
        box,
        version,
        "completion/complete",
        ref={"type": "ref/resource", "uri": FS_TEMPLATE},
        argument={"name": "path", "value": "docs/nes/pi"},
    )["completion"]["values"]
    assert completed == ["docs/nes/pile.md"]
    assert steps[3].endswith("now docs/nes/pile.md.")
    assert f"5. Read {PAGE}?as=text: the page's text and its `tm:source` link, {SOURCE}" in steps[4]
    assert steps[5].startswith(f"6. Read {SOURCE}: the file itself (file (text/markdown")
    assert f"tm:renders-as → {PAGE}" in steps[5] and f"up → tm://{HOST}/fs/docs/nes/" in steps[5]

    # the embedded reads are the reads resources/read answers, links included
    assert page["content"]["type"] == source["content"]["type"] == "resource"
    assert {k: v for k, v in page["content"].items() if k != "type"} == _read(
        http, box, version, f"{PAGE}?as=text"
    )
    assert {k: v for k, v in source["content"].items() if k != "type"} == _read(
        http, box, version, SOURCE
    )
    assert source["content"]["resource"]["text"].startswith("# The pile")
    if version == "2026-07-28":
        assert got["resultType"] == "complete"
        assert "ttlMs" not in got and "cacheScope" not in got
    else:
        assert "resultType" not in got


@pytest.mark.parametrize("version", ERAS)
def test_first_session_with_another_template(box: str, http: httpx.Client, version: str) -> None:
    http_template = f"tm://{HOST}/http/{{site}}/{{+path}}{{?as}}"
    arguments = {"page": PAGE, "template": http_template}
    got = result(http, box, version, "prompts/get", name="first-session", arguments=arguments)
    walk = got["messages"][0]["content"]["text"]
    # the source does not fit that template: its first argument is completed from nothing
    assert f'"uri": "{http_template}"}}, argument {{"name": "site", "value": ""}}' in walk
    assert f"now {SITE}." in walk


@pytest.mark.parametrize("version", ERAS)
def test_explain_address_reads_it_and_its_links_one_step(
    box: str, http: httpx.Client, version: str
) -> None:
    got = result(
        http, box, version, "prompts/get", name="explain-address", arguments={"address": SOURCE}
    )
    ask_text, embedded = got["messages"]
    text = ask_text["content"]["text"]
    assert text.startswith(f"Say what {SOURCE} is")
    read = _read(http, box, version, SOURCE)
    assert {k: v for k, v in embedded["content"].items() if k != "type"} == read
    links = read["_meta"]["tinymachines.ai/links"]
    # every link, one step out, with what its target reads as
    assert f"- collection → tm://{HOST}/fs/docs/nes/: listing (" in text
    assert f"- tm:renders-as → {PAGE} — " in text and ": page (text/vnd.tm.page" in text
    assert f"- describedby → {SOURCE}?as=stat: stat (" in text
    assert text.count("\n- ") == len({link["href"] for link in links})


@pytest.mark.parametrize("version", ERAS)
def test_explain_address_says_which_link_is_refused(
    box: str, http: httpx.Client, version: str, settings: Any
) -> None:
    settings.TM_SITES = {SITE: {"kind": "self", "front_door": "http://127.0.0.1:9"}}
    from tmsite.mounts import registry

    registry.reset()
    got = result(
        http, box, version, "prompts/get", name="explain-address", arguments={"address": SOURCE}
    )
    text = got["messages"][0]["content"]["text"]
    assert (
        f"- tm:renders-as → {PAGE} — the page it renders as on {SITE}: refused (unreachable: "
        in text
    )


# ---- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ERAS)
def test_an_unknown_prompt_is_refused(box: str, http: httpx.Client, version: str) -> None:
    assert error(http, box, version, "prompts/get", name="nope") == {
        "code": -32602,
        "message": "no prompt named 'nope'; the prompts are first-session, explain-address",
        "data": {"reason": "bad-argument", "valid": PROMPTS},
    }


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        ({}, "page is required"),
        ({"page": ""}, "page is required"),
        ({"page": PAGE, "depth": "2"}, "depth is not an argument of it"),
    ],
)
def test_arguments_it_cannot_take_are_refused(
    box: str, http: httpx.Client, version: str, arguments: dict[str, str], problems: str
) -> None:
    assert error(http, box, version, "prompts/get", name="first-session", arguments=arguments) == {
        "code": -32602,
        "message": f"the prompt first-session cannot be rendered: {problems}. "
        "It takes page, template; it needs page.",
        "data": {"reason": "bad-argument", "valid": ["page", "template"], "required": ["page"]},
    }


@pytest.mark.parametrize("version", ERAS)
def test_arguments_that_are_not_strings_are_invalid_params(
    box: str, http: httpx.Client, version: str
) -> None:
    refused = error(
        http, box, version, "prompts/get", name="explain-address", arguments={"address": 7}
    )
    assert refused["code"] == -32602 and "data" not in refused
    assert refused["message"].startswith("prompts/get: arguments.address: ")


@pytest.mark.parametrize("version", ERAS)
def test_an_address_that_does_not_parse_is_bad_uri(
    box: str, http: httpx.Client, version: str
) -> None:
    arguments = {"address": "http://example.invalid/x"}
    assert error(
        http, box, version, "prompts/get", name="explain-address", arguments=arguments
    ) == {
        "code": -32602,
        "message": "only tm:// URIs are served here",
        "data": {"reason": "bad-uri", "uri": "http://example.invalid/x"},
    }


@pytest.mark.parametrize(("version", "code"), [("2025-11-25", -32002), ("2026-07-28", -32602)])
def test_an_address_that_does_not_resolve_is_the_reads_refusal(
    box: str, http: httpx.Client, version: str, code: int
) -> None:
    missing = f"tm://{HOST}/fs/docs/nes/pyle.md"
    refused = error(
        http, box, version, "prompts/get", name="explain-address", arguments={"address": missing}
    )
    read = error(http, box, version, "resources/read", uri=missing)
    assert refused == read
    assert refused["code"] == code
    assert refused["data"]["reason"] == "not-found" and refused["data"]["uri"] == missing
    assert SOURCE in refused["data"]["nearest"]
    page = error(
        http, box, version, "prompts/get", name="first-session", arguments={"page": PAGE + "s"}
    )
    assert page["code"] == code and page["data"]["reason"] == "not-found"
    assert PAGE in page["data"]["nearest"]


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("page", [SOURCE, f"tm://{HOST}/http/{SITE}/docs/nes/"])
def test_first_session_starts_from_a_page(
    box: str, http: httpx.Client, version: str, page: str
) -> None:
    assert error(
        http, box, version, "prompts/get", name="first-session", arguments={"page": page}
    ) == {
        "code": -32602,
        "message": "first-session starts from a page: an address below tm://<host>/http/<site>/ "
        "that does not end in /",
        "data": {"reason": "bad-argument", "uri": page, "valid": SITES},
    }


@pytest.mark.parametrize("version", ERAS)
def test_an_unknown_template_is_refused_with_the_templates(
    box: str, http: httpx.Client, version: str
) -> None:
    arguments = {"page": PAGE, "template": f"tm://{HOST}/"}
    refused = error(http, box, version, "prompts/get", name="first-session", arguments=arguments)
    templates = result(http, box, version, "resources/templates/list")["resourceTemplates"]
    assert refused == {
        "code": -32602,
        "message": f"no template with the uriTemplate 'tm://{HOST}/' has arguments to complete",
        "data": {
            "reason": "bad-argument",
            "valid": [
                t["uriTemplate"]
                for t in templates
                if t["uriTemplate"] not in {"tm://", f"tm://{HOST}/"}
            ],
        },
    }
    assert FS_TEMPLATE in refused["data"]["valid"]


@pytest.mark.parametrize("version", ERAS)
def test_a_cursor_on_prompts_list_was_never_issued(
    box: str, http: httpx.Client, version: str
) -> None:
    assert error(http, box, version, "prompts/list", cursor="abc") == {
        "code": -32602,
        "message": "prompts/list is one page; this server issued no cursor for it",
        "data": {"reason": "bad-cursor"},
    }


# ---- completion on ref/prompt -------------------------------------------------------------


def complete(
    http: httpx.Client, url: str, version: str, prompt: str, argument: str, value: str
) -> Any:
    return result(
        http,
        url,
        version,
        "completion/complete",
        ref={"type": "ref/prompt", "name": prompt},
        argument={"name": argument, "value": value},
    )["completion"]


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize(
    ("prompt", "argument", "value", "values"),
    [
        ("first-session", "page", "", SITES),
        ("first-session", "page", "tm://tes", SITES),
        ("first-session", "page", f"tm://{HOST}/http/", [f"tm://{HOST}/http/{SITE}/"]),
        (
            "first-session",
            "page",
            f"tm://{HOST}/http/{SITE}/docs/nes/",
            [f"tm://{HOST}/http/{SITE}/docs/nes/alone", PAGE],
        ),
        ("first-session", "page", f"tm://{HOST}/http/{SITE}/docs/nes/p", [PAGE]),
        ("first-session", "page", f"tm://{HOST}/fs/", []),
        ("first-session", "template", f"tm://{HOST}/f", [FS_TEMPLATE]),
        ("explain-address", "address", f"tm://{HOST}/f", [f"tm://{HOST}/fs/"]),
        (
            "explain-address",
            "address",
            f"tm://{HOST}/fs/docs/nes/",
            [f"tm://{HOST}/fs/docs/nes/alone.md", f"tm://{HOST}/fs/docs/nes/index.md", SOURCE],
        ),
        ("explain-address", "address", f"tm://{HOST}/fs/docs/nes/pi", [SOURCE]),
        ("explain-address", "address", f"tm://{HOST}/fs/docs/nes/pile.md?as=", []),
        ("explain-address", "address", "tm://elsewhere/", []),
    ],
)
def test_prompt_arguments_complete_to_live_values(
    box: str,
    http: httpx.Client,
    version: str,
    prompt: str,
    argument: str,
    value: str,
    values: list[str],
) -> None:
    assert complete(http, box, version, prompt, argument, value) == {
        "values": values,
        "total": len(values),
        "hasMore": False,
    }


@pytest.mark.parametrize("version", ERAS)
def test_the_root_completes_to_itself_and_the_mounts(
    box: str, http: httpx.Client, version: str
) -> None:
    completion = complete(http, box, version, "explain-address", "address", "")
    assert completion["values"] == [f"tm://{HOST}/", f"tm://{HOST}/fs/", f"tm://{HOST}/http/"]


@pytest.mark.parametrize("version", ERAS)
def test_prompt_completion_refusals(box: str, http: httpx.Client, version: str) -> None:
    def refused(ref: dict[str, Any], argument: str) -> Any:
        params = {"ref": ref, "argument": {"name": argument, "value": ""}}
        return error(http, box, version, "completion/complete", **params)

    assert refused({"type": "ref/prompt", "name": "nope"}, "x") == {
        "code": -32602,
        "message": "no prompt named 'nope'; the prompts are first-session, explain-address",
        "data": {"reason": "bad-argument", "valid": PROMPTS},
    }
    assert refused({"type": "ref/prompt", "name": "explain-address"}, "page") == {
        "code": -32602,
        "message": "the prompt explain-address has no argument 'page'",
        "data": {"reason": "bad-argument", "valid": ["address"]},
    }
    assert refused({"type": "ref/prompt"}, "page") == {
        "code": -32602,
        "message": "completion is for a resource template (ref/resource with a uri) or a "
        "prompt (ref/prompt with a name)",
        "data": {"reason": "bad-argument", "valid": ["ref/resource", "ref/prompt"]},
    }


def test_a_prompt_costs_its_reads_and_logs_only_its_name() -> None:
    from tmsite.callers import costs

    arguments = {"address": "tm://secret/what-was-asked"}
    asked = costs.of_message("prompts/get", {"name": "explain-address", "arguments": arguments})
    assert asked == costs.Priced("prompt", 8, "explain-address")
    assert costs.of_rest("prompts/first-session", {"page": PAGE}) == costs.Priced(
        "prompt", 8, "first-session"
    )
    assert costs.of_rest("prompts", {}) == costs.Priced("protocol", 1, "prompts")
    completing = costs.of_rest("prompts/first-session/complete", {"argument": "page"})
    assert completing == costs.Priced("protocol", 1, "prompts")
    assert costs.of_message("prompts/list", {}) == costs.Priced("protocol", 1)
