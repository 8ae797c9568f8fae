"""Hostile refs, paths and parameters: each refused with its exact reason, nothing leaked."""

from __future__ import annotations

import json

import pytest

from tests.git.scenario import HOST, REPO, ROOT, SECRET, Scenario
from tmsite.core.errors import BadFacet, Denied, NoSuchRef, NotFound, OutOfRoot, Refusal
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("GIT", "RJ1")

REFS = ["HEAD", "feature", "hostile", "main", "v1", "v2"]

#: RJ1: ``data.uri`` echoes the refused URI. Where the sent spelling is not the one shape the
#: URI module emits (NS2), the echo is that same URI in its one spelling: an encoded unreserved
#: dot decoded, hex digits upper-cased, a ``=`` inside a query value encoded.
ECHO = {
    REPO + "docs/guide.md?at=--output=/tmp/x": REPO + "docs/guide.md?at=--output%3D/tmp/x",
    REPO + "%2e%2e/lib/lib.c": REPO + "../lib/lib.c",
    REPO + "docs/%2E%2E/README.md": REPO + "docs/../README.md",
    REPO + "docs/..%2f..%2fREADME.md": REPO + "docs/..%2F..%2FREADME.md",
    REPO + "docs/..%5c..%5cREADME.md": REPO + "docs/..%5C..%5CREADME.md",
}


def echo(sent: str) -> str:
    return ECHO.get(sent, sent)


@pytest.mark.parametrize(
    ("at", "rule"),
    [
        ("--output=/tmp/x", "a ref may not start with '-'"),
        ("-n", "a ref may not start with '-'"),
        ("refs/heads/-n", "no segment of a ref may start with '-'"),  # the -n branch exists
        ("release/--force", "no segment of a ref may start with '-'"),
        ("a..b", "'..' is revision-range syntax"),
        ("v1%20main", "spaces are not allowed"),
        ("HEAD:x", "':' is path syntax"),
        (":x", "':' is path syntax"),
        ("HEAD@%7B1%7D", "'@{' is reflog syntax"),
        ("v1%5E%7B%7D", "'^' is ancestry syntax"),
        ("HEAD~3", "'~' is ancestry syntax"),
        ("main%00", "control characters are not allowed"),
        ("main%0A", "control characters are not allowed"),
        ("../../config", "'..' is revision-range syntax"),
        ("refs/heads/../../../config", "'..' is revision-range syntax"),
        ("/etc/passwd", "only letters, digits and . _ / + @ - are allowed"),
        ("main/.hidden", "empty segments and segments starting with '.' are not allowed"),
        ("main.lock", "a ref may not end with '.lock' or '.'"),
        ("ma%5Cin", "backslashes are not allowed"),
        ("x" * 256, "the ref is longer than 255 characters"),
        ("2026-01-01T00:00%2B15:00", "the UTC offset is out of range (at most ±14:00)"),
        ("2026-01-01T00:00-14:30", "the UTC offset is out of range (at most ±14:00)"),
    ],
)
def test_malformed_refs_are_bad_facet_with_the_rule(ns: Namespace, at: str, rule: str) -> None:
    uri = REPO + f"docs/guide.md?at={at}"
    with pytest.raises(BadFacet) as refused:
        ns.read(uri)
    data = refused.value.data
    if len(at) > 255:  # the facet grammar refuses it before the mount
        assert data["reason"] == "bad-facet" and "255" in refused.value.message
        assert data["uri"] == uri
        return
    assert data == {"reason": "bad-facet", "uri": echo(uri), "valid": REFS, "rule": rule}


@pytest.mark.parametrize("at", ["2026-13-01", "2026-02-30", "2026-01-01T25:00"])
def test_impossible_dates_are_bad_facet(ns: Namespace, at: str) -> None:
    with pytest.raises(BadFacet) as refused:
        ns.read(REPO + f"?at={at}")
    assert refused.value.data["rule"].startswith("not a real date or time")


def test_an_option_shaped_ref_on_disk_is_still_refused_by_shape(ns: Namespace) -> None:
    with pytest.raises(BadFacet) as refused:
        ns.read(REPO + "?at=-n")
    assert refused.value.data == {
        "reason": "bad-facet",
        "uri": REPO + "?at=-n",
        "valid": REFS,
        "rule": "a ref may not start with '-'",
    }


def test_unknown_refs_are_no_such_ref_with_the_nearest_real_refs(ns: Namespace) -> None:
    with pytest.raises(NoSuchRef) as refused:
        ns.read(REPO + "docs/guide.md?at=v3")
    assert refused.value.data == {
        "reason": "no-such-ref",
        "uri": REPO + "docs/guide.md?at=v3",
        "nearest": [
            REPO + "?at=v1",
            REPO + "?at=v2",
            REPO,
            REPO + "?at=main",
            REPO + "?at=feature",
        ],
    }
    for at in ("9" * 30, "deadbeef", "0" * 40, "2000-01-01"):
        with pytest.raises(NoSuchRef) as refused:
            ns.read(REPO + f"?at={at}")
        assert len(refused.value.data["nearest"]) <= 5
        assert all(n.startswith(REPO) for n in refused.value.data["nearest"])


@pytest.mark.parametrize(
    ("param", "valid"),
    [
        ("as=log&n=0", ["1-100"]),
        ("as=log&n=101", ["1-100"]),
        ("as=log&n=x", ["1-100"]),
        ("as=log&n=99999999999999999999", ["1-100"]),
        ("as=log&n=-1", ["1-100"]),
        ("as=tree&depth=9", ["1-8"]),
        ("as=tree&depth=0", ["1-8"]),
    ],
)
def test_out_of_range_numbers_are_refused_not_clamped(
    ns: Namespace, param: str, valid: list[str]
) -> None:
    uri = REPO + f"docs/?{param}"
    with pytest.raises(BadFacet) as refused:
        ns.read(uri)
    assert refused.value.data["valid"] == valid
    assert refused.value.data["reason"] == "bad-facet"


def test_parameters_a_target_does_not_take(ns: Namespace) -> None:
    cases = {
        REPO + "docs/guide.md?n=3": ["as", "at", "lines", "pointer", "range"],
        REPO + "docs/guide.md?as=stat&lines=1-2": ["as", "at", "pointer"],
        REPO + "docs/guide.md?as=blame&range=0-4": ["as", "at", "lines", "pointer"],
        REPO + "docs/guide.md?depth=2": ["as", "at", "lines", "pointer", "range"],
        ROOT + "?at=main": ["as", "cursor"],
        REPO + "docs/guide.md?colour=red": None,
    }
    for uri, valid in cases.items():
        with pytest.raises(BadFacet) as refused:
            ns.read(uri)
        if valid is not None:
            assert refused.value.data["valid"] == valid, uri


OUT = [
    REPO + "../tmsite/docs/guide.md",
    REPO + "docs/../../lib/lib.c",
    REPO + "%2e%2e/lib/lib.c",
    REPO + "docs/%2E%2E/README.md",
    REPO + "docs/..%2f..%2fREADME.md",
    REPO + "docs/..%5c..%5cREADME.md",
    REPO + "docs/.",
    REPO + "./docs/guide.md",
    REPO + "docs/guide.md%00.txt",
    REPO + "/etc/passwd",
    REPO + "docs//guide.md",
    REPO + "%2Fetc/passwd",
    REPO + "docs/guide.md?at=v1".replace("docs", ".."),
]


@pytest.mark.parametrize("uri", OUT)
def test_tree_path_traversal_is_out_of_root(ns: Namespace, uri: str) -> None:
    with pytest.raises(OutOfRoot) as refused:
        ns.read(uri)
    assert refused.value.data == {
        "reason": "out-of-root",
        "uri": echo(uri),
        "roots": [REPO],
    }


def test_double_encoded_dots_are_a_plain_name_that_does_not_exist(ns: Namespace) -> None:
    with pytest.raises(NotFound) as refused:
        ns.read(REPO + "%252e%252e/README.md")
    assert refused.value.data["uri"] == REPO + "%252e%252e/README.md"
    assert REPO + "%252e%252e/README.md" not in refused.value.data["nearest"]


@pytest.mark.parametrize(
    "uri",
    [
        REPO + "docs/.env",
        REPO + "docs/.env?at=v1&as=log",
        REPO + ".git/config",
        REPO + ".GIT/config",
        REPO + "docs/.env?as=blame",
        REPO + "docs/.env?as=stat",
        REPO + "docs/no-such.key",
        REPO + "docs/id_rsa",
    ],
)
def test_denied_names_are_denied_whether_or_not_they_exist(ns: Namespace, uri: str) -> None:
    with pytest.raises(Denied) as refused:
        ns.read(uri)
    assert refused.value.data == {"reason": "denied", "uri": uri}
    assert SECRET not in json.dumps(refused.value.data)


def test_hostile_tree_entries_are_never_listed_or_read(ns: Namespace) -> None:
    body = ns.read(REPO + "?at=hostile").body
    assert [c["name"] for c in body["children"]] == ["ok.txt"]
    for uri in (REPO + "..%2Fconfig?at=hostile", REPO + "%2E%2E/config?at=hostile"):
        with pytest.raises(OutOfRoot):
            ns.read(uri)
    with pytest.raises(Denied):
        ns.read(REPO + ".git/config?at=hostile")
    with pytest.raises(Denied):
        ns.read(REPO + ".GIT/config?at=hostile")
    log = ns.read(REPO + "?at=hostile&as=tree&depth=8")
    assert "worktree" not in json.dumps(log.body)


def test_unknown_repository_and_typos_answer_with_the_nearest(ns: Namespace) -> None:
    with pytest.raises(NotFound) as refused:
        ns.read(ROOT + "tmsit/docs/guide.md")
    assert refused.value.data == {
        "reason": "not-found",
        "uri": ROOT + "tmsit/docs/guide.md",
        "nearest": [REPO, ROOT + "lib/", ROOT + "nes-bench/"],
    }
    with pytest.raises(NotFound) as refused:
        ns.read(REPO + "docs/guid.md?at=v1")
    assert refused.value.data["nearest"][0] == REPO + "docs/guide.md?at=v1"
    with pytest.raises(NotFound) as refused:
        ns.read(REPO + "doc/guide.md")
    assert refused.value.data["nearest"][0] == REPO + "docs/"
    assert all(".env" not in n for n in refused.value.data["nearest"])
    with pytest.raises(NotFound) as refused:
        ns.read(REPO + "docs/renamed.md?at=v1")
    nearest = refused.value.data["nearest"]
    assert nearest and all(n.startswith(REPO + "docs/") and n.endswith("?at=v1") for n in nearest)
    assert REPO + "docs/old.md?at=v1" in nearest


def test_nothing_leaks_from_any_refusal_or_listing(ns: Namespace) -> None:
    for uri in [*OUT, REPO + "docs/.env", REPO + ".git/config?at=hostile"]:
        with pytest.raises(Refusal) as refused:
            ns.read(uri)
        text = json.dumps(refused.value.data) + refused.value.message
        assert SECRET not in text and "worktree" not in text
        assert "/tmp" not in text.replace("/tmp/x", "")
    for listed in (ROOT, REPO, REPO + "docs/", REPO + "docs/?as=tree&depth=8"):
        assert SECRET not in json.dumps(ns.read(listed).body)


def test_an_unreadable_repository_is_git_error_not_a_crash(fresh: Scenario) -> None:
    import shutil

    ns = fresh.namespace()
    shutil.rmtree(fresh.root / "lib" / ".git")
    with pytest.raises(Refusal) as refused:
        ns.read(ROOT + "lib/")
    assert refused.value.data["reason"] == "git-error"
    assert refused.value.data["uri"] == ROOT + "lib/"
    assert str(fresh.root) not in json.dumps(refused.value.data) + refused.value.message
    assert f"tm://{HOST}/" in ns.read(ROOT).links[0].href


def test_every_gitstore_refusal_has_its_own_row_in_the_translation_table() -> None:
    import inspect

    from tmsite.gitstore import errors as gitstore_errors
    from tmsite.mounts.git.errors import refusal

    kinds = [
        cls
        for _, cls in inspect.getmembers(gitstore_errors, inspect.isclass)
        if issubclass(cls, gitstore_errors.GitStoreError)
        and cls not in (gitstore_errors.GitStoreError, gitstore_errors.GitError)
    ]
    assert len(kinds) == 9
    default = refusal.dispatch(gitstore_errors.GitStoreError)
    assert refusal.dispatch(gitstore_errors.GitError) is default  # git-error: the default row
    missing = [cls.__name__ for cls in kinds if refusal.dispatch(cls) is default]
    assert missing == []
    ambiguous = refusal.dispatch(gitstore_errors.AmbiguousRef)
    assert ambiguous is not refusal.dispatch(gitstore_errors.NoSuchRef)  # the specific row wins
