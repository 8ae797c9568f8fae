"""What a thing serves, said in one place: a ``bad-facet`` refusal's ``valid`` list names every
``as`` value that reads (the mount's own, then ``links`` and ``blocks``, which the namespace
answers for any address), and a blocks read lists only addresses that read among ``reads``.

Spec: BLOCKS, NS3.
"""

from __future__ import annotations

import pytest

from tests.blocks.conftest import HOST, blocks_of
from tmsite.core.errors import BadFacet, Refusal
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("BLOCKS", "NS3")

T = f"tm://{HOST}"
FILE = f"{T}/fs/docs/mcp.md"


def refused_valid(space: Namespace, uri: str) -> tuple[list[str], str]:
    with pytest.raises(BadFacet) as refused:
        space.read(uri)
    data = refused.value.data
    assert data["reason"] == "bad-facet" and data["uri"] == uri
    return data["valid"], refused.value.message


@pytest.mark.parametrize(
    ("thing", "valid"),
    [
        (FILE, ["raw", "stat", "links", "blocks"]),
        (f"{T}/git/tmsite/docs/mcp.md", ["blame", "log", "raw", "stat", "links", "blocks"]),
        (f"{T}/fs/docs/", ["raw", "links", "blocks"]),
        (f"{T}/manifest", ["stat", "links", "blocks"]),
    ],
)
def test_a_refused_facet_names_every_facet_that_reads(
    space: Namespace, thing: str, valid: list[str]
) -> None:
    offered, message = refused_valid(space, f"{thing}?as=zzz")
    assert offered == valid
    assert message.endswith("it offers " + ", ".join(valid))
    for facet in offered:
        try:
            space.read(f"{thing}?as={facet}")
        except Refusal as refusal:  # pragma: no cover - the assertion's message
            pytest.fail(f"{thing}?as={facet} is named valid but refused {refusal.data}")


def test_a_file_read_at_a_revision_names_the_same(space: Namespace) -> None:
    offered, _ = refused_valid(space, f"{FILE}?at=HEAD&as=zzz")
    assert offered == ["raw", "stat", "links", "blocks"]


def test_a_blocks_read_lists_only_addresses_that_read(space: Namespace) -> None:
    for uri in (f"{FILE}?as=blocks", f"{FILE}?as=blocks&of=stat", f"{T}/fs/docs/?as=blocks"):
        body = blocks_of(space, uri)
        assert body["reads"], uri
        assert not [read for read in body["reads"] if "as=facets" in read], body["reads"]
        for read in body["reads"]:
            space.read(read)  # each one reads: none is refused
    body = blocks_of(space, f"{FILE}?as=blocks")
    assert body["reads"] == [FILE]
    assert body["facets"] == ["raw", "stat", "links"]


def test_of_a_facet_not_served_offers_the_served_ones(space: Namespace) -> None:
    body = blocks_of(space, f"{FILE}?as=blocks&of=tree")
    finding = next(b for b in body["blocks"] if b["kind"] == "finding")
    assert finding["reason"] == "bad-facet"
    question = next(b for b in body["blocks"] if b["kind"] == "question")
    assert [o["href"] for o in question["options"]] == [
        f"{FILE}?as={facet}" for facet in ("raw", "stat", "links")
    ]
