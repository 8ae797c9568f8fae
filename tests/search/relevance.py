"""Questions about this box, each with the document that answers it (a relevance test set).

Asked of the index of the checkout's own ``docs/``, ``data/`` and ``notes/``; at least 90% must
have their answer among the first three hits.
"""

from __future__ import annotations

QUESTIONS: list[tuple[str, str]] = [
    ("how do I connect Claude Code?", "docs/clients.md"),
    ("configure VS Code for this server", "docs/clients.md"),
    ("set up Cursor", "docs/clients.md"),
    ("try it in the MCP Inspector", "docs/clients.md"),
    ("call the endpoint with curl", "docs/clients.md"),
    ("what does each refusal reason mean", "docs/refusals.md"),
    ("error codes per protocol era", "docs/refusals.md"),
    ("how many tokens does a request cost in the rate limit", "docs/operating.md"),
    ("run on many machines with PostgreSQL and Redis", "docs/operating.md"),
    ("listen streams behind nginx", "docs/operating.md"),
    ("reviewing proposals as a maintainer", "docs/operating.md"),
    ("what does tm:renders-as mean", "docs/links.md"),
    ("how sure is a link", "docs/links.md"),
    ("curated links", "docs/links.md"),
    ("read a file as it was at a revision", "docs/namespace.md"),
    ("parts lines pointer range", "docs/namespace.md"),
    ("facets as=stat as=raw", "docs/namespace.md"),
    ("the licensing tool and the data terms", "docs/tools.md"),
    ("which tools are there", "docs/tools.md"),
    ("subscriptions and resources/updated notifications", "docs/mcp.md"),
    ("the stateless 2026-07-28 revision", "docs/clients.md"),
    ("why is the transport hand-written", "notes/decisions.md"),
    ("granian or uvicorn", "notes/decisions.md"),
    ("are requests logged with who made them", "notes/decisions.md"),
    ("the NES pile", "docs/nes/pile.md"),
    ("where do I start", "docs/index.md"),
    ("what tmsite does not do", "docs/index.md"),
    ("halfwave console registry pieces", "data/pieces.json"),
    ("from a page to its history trail", "notes/trails/page-to-history.json"),
    ("where is each specification id built and checked", "docs/spec-ids.md"),
    ("購読", "docs/ja/mcp.md"),
    ("拒否", "docs/ja/mcp.md"),
    ("どこから始める", "docs/ja/index.md"),
    ("プロンプト", "docs/ja/mcp.md"),
    ("二通り", "docs/ja/index.md"),
    ("マウントは三つの操作", "docs/ja/mcp.md"),
]
