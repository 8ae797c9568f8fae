"""The documented setup, for real: nginx in front of two "machines" of the default server
(``python -m tmsite.serve``, two workers each), PostgreSQL as the database, Redis as the shared
cache. The caller's budget is one across all four workers; the request log lands in PostgreSQL
without any caller in it; health says which database and cache it reached.

The machines are started and stopped by ``deploy/systemd/tmsite.service`` itself (its
``ExecStart``, ``ExecStartPost`` waiting on ``/api/v1/live``, its stop signal to the group), as
``deploy/README.md`` installs it; the liveness check and the purge are their units' commands.
A real Prometheus (``tests/manymachines/prometheus.py``) scrapes both machines and reads back
the requests sent through nginx, summed over the machines and their workers."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.manymachines import units
from tests.oplog.servers import (
    free_port,
    json_lines,
    migrate,
    nginx,
    read,
    server_env,
)

pytestmark = pytest.mark.spec("OP5", "OP1", "OP2", "OBS1", "OBS3", "OBS5")


@pytest.mark.slow
def test_nginx_two_machines_postgresql_redis(
    database_url: str, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    import psycopg

    front_port = free_port()
    env = server_env(
        tmp_path / "var",
        TM_FRONT_DOOR=f"http://127.0.0.1:{front_port}",  # pages are read through nginx
        TM_DATABASE_URL=database_url,
        TM_REDIS_URL=redis_url,
        TM_CACHE_PREFIX=cache_prefix,
        TM_RATE_BURST="24",
        TM_RATE_REFILL="0.001",
        TM_LOG_FLUSH_ROWS="1",
    )
    migrate(env)
    logs = [tmp_path / "machine-a.log", tmp_path / "machine-b.log"]
    # each machine's EnvironmentFile: the box's settings and where its launcher listens
    envs = [
        {**env, "TM_SERVE_HOST": "127.0.0.1", "TM_SERVE_PORT": str(free_port()),
         "TM_SERVE_WORKERS": "2"}
        for _ in logs
    ]  # fmt: skip
    with ExitStack() as stack:
        machines = [  # threads as the launcher sets them (8)
            stack.enter_context(units.machine(machine_env, log)).url
            for machine_env, log in zip(envs, logs, strict=True)
        ]
        front = stack.enter_context(nginx(machines, tmp_path / "nginx", port=front_port))

        import httpx

        health = httpx.get(f"{front}/api/v1/health", timeout=30).json()
        assert health["status"] == "ok"
        assert health["database"]["vendor"] == "postgresql"
        assert health["cache"]["backend"] == "RedisCache"
        ready = httpx.get(f"{front}/api/v1/ready", timeout=30)
        assert ready.status_code == 200
        assert set(ready.json()["checks"]) == {"database", "cache", "search"}
        assert httpx.get(f"{front}/api/v1/live", timeout=30).json() == {"status": "live"}
        for machine_env in envs:  # the liveness timer's check passes on a live machine
            assert units.run("tmsite-live.service", "ExecStart", machine_env).returncode == 0
        purged = units.run("tmsite-purge.service", "ExecStart", envs[0])
        assert purged.returncode == 0, purged.stderr
        assert purged.stdout.startswith("deleted 0 request log rows older than 30 days")

        stylesheet = httpx.get(f"{front}/static/site.css", timeout=30)
        assert stylesheet.status_code == 200, "nginx passes /static/ through to the site"
        file = "tm://tinymachines/fs/docs/index.md"
        page = "tm://tinymachines/http/tinymachines.ai/docs"

        def one(i: int) -> str:
            uri = page if i % 10 == 0 else file  # 4 pages of 4 tokens among 36 files
            reply = read(front, uri, i, {"User-Agent": "ManyMachines-Probe/1.0"})
            assert reply.status_code == 200
            body = reply.json()
            return str(body["error"]["data"]["reason"]) if "error" in body else "ok"

        # The first page read goes alone, well inside the budget; the rest race for what is left.
        assert one(0) == "ok", "a page read through nginx answers"
        with ThreadPoolExecutor(8) as pool:
            results = ["ok", *pool.map(one, range(1, 40))]
        outcomes = Counter(results)
        assert {results[i] for i in range(0, 40, 10)} <= {"ok", "rate-limited"}

        def straight(i: int) -> str:
            # nginx keeps its upstream connections, which may all be one worker's; the same
            # caller (as nginx forwards it) on a connection of its own to a machine may go to
            # either of its workers, and meets the same spent bucket there
            reply = read(machines[i % 2], file, i, {"X-Forwarded-For": "127.0.0.1"})
            assert reply.status_code == 200
            body = reply.json()
            return str(body["error"]["data"]["reason"]) if "error" in body else "ok"

        with ThreadPoolExecutor(8) as pool:
            outcomes.update(pool.map(straight, range(40, 56)))
    # every worker of both machines spent from one Redis bucket of 24 tokens
    assert outcomes["rate-limited"] > 0
    lines = [line for log in logs for line in json_lines(log) if line["method"]]
    spent = sum(line["cost"] for line in lines if line["outcome"] != "rate-limited")
    assert spent <= 24 and spent > 24 - 4
    assert len({line["pid"] for line in lines}) >= 3, "requests spread over the workers"
    assert {log.name for log in logs if json_lines(log)} == {"machine-a.log", "machine-b.log"}

    # stopped, a machine fails its liveness check: the unit that restarts it follows
    stopped = units.run("tmsite-live.service", "ExecStart", envs[0], timeout=60)
    assert stopped.returncode == 1 and "did not answer 200" in stopped.stderr
    assert units.unit("tmsite-live.service")["Unit.OnFailure"] == ["tmsite-restart.service"]
    assert units.unit("tmsite-restart.service")["Service.ExecStart"] == [
        "/usr/bin/systemctl restart tmsite.service"
    ]

    with psycopg.connect(database_url) as db:
        kind = db.execute(
            "SELECT relkind FROM pg_class WHERE oid = 'tm_oplog_requestlog'::regclass"
        )
        assert kind.fetchone() == ("p",), "the request log is partitioned by day"
        rows = db.execute(
            "SELECT surface, method, kind, target, facet, protocol, outcome, status, bytes "
            "FROM tm_oplog_requestlog WHERE method = 'resources/read'"
        ).fetchall()
    assert len(rows) == 56
    assert Counter(row[6] for row in rows)["rate-limited"] == outcomes["rate-limited"]
    for row in rows:
        text = " ".join(str(value) for value in row)
        assert "127.0.0.1" not in text and "ManyMachines" not in text


@pytest.mark.slow
def test_prometheus_scrapes_both_machines_and_sums_their_workers(
    database_url: str, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    """A real Prometheus scrapes the two machines behind nginx (each on its own port, as the
    operating guide says); what it reads back through its query API is exactly the requests
    this test sent (through nginx, and to each machine's port), summed over both machines and
    their two workers each."""
    from tests.manymachines.prometheus import binary, prometheus

    binary()  # skipped by name before anything starts when Prometheus is not installed
    env = server_env(
        tmp_path / "var",
        TM_DATABASE_URL=database_url,
        TM_REDIS_URL=redis_url,
        TM_CACHE_PREFIX=cache_prefix,
        TM_RATE_BURST="1000",
    )
    migrate(env)
    logs = [tmp_path / "machine-a.log", tmp_path / "machine-b.log"]
    envs = [
        {**env, "TM_SERVE_HOST": "127.0.0.1", "TM_SERVE_PORT": str(free_port()),
         "TM_SERVE_WORKERS": "2"}
        for _ in logs
    ]  # fmt: skip
    reads, pings, direct = 30, 11, 12  # direct: pings to each machine's own port
    with ExitStack() as stack:
        machines = [
            stack.enter_context(units.machine(machine_env, log)).url
            for machine_env, log in zip(envs, logs, strict=True)
        ]
        front = stack.enter_context(nginx(machines, tmp_path / "nginx"))
        scraper = stack.enter_context(prometheus(machines, tmp_path / "prometheus"))

        import httpx

        def one(i: int) -> None:
            if i < reads:
                reply = read(front, "tm://tinymachines/fs/docs/index.md", i)
                assert "result" in reply.json(), reply.text
            else:
                # nginx keeps its upstream connections, which may all be one worker's; a ping
                # on a connection of its own to a machine may go to either of its workers
                at = i - reads - pings
                base = front if at < 0 else machines[at % 2]
                ping = {"jsonrpc": "2.0", "id": i, "method": "ping"}
                with httpx.Client(timeout=30) as client:
                    reply = client.post(
                        f"{base}/api/mcp",
                        json=ping,
                        headers={
                            "Accept": "application/json, text/event-stream",
                            "MCP-Protocol-Version": "2025-11-25",
                        },
                    )
                assert reply.json()["result"] == {}, reply.text

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(reads + pings + 2 * direct)))
        pings += 2 * direct

        assert scraper.settle('count(up{job="tmsite"} == 1)', 2) == 2, "both machines are up"
        read_count = (
            'sum(mcp_server_operation_duration_seconds_count{mcp_method_name="resources/read",'
            'outcome="ok"})'
        )
        assert scraper.settle(read_count, reads) == reads
        ping_count = 'sum(mcp_server_operation_duration_seconds_count{mcp_method_name="ping"})'
        assert scraper.settle(ping_count, pings) == pings
        http_count = 'sum(tmsite_http_requests_total{surface="mcp-http",status="200"})'
        assert scraper.settle(http_count, reads + pings) == reads + pings
        by_machine = scraper.query(f"sum by (instance) ({read_count.removeprefix('sum')})")
        counted = {row["metric"]["instance"]: float(row["value"][1]) for row in by_machine}
        assert set(counted) == {url.removeprefix("http://") for url in machines}
        assert all(value > 0 for value in counted.values()), counted
        # the search index both machines read in PostgreSQL, as each reports it at the scrape
        indexed = 'count(tmsite_search_index_documents{mount="fs"} > 0)'
        assert scraper.settle(indexed, 2, deadline=60) == 2
        assert scraper.value("max(tmsite_search_index_lag_seconds)") is not None
    lines = [line for log in logs for line in json_lines(log) if line["method"]]
    assert len(lines) == reads + pings
    assert len({line["pid"] for line in lines}) >= 3, "requests spread over the workers"
