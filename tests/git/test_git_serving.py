"""Serving the git mount: completion, templates, start-up checks, the import command, fs ?at=,
a pinned default, caching, threads, and reads through the MCP methods."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.git.scenario import FS, HOST, REPO, ROOT, Scenario
from tmsite import gitstore
from tmsite.core.errors import BadFacet, Denied, NoSuchRef, NotFound, OutOfRoot
from tmsite.core.parts import to_text
from tmsite.core.uri import parse
from tmsite.mcp.codes import code_for
from tmsite.mcp.methods import dispatch
from tmsite.mcp.protocol import CallContext, RpcError
from tmsite.mounts import registry
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.git.imports import ManifestError, parse_manifest
from tmsite.mounts.git.mount import GitMount, check_git_settings
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("GIT", "FS", "NS7")

TEMPLATE = f"tm://{HOST}/git/{{repo}}/{{+path}}{{?at,as,n}}"
_ENTRY = {"repo": "lib", "path": "x", "to": "docs/x.md"}


# ---- completion and templates -------------------------------------------------------------


def test_template_is_titled_and_teaches_the_grammar(ns: Namespace) -> None:
    [template] = ns.mounts["git"].templates()
    assert template.uri_template == TEMPLATE
    assert template.arguments == ("repo", "path", "at", "as", "n")
    assert template.title
    for word in ("?at=", "branch", "tag", "date", "?as=log", "blame", "depth", "?lines="):
        assert word in template.description, word


def test_completion_of_every_argument(ns: Namespace) -> None:
    def complete(argument: str, value: str, **context: str) -> list[str]:
        return ns.complete(TEMPLATE, argument, value, context)

    assert complete("repo", "") == ["lib", "nes-bench", "tmsite"]
    assert complete("repo", "n") == ["nes-bench"]
    assert complete("at", "", repo="tmsite") == ["HEAD", "feature", "hostile", "main", "v1", "v2"]
    assert complete("at", "v", repo="tmsite") == ["v1", "v2"]
    assert complete("at", "", repo="nope") == []
    assert complete("at", "") == []
    assert complete("path", "docs/g", repo="tmsite") == ["docs/guide.md"]
    assert complete("path", "docs/o", repo="tmsite") == []
    assert complete("path", "docs/o", repo="tmsite", at="v1") == ["docs/old.md"]
    assert complete("path", "", repo="tmsite") == [
        "data/",
        "docs/",
        "notes/",
        "vendor/",
        ".gitmodules",
        "README.md",
    ]
    assert ".env" not in " ".join(complete("path", "docs/", repo="tmsite"))
    assert complete("path", "../", repo="tmsite") == []
    assert complete("path", "docs/", repo="tmsite", at="--output") == []
    assert complete("as", "b") == ["blame"]
    assert complete("n", "1") == ["1", "10", "100"]


# ---- start-up checks -------------------------------------------------------------------------


def ids(messages: list[Any]) -> list[str]:
    return [m.id for m in messages]


def test_checks_pass_on_a_good_configuration(settings: Any, scenario: Scenario) -> None:
    settings.TM_CHECKOUT = scenario.checkout
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {"lib": scenario.root / "lib", "nes-bench": scenario.root / "nes-bench"}
    settings.TM_GIT_DEFAULT_REFS = {"tmsite": "v1"}
    settings.TM_IMPORTS_FILE = scenario.checkout / "data" / "imports.json"
    assert check_git_settings() == []
    from tmsite.check_registry import CHECKS

    assert check_git_settings in CHECKS


def test_each_check_refuses_its_mistake(settings: Any, scenario: Scenario, tmp_path: Path) -> None:
    settings.TM_CHECKOUT = scenario.checkout
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_IMPORTS_FILE = None
    settings.TM_GIT_DEFAULT_REFS = {}
    settings.TM_GIT_REPOS = ["lib"]
    assert ids(check_git_settings()) == ["tm.E010"]
    settings.TM_GIT_REPOS = {"bad name": scenario.root / "lib", "tmsite": scenario.root / "lib"}
    assert ids(check_git_settings()) == ["tm.E011", "tm.E011"]
    (tmp_path / "plain").mkdir()
    settings.TM_GIT_REPOS = {"plain": tmp_path / "plain", "gone": tmp_path / "missing"}
    messages = check_git_settings()
    assert ids(messages) == ["tm.E012", "tm.E012"]
    assert all(str(tmp_path) not in m.msg for m in messages)
    settings.TM_GIT_REPOS = {"lib": scenario.root / "lib"}
    settings.TM_GIT_DEFAULT_REFS = {"nope": "main", "lib": "v9", "tmsite": "-n"}
    assert ids(check_git_settings()) == ["tm.E013", "tm.E013", "tm.E013"]
    settings.TM_GIT_DEFAULT_REFS = {}
    manifest = tmp_path / "imports.json"
    manifest.write_text('{"imports": [{"repo": "lib", "path": "../x", "to": "docs/x.md"}]}')
    settings.TM_IMPORTS_FILE = manifest
    assert ids(check_git_settings()) == ["tm.E014"]
    manifest.write_text('{"imports": [{"repo": "nes-bench", "path": "x", "to": "docs/x.md"}]}')
    assert ids(check_git_settings()) == ["tm.E014"]
    manifest.write_text('{"imports": [{"repo": "lib", "path": "x", "to": "data/x.md"}]}')
    assert ids(check_git_settings()) == ["tm.E014"]
    manifest.write_text("not json")
    assert ids(check_git_settings()) == ["tm.E014"]
    settings.TM_IMPORTS_FILE = None
    settings.TM_CHECKOUT = tmp_path / "plain"
    assert ids(check_git_settings()) == ["tm.W010"]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ([], "expected an object with an 'imports' list"),
        ({"imports": ["docs/x.md"]}, "imports[0] must be an object"),
        ({"imports": [{"repo": "lib", "path": "x"}]}, "imports[0] takes repo, path, to"),
        ({"imports": [{**_ENTRY, "from": "x"}]}, "(unknown: ['from'], missing: [])"),
        ({"imports": [{**_ENTRY, "repo": ""}]}, "imports[0].repo must be a non-empty string"),
        ({"imports": [{**_ENTRY, "to": "data/x.md"}]}, "imports[0].to must lie under docs/"),
        ({"imports": [{**_ENTRY, "path": "a/.env"}]}, "imports[0].path 'a/.env' names a denied"),
        ({"imports": [{**_ENTRY, "ref": 1}]}, "imports[0].ref must be a string"),
        ({"imports": [{**_ENTRY, "ref": "a..b"}]}, "imports[0].ref: "),
        ({"imports": [_ENTRY, {**_ENTRY, "path": "y"}]}, "imports[1].to 'docs/x.md' is imported"),
    ],
)
def test_the_import_manifest_is_refused_naming_the_entry(data: object, why: str) -> None:
    with pytest.raises(ManifestError) as refused:
        parse_manifest(data, "m.json")
    assert str(refused.value).startswith("m.json: ") and why in str(refused.value)


def test_the_import_manifest_is_indexed_both_ways() -> None:
    second = {**_ENTRY, "to": "docs/y.md", "ref": "v1"}
    manifest = parse_manifest({"imports": [_ENTRY, second]}, "m.json")
    assert [entry.ref for entry in manifest.entries] == [None, "v1"]
    assert manifest.by_copy["docs/y.md"].ref == "v1"
    assert manifest.by_origin[("lib", "x")] == manifest.entries


def test_the_mount_serves_what_the_check_reads(
    settings: Any, scenario: Scenario, tmp_path: Path
) -> None:
    settings.TM_CHECKOUT = scenario.checkout
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {"lib": scenario.root / "lib", "bad name": scenario.root / "lib"}
    settings.TM_GIT_DEFAULT_REFS = {"tmsite": "v1"}
    settings.TM_IMPORTS_FILE = None
    mount = GitMount.from_settings(HOST)
    assert list(mount.repos) == ["lib", "tmsite"] and mount.checkout_repo == "tmsite"
    assert mount.repos["tmsite"].path == scenario.checkout
    assert mount.repos["tmsite"].default_ref == "v1" and mount.imports.path is None
    assert ids(check_git_settings()) == ["tm.E011"]
    (tmp_path / "plain").mkdir()
    settings.TM_CHECKOUT = tmp_path / "plain"
    settings.TM_GIT_REPOS = {"lib": scenario.root / "lib"}
    settings.TM_GIT_DEFAULT_REFS = {}
    mount = GitMount.from_settings(HOST)
    assert list(mount.repos) == ["lib"] and mount.checkout_repo is None
    assert ids(check_git_settings()) == ["tm.W010"]
    settings.TM_CHECKOUT = scenario.checkout
    settings.TM_IMPORTS_FILE = scenario.checkout / "data" / "imports.json"
    assert GitMount.from_settings(HOST).imports.path == settings.TM_IMPORTS_FILE


# ---- the import command ------------------------------------------------------------------------


def test_tm_import_docs_copies_through_git(settings: Any, fresh: Scenario) -> None:
    settings.TM_CHECKOUT = fresh.checkout
    settings.TM_GIT_REPOS = {"nes-bench": fresh.root / "nes-bench"}
    settings.TM_GIT_DEFAULT_REFS = {}
    settings.TM_IMPORTS_FILE = fresh.checkout / "data" / "imports.json"
    copy = fresh.checkout / "docs" / "nes" / "pile.md"
    assert copy.read_text() == "# The pile\n"
    with pytest.raises(CommandError, match="1 imported doc"):
        call_command("tm_import_docs", "--check", stdout=_Sink())
    call_command("tm_import_docs", stdout=_Sink())
    assert copy.read_text() == "# The pile\nMore.\n"
    call_command("tm_import_docs", "--check", stdout=_Sink())
    manifest = {"imports": [{"repo": "nes-bench", "path": "docs/pile.md", "to": "docs/up.md"}]}
    (fresh.checkout / "docs" / "up.md").symlink_to(fresh.root / "outside.md")
    settings.TM_IMPORTS_FILE.write_text(json.dumps(manifest))
    with pytest.raises(CommandError, match="symlink"):
        call_command("tm_import_docs", stdout=_Sink())
    assert not (fresh.root / "outside.md").exists()
    settings.TM_IMPORTS_FILE.write_text('{"imports": [{"repo": "x", "path": "a", "to": "b"}]}')
    with pytest.raises(CommandError, match=r"imports\.json"):
        call_command("tm_import_docs", stdout=_Sink())


class _Sink:
    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


# ---- fs ?at= -------------------------------------------------------------------------------------


def fs_at(ns: Namespace, text: str) -> Any:
    uri = parse(text)
    at = uri.param("at")
    assert at is not None
    git = ns.mounts["git"]
    assert isinstance(git, GitMount)
    return git.read_checkout_at(uri, at)


def test_fs_file_at_a_revision(ns: Namespace, scenario: Scenario) -> None:
    old = fs_at(ns, FS + "docs/guide.md?at=v1")
    assert old.body == "# Guide\nsecond\nline three\n" and old.mime_type == "text/markdown"
    links = {(link.rel, link.href) for link in old.links}
    assert ("latest-version", FS + "docs/guide.md") in links
    assert ("alternate", REPO + "docs/guide.md?at=v1") in links
    assert ("version-history", REPO + "docs/guide.md?at=v1&as=log") in links
    assert ("describedby", FS + "docs/guide.md?at=v1&as=stat") in links
    for link in old.links:
        ns.read(link.href) if "?at=" not in link.href or "/git/" in link.href else None
    first = fs_at(ns, FS + "docs/guide.md?at=2023-11-14&lines=2-2")
    assert to_text(first.body) == "# Guide\nfirst\n"  # parts are cut by the namespace
    stat = fs_at(ns, FS + "docs/guide.md?at=v1&as=stat").body
    assert stat == {  # an fs stat, less what git does not keep (the modified time)
        "uri": FS + "docs/guide.md?at=v1",
        "name": "guide.md",
        "mimeType": "text/markdown",
        "isCollection": False,
        "size": 26,
        "text": True,
        "path": "docs/guide.md",
        "at": "v1",
        "commit": scenario.c["c2"],
    }
    ranged = fs_at(ns, FS + "docs/blob.bin?at=v1&range=0-4")
    assert ranged.body == bytes(range(4)) and ranged.part_applied


def test_fs_at_is_read_through_the_fs_mount_only_when_git_is_served(
    ns: Namespace, scenario: Scenario
) -> None:
    through = ns.read(FS + "docs/guide.md?at=v1&lines=2-2")
    assert (
        to_text(through.body) == "second\n" and through.uri == FS + "docs/guide.md?at=v1&lines=2-2"
    )
    stat = ns.read(FS + "docs/guide.md?at=v1&as=stat").body
    assert stat == fs_at(ns, FS + "docs/guide.md?at=v1&as=stat").body
    with pytest.raises(Denied):
        ns.read(FS + "docs/.env?at=v1")
    alone = registry.compose(HOST, {"fs": FsMount(HOST, scenario.checkout, ["docs"])})
    with pytest.raises(BadFacet) as refused:
        alone.read(FS + "docs/guide.md?at=v1")
    assert refused.value.data == {
        "reason": "bad-facet",
        "uri": FS + "docs/guide.md?at=v1",
        "valid": [],
    }
    assert refused.value.message == "at= needs the git mount, which is not served"
    assert alone.read(FS + "docs/guide.md").body.startswith("# Guide")


def test_fs_at_refusals(ns: Namespace) -> None:
    cases: dict[str, tuple[type, dict[str, Any]]] = {
        FS + "docs/guide.md?at=v1..v2": (BadFacet, {"rule": "'..' is revision-range syntax"}),
        FS + "docs/guide.md?at=v9": (NoSuchRef, {}),
        FS + "docs/.env?at=v1": (Denied, {}),
        FS + "docs/%2e%2e/README.md?at=v1": (OutOfRoot, {}),
        FS + "vendor/lib?at=v1": (OutOfRoot, {}),
        FS + "docs/renamed.md?at=v1": (NotFound, {}),
        FS + "docs/guide.md?at=v1&as=log": (BadFacet, {"valid": ["raw", "stat"]}),
    }
    for text, (kind, fields) in cases.items():
        with pytest.raises(kind) as refused:
            fs_at(ns, text)
        data = refused.value.data
        assert data["uri"] == str(parse(text))
        for key, value in fields.items():
            assert data[key] == value, text
    with pytest.raises(NoSuchRef) as refused:
        fs_at(ns, FS + "docs/guide.md?at=v9")
    assert refused.value.data["nearest"][0] == FS + "docs/guide.md?at=v1"
    with pytest.raises(NotFound) as refused:
        fs_at(ns, FS + "docs/renamed.md?at=v1")
    assert refused.value.data["nearest"][0].startswith(FS + "docs/")
    assert refused.value.data["nearest"][0].endswith("?at=v1")
    with pytest.raises(NotFound) as refused:
        fs_at(ns, FS + "docs/nes?at=HEAD")
    assert refused.value.message == "that is a directory at that revision"
    assert refused.value.data == {
        "reason": "not-found",
        "uri": FS + "docs/nes?at=HEAD",
        "nearest": [],
    }


# ---- a pinned default, caching, threads ------------------------------------------------------


def test_a_pinned_default_ref_is_what_the_site_serves(scenario: Scenario) -> None:
    ns = scenario.namespace(default_refs={"tmsite": "v1"})
    assert ns.read(REPO).body["commit"] == scenario.c["c2"]
    assert ns.read(REPO + "?at=HEAD").body["commit"] == scenario.c["c2"]
    main = ns.read(REPO + "docs/guide.md?at=main")
    assert main.body.endswith("fourth\n")
    assert [link.href for link in main.links if link.rel == "latest-version"] == [
        REPO + "docs/guide.md"
    ]
    assert "tm:repository" in {link.rel for link in ns.read(FS + "docs/guide.md").links}


def test_reads_at_a_commit_are_cached(ns: Namespace, scenario: Scenario) -> None:
    from tmsite.gitstore.cache import READS

    uri = REPO + f"docs/guide.md?at={scenario.c['c6']}&as=blame"
    first = ns.read(uri).body
    hits = READS.hits
    again = ns.read(uri)
    assert again.body is first, "the assembled body comes from the cache"
    assert READS.hits > hits
    log = REPO + "?as=log&n=5"
    assert ns.read(log).body is ns.read(log).body


def test_concurrent_reads_through_the_namespace_agree(ns: Namespace, scenario: Scenario) -> None:
    uris = [
        ROOT,
        REPO,
        REPO + "docs/?at=v1",
        REPO + "docs/guide.md",
        REPO + "docs/guide.md?at=v1&as=blame",
        REPO + "?as=log&n=100",
        REPO + "vendor/lib",
        REPO + "docs/blob.bin?range=3-9",
        REPO + "docs/?as=tree&depth=8",
        FS + "docs/guide.md",
        f"tm://{HOST}/git/lib/lib.c?as=log",
        REPO + "?at=2023-11-18T12:00:00Z",
    ]

    def read(uri: str) -> str:
        content = ns.read(uri)
        return json.dumps([to_text(content.body), [link.to_json() for link in content.links]])

    gitstore.clear_caches()
    serial = {uri: read(uri) for uri in uris}
    gitstore.clear_caches()
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(
            pool.map(lambda i: (uris[i % len(uris)], read(uris[i % len(uris)])), range(400))
        )
    for uri, text in results:
        assert text == serial[uri], uri


# ---- through the MCP methods ---------------------------------------------------------------


@pytest.fixture
def served(settings: Any, scenario: Scenario) -> Iterator[Namespace]:
    settings.TM_CHECKOUT = scenario.checkout
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {"lib": scenario.root / "lib", "nes-bench": scenario.root / "nes-bench"}
    settings.TM_GIT_DEFAULT_REFS = {}
    settings.TM_IMPORTS_FILE = scenario.checkout / "data" / "imports.json"
    settings.TM_FS_ROOTS = ["docs", "data", "notes"]
    settings.TM_HOST = HOST
    settings.TM_MOUNTS = ["fs", "git"]
    registry.reset()
    yield registry.namespace()
    registry.reset()


@pytest.mark.parametrize("era", ["2025-06-18", "2026-07-28"])
def test_reads_and_refusals_through_dispatch(served: Namespace, era: str) -> None:
    ctx = CallContext(version=era)
    assert isinstance(served.mounts["git"], GitMount)
    result = dispatch("resources/read", {"uri": REPO + "docs/guide.md?at=v1"}, ctx)
    [content] = result["contents"]
    assert content["uri"] == REPO + "docs/guide.md?at=v1"
    assert content["mimeType"] == "text/markdown"
    assert content["text"] == "# Guide\nsecond\nline three\n"
    log = dispatch("resources/read", {"uri": REPO + "?as=log&n=2"}, ctx)["contents"][0]
    assert log["mimeType"] == "application/vnd.tm.log+json"
    assert len(json.loads(log["text"])["commits"]) == 2
    for uri, reason in (
        (REPO + "?at=HEAD~1", "bad-facet"),
        (REPO + "?at=v9", "no-such-ref"),
        (REPO + "%2e%2e/x", "out-of-root"),
        (REPO + "docs/.env", "denied"),
        (REPO + "docs/guid.md", "not-found"),
        (REPO + "?as=log&n=1000", "bad-facet"),
    ):
        with pytest.raises(RpcError) as caught:
            dispatch("resources/read", {"uri": uri}, ctx)
        assert caught.value.data is not None and caught.value.data["reason"] == reason, uri
        assert caught.value.code == code_for(reason, ctx.era)
    completed = dispatch(
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": TEMPLATE},
            "argument": {"name": "at", "value": "v"},
            "context": {"arguments": {"repo": "tmsite"}},
        },
        ctx,
    )
    assert completed["completion"]["values"] == ["v1", "v2"]
    templates = dispatch("resources/templates/list", {}, ctx)["resourceTemplates"]
    assert TEMPLATE in [t["uriTemplate"] for t in templates]
