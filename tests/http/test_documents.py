"""The built site's pages in the search index, as a visitor reads them (``?as=text``).

Spec: SRCH2, HTTP.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.http.conftest import DEMO, HOST, SITE, uri, write
from tmsite.core.parts import to_text
from tmsite.mounts.namespace import Namespace
from tmsite.search import index
from tmsite.search.engines import Found
from tmsite.search.query import parse_query

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spec("SRCH2", "HTTP")]


def found(ns: Namespace, words: str) -> list[Found]:
    index.sync({"http": ns.mounts["http"]})
    return index.search(parse_query(words), f"tm://{HOST}/http/", (), 10)


def test_a_page_is_found_by_its_visitor_text_and_its_hit_reads_that_passage(
    ns: Namespace,
) -> None:
    (hit, *_) = found(ns, "what is in the pile")
    page = uri(SITE, "docs", "nes", "pile")
    assert hit.uri == page and hit.kind == "page"
    assert hit.address.startswith(page + "?lines=")
    assert to_text(ns.read(hit.address).body).rstrip("\n") == hit.body
    assert "What is in the pile." in hit.body
    assert [h.uri for h in found(ns, "スプライト")] == [uri(SITE, "ja", "docs", "nes", "pile")]


def test_a_changed_document_is_found_again_and_a_static_sites_pages_never(
    ns: Namespace, checkout: Path
) -> None:
    assert not any(h.uri.startswith(uri(DEMO)) for h in found(ns, "demo tinymachines"))
    assert all(not d.uri.startswith(uri(DEMO)) for d in ns.mounts["http"].documents())
    assert found(ns, "quokka") == []
    write(checkout, "docs/nes/alone.md", "# Alone\n\nA quokka, only in English.\n")
    hits = [h.uri for h in found(ns, "quokka")]
    assert uri(SITE, "docs", "nes", "alone") in hits
    again = index.sync({"http": ns.mounts["http"]})
    assert again.written == 0
