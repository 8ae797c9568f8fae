"""The renderers world: ``renderers/text/`` lists the subtypes of text the site's modules draw.

The collection is ``renderers/text/`` under ``renderers/``; the leaf is ``text/markdown``, read
as ``application/vnd.tm.renderer+json``.
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance.worlds import HOST, World
from tmsite.core.types import vnd
from tmsite.mounts.renderers.mount import RenderersMount


def world(tmp: Path) -> World:
    root = f"tm://{HOST}/renderers/"
    base = root + "text/"
    return World(
        mount=RenderersMount(HOST),
        collection=base,
        leaf=base + "markdown",
        typo=base + "markdwn",
        # a media type is two plain names: anything else leaves renderers/, listed or read
        hostile={
            base + "..%2f..%2fsettings.py": "out-of-root",
            base + "%2e%2e/%2e%2e/": "out-of-root",
            base + "markdown%00": "out-of-root",
        },
        first_child=None,
        child_names=("*", "html", "markdown"),
        leaf_text=None,
        leaf_type=vnd("renderer"),
        leaf_pointer=("/mediaType", "text/markdown"),
        sub_parent=root,
        sub_collection="text/",
        completion=("type", "text/m", ["text/markdown"]),
    )
