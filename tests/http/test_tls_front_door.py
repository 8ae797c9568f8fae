"""An https front door: the site's name goes out as SNI and as Host, and the door's certificate
is verified against that name — by the system's authorities, or by a ``ca_file`` the site names.
A door that cannot prove the name is ``unreachable``, saying why, and nothing of it is read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.http.conftest import DEMO, DEMO_DIR, uri
from tests.http.tls import Authority, Seen, tls_static_server
from tmsite.core.errors import Unreachable
from tmsite.mounts import registry
from tmsite.mounts.http.mount import check_sites
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("HTTP")

PAGE = ("notes", "solder.html")
PAGE_TEXT = "Solder\nTin and lead, or tin and silver.\nmelt  183 C\nflow  250 C\n"


@pytest.fixture
def authority(tmp_path: Path) -> Authority:
    return Authority(tmp_path)


def _namespace(settings: Any, door: str, **site: Any) -> Namespace:
    settings.TM_SITES = {DEMO: {"kind": "static", "front_door": door, **site}}
    settings.TM_HOST = "testbox"
    settings.TM_MOUNTS = ["http"]
    registry.reset()
    return registry.namespace()


@pytest.fixture
def door_for_the_demo(authority: Authority) -> Iterator[tuple[str, Seen]]:
    """The demo site behind TLS, with a certificate for its name signed by ``authority``."""
    with tls_static_server(DEMO_DIR, *authority.issue(DEMO)) as served:
        yield served
    registry.reset()


def test_the_site_name_is_the_sni_and_the_host_and_the_page_is_read(
    settings: Any, authority: Authority, door_for_the_demo: tuple[str, Seen]
) -> None:
    door, seen = door_for_the_demo
    ns = _namespace(settings, door, ca_file=str(authority.cert_file))
    assert ns.read(uri(DEMO, *PAGE)).body == PAGE_TEXT
    assert seen.server_names and set(seen.server_names) == {DEMO}
    assert seen.hosts and set(seen.hosts) == {DEMO}


def test_the_system_authorities_are_used_when_no_ca_file_is_named(
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    authority: Authority,
    door_for_the_demo: tuple[str, Seen],
) -> None:
    door, seen = door_for_the_demo
    ns = _namespace(settings, door)
    with pytest.raises(Unreachable) as refused:
        ns.read(uri(DEMO, *PAGE))
    untrusted = (
        "TLS failed: the front door's certificate is not trusted "
        "(unable to get local issuer certificate)"
    )
    assert refused.value.uri == uri(DEMO, collection=True)  # the site's own files come first
    assert refused.value.data == {
        "reason": "unreachable",
        "uri": uri(DEMO, collection=True),
        "failed": f"/robots.txt: {untrusted}",
    }
    assert seen.hosts == [], "no request went to a door that did not prove the name"
    # OpenSSL's default paths honour SSL_CERT_FILE: the box's authority installed system-wide.
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.cert_file))
    assert _namespace(settings, door).read(uri(DEMO, *PAGE)).body == PAGE_TEXT


def test_a_certificate_for_another_name_is_refused(settings: Any, authority: Authority) -> None:
    with tls_static_server(DEMO_DIR, *authority.issue("other.example")) as (door, seen):
        ns = _namespace(settings, door, ca_file=str(authority.cert_file))
        with pytest.raises(Unreachable) as refused:
            ns.read(uri(DEMO, *PAGE))
    assert refused.value.data["reason"] == "unreachable"
    assert refused.value.data["failed"].startswith(
        "/robots.txt: TLS failed: the front door's certificate is not trusted (Hostname mismatch"
    )
    assert seen.server_names == [DEMO] and seen.hosts == []


def test_verify_off_reads_through_a_certificate_nobody_vouches_for(
    settings: Any, tmp_path: Path
) -> None:
    (tmp_path / "stranger").mkdir()
    stranger = Authority(tmp_path / "stranger")
    with tls_static_server(DEMO_DIR, *stranger.issue("other.example")) as (door, seen):
        ns = _namespace(settings, door, verify=False)
        assert ns.read(uri(DEMO, *PAGE)).body == PAGE_TEXT
    assert DEMO in seen.server_names and set(seen.hosts) == {DEMO}


def test_a_ca_file_that_is_not_a_file_stops_start_up(settings: Any, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.pem"
    settings.TM_SITES = {DEMO: {"kind": "static", "ca_file": str(missing)}}
    [message] = check_sites()
    assert message.id == "tm.E020"
    assert message.msg == f"TM_SITES['{DEMO}']: ca_file '{missing}' is not a file"
