"""Where the box's MCP client connects: https to public addresses, or hosts the operator allows.

Every test here resolves names with a resolver it controls (``socket.getaddrinfo`` replaced:
a name it does not know fails the test) and guards ``socket.socket.connect``: dialling anything
but a loopback address fails the test at once, before a packet leaves. The one real peer is an
HTTP server on loopback.
"""

from __future__ import annotations

import ast
import ipaddress
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.core.exceptions import ValidationError

from tests.peers.processes import HttpPeer, peer, start_http_peer, stop_http_peer
from tmsite.core.addresses import AddressRefused, DialPolicy, not_public
from tmsite.core.errors import Gated
from tmsite.mounts.mcp.mount import McpMount
from tmsite.mounts.namespace import Namespace
from tmsite.servers.connect import probe_record
from tmsite.servers.models import McpServer
from tmsite.servers.programs import server_records

ROOT = Path(__file__).resolve().parents[2]
MAPPED = str(ipaddress.ip_address("::ffff:169.254.169.254"))

pytestmark = [pytest.mark.django_db, pytest.mark.spec("MCP", "HTTP")]
BASE = "tm://test/mcp/"


class Net:
    """The names the test resolves, what was resolved, and what was dialled."""

    def __init__(self) -> None:
        self.names: dict[str, list[str]] = {}
        self.resolved: list[str] = []
        self.dialled: list[tuple[str, int]] = []


@pytest.fixture
def net(monkeypatch: pytest.MonkeyPatch) -> Net:
    """A resolver the test controls and a connect guard: only loopback is ever dialled."""
    state = Net()
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        try:
            addresses = [str(ipaddress.ip_address(name))]
        except ValueError:
            if name not in state.names:
                pytest.fail(f"a name the test did not expect was resolved: {name!r}")
            state.resolved.append(name)
            addresses = state.names[name]
        out = []
        for text in addresses:
            family = socket.AF_INET6 if ":" in text else socket.AF_INET
            where = (text, int(port or 0), 0, 0) if family == socket.AF_INET6 else (text, port)
            out.append((family, socket.SOCK_STREAM, 6, "", where))
        return out

    def connect(self: socket.socket, address: Any) -> None:
        host = str(address[0])
        if not ipaddress.ip_address(host.split("%")[0]).is_loopback:
            pytest.fail(f"the client dialled {address!r}, which is not loopback")
        state.dialled.append((host, int(address[1])))
        real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return state


@pytest.fixture(scope="module")
def faults() -> Iterator[HttpPeer]:
    p = start_http_peer(peer("http_fault_peer.py"))
    yield p
    stop_http_peer(p)


@pytest.fixture
def ns() -> Namespace:
    return Namespace("test", {"mcp": McpMount("test")})


def asked(url: str) -> tuple[McpServer, Any]:
    """A record at ``url`` (not passed through the form: the client is judged), asked once."""
    server = McpServer.objects.create(name="peer", transport="http", url=url)
    outcome = probe_record(server)
    server.refresh_from_db()
    return server, outcome


@pytest.mark.parametrize(
    ("url", "address", "why"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254", "link-local"),
        ("https://169.254.169.254/", "169.254.169.254", "link-local"),
        ("http://10.0.0.1/mcp", "10.0.0.1", "private"),
        ("https://10.0.0.1/mcp", "10.0.0.1", "private"),
        ("http://[::1]:8931/mcp", "::1", "loopback"),
        ("http://127.0.0.1:8931/mcp", "127.0.0.1", "loopback"),
        # IPv4-mapped: written as Python writes the address (3.13 keeps the dotted quad)
        ("https://[::ffff:169.254.169.254]/", MAPPED, "link-local"),
        ("https://100.64.1.1/", "100.64.1.1", "shared"),
        ("https://0.0.0.0/", "0.0.0.0", "unspecified"),
    ],
)
def test_a_literal_address_that_is_not_public_is_refused_before_anything_is_dialled(
    net: Net, ns: Namespace, url: str, address: str, why: str, settings: Any
) -> None:
    settings.TM_MCP_ALLOWED_HOSTS = []  # a deployment's: loopback is the embedded default's
    server, outcome = asked(url)
    assert (outcome.outcome, outcome.failure) == ("gated", "refused-address")
    assert (server.last_outcome, server.last_failure) == ("gated", "refused-address")
    assert f"{address} is a {why} address" in server.last_detail
    assert net.dialled == [] and net.resolved == []
    with pytest.raises(Gated) as refused:
        ns.read(BASE + "peer/tools/")
    assert refused.value.data["reason"] == "gated"
    assert refused.value.data["failed"] == "refused-address"
    assert refused.value.data["check"] == "tm.W032"
    record = ns.read(BASE + "peer/").body["server"]
    assert (record["outcome"], record["failure"], record["check"]) == (
        "gated",
        "refused-address",
        "tm.W032",
    )
    assert net.dialled == []


def test_a_name_that_resolves_to_a_private_address_is_refused_before_it_is_dialled(
    net: Net,
) -> None:
    net.names["mcp.internal.example"] = ["93.184.216.34", "10.20.30.40"]
    server, outcome = asked("https://mcp.internal.example/mcp")
    assert (outcome.outcome, outcome.failure) == ("gated", "refused-address")
    assert "10.20.30.40 is a private address (mcp.internal.example resolves to it)" in (
        server.last_detail
    )
    assert net.resolved == ["mcp.internal.example"]
    assert net.dialled == [], "one address that is not public refuses the name, first or not"


def test_plain_http_to_a_public_name_is_refused_before_it_is_resolved(net: Net) -> None:
    server, outcome = asked("http://mcp.example.org/mcp")
    assert (outcome.outcome, outcome.failure) == ("gated", "refused-scheme")
    assert "plain http to mcp.example.org refused" in server.last_detail
    assert net.resolved == [] and net.dialled == []


def test_a_redirect_to_a_private_address_is_refused_and_not_followed(
    net: Net, faults: HttpPeer, settings: Any
) -> None:
    settings.TM_MCP_ALLOWED_HOSTS = [f"127.0.0.1:{faults.port}"]
    to = quote("http://10.0.0.1/mcp", safe="")
    server, outcome = asked(faults.url(f"/redirect-to?{to}"))
    assert (outcome.outcome, outcome.failure) == ("gated", "refused-redirect")
    assert "redirect to http://10.0.0.1/mcp refused" in server.last_detail
    assert "10.0.0.1 is a private address" in server.last_detail
    assert set(net.dialled) == {("127.0.0.1", faults.port)}, "only the peer itself"


def test_a_redirect_to_the_metadata_address_is_refused(
    net: Net, faults: HttpPeer, settings: Any
) -> None:
    settings.TM_MCP_ALLOWED_HOSTS = [f"127.0.0.1:{faults.port}"]
    to = quote("https://169.254.169.254/latest/meta-data/", safe="")
    server, outcome = asked(faults.url(f"/redirect-to?{to}"))
    assert (outcome.outcome, outcome.failure) == ("gated", "refused-redirect")
    assert "169.254.169.254 is a link-local address" in server.last_detail
    assert set(net.dialled) == {("127.0.0.1", faults.port)}


def test_the_address_dialled_is_the_one_judged_and_each_connection_is_judged_again(
    net: Net, faults: HttpPeer, settings: Any
) -> None:
    """An allowed name on loopback answers; once it resolves elsewhere, nothing is dialled."""
    settings.TM_MCP_ALLOWED_HOSTS = ["peer.test"]
    net.names["peer.test"] = ["127.0.0.1"]
    url = f"http://peer.test:{faults.port}/legacy"
    server, outcome = asked(url)
    assert outcome.outcome == "answered", outcome
    assert net.dialled and set(net.dialled) == {("127.0.0.1", faults.port)}
    # One resolution of the name per connection: the address judged is the address dialled
    # (a client that judged one answer and then dialled by name would resolve it again).
    assert len(net.resolved) == len(net.dialled)
    net.names["peer.test"] = ["10.0.0.9"]  # the name now points elsewhere (DNS rebinding)
    before = list(net.dialled)
    server.delete()
    server, outcome = asked(url)
    assert (outcome.outcome, outcome.failure) == ("gated", "refused-address")
    assert "plain http to peer.test dials 10.0.0.9, not loopback" in server.last_detail
    assert net.dialled == before


def allowed_hosts_when(env: dict[str, str], tmp_path: Path) -> list[str]:
    """``TM_MCP_ALLOWED_HOSTS`` as the settings of a fresh process with ``env`` make it."""
    said = subprocess.run(
        [sys.executable, "-c", "from tmsite import settings; print(settings.TM_MCP_ALLOWED_HOSTS)"],
        env={
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),
            "TM_SECRET_KEY": "x",
            "TM_VAR_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return list(ast.literal_eval(said.stdout.strip()))


def test_loopback_is_allowed_by_default_on_the_embedded_default_only(tmp_path: Path) -> None:
    loopback = ["127.0.0.1", "localhost", "[::1]"]
    assert allowed_hosts_when({}, tmp_path) == loopback
    deployed = {"TM_DATABASE_URL": "postgres://u:p@db.internal:5432/tm"}
    assert allowed_hosts_when(deployed, tmp_path) == []
    named = {**deployed, "TM_MCP_ALLOWED_HOSTS": "peer.internal:8443"}
    assert allowed_hosts_when(named, tmp_path) == ["peer.internal:8443"]
    assert DialPolicy.of(loopback).allows("::1", 9000)
    assert not DialPolicy.of([]).allows("::1", 9000)


def test_without_an_allowed_host_no_loopback_peer_is_dialled_and_an_operator_host_is(
    net: Net, faults: HttpPeer, settings: Any
) -> None:
    settings.TM_MCP_ALLOWED_HOSTS = []
    server, outcome = asked(faults.url("/legacy"))
    assert (outcome.outcome, outcome.failure) == ("gated", "refused-address")
    assert net.dialled == []
    server.delete()
    settings.TM_MCP_ALLOWED_HOSTS = [f"127.0.0.1:{faults.port}"]
    server, outcome = asked(faults.url("/legacy"))
    assert outcome.outcome == "answered", outcome
    assert set(net.dialled) == {("127.0.0.1", faults.port)}


def test_the_form_and_the_start_up_check_refuse_such_a_url(net: Net, settings: Any) -> None:
    settings.TM_MCP_ALLOWED_HOSTS = []
    record = McpServer(name="meta", transport="http", url="http://169.254.169.254/")
    with pytest.raises(ValidationError) as refused:
        record.full_clean()
    assert "169.254.169.254 is a link-local address" in refused.value.message_dict["url"][0]
    record.save()
    McpServer.objects.create(name="public", transport="http", url="https://mcp.example.org/")
    [message] = server_records()
    assert message.id == "tm.W032"
    assert message.msg.startswith("the MCP server meta's URL is refused: 169.254.169.254 is a ")
    assert net.dialled == [] and net.resolved == []


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("fe80::1", "link-local"),
        ("169.254.0.1", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("2002:0a00:0001::1", "private"),  # 6to4 carrying 10.0.0.1
        ("224.0.0.1", "multicast"),
        ("100.64.0.1", "shared"),
        ("240.0.0.1", "reserved"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_what_is_not_public(address: str, why: str | None) -> None:
    assert not_public(ipaddress.ip_address(address)) == why


def test_an_allowed_host_matches_by_name_or_by_name_and_port() -> None:
    policy = DialPolicy.of(["Peer.Test", "[::1]:8931", "10.0.0.5:443"])
    assert policy.allows("peer.test", 1) and policy.allows("::1", 8931)
    assert not policy.allows("::1", 8932)
    assert policy.check_url("https://10.0.0.5/mcp") == ("https", "10.0.0.5", 443)
    with pytest.raises(AddressRefused) as refused:
        policy.check_url("https://10.0.0.5:8443/mcp")
    assert (refused.value.what, refused.value.reason) == ("address", "private")
    with pytest.raises(AddressRefused) as refused:
        policy.check_url("https://user:pw@peer.test/")
    assert refused.value.what == "credentials"
