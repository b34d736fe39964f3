"""Claims: at most one driver holds a job, on a local store and on S3 (moto), and dead drivers' go."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest

from orchestrator.storage.claims import Claims, backoff
from orchestrator.storage.store import ResultStore


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
    assert a.commit([("j1", 1)], "part-x.parquet").won == {("j1", 1)}  # marks it stored ...
    a.release([("j1", 1)])  # ... then gives the claim up
    assert b.claim([("j1", 1)]).done == {("j1", 1)}  # a stored it: b must not run it
    assert b.claim([("j1", 2)]).won == {("j1", 2)}  # a new attempt is a new claim
    time.sleep(1.3)  # a dies (stops renewing): its lease runs out
    b.heartbeat(force=True)
    out = b.claim([("j2", 1)])
    assert out.won == out.taken_over == {("j2", 1)}
    c = Claims(store, lease_s=1.0)
    assert c.claim([("j2", 1)]).busy == {("j2", 1)}  # b holds the next generation now
    assert a.commit([("j2", 1)], "part-y.parquet").lost == {("j2", 1)}  # a, waking up, learns it lost it
    b.close()
    assert c.claim([("j2", 1)]).won == {("j2", 1)}  # a clean exit frees claims at once


# --- fenced commits: a driver paused past its lease never stores a second row -----------------------

KEY = ("job", 1)


def _paused_then_taken_over(store: ResultStore) -> tuple[Claims, Claims]:
    """Driver a claims KEY, then 'sleeps' past its 1 s lease; driver b takes the claim over."""
    a = Claims(store, lease_s=1.0)
    assert a.claim([KEY]).won == {KEY}
    time.sleep(1.3)
    b = Claims(store, lease_s=1.0)
    assert b.claim([KEY]).taken_over == {KEY}
    return a, b


def test_a_sleeper_that_wakes_while_the_taker_runs_the_job_cannot_commit(store):
    a, b = _paused_then_taken_over(store)
    assert a.commit([KEY], store.new_part_name()).lost == {KEY}  # b holds the newer generation
    assert b.commit([KEY], store.new_part_name()).won == {KEY}


def test_a_sleeper_that_wakes_after_the_taker_stored_and_released_cannot_commit(store):
    a, b = _paused_then_taken_over(store)
    assert b.commit([KEY], store.new_part_name()).won == {KEY}
    b.release([KEY])  # b's newer claim is gone: a's old one is the newest again ...
    assert a.commit([KEY], store.new_part_name()).lost == {KEY}  # ... but the done marker fences it


def test_of_two_holders_racing_to_commit_exactly_one_wins(store):
    a = Claims(store, lease_s=30)
    b = Claims(store, lease_s=30)
    a.claim([KEY])
    b.held[KEY] = a.held[KEY]  # b believes it holds a's claim too (as a stale driver might)
    b.token = a.token  # ... even with a's token: the exclusive marker alone must decide
    verdicts = [c.commit([KEY], store.new_part_name()) for c in (a, b)]
    assert sorted(len(v.won) for v in verdicts) == [0, 1]


def test_a_marker_whose_rows_never_appeared_is_an_orphan_and_its_file_is_fenced_out(tmp_path):
    from orchestrator.storage.store import StoreFenced

    store = ResultStore(tmp_path / "store")
    a = Claims(store, lease_s=1.0)
    a.claim([KEY])
    name = store.new_part_name()
    assert a.commit([KEY], name).won == {KEY}  # marked; a freezes before writing the rows
    time.sleep(1.3)
    b = Claims(store, lease_s=1.0)
    out = b.claim([KEY])
    assert out.done == {KEY}
    settled = b.settle(out.done)
    assert settled.orphan == {KEY: name}  # a is dead and its file was never published
    with pytest.raises(StoreFenced):  # a wakes up: its write is refused, nothing reaches results/
        store.write([{"job_id": KEY[0], "status": "ok", "attempt": KEY[1]}], name)
    assert store.files() == []


def test_a_live_writer_between_marking_and_writing_is_waited_for(store):
    a = Claims(store, lease_s=30)
    a.claim([KEY])
    a.commit([KEY], store.new_part_name())
    b = Claims(store, lease_s=30)
    assert b.settle([KEY]).busy == {KEY}


def test_clean_up_removes_dead_drivers_claims_and_heartbeats_never_a_live_ones(store):
    from orchestrator.storage.claims import CLAIMS, DRIVERS, remove_stale

    dead = Claims(store, lease_s=0.5)
    dead.claim([("dead-job", 1)])
    time.sleep(1.2)  # its heartbeat expired more than a lease ago
    live = Claims(store, lease_s=0.5)
    live.claim([("live-job", 1)])
    assert remove_stale(store, lease_s=0.5) == (1, 1)

    def names(sub: str) -> list[str]:
        return live.io.names(sub)

    assert [n for n in names(CLAIMS) if n.startswith("dead-job")] == []
    assert [n for n in names(CLAIMS) if n.startswith("live-job")] != []
    assert {n.split("~")[0] for n in names(DRIVERS)} == {live.token}


def test_drivers_whose_clocks_differ_by_less_than_the_lease_never_take_a_live_claim(store, monkeypatch):
    """``ORCH_CLOCK_SKEW_S`` moves one driver's clock: ahead by half a lease, b still sees a alive."""
    a = Claims(store, lease_s=2.0)
    a.claim([KEY])
    monkeypatch.setenv("ORCH_CLOCK_SKEW_S", "1.0")
    b = Claims(store, lease_s=2.0)
    for _ in range(6):  # 3 s: longer than the lease, a renewing its heartbeat every lease / 4
        monkeypatch.setenv("ORCH_CLOCK_SKEW_S", "0")
        a.heartbeat()
        monkeypatch.setenv("ORCH_CLOCK_SKEW_S", "1.0")
        assert b.claim([KEY]).busy == {KEY}
        time.sleep(0.5)
    monkeypatch.setenv("ORCH_CLOCK_SKEW_S", "0")
    assert a.commit([KEY], store.new_part_name()).won == {KEY}


def test_store_compact_removes_what_a_killed_driver_left_behind(tmp_path):
    from typer.testing import CliRunner

    from orchestrator.cli import app

    store = ResultStore(tmp_path / "store")
    store.write([{"job_id": "j", "status": "ok"}])
    killed = Claims(store, lease_s=0.3)  # never closed: as if SIGKILLed
    killed.claim([("j2", 1)])
    time.sleep(0.8)
    res = CliRunner().invoke(
        app, ["store", "compact", "--store", str(tmp_path / "store")], env={"ORCH_LEASE_S": "0.3"}
    )
    assert res.exit_code == 0, res.output
    assert "removed 1 stale claim(s) and 1 heartbeat file(s)" in res.output
    assert not list((tmp_path / "store" / "_claims").iterdir()) and not list(
        (tmp_path / "store" / "_drivers").iterdir()
    )
