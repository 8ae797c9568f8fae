"""The trail assembler: a named, ordered walk through addresses, drawn as a trail.

Spec: BLOCKS, TRAILS.
"""

from __future__ import annotations

from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.assemble import Context
from tmsite.blocks.generic import mapping, title_of
from tmsite.blocks.registry import assembles
from tmsite.blocks.vocabulary import Block
from tmsite.core.types import Content


@assembles(kinds=("trail",), yields=("heading", "note", "trail"))
def trail(ctx: Context, content: Content) -> list[Block]:
    """A heading, the description as a note, then one ``trail`` block of the steps in order.

    A step without a string ``uri`` is left out; a step without ``n`` takes its place.
    """
    body = mapping(content.body)
    source = content.uri
    title = title_of(body, source)
    blocks: list[Block] = [v.heading(source, title)]
    if isinstance(body.get("description"), str) and body["description"]:
        blocks.append(v.note(source, body["description"]))
    steps = []
    for position, step in enumerate(body.get("steps") or [], start=1):
        if isinstance(step, dict) and isinstance(step.get("uri"), str):
            one: dict[str, Any] = {"n": int(step.get("n") or position), "href": step["uri"]}
            if step.get("note"):
                one["note"] = str(step["note"])
            steps.append(one)
    blocks.append(v.trail(source, title, steps))
    return blocks
