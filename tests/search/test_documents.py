"""What the mounts other than fs and trail offer the index: each is found and its hit reads.

Spec: SRCH2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone
from dulwich.objects import Commit
from dulwich.repo import Repo

from tests.conformance.worlds import HOST
from tests.gitstore.builder import Builder
from tmsite.entities.loaders import fill, read_checkout
from tmsite.mounts import registry
from tmsite.mounts.base import Mount
from tmsite.mounts.entity.mount import EntityMount
from tmsite.mounts.git import mount as git_mount
from tmsite.mounts.git import watch as git_watch
from tmsite.mounts.git.mount import GitMount
from tmsite.mounts.proposals.mount import ProposalsMount
from tmsite.proposals import receipts
from tmsite.proposals.models import Proposal
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
        f"tm://{HOST}/entity/pattern/pad-poll?pointer=/fields/description",
        "pattern",
    )
    read = registry.compose(HOST, {"entity": entity}).read(hit.address)
    assert read.body == hit.body
    assert hit.body.startswith("Strobes $4016")
    games = hits({"entity": entity}, "Lantern Drift", ("game",))
    assert games[0].uri == f"tm://{HOST}/entity/game/72f469219b30"
    assert games[0].title == "Lantern Drift"


def commits(path: Path, subjects: list[str]) -> list[str]:
    """A repository at ``path`` with one commit per subject, ``main`` at the last."""
    b = Builder.init(str(path))
    made: list[bytes] = []
    for number, subject in enumerate(subjects):
        made.append(
            b.commit(subject, {"f.txt": f"{number}\n".encode()}, made[-1:], when=60 * number)
        )
    b.set_ref("refs/heads/main", made[-1])
    b.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    b.repo.close()
    return [sha.decode() for sha in made]


def test_a_commit_is_found_by_its_message_and_its_hit_reads_it(tmp_path: Path) -> None:
    made = commits(tmp_path / "repo", ["Add the sprite packer", "Fix the palette fade"])
    git = GitMount(HOST, {"repo": tmp_path / "repo"})
    (hit,) = hits({"git": git}, "palette fade", ("commit",))
    assert hit.uri == f"tm://{HOST}/git/repo/?at={made[1]}&as=log&n=1"
    assert (hit.address, hit.kind, hit.title) == (hit.uri, "commit", "Fix the palette fade")
    (entry,) = registry.compose(HOST, {"git": git}).read(hit.address).body["commits"]
    assert (entry["commit"], entry["subject"]) == (made[1], "Fix the palette fade")
    assert entry["subject"] in hit.body and entry["author"] in hit.body


def test_only_the_newest_commits_are_offered_and_an_unmoved_head_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_mount, "INDEXED_COMMITS", 2)
    made = commits(tmp_path / "repo", ["oldest walrus", "middle heron", "newest otter"])
    git = GitMount(HOST, {"repo": tmp_path / "repo"})
    assert hits({"git": git}, "walrus") == []
    assert [hit.uri for hit in hits({"git": git}, "otter")] == [
        f"tm://{HOST}/git/repo/?at={made[2]}&as=log&n=1"
    ]
    again = index.sync({"git": git})
    assert (again.written, again.dropped, again.unchanged) == (0, 0, 2)
    with Repo(str(tmp_path / "repo")) as repo:
        newer = Commit()
        newer.tree, newer.parents = repo[made[2].encode()].tree, [made[2].encode()]
        newer.author = newer.committer = b"Ada <ada@example.org>"
        newer.author_time = newer.commit_time = 1_700_000_000
        newer.author_timezone = newer.commit_timezone = 0
        newer.message = b"Tune the puffin sound\n"
        repo.object_store.add_object(newer)
        repo.refs[b"refs/heads/main"] = newer.id
    git_watch.refs_moved()
    moved = index.sync({"git": git})
    assert (moved.written, moved.dropped, moved.unchanged) == (1, 1, 1)
    assert [hit.title for hit in hits({"git": git}, "puffin")] == ["Tune the puffin sound"]
    assert hits({"git": git}, "heron") == []


def proposal(n: int, status: str, expected: str, reason: str = "") -> Proposal:
    proposed = {"uri": f"tm://{HOST}/nothing-{n}", "expected": expected}
    return Proposal.objects.create(
        receipt=receipts.new_id(),
        fingerprint=f"{n:064d}",
        kind="address",
        status=status,
        proposed=proposed,
        change={"note": {**proposed, "mount": "", "nearest": []}},
        decided_at=timezone.now() if status != "open" else None,
        reason=reason,
    )


def test_a_decided_proposal_is_found_and_a_pending_one_never() -> None:
    approved = proposal(1, "approved", "the sprite packer notes", "useful: added")
    rejected = proposal(2, "rejected", "a kestrel page", "no such page planned")
    pending = proposal(3, "open", "the kestrel packer secret")
    mount = ProposalsMount(HOST)
    (hit,) = hits({"proposals": mount}, "sprite packer")
    assert (hit.uri, hit.address, hit.kind) == (
        f"tm://{HOST}/proposals/{approved.pk}",
        f"tm://{HOST}/proposals/{approved.pk}",
        "proposal",
    )
    read = registry.compose(HOST, {"proposals": mount}).read(hit.address).body
    assert read["proposed"]["expected"] in hit.body and read["decision"]["reason"] in hit.body
    assert [h.uri for h in hits({"proposals": mount}, "kestrel")] == [
        f"tm://{HOST}/proposals/{rejected.pk}"
    ]
    assert hits({"proposals": mount}, "secret") == []
    pending.status, pending.decided_at, pending.reason = "approved", timezone.now(), "fine"
    pending.save()
    assert [h.uri for h in hits({"proposals": mount}, "secret")] == [
        f"tm://{HOST}/proposals/{pending.pk}"
    ]


def test_offbox_nodes_are_never_found(tmp_path: Path) -> None:
    from tests.conformance.world_offbox import world

    offbox = world(tmp_path).mount
    assert ns_read_works(offbox)
    assert list(offbox.documents()) == []
    assert hits({"offbox": offbox}, "cartridge images") == []
    assert index.status()["documents"].get("offbox") is None


def ns_read_works(offbox: Mount) -> bool:
    """The node the words come from does read (so the search's silence is the index's)."""
    read = registry.compose(HOST, {"offbox": offbox}).read(f"tm://{HOST}/offbox/cartridges")
    return "Cartridge images." in str(read.body)
