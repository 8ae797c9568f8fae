"""The demo MCP server: the chemical elements, over the official SDK's high-level API.

Tools: ``get_element``, ``search_elements``, ``list_elements`` (each with input and output
schemas; failures are tool errors the model can read). Resources: ``elements://about`` (what the
dataset is and its terms), ``elements://table`` (the whole table as JSON) and the template
``elements://element/{symbol}``, whose argument completes from the symbols. One prompt,
``explain_element``.

Spec: OP5.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
    ToolAnnotations,
)
from pydantic import BaseModel, Field

from tmsite.demo.mcp_server.elements import ELEMENTS, Element, find, search

NAME = "tmsite-elements"
VERSION = "1.0.0"
PAGE_SIZE = 20

INSTRUCTIONS = (
    "Facts about the 118 chemical elements: atomic number, symbol, name, atomic mass, group, "
    "period and block. Call get_element with a symbol (e.g. 'Fe') for one element, "
    "search_elements with part of a name, a symbol or an atomic number when unsure, and "
    "list_elements to page through the table in atomic-number order. An unknown symbol is a "
    "tool error that says what is valid. Read elements://about for the dataset's terms."
)

ABOUT = (
    "The chemical elements, 1–118: atomic number, symbol, English name, atomic mass and place "
    "in the periodic table. Masses are conventional standard atomic weights (abridged); for an "
    "element with no stable isotope the mass is the mass number of its longest-lived known "
    "isotope (mass_basis says which). Groups follow the IUPAC layout with Sc, Y, Lu, Lr in "
    "group 3; La–Yb and Ac–No are f-block and carry no group. These are facts of nature, in "
    "the public domain.\n"
)


class ElementOut(BaseModel):
    """One chemical element."""

    number: int = Field(description="Atomic number (protons in the nucleus), 1–118.")
    symbol: str = Field(description="Chemical symbol, e.g. 'Fe'.")
    name: str = Field(description="English name (IUPAC spelling).")
    atomic_mass: float = Field(description="Atomic mass in daltons; see mass_basis.")
    mass_basis: str = Field(
        description="'standard-atomic-weight', or 'longest-lived-isotope' when the element "
        "has no stable isotope and the mass is that isotope's mass number."
    )
    group: int | None = Field(description="IUPAC group 1–18; null inside the f-block.")
    period: int = Field(description="Period (row) 1–7.")
    block: str = Field(description="Block: s, p, d or f.")

    @classmethod
    def of(cls, element: Element) -> ElementOut:
        """The element as the tools answer it."""
        return cls(**asdict(element))


class SearchOut(BaseModel):
    """Elements matching a query, best first."""

    query: str = Field(description="The query as received.")
    matches: list[ElementOut] = Field(description="At most 20 elements, best match first.")


class PageOut(BaseModel):
    """One page of the table in atomic-number order."""

    page: int = Field(description="This page, 1-based.")
    pages: int = Field(description="How many pages there are.")
    elements: list[ElementOut] = Field(description="At most 20 elements.")


def _symbols() -> str:
    return ", ".join(e.symbol for e in ELEMENTS)


def build_server() -> MCPServer[Any]:
    """Build the demo server (one instance per process; transports are chosen by the caller)."""
    server: MCPServer[Any] = MCPServer(
        NAME,
        title="Chemical elements",
        description="The 118 chemical elements as public-domain facts.",
        instructions=INSTRUCTIONS,
        version=VERSION,
    )
    _add_tools(server)
    _add_resources(server)
    _add_prompt(server)
    return server


def _add_tools(server: MCPServer[Any]) -> None:
    """The three read-only tools, in the order ``tools/list`` gives them."""
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    @server.tool(
        title="One element",
        description="One element by its symbol (any case), e.g. 'Fe' or 'og'. An unknown symbol "
        "is a tool error listing the valid symbols.",
        annotations=read_only,
    )
    def get_element(symbol: str = Field(description="Chemical symbol, e.g. 'Fe'.")) -> ElementOut:
        element = find(symbol)
        if element is None:
            raise ToolError(f"No element has the symbol {symbol!r}. Valid symbols: {_symbols()}.")
        return ElementOut.of(element)

    @server.tool(
        title="Search elements",
        description="Elements whose symbol or atomic number equals the query, or whose name "
        "starts with or contains it (case-insensitive); at most 20, best first. An empty "
        "result is not an error.",
        annotations=read_only,
    )
    def search_elements(
        query: str = Field(description="A symbol, an atomic number, or part of a name."),
    ) -> SearchOut:
        return SearchOut(query=query, matches=[ElementOut.of(e) for e in search(query)])

    @server.tool(
        title="List elements",
        description=f"The table in atomic-number order, {PAGE_SIZE} a page. Page 1 is the first; "
        "a page past the end is a tool error naming the last page.",
        annotations=read_only,
    )
    def list_elements(
        page: int = Field(default=1, ge=1, description="Page number, 1-based."),
    ) -> PageOut:
        pages = -(-len(ELEMENTS) // PAGE_SIZE)
        if page > pages:
            raise ToolError(f"Page {page} is past the end: pages run from 1 to {pages}.")
        chunk = ELEMENTS[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        return PageOut(page=page, pages=pages, elements=[ElementOut.of(e) for e in chunk])


def _add_resources(server: MCPServer[Any]) -> None:
    """The two fixed resources and the one-element template, in listing order."""

    @server.resource(
        "elements://about",
        name="about",
        title="About this dataset",
        description="What the element table holds, where its numbers come from, its terms.",
        mime_type="text/plain",
    )
    def about() -> str:
        return ABOUT

    @server.resource(
        "elements://table",
        name="table",
        title="The whole table",
        description="All 118 elements as one JSON array, in atomic-number order.",
        mime_type="application/json",
    )
    def table() -> str:
        return json.dumps([asdict(e) for e in ELEMENTS], ensure_ascii=False)

    @server.resource(
        "elements://element/{symbol}",
        name="element",
        title="One element",
        description="One element as JSON; the symbol is case-insensitive and completes.",
        mime_type="application/json",
    )
    def element(symbol: str) -> str:
        found = find(symbol)
        if found is None:
            raise ValueError(f"No element has the symbol {symbol!r}.")
        return json.dumps(asdict(found), ensure_ascii=False)


def _add_prompt(server: MCPServer[Any]) -> None:
    """The one prompt, and completion of the ``symbol`` argument (prompt and template)."""

    @server.prompt(
        title="Explain an element", description="Ask for a short account of one element."
    )
    def explain_element(symbol: str) -> str:
        return (
            f"Read elements://element/{symbol} and explain in three sentences where this element "
            "sits in the periodic table and what that says about its chemistry."
        )

    # The SDK leaves this decorator unannotated; the handler below is fully typed.
    @server.completion()  # type: ignore[no-untyped-call, untyped-decorator]
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        if argument.name != "symbol":
            return None
        prefix = argument.value.strip().lower()
        values = [e.symbol for e in ELEMENTS if e.symbol.lower().startswith(prefix)]
        return Completion(values=values[:100], total=len(values), has_more=len(values) > 100)
