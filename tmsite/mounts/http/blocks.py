"""The http mount's page text: a heading (the page's first line) over the numbered text.

The lines are numbered so a quote can cite ``?lines=`` of it. The rendered HTML is drawn by the
``text/html`` renderer in a sandbox (the generic text assembler), a page's stat by the core one.

Spec: BLOCKS, HTTP.
"""

from __future__ import annotations

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import text
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.parts import to_text
from tmsite.core.types import Content


@assembles(kinds=("page",), yields=("heading", "code"))
def page(ctx: Context, content: Content) -> list[Block]:
    """A page's text: its first non-blank line as the heading (else its address), then the text."""
    first = next((line.strip() for line in to_text(content.body).split("\n") if line.strip()), "")
    blocks = [v.heading(content.uri, first[:200] or content.uri, media_type=content.mime_type)]
    return blocks + text(ctx, content)
