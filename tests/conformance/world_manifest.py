"""The manifest world: ``manifest/`` lists the sections of the one ``manifest`` address.

The collection is ``manifest/`` (leaves only); the leaf is the ``mounts`` section, read as
``application/vnd.tm.manifest+json``.
"""

from __future__ import annotations

from pathlib import Path

from tests.conformance.worlds import HOST, World
from tmsite.core.types import vnd
from tmsite.mounts.manifest.mount import ManifestMount


def world(tmp: Path) -> World:
    base = f"tm://{HOST}/manifest/"
    return World(
        mount=ManifestMount(HOST),
        collection=base,
        leaf=base + "mounts",
        typo=base + "mounst",
        hostile={
            base + "..%2fmanifest": "not-found",
            base + "%2e%2e/": "not-found",
            base + "mounts%00": "not-found",
        },
        first_child=None,
        child_names=("blocks", "kinds", "mounts", "relations", "renderers"),
        leaf_text=None,
        leaf_type=vnd("manifest"),
        leaf_pointer=("/section", "mounts"),
        sub_collection=None,
        completion=("section", "re", ["relations", "renderers"]),
    )
