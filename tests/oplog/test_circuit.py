"""The circuit in front of the shared cache, on a clock the test moves (a real Redis stopped and
frozen: tests/manymachines/test_redis_outage.py)."""

from __future__ import annotations

import logging

import pytest

from tmsite.core.sharedcache import Circuit, SharedCacheDown, is_outage

pytestmark = pytest.mark.spec("OP1", "OP5")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_closed_open_half_open_closed(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    circuit = Circuit(2.0, clock)
    assert circuit.admit() is False and circuit.state == "closed"
    caplog.set_level(logging.WARNING, "tmsite.sharedcache")
    circuit.failed(ConnectionRefusedError(111, "Connection refused"), trial=False)
    circuit.failed(TimeoutError("timed out"), trial=False)  # the same outage
    assert circuit.state == "open" and circuit.outages == 1
    with pytest.raises(SharedCacheDown, match=r"not asked for 2\.00 s more"):
        circuit.admit()
    clock.now += 1.0
    with pytest.raises(SharedCacheDown, match=r"1\.00 s more \(it did not answer: TimeoutError"):
        circuit.admit()
    clock.now += 1.0
    assert circuit.state == "half-open"
    assert circuit.admit() is True, "the first call after the wait is the trial"
    with pytest.raises(SharedCacheDown):
        circuit.admit()  # one trial at a time
    circuit.failed(TimeoutError("timed out"), trial=True)
    assert circuit.state == "open" and circuit.outages == 1, "a failed trial waits again"
    clock.now += 2.0
    assert circuit.admit() is True
    circuit.succeeded(trial=True)
    assert circuit.state == "closed" and circuit.admit() is False
    assert circuit.refused == 3 and circuit.failures == 3
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2, "one line when it goes, one when it is back"
    assert said[0].startswith(
        "the shared cache does not answer (ConnectionRefusedError: [Errno 111] Connection refused)"
    )
    assert said[1] == "the shared cache answers again after 4.0 s away"


def test_a_trial_that_never_ends_lets_another_through() -> None:
    clock = Clock()
    circuit = Circuit(1.0, clock)
    circuit.failed(OSError("gone"), trial=False)
    clock.now += 1.0
    assert circuit.admit() is True
    clock.now += 0.5
    with pytest.raises(SharedCacheDown):
        circuit.admit()
    clock.now += 0.5
    assert circuit.admit() is True


def test_what_counts_as_an_outage() -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeout

    assert is_outage(RedisConnectionError("Error 111 connecting"))
    assert is_outage(RedisTimeout("Timeout reading from socket"))
    assert not is_outage(ValueError("a bug in what asked"))
    assert not is_outage(KeyError("x"))
