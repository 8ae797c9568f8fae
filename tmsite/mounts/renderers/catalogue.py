"""The renderers' catalogue: per media type, the browser module that draws it.

Data, not a mount: the ``renderers`` mount serves it, the manifest publishes it whole
(:func:`catalogue`), the explorer serves the modules it names.

Spec: RENDERERS.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tmsite.core.uri import TmUri

#: Where the explorer's modules live in the source tree, and where the site serves them.
STATIC_DIR = Path(__file__).resolve().parent.parent.parent / "site" / "static" / "explorer"
MODULE_PREFIX = "/static/explorer/"

#: media type → the module (a file in ``STATIC_DIR``) that draws it. Keep sorted.
RENDERERS: dict[str, str] = {
    "application/json": "render-json.js",
    "application/vnd.tm.blocks+json": "blocks.js",
    "image/*": "render-image.js",
    "text/*": "render-text.js",
    "text/html": "render-html.js",
    "text/markdown": "render-markdown.js",
}
assert list(RENDERERS) == sorted(RENDERERS), "keep the renderers sorted"


def module_url(file_name: str) -> str:
    """Where the site serves a module of ``STATIC_DIR`` (a path on the site, not a URI)."""
    return MODULE_PREFIX + file_name


def digest(file_name: str) -> str:
    """The SHA-256 of a module file, hex."""
    return hashlib.sha256((STATIC_DIR / file_name).read_bytes()).hexdigest()


def families() -> dict[str, list[str]]:
    """The media type families with their subtypes, both sorted (``*`` a whole family)."""
    out: dict[str, list[str]] = {}
    for media in RENDERERS:
        family, _, subtype = media.partition("/")
        out.setdefault(family, []).append(subtype)
    return {family: sorted(subs) for family, subs in sorted(out.items())}


def renderer_uri(host: str, media_type: str) -> str:
    """The address of the renderer for ``media_type`` (``renderers/<type>/<subtype>``)."""
    family, _, subtype = media_type.partition("/")
    return str(TmUri(host, "renderers", (family, subtype)))


def catalogue(host: str) -> list[dict[str, object]]:
    """Every renderer: media type, address, module URL, SHA-256 (the manifest publishes it)."""
    return [
        {
            "mediaType": media,
            "uri": renderer_uri(host, media),
            "module": module_url(file_name),
            "sha256": digest(file_name),
        }
        for media, file_name in RENDERERS.items()
    ]
