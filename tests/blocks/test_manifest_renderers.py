"""The manifest covers every mount and relation; renderers hash what the site serves."""

from __future__ import annotations

import hashlib

import pytest
from django.test import Client

from tests.blocks.conftest import HOST
from tmsite.blocks.registry import ASSEMBLERS
from tmsite.core.links import IANA_RELS, TM_RELS
from tmsite.mounts.namespace import Namespace
from tmsite.mounts.renderers.catalogue import RENDERERS

pytestmark = pytest.mark.spec("MANIFEST", "RENDERERS")

T = f"tm://{HOST}"


def test_the_manifest_has_a_shape_per_mount_and_a_colour_per_relation(space: Namespace) -> None:
    manifest = space.read(f"{T}/manifest")
    assert manifest.mime_type == "application/vnd.tm.manifest+json"
    body = manifest.body
    assert set(body["mounts"]) == set(space.mounts)
    assert all(m["shape"] in body["shapes"] for m in body["mounts"].values())
    assert set(body["relations"]) == set(IANA_RELS | TM_RELS)
    for rel, entry in body["relations"].items():
        assert entry["family"] in body["families"], rel
        assert entry["colour"]["light"].startswith("#")
        assert entry["iana"] == (rel in IANA_RELS)
    assert body["confidences"] == {"exact": "solid", "inferred": "dashed", "low": "dotted"}
    for key in ASSEMBLERS:
        name = key.split(":", 1)[1]
        if key.startswith("kind:") and name != "generic":
            assert body["kinds"][name]["blocks"] == list(ASSEMBLERS[key].yields)
    assert body["kinds"]["log"]["blocks"] == ["heading", "timeline", "kv"]
    section = space.read(f"{T}/manifest/relations").body
    assert section["relations"] == body["relations"]


def test_renderers_name_the_module_and_the_sha256_of_the_served_file(space: Namespace) -> None:
    client = Client()
    listed = space.read(f"{T}/renderers/").body
    assert [c["name"] for c in listed["children"]] == ["application/", "image/", "text/"]
    for media, file_name in RENDERERS.items():
        family, subtype = media.split("/")
        body = space.read(f"{T}/renderers/{family}/{subtype}").body
        assert body["mediaType"] == media and body["module"] == f"/static/explorer/{file_name}"
        served = client.get(body["module"])
        assert served.status_code == 200
        assert served["Content-Type"].startswith("text/javascript")
        assert hashlib.sha256(served.content).hexdigest() == body["sha256"]
    manifest = space.read(f"{T}/manifest").body
    assert {r["mediaType"]: r["sha256"] for r in manifest["renderers"]} == {
        media: space.read(f"{T}/renderers/{media}").body["sha256"] for media in RENDERERS
    }
    assert client.get("/static/explorer/..%2fsite.css").status_code == 404
    assert client.get("/static/explorer/nosuch.js").status_code == 404
