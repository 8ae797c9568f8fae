"""``/llms.txt`` read as a resource: the http mount reads it like any page of the site."""

from __future__ import annotations

import pytest

from tests.http.conftest import HOST, SITE, uri
from tmsite.mounts.namespace import Namespace

pytestmark = [pytest.mark.slow, pytest.mark.spec("OBS4")]


def test_llms_txt_is_a_page_of_the_site(ns: Namespace) -> None:
    names = [c["name"] for c in ns.read(uri(SITE, collection=True)).body["children"]]
    assert "llms.txt" in names
    content = ns.read(uri(SITE, "llms.txt", **{"as": "raw"}))
    body = content.body if isinstance(content.body, str) else content.body.decode()
    assert body.startswith(f"# {HOST}: ")
    assert f"): tm://{HOST}/fs/docs/nes/pile.md" in body
    assert "/docs/nes/pile.md)" in body
