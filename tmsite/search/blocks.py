"""The search assembler: a search's hits drawn as a list, each linking to its passage.

Spec: BLOCKS, SRCH3.
"""

from __future__ import annotations

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import mapping
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.types import Content


@assembles(kinds=("search",), yields=("heading", "list", "note"))
def search(ctx: Context, content: Content) -> list[Block]:
    """A heading naming the words, one list item per hit (title, heading, snippet), ``next``."""
    body = mapping(content.body)
    source = content.uri
    blocks: list[Block] = [v.heading(source, f"Search: {body.get('query', '')}")]
    items = []
    for hit in body.get("hits") or []:
        if isinstance(hit, dict) and isinstance(hit.get("uri"), str):
            heading = f" › {hit['heading']}" if hit.get("heading") else ""
            where = f"{hit.get('title', '')}{heading}"
            text = f"{where} — {hit.get('snippet', '')}"
            items.append(v.bullet(text, hit["uri"], hit.get("mimeType")))
    if items:
        blocks.append(v.listing(source, items, ordered=True))
    else:
        blocks.append(v.note(source, f"Nothing below {body.get('scope', '')} says that."))
    if isinstance(body.get("next"), str):
        blocks.append(v.listing(source, [v.bullet("More hits", body["next"])]))
    return blocks
