"""The official Python SDK 2.x ``Client`` calls ``search`` in both eras: 2026-07-28 (its
default) and a 2025-11-25 session (``mode="legacy"``). The SDK lists the tools first and checks
the answer's ``structuredContent`` against the tool's ``outputSchema`` itself (it raises when
they disagree), over real loopback HTTP.

Spec: SRCH1, SRCH2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.clients.sdk_clients import HOST
from tmsite.mounts import registry
from tmsite.search import index

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("SRCH1", "SRCH2")]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_search_in_both_eras_answers_what_its_output_schema_admits(
    mode: str, mcp_endpoint: str, box: Path
) -> None:
    index.sync({"fs": registry.namespace().mounts["fs"]})

    async def scenario() -> Any:
        async with Client(mcp_endpoint, mode=mode) as client:
            await client.list_tools()
            return await client.call_tool("search", {"query": "first file"})

    result = anyio.run(scenario)
    assert result.is_error is False
    [hit] = result.structured_content["hits"]
    assert hit["document"] == f"tm://{HOST}/fs/docs/a.md"
    assert "«first»" in hit["snippet"]
