"""Reading the git mount: trees, files, facets, parts, submodules and links at any revision."""

from __future__ import annotations

import json

import pytest

from tests.git.scenario import BIG, BLOB, FS, HOST, REPO, ROOT, Scenario
from tests.git_oracle import needs_git
from tmsite.core.errors import BadFacet, Binary, NoSuchRef, NotFound, TooLarge
from tmsite.core.parts import READ_CAP, to_text
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("GIT", "NS3", "NS4", "NS5", "LK2")


def rels(content: object) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for link in content.links:  # type: ignore[attr-defined]
        out.setdefault(link.rel, []).append(link.href)
    return out


def test_root_lists_the_served_repositories_sorted(ns: Namespace) -> None:
    content = ns.read(ROOT)
    assert content.mime_type == "application/vnd.tm.listing+json"
    children = content.body["children"]
    assert [c["name"] for c in children] == ["lib/", "nes-bench/", "tmsite/"]
    assert all(c["mimeType"] == "application/vnd.tm.tree+json" for c in children)
    assert rels(content)["up"] == [f"tm://{HOST}/"]


def test_tree_at_head_lists_committed_files_only(ns: Namespace, scenario: Scenario) -> None:
    content = ns.read(REPO + "docs/")
    body = content.body
    assert content.mime_type == "application/vnd.tm.tree+json"
    assert body["at"] == "HEAD" and body["commit"] == scenario.c["c6"]
    names = [c["name"] for c in body["children"]]
    assert names[0] == "nes/"
    assert "untracked.md" not in names and "renamed.md" in names and "old.md" not in names
    env = next(c for c in body["children"] if c["name"] == ".env")
    assert env == {
        "uri": REPO + "docs/.env",
        "name": ".env",
        "redacted": True,
        "isCollection": False,
    }
    assert rels(content)["up"] == [REPO]
    assert rels(content)["version-history"] == [REPO + "docs/?as=log"]
    assert "latest-version" not in rels(content)


def test_tree_at_a_tag_keeps_at_on_every_uri(ns: Namespace, scenario: Scenario) -> None:
    content = ns.read(REPO + "docs/?at=v1")
    body = content.body
    assert body["at"] == "v1" and body["commit"] == scenario.c["c2"]
    assert body["uri"] == REPO + "docs/?at=v1"
    assert all(c["uri"].endswith("?at=v1") for c in body["children"])
    assert "old.md" in [c["name"] for c in body["children"]]
    links = rels(content)
    assert links["up"] == [REPO + "?at=v1"]
    assert links["version-history"] == [REPO + "docs/?at=v1&as=log"]
    assert links["latest-version"] == [REPO + "docs/"]


def test_repository_root_up_is_the_mount_root_and_drops_at(ns: Namespace) -> None:
    assert rels(ns.read(REPO + "?at=v1"))["up"] == [ROOT]
    assert rels(ns.read(REPO + "?at=v1&as=log"))["up"] == [ROOT]


def test_tree_depth_lists_descendants_in_pre_order(ns: Namespace) -> None:
    body = ns.read(REPO + "docs/?as=tree&depth=2").body
    names = [c["name"] for c in body["children"]]
    assert names[:2] == ["nes/", "nes/pile.md"]
    assert body["children"][1]["depth"] == 2 and body["depth"] == 2
    assert body["children"][1]["uri"] == REPO + "docs/nes/pile.md"


def test_head_and_tag_reads_differ_and_link_across_revisions(ns: Namespace) -> None:
    head = ns.read(REPO + "docs/guide.md")
    tag = ns.read(REPO + "docs/guide.md?at=v1")
    assert to_text(head.body) == "# Guide\nsecond\nline three\nfourth\n"
    assert to_text(tag.body) == "# Guide\nsecond\nline three\n"
    assert head.mime_type == tag.mime_type == "text/markdown"
    assert tag.uri == REPO + "docs/guide.md?at=v1"
    links = rels(tag)
    assert links["latest-version"] == [REPO + "docs/guide.md"]
    assert links["version-history"] == [REPO + "docs/guide.md?at=v1&as=log"]
    assert links["describedby"] == [REPO + "docs/guide.md?at=v1&as=stat"]
    assert links["alternate"] == [REPO + "docs/guide.md?at=v1&as=blame"]
    assert links["up"] == links["collection"] == [REPO + "docs/?at=v1"]
    assert "tm:working-copy" not in links
    head_links = rels(head)
    assert "latest-version" not in head_links
    assert head_links["tm:working-copy"] == [FS + "docs/guide.md"]


def test_every_kind_of_revision_reads(ns: Namespace, scenario: Scenario) -> None:
    first = "# Guide\nfirst\n"
    c1 = scenario.c["c1"]
    for at in (c1, c1[:7], c1[:4].upper(), "2023-11-14", "2023-11-14T23:00:00Z"):
        body = ns.read(REPO + f"docs/guide.md?at={at}&as=stat").body
        assert body["commit"] == c1 and body["at"] == at, at
    assert to_text(ns.read(REPO + f"docs/guide.md?at={c1[:7]}").body) == first
    # An annotated tag is peeled to its commit; a branch names its tip.
    assert ns.read(REPO + "?at=v2").body["commit"] == scenario.c["m1"]
    assert ns.read(REPO + "?at=feature").body["commit"] == scenario.c["f2"]
    # The date carries an offset: 2023-11-15T09:00+09:00 is 00:00 UTC, before c2 (day 1).
    body = ns.read(REPO + "?at=2023-11-15T09:00%2B09:00").body
    assert body["commit"] == c1


def test_dates_walk_history_as_git_rev_list_through_clock_skew(
    ns: Namespace, scenario: Scenario
) -> None:
    # c5 was committed on day 3 though authored on day 7: at day 4 the walk newest first by
    # committer date meets c5 first at or before the date (as git rev-list --before).
    day4 = "2023-11-18T12:00:00Z"
    assert ns.read(REPO + f"?at={day4}").body["commit"] == scenario.c["c5"]
    expected = scenario.git("rev-list", "-1", f"--before={day4}", "HEAD")
    assert expected.strip() == scenario.c["c5"]


def test_log_newest_first_linked_at_each_commit_without_emails(
    ns: Namespace, scenario: Scenario
) -> None:
    content = ns.read(REPO + "docs/guide.md?as=log")
    assert content.mime_type == "application/vnd.tm.log+json"
    body = content.body
    assert body["n"] == 20 and body["path"] == "docs/guide.md"
    assert [e["subject"] for e in body["commits"]] == ["c6", "c2", "Initial import"]
    assert [e["commit"] for e in body["commits"]] == [scenario.c[k] for k in ("c6", "c2", "c1")]
    first = body["commits"][0]
    assert first["short"] == scenario.c["c6"][:7]
    assert first["author"] == "Zoë Ünicode"
    assert first["date"] == "2023-11-22T22:13:20+00:00"
    assert first["uri"] == REPO + f"docs/guide.md?at={scenario.c['c6']}"
    assert "@" not in json.dumps(body)
    one = ns.read(REPO + "docs/guide.md?as=log&n=1").body
    assert len(one["commits"]) == 1 and one["uri"] == REPO + "docs/guide.md?as=log&n=1"


def test_log_on_a_repository_root_directories_and_merges(ns: Namespace, scenario: Scenario) -> None:
    root = ns.read(REPO + "?as=log&n=100").body
    subjects = [e["subject"] for e in root["commits"]]
    assert "Merge branch 'feature'" in subjects and len(subjects) == 9
    assert "Feature work, thanks to [e-mail]" in subjects
    assert root["commits"][0]["uri"] == REPO + f"?at={scenario.c['c6']}"
    notes = ns.read(REPO + "notes/?as=log").body
    assert notes["commits"][0]["uri"].startswith(REPO + "notes/?at=")
    assert [e["subject"] for e in notes["commits"]] == [
        "Feature work, thanks to [e-mail]",
        "f1",
        "Initial import",
    ]


@needs_git
@pytest.mark.parametrize("path", ["", "docs/guide.md", "docs/", "notes/", "vendor/lib"])
def test_log_agrees_with_the_git_cli(ns: Namespace, scenario: Scenario, path: str) -> None:
    ours = [e["commit"] for e in ns.read(REPO + path + "?as=log&n=100").body["commits"]]
    args = ["log", "--format=%H", "-n", "100", "HEAD"]
    theirs = scenario.git(*args, *(["--", path] if path else [])).split()
    assert ours == theirs


def test_log_of_a_renamed_file_follows_it_to_its_old_path(
    ns: Namespace, scenario: Scenario
) -> None:
    body = ns.read(REPO + "docs/renamed.md?as=log").body
    assert [e["subject"] for e in body["commits"]] == ["c4", "Initial import"]
    assert body["commits"][1]["path"] == "docs/old.md"
    old = ns.read(REPO + "docs/old.md?at=v1")
    assert to_text(old.body) == "old name\n"
    assert "latest-version" not in rels(old), "the old path does not exist at HEAD"
    deleted = ns.read(REPO + "docs/old.md?at=v1&as=log").body
    assert deleted["commits"][0]["uri"] == REPO + f"docs/old.md?at={scenario.c['c1']}"


def test_blame_is_json_one_record_per_line_with_full_commits(
    ns: Namespace, scenario: Scenario
) -> None:
    content = ns.read(REPO + "docs/guide.md?as=blame")
    assert content.mime_type == "application/vnd.tm.blame+json"
    body = content.body
    assert body["total"] == 4
    owners = [line["commit"] for line in body["lines"]]
    assert owners == [scenario.c["c1"], scenario.c["c2"], scenario.c["c2"], scenario.c["c6"]]
    assert body["lines"][3] == {
        "line": 4,
        "commit": scenario.c["c6"],
        "author": "Zoë Ünicode",
        "date": "2023-11-22T22:13:20+00:00",
        "text": "fourth",
    }
    span = ns.read(REPO + "docs/guide.md?as=blame&lines=2-3")
    assert [line["line"] for line in span.body["lines"]] == [2, 3]
    assert span.uri == REPO + "docs/guide.md?as=blame&lines=2-3"
    at_tag = ns.read(REPO + "docs/guide.md?at=v1&as=blame").body
    assert at_tag["total"] == 3 and at_tag["uri"] == REPO + "docs/guide.md?at=v1&as=blame"
    with pytest.raises(BadFacet) as refused:
        ns.read(REPO + "docs/guide.md?as=blame&lines=9-9")
    assert refused.value.data == {
        "reason": "bad-facet",
        "uri": REPO + "docs/guide.md?as=blame&lines=9-9",
        "valid": ["1-4"],
        "lines": 4,
    }


@needs_git
def test_blame_agrees_with_the_git_cli(ns: Namespace, scenario: Scenario) -> None:
    ours = [line["commit"] for line in ns.read(REPO + "docs/guide.md?as=blame").body["lines"]]
    porcelain = scenario.git("blame", "--porcelain", "HEAD", "--", "docs/guide.md")
    theirs = [
        line.split()[0]
        for line in porcelain.splitlines()
        if not line.startswith("\t") and len(line.split()) >= 3 and len(line.split()[0]) == 40
    ]
    assert ours == theirs


def test_blame_of_binary_is_refused_binary(ns: Namespace) -> None:
    with pytest.raises(Binary) as refused:
        ns.read(REPO + "docs/blob.bin?at=v1&as=blame")
    assert refused.value.data == {
        "reason": "binary",
        "uri": REPO + "docs/blob.bin?at=v1&as=blame",
        "mimeType": "application/octet-stream",
        "stat": REPO + "docs/blob.bin?at=v1&as=stat",
    }


def test_stat_and_listed_types_agree_for_every_kind(ns: Namespace, scenario: Scenario) -> None:
    for directory in ("docs/", "", "vendor/"):
        for child in ns.read(REPO + directory).body["children"]:
            if child["isCollection"] or child.get("redacted"):
                continue
            stat = ns.read(child["uri"] + "?as=stat")
            assert stat.mime_type in (
                "application/vnd.tm.stat+json",
                "application/vnd.tm.submodule+json",
            )
            assert stat.body.get("mimeType", stat.mime_type) == child["mimeType"], child["uri"]
    stat = ns.read(REPO + "docs/guide.md?as=stat").body
    assert stat == {
        "uri": REPO + "docs/guide.md",
        "repository": "tmsite",
        "path": "docs/guide.md",
        "name": "guide.md",
        "at": "HEAD",
        "commit": scenario.c["c6"],
        "type": "blob",
        "mode": "100644",
        "sha": stat["sha"],
        "size": 33,
        "mimeType": "text/markdown",
        "isCollection": False,
        "text": True,
    }


def test_symlink_reads_as_its_target_text_never_followed(ns: Namespace) -> None:
    content = ns.read(REPO + "docs/link.md")
    assert content.body == "guide.md" and content.mime_type == "text/plain"
    stat = ns.read(REPO + "docs/link.md?as=stat").body
    assert stat["type"] == "symlink" and stat["target"] == "guide.md" and stat["mode"] == "120000"
    listed = next(c for c in ns.read(REPO + "docs/").body["children"] if c["name"] == "link.md")
    assert listed["symlink"] is True and listed["mimeType"] == "text/plain"


def test_non_utf8_names_and_content(ns: Namespace) -> None:
    listed = ns.read(REPO + "docs/").body["children"]
    odd = next(c for c in listed if c["uri"].endswith("caf%E9.txt"))
    assert odd["name"] == "caf\ufffd.txt"
    assert to_text(ns.read(odd["uri"]).body) == "odd name\n"
    json.dumps(listed)  # every name is JSON-safe
    latin = ns.read(REPO + "docs/latin1.txt")
    assert latin.mime_type == "text/plain" and latin.body == "caf\ufffd cr\ufffdme\n"


def test_binary_and_large_blobs(ns: Namespace) -> None:
    blob = ns.read(REPO + "docs/blob.bin")
    assert blob.body == BLOB and blob.mime_type == "application/octet-stream"
    with pytest.raises(TooLarge) as refused:
        ns.read(REPO + "docs/big.bin?at=v1")
    assert refused.value.data == {
        "reason": "too-large",
        "uri": REPO + "docs/big.bin?at=v1",
        "size": len(BIG),
        "cap": READ_CAP,
        "range": REPO + "docs/big.bin?at=v1&range={start}-{end}",
        "stat": REPO + "docs/big.bin?at=v1&as=stat",
    }
    part = ns.read(REPO + "docs/big.bin?at=v1&range=1000-1010")
    assert part.body == BIG[1000:1010] and part.uri == REPO + "docs/big.bin?at=v1&range=1000-1010"


def test_parts_work_at_any_revision(ns: Namespace) -> None:
    lines = ns.read(REPO + "docs/guide.md?at=v1&lines=2-3")
    assert lines.body == "second\nline three\n"
    assert lines.uri == REPO + "docs/guide.md?at=v1&lines=2-3"
    assert ns.read(REPO + "docs/record.json?at=v1&pointer=/a/1/b").body == 2
    c1 = ns.read(REPO + "docs/record.json?at=Initial&pointer=/a/1/b".replace("Initial", "v1"))
    assert c1.body == 2
    with pytest.raises(NotFound) as refused:
        ns.read(REPO + "docs/record.json?at=v1&pointer=/a/7")
    assert refused.value.data["nearest"][0] == REPO + "docs/record.json?at=v1&pointer=/a/0"


def test_a_stat_at_a_revision_names_itself_at_that_revision(ns: Namespace) -> None:
    for uri in [
        REPO + "docs/guide.md?at=v1",
        REPO + "docs/guide.md?at=v2",
        REPO + "docs/guide.md",
    ]:
        stat = ns.read(uri + ("&" if "?" in uri else "?") + "as=stat").body
        assert stat["uri"] == uri


def test_submodule_reads_as_its_pin(ns: Namespace, scenario: Scenario) -> None:
    content = ns.read(REPO + "vendor/lib")
    assert content.mime_type == "application/vnd.tm.submodule+json"
    pin = f"tm://{HOST}/git/lib/?at={scenario.lib['c2']}"
    assert content.body == {
        "uri": REPO + "vendor/lib",
        "repository": "tmsite",
        "path": "vendor/lib",
        "at": "HEAD",
        "commit": scenario.c["c6"],
        "type": "submodule",
        "pinned": scenario.lib["c2"],
        "url": "https://example.org/tm/lib.git",
        "pins": pin,
    }
    pins = [link for link in content.links if link.rel == "tm:pins"]
    assert [(p.href, p.confidence) for p in pins] == [(pin, "exact")]
    assert ns.read(pin).body["commit"] == scenario.lib["c2"]
    assert ns.read(REPO + "vendor/lib/").body == content.body
    assert ns.read(REPO + "vendor/lib?as=stat").body == content.body
    older = ns.read(REPO + "vendor/lib?at=v2").body
    assert older["pinned"] == scenario.lib["c1"] and older["at"] == "v2"
    assert older["uri"] == REPO + "vendor/lib?at=v2"  # the pin as it was: keeps its revision
    moves = ns.read(REPO + "vendor/lib?as=log").body["commits"]
    assert [e["subject"] for e in moves] == ["c4", "c3"]
    listed = next(c for c in ns.read(REPO + "vendor/").body["children"])
    assert listed["submodule"] is True and listed["isCollection"] is False


def test_submodule_pin_unknown_to_the_served_repository_has_no_pins(
    fresh: Scenario,
) -> None:
    from tests.gitstore.builder import Builder

    b = Builder.init(str(fresh.root / "other"))
    sha = b.commit("x", {"a": b"a\n"}, when=0)
    b.set_ref("refs/heads/main", sha)
    ns = fresh.namespace()
    ns.mounts["git"].repos.pop("lib")  # type: ignore[attr-defined]
    body = ns.read(REPO + "vendor/lib").body
    assert body["pins"] is None
    assert all(link.rel != "tm:pins" for link in ns.read(REPO + "vendor/lib").links)


def test_facets_each_target_offers(ns: Namespace) -> None:
    every = ["links", "blocks"]  # the namespace answers these for any address
    cases = {
        REPO + "vendor/lib?as=blame": ["log", "stat", *every],
        REPO + "vendor/lib?as=raw": ["log", "stat", *every],
        REPO + "docs/?as=blame": ["log", "tree", *every],
        REPO + "docs/?as=stat": ["log", "tree", *every],
        REPO + "docs/guide.md?as=tree": ["blame", "log", "raw", "stat", *every],
        REPO + "docs/guide.md?as=diff": ["blame", "log", "raw", "stat", *every],
    }
    for uri, valid in cases.items():
        with pytest.raises(BadFacet) as refused:
            ns.read(uri)
        assert refused.value.data["valid"] == valid, uri
        assert refused.value.data["uri"] == uri


def test_directory_without_slash_and_file_with_slash_point_at_the_other(ns: Namespace) -> None:
    with pytest.raises(NotFound) as refused:
        ns.read(REPO + "docs?at=v1")
    assert refused.value.data == {
        "reason": "not-found",
        "uri": REPO + "docs?at=v1",
        "nearest": [REPO + "docs/?at=v1"],
    }
    with pytest.raises(NotFound) as refused:
        ns.read(f"tm://{HOST}/git/tmsite")
    assert refused.value.data["nearest"] == [REPO]
    with pytest.raises(NotFound) as refused:
        ns.read(REPO + "docs/guide.md/")
    assert refused.value.data["nearest"] == [REPO + "docs/guide.md"]


def test_links_pair_checkout_files_with_git_both_ways(ns: Namespace) -> None:
    fs_file = ns.read(FS + "docs/guide.md")
    links = {(link.rel, link.href, link.confidence) for link in fs_file.links}
    assert ("tm:repository", REPO + "docs/guide.md", "exact") in links
    assert ("version-history", REPO + "docs/guide.md?as=log", None) in links
    git_file = ns.read(REPO + "docs/guide.md")
    assert ("tm:working-copy", FS + "docs/guide.md", "exact") in {
        (link.rel, link.href, link.confidence) for link in git_file.links
    }
    # Untracked, outside the fs roots, or denied: no pair.
    assert "tm:repository" not in rels(ns.read(FS + "docs/untracked.md"))
    assert "tm:working-copy" not in rels(ns.read(REPO + "README.md"))
    # The pair is on the plain reads (its inverse names them), not on a stat.
    assert "tm:repository" not in rels(ns.read(FS + "docs/guide.md?as=stat"))


def test_imported_copies_link_to_their_origin_both_ways(ns: Namespace) -> None:
    origin = f"tm://{HOST}/git/nes-bench/docs/pile.md"
    copy = ns.read(FS + "docs/nes/pile.md")
    links = rels(copy)
    assert links["tm:generated-by"] == [origin]
    assert links["version-history"] == [origin + "?as=log"]
    assert "tm:repository" not in links
    assert rels(ns.read(origin))["tm:generates"] == [FS + "docs/nes/pile.md"]
    assert "tm:working-copy" not in rels(ns.read(REPO + "docs/nes/pile.md"))
    assert "tm:generates" not in rels(ns.read(origin + "?at=main"))


def test_every_tm_link_has_its_inverse_and_every_href_resolves(ns: Namespace) -> None:
    from tmsite.core.links import INVERSE

    start = [
        FS + "docs/guide.md",
        FS + "docs/nes/pile.md",
        REPO + "docs/guide.md",
        REPO + "docs/guide.md?at=v1",
        REPO + "vendor/lib",
        REPO + "docs/?at=v1",
        REPO + "docs/guide.md?as=log",
        REPO + "docs/guide.md?at=v1&as=blame",
    ]
    for uri in start:
        for link in ns.read(uri).links:
            target = ns.read(link.href)  # resolves
            if link.rel in INVERSE:
                back = {(x.rel, x.href, x.confidence) for x in target.links}
                assert (INVERSE[link.rel], uri, link.confidence) in back, (uri, link)
            if link.rel == "up":
                assert link.href != uri


def test_a_date_before_the_history_says_where_it_starts(ns: Namespace, scenario: Scenario) -> None:
    starts = "2023-11-14T22:13:20+00:00"  # c1, the first commit on main's first-parent chain
    for uri in (REPO + "docs/guide.md?at=2020-01-01", FS + "docs/guide.md?at=2023-11-14T22:00Z"):
        with pytest.raises(NoSuchRef) as refused:
            ns.read(uri)
        assert refused.value.data["reason"] == "no-such-ref"
        assert refused.value.data["uri"] == uri
        assert refused.value.data["starts"] == starts
        assert refused.value.message.endswith(f"its history starts at {starts}")
    # a name that matches nothing says nothing of dates
    with pytest.raises(NoSuchRef) as refused:
        ns.read(REPO + "?at=nosuchbranch")
    assert "starts" not in refused.value.data
