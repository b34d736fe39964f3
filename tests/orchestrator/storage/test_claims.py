"""Claims: at most one driver holds a job, on a local store and on S3 (moto), and dead drivers' go."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest
from s3_helpers import moto_s3

from orchestrator.storage.claims import Claims, backoff
from orchestrator.storage.store import ResultStore


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        yield ResultStore(tmp_path / "store")
    else:
        with moto_s3() as uri:
            yield ResultStore(uri)


def _race(store: ResultStore, drivers: int, keys: list[tuple[str, int]], rounds: int = 60) -> Counter:
    """``drivers`` threads claim the same keys until every key is won; count wins per key."""
    wins: Counter = Counter()
    lock = threading.Lock()
    claims = [Claims(store, lease_s=30) for _ in range(drivers)]
    start = threading.Barrier(drivers)

    def driver(c: Claims) -> None:
        start.wait()
        todo = random.sample(keys, len(keys))  # as the scheduler does: each driver its own order
        for _ in range(rounds):
            out = c.claim(todo[:8])
            with lock:
                for k in out.won:
                    wins[k] += 1
            todo = [k for k in todo[8:] + sorted(out.busy) if k not in out.done]
            if not todo:
                return
            time.sleep(backoff() / 10)

    threads = [threading.Thread(target=driver, args=(c,)) for c in claims]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return wins


def test_concurrent_drivers_never_both_win_a_claim(store):
    keys = [(f"job{i:03d}", 1) for i in range(40)]
    wins = _race(store, 3, keys)
    assert max(wins.values()) == 1  # never two holders of one claim
    assert set(wins) == set(keys)  # and racers back off until each claim is won


def test_done_markers_and_takeover_of_a_dead_drivers_claims(store):
    a = Claims(store, lease_s=1.0)
    got = a.claim([("j1", 1), ("j2", 1)])
    assert got.won == {("j1", 1), ("j2", 1)}
    b = Claims(store, lease_s=1.0)
    assert b.claim([("j1", 1)]).busy == {("j1", 1)}  # a is alive
    a.release([("j1", 1)], done=True)
    assert b.claim([("j1", 1)]).done == {("j1", 1)}  # a stored it: b must not run it
    assert b.claim([("j1", 2)]).won == {("j1", 2)}  # a new attempt is a new claim
    time.sleep(1.3)  # a dies (stops renewing): its lease runs out
    b.heartbeat(force=True)
    out = b.claim([("j2", 1)])
    assert out.won == out.taken_over == {("j2", 1)}
    c = Claims(store, lease_s=1.0)
    assert c.claim([("j2", 1)]).busy == {("j2", 1)}  # b holds the next generation now
    assert a.still_held([("j2", 1)]) == set()  # a, waking up, learns it lost the claim
    b.close()
    assert c.claim([("j2", 1)]).won == {("j2", 1)}  # a clean exit frees claims at once
