"""What the mounts other than fs and trail offer the index: each is found and its hit reads.

Spec: SRCH2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.worlds import HOST
from tmsite.entities.loaders import fill, read_checkout
from tmsite.mounts import registry
from tmsite.mounts.base import Mount
from tmsite.mounts.entity.mount import EntityMount
from tmsite.search import index
from tmsite.search.engines import Found
from tmsite.search.query import parse_query

pytestmark = [pytest.mark.spec("SRCH2"), pytest.mark.django_db]
ROOT = Path(__file__).resolve().parents[2]


def hits(mounts: dict[str, Mount], text: str, kinds: tuple[str, ...] = ()) -> list[Found]:
    index.sync(mounts)
    return index.search(parse_query(text), f"tm://{HOST}/", kinds, 10)


def test_an_entity_record_is_found_by_its_words_and_its_hit_reads() -> None:
    fill(read_checkout(ROOT))
    entity = EntityMount(HOST, None)
    (hit, *_) = hits({"entity": entity}, "strobes the controller")
    assert (hit.uri, hit.address, hit.kind) == (
        f"tm://{HOST}/entity/pattern/pad-poll",
        f"tm://{HOST}/entity/pattern/pad-poll",
        "pattern",
    )
    read = registry.compose(HOST, {"entity": entity}).read(hit.address)
    assert read.body["fields"]["description"] in hit.body
    assert "Strobes $4016" in hit.body
    games = hits({"entity": entity}, "Lantern Drift", ("game",))
    assert games[0].uri == f"tm://{HOST}/entity/game/72f469219b30"
    assert games[0].title == "Lantern Drift"
