"""The rules every test runs under (:mod:`tests.audit`) see what they claim to, and fail tests.

Code that stands for tmsite's own is compiled under the name of a tmsite module (the rules tell
tmsite's calls from a test's by the file of the nearest frame); the real thing, a gitstore read
that runs ``git``, is the mutant the rules were proved against.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dulwich import objectspec
from dulwich.objects import Blob
from dulwich.refs import Ref
from dulwich.repo import Repo

from tests import audit
from tests.git_oracle import git_cli

ROOT = Path(__file__).resolve().parents[1]
AS_TMSITE = str(ROOT / "tmsite" / "gitstore" / "refs.py")
GIT = shutil.which("git") or "git"


def as_tmsite(source: str) -> Callable[..., Any]:
    """``run(**names)`` executing ``source`` as if it were a line of tmsite.gitstore.refs."""
    code = compile(f"def run(**names):\n{textwrap.indent(source, '    ')}\n", AS_TMSITE, "exec")
    scope: dict[str, Any] = {"os": os, "subprocess": subprocess, "sys": sys}
    exec(code, scope)
    run: Callable[..., Any] = scope["run"]
    return run


@pytest.mark.parametrize(
    "source",
    [
        "subprocess.run([names['git'], 'rev-parse', 'HEAD'], capture_output=True)",
        "subprocess.run('git rev-parse HEAD', shell=True, capture_output=True)",
        "subprocess.Popen(['/bin/sh', '-c', 'git log'], stdout=subprocess.DEVNULL).wait()",
        "os.posix_spawnp('git', ['git', '--version'], os.environ)",
        "os.system('git --version >/dev/null')",
        "subprocess.run(['git-upload-pack', '.'], capture_output=True)",
    ],
)
def test_tmsite_starting_git_is_refused(source: str) -> None:
    with audit.provoked() as found, pytest.raises(audit.AuditViolation):
        as_tmsite(source)(git=GIT)
    [message] = found
    assert message.startswith("audit rule git-subprocess: tmsite/gitstore/refs.py ran "), found


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_tmsite_starting_git_in_its_own_thread_is_seen() -> None:
    """The exception dies with the thread; the record is what fails the test."""
    worker = threading.Thread(target=as_tmsite("subprocess.run(['git', 'status'])"))
    with audit.provoked() as found:
        worker.start()
        worker.join()
    assert [m.split(" ran ")[0] for m in found] == [
        "audit rule git-subprocess: tmsite/gitstore/refs.py"
    ]


def test_tmsite_starting_other_programs_and_a_tests_git_oracle_are_allowed() -> None:
    with audit.provoked() as found:
        as_tmsite("subprocess.run([sys.executable, '-c', 'pass'], check=True)")()
        with contextlib.suppress(FileNotFoundError):  # no git here: the rule still allowed it
            subprocess.run([GIT, "--version"], capture_output=True, check=False)
    assert found == []


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo.init(str(tmp_path), mkdir=False)
    blob = Blob.from_string(b"data\n")
    made.object_store.add_object(blob)
    made.refs[Ref(b"refs/heads/main")] = blob.id  # a ref at a blob is enough to parse
    return made


def test_tmsite_handing_text_to_a_revision_parser_is_refused(repo: Repo) -> None:
    run = as_tmsite(
        "from dulwich.objectspec import parse_object\nreturn parse_object(names['repo'], 'main')"
    )
    with audit.provoked() as found, pytest.raises(audit.AuditViolation):
        run(repo=repo)
    assert found == [
        "audit rule revision-parser: tmsite/gitstore/refs.py called dulwich.objectspec.parse_object"
    ]


def test_a_test_may_use_the_revision_parsers(repo: Repo) -> None:
    with audit.provoked() as found:
        parsed = objectspec.parse_object(repo, "main")
    assert found == [] and parsed.as_raw_string() == b"data\n"


def test_every_revision_parser_is_guarded_and_earlier_references_too() -> None:
    names = [n for n in vars(objectspec) if n.startswith("parse_") or n == "scan_for_short_id"]
    assert {"parse_object", "parse_commit", "parse_tree", "parse_ref"} <= set(names)
    for name in names:
        assert getattr(getattr(objectspec, name), "_guarded", False), name
    held = types.ModuleType("tmsite._held_before_the_guard")
    original = objectspec.parse_commit.__wrapped__  # type: ignore[attr-defined]
    held.parse_commit = original  # type: ignore[attr-defined]
    sys.modules[held.__name__] = held
    try:
        audit.guard_revision_parsers()
        assert held.parse_commit is objectspec.parse_commit
        assert objectspec.parse_commit.__wrapped__ is original  # not wrapped twice
        assert not getattr(original, "_guarded", False)
    finally:
        del sys.modules[held.__name__]


@pytest.mark.parametrize(
    ("family", "kind", "address"),
    [
        (socket.AF_INET, socket.SOCK_STREAM, ("0.0.0.0", 9)),
        (socket.AF_INET6, socket.SOCK_STREAM, ("::", 9)),
        (socket.AF_INET, socket.SOCK_DGRAM, ("0.0.0.0", 9)),
    ],
)
def test_a_connect_anywhere_but_loopback_is_refused_before_it_is_made(
    family: int, kind: int, address: tuple[str, int]
) -> None:
    """The unspecified address is not loopback, yet stays on this machine if the rule slept."""
    with (
        socket.socket(family, kind) as sock,
        audit.provoked() as found,
        pytest.raises(audit.AuditViolation),
    ):
        if kind == socket.SOCK_DGRAM:
            sock.sendto(b"x", address)
        else:
            sock.connect(address)
    [message] = found
    assert message.startswith("audit rule loopback-only: socket.")
    assert repr(address) in message


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.200.3.4", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("10.0.0.8", False),
        ("192.0.2.1", False),
        ("::ffff:192.0.2.1", False),
        ("2001:db8::1", False),
        ("evil.example", False),
        ("127.0.0.1.evil.example", False),
    ],
)
def test_only_loopback_addresses_pass(host: str, allowed: bool) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    assert audit._loopback(family, (host, 80)) is allowed


def test_loopback_and_local_sockets_connect_and_the_recorder_sees_them(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server, audit.provoked() as found:
        port = server.getsockname()[1]
        path = str(tmp_path / "s")
        with socket.socket(socket.AF_UNIX) as local_server:
            local_server.bind(path)
            local_server.listen()
            with audit.recorded_connections() as connected:
                with socket.socket() as bare:
                    bare.connect(("127.0.0.1", port))  # not through create_connection
                socket.create_connection(("127.0.0.1", port)).close()
                with socket.socket(socket.AF_UNIX) as local:
                    local.connect(path)
    assert found == []
    assert connected == [("127.0.0.1", port), ("127.0.0.1", port), (path, 0)]


INNER = """
import socket
import subprocess
import threading

from tests.test_suite_rules import as_tmsite


def test_a_violation_the_code_swallows():
    try:
        socket.socket().connect(("0.0.0.0", 9))
    except Exception:
        pass


def test_a_violation_in_a_thread():
    worker = threading.Thread(target=as_tmsite("subprocess.run(['git', 'status'])"))
    worker.start()
    worker.join()


def test_nothing_broken():
    with socket.create_server(("127.0.0.1", 0)) as server:
        socket.create_connection(server.getsockname()).close()
"""


@pytest.mark.slow
@pytest.mark.parametrize("switch", ["1", "0"])
def test_a_broken_rule_fails_the_test_it_happened_in(tmp_path: Path, switch: str) -> None:
    """Run as a suite of its own: the rules fail exactly the tests that broke them, even when
    the code swallowed the error or it happened in another thread; ``TM_TEST_AUDIT=0`` is the
    switch that turns them off."""
    (tmp_path / "test_inner.py").write_text(INNER)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "tmsite.settings",
        "TM_VAR_DIR": str(tmp_path / "var"),
        "TM_SECRET_KEY": "test-only",
        "TM_TEST_AUDIT": switch,
    }
    command = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:xdist"]
    command += ["-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning"]
    command += ["--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    out = done.stdout
    if switch == "0":
        assert done.returncode == 0 and "3 passed" in out, out + done.stderr
        return
    assert done.returncode == 1 and "2 failed, 1 passed" in out, out + done.stderr
    lines = out.splitlines()

    def failure_of(test: str) -> str:
        [at] = [i for i, line in enumerate(lines) if line.strip("_ ") == test]
        return lines[at + 1]

    assert failure_of("test_a_violation_the_code_swallows") == (
        "audit rule loopback-only: socket.connect to ('0.0.0.0', 9): only loopback is allowed"
    )
    assert failure_of("test_a_violation_in_a_thread") == (
        "audit rule git-subprocess: tmsite/gitstore/refs.py ran ['git', 'status'] "
        "(git is read through dulwich)"
    )


@pytest.mark.parametrize("ci", ["", "true"])
def test_a_missing_git_oracle_skips_but_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ci: str
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no git on it
    monkeypatch.setenv("CI", ci)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome) as stopped:
        git_cli()
    assert "not on PATH (apt-get install git)" in str(stopped.value)
    assert ("under CI=true a missing part fails instead of skipping" in str(stopped.value)) is (
        ci == "true"
    )
