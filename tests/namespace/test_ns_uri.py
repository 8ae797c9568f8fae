"""The one URI module: parse and build round trips, canonical order, and bad URIs refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.namespace.world import HOST
from tmsite.core.errors import BadFacet, BadUri, NotFound
from tmsite.core.uri import MAX_URI_LENGTH, PARAM_ORDER, TmUri, build, parse, quote_segment
from tmsite.mounts.fs.mount import FsMount
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("NS1", "NS2", "NS8", "RJ1")


@pytest.mark.parametrize(
    "name",
    [
        "100%.md",
        "a#b.md",
        "what?.md",
        "with space.md",
        "[x]",
        "plus+and&eq=.txt",
        "caf\u00e9.md",
        "日本語.md",
        b"caf\xe9-latin1.txt".decode("utf-8", "surrogateescape"),
        b"\xff\xfe".decode("utf-8", "surrogateescape"),
        "~tilde-(paren)!.md",
    ],
)
def test_segment_round_trips_through_build_and_parse(name: str) -> None:
    text = build(HOST, "fs", ["docs", name])
    assert text.isascii()
    encoded = text.rsplit("/", 1)[1]
    assert not set("#? []&=+/") & set(encoded)
    assert re.fullmatch(r"(?:[^%]|%[0-9A-F]{2})+", encoded)
    parsed = parse(text)
    assert parsed.path == ("docs", name)
    assert parsed.path[-1].encode("utf-8", "surrogateescape") == name.encode(
        "utf-8", "surrogateescape"
    )
    assert str(parsed) == text
    assert parse(str(parsed)) == parsed


def test_reserved_characters_are_escaped_in_segments() -> None:
    assert quote_segment("100%") == "100%25"
    assert quote_segment("a#b") == "a%23b"
    assert quote_segment("q?") == "q%3F"
    assert quote_segment("a b") == "a%20b"
    assert quote_segment("[x]") == "%5Bx%5D"
    assert quote_segment("a/b") == "a%2Fb"
    assert quote_segment(b"\xe9".decode("utf-8", "surrogateescape")) == "%E9"
    assert quote_segment("é") == "%C3%A9"


def test_parameters_come_out_in_canonical_order() -> None:
    text = f"tm://{HOST}/fs/docs/a.md?cursor=c1&zeta=1&range=0-4&as=raw&at=main&alpha=2"
    built = str(parse(text))
    keys = [pair.split("=")[0] for pair in built.split("?", 1)[1].split("&")]
    assert keys == ["at", "as", "range", "cursor", "alpha", "zeta"]
    assert [k for k in PARAM_ORDER if k in keys] == ["at", "as", "range", "cursor"]
    assert build(HOST, "fs", ["docs"], params={"range": "0-1", "as": "raw"}) == (
        f"tm://{HOST}/fs/docs?as=raw&range=0-1"
    )


def test_parameter_values_round_trip_with_reserved_characters() -> None:
    uri = parse(f"tm://{HOST}/fs/docs/r.json").with_params(pointer="/a b/c&d=e+f#g")
    text = str(uri)
    assert "#" not in text and " " not in text
    assert parse(text).param("pointer") == "/a b/c&d=e+f#g"
    assert parse(f"tm://{HOST}/fs/a?pointer=/a+b").param("pointer") == "/a b"


def test_hosts_root_and_collections() -> None:
    hosts = parse("tm://")
    assert hosts.is_hosts and str(hosts) == "tm://" and hosts.parent() is None
    for text in (f"tm://{HOST}", f"tm://{HOST}/"):
        root = parse(text)
        assert root.is_root and root.collection and root.mount is None
        assert str(root) == f"tm://{HOST}/"
        assert root.parent() == hosts
    mount = parse(f"tm://{HOST}/fs/")
    assert mount.is_mount_root and mount.collection and str(mount) == f"tm://{HOST}/fs/"
    leaf = parse(f"tm://{HOST}/fs/docs/a.md?as=stat")
    assert not leaf.collection and leaf.name == "a.md"
    assert str(leaf.identity) == f"tm://{HOST}/fs/docs/a.md"
    assert str(leaf.parent()) == f"tm://{HOST}/fs/docs/"
    assert str(TmUri(HOST).child("fs", collection=True)) == f"tm://{HOST}/fs/"
    assert str(hosts.child(HOST)) == f"tm://{HOST}/"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"http://{HOST}/fs/", "only tm://"),
        (f"TM://{HOST}/fs/", "only tm://"),
        (f"tm:{HOST}/fs/", "only tm://"),
        (f"tm:/{HOST}/fs/", "only tm://"),
        (f"tm://user@{HOST}/fs/", "userinfo"),
        (f"tm://user:pw@{HOST}/fs/", "userinfo"),
        (f"tm://{HOST}:8080/fs/", "port"),
        (f"tm://{HOST}/fs/docs/a.md#top", "fragment"),
        (f"tm://{HOST}/fs/docs/a.md?as=raw#x", "fragment"),
        (f"tm://{HOST}/fs/docs/a b.md", "control"),
        (f"tm://{HOST}/fs/docs/a\x00.md", "control"),
        (f"tm://{HOST}/fs/docs/a\x1b.md", "control"),
        (f"tm://{HOST}/fs/docs/a\x7f.md", "control"),
        (f"tm://{HOST}/fs/docs/a.md\n", "control"),
        (f"tm://{HOST}/fs/docs/a.md?as=%ff", "not UTF-8"),
        ("tm:///fs/docs/", "needs a host"),
        ("tm://%74estbox/", "percent-encoded"),
        ("tm://a%2fb/fs/", "percent-encoded"),
        ("tm://%ff/", "percent-encoded"),
    ],
)
def test_bad_uris_are_refused_bad_uri(text: str, why: str) -> None:
    with pytest.raises(BadUri) as refused:
        parse(text)
    assert refused.value.data == {"reason": "bad-uri", "uri": text}
    assert why in refused.value.message


def test_non_string_is_bad_uri_without_echo() -> None:
    for value in (None, 5, b"tm://x/", ["tm://x/"]):
        with pytest.raises(BadUri) as refused:
            parse(value)
        assert refused.value.data == {"reason": "bad-uri"}


def test_over_long_uri_is_bad_uri_with_a_short_echo() -> None:
    text = f"tm://{HOST}/fs/docs/" + "a" * MAX_URI_LENGTH
    with pytest.raises(BadUri) as refused:
        parse(text)
    echoed = refused.value.data["uri"]
    assert refused.value.data["reason"] == "bad-uri"
    assert len(echoed) <= 201 and text.startswith(echoed.rstrip("…"))
    exact = f"tm://{HOST}/fs/" + "b" * (MAX_URI_LENGTH - len(f"tm://{HOST}/fs/"))
    assert len(exact) == MAX_URI_LENGTH
    assert parse(exact).mount == "fs"


def test_duplicate_parameter_is_bad_facet() -> None:
    text = f"tm://{HOST}/fs/docs/a.md?as=raw&as=stat"
    with pytest.raises(BadFacet) as refused:
        parse(text)
    data = refused.value.data
    assert data["reason"] == "bad-facet" and data["uri"] == text
    assert "valid" in data and "'as'" in refused.value.message


def test_wrong_host_is_not_found_with_the_root_nearest(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    ns = Namespace(HOST, {"fs": FsMount(HOST, tmp_path, ["docs"])})
    with pytest.raises(NotFound) as refused:
        ns.read("tm://elsewhere/fs/docs/")
    assert refused.value.data == {
        "reason": "not-found",
        "uri": "tm://elsewhere/fs/docs/",
        "nearest": [f"tm://{HOST}/"],
    }


def test_unknown_mount_is_not_found_with_nearest_mounts(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    ns = Namespace(HOST, {"fs": FsMount(HOST, tmp_path, ["docs"])})
    with pytest.raises(NotFound) as refused:
        ns.read(f"tm://{HOST}/fz/docs/")
    assert refused.value.data["nearest"] == [f"tm://{HOST}/fs/"]


def test_unknown_parameter_is_bad_facet_with_every_parameter_valid(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a\n")
    ns = Namespace(HOST, {"fs": FsMount(HOST, tmp_path, ["docs"])})
    text = f"tm://{HOST}/fs/docs/a.md?colour=red"
    with pytest.raises(BadFacet) as refused:
        ns.read(text)
    assert refused.value.data == {"reason": "bad-facet", "uri": text, "valid": list(PARAM_ORDER)}
