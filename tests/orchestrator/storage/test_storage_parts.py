"""The parts behind ``ResultStore`` and ``Claims``, each on its own, and the size bar they were split for.

The façades are covered by test_store.py and test_claims.py; these tests pin what each part promises
by itself, so that a change to one part fails here, next to it, rather than only through the façade.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from orchestrator.storage.claimio import CLAIMS, DONE, DRIVERS, ClaimIO
from orchestrator.storage.errors import StoreError, StoreFenced
from orchestrator.storage.fencing import Fence
from orchestrator.storage.jobclaims import JobClaims
from orchestrator.storage.leases import Lease
from orchestrator.storage.markers import DoneMarkers
from orchestrator.storage.rows import analysis_schema, manifest_table, result_table
from orchestrator.storage.schema import result_row
from orchestrator.storage.store import ResultStore

STORAGE = Path(__file__).resolve().parents[3] / "orchestrator" / "storage"
MAX_CLASS_LINES, MAX_FUNCTION_LINES = 250, 100  # issue 29's bar
KEY = ("job-a", 1)


def _driver(store: ResultStore) -> ClaimIO:
    io = ClaimIO(store, pool=True)
    io.create_dirs(CLAIMS, DRIVERS, DONE)
    return io


def test_a_claim_file_is_created_by_exactly_one_of_two_drivers(store):
    a, b = JobClaims(_driver(store)), JobClaims(_driver(store))
    got_a = a.create({KEY: 0})
    got_b = b.create({KEY: 0})
    assert (got_a, got_b) == ({KEY}, set())
    listing = b.listing(live={a.io.token, b.io.token})
    assert listing.claims[KEY] == {0: [a.io.token]}
    assert a.holds(listing, KEY) and not b.holds(listing, KEY)


def test_a_newer_generation_fences_the_older_holder_out(store):
    a, b = JobClaims(_driver(store)), JobClaims(_driver(store))
    a.create({KEY: 0})
    assert b.create({KEY: 1}) == {KEY}  # a takeover: the next generation
    listing = a.listing(live={a.io.token, b.io.token})
    assert not a.holds(listing, KEY)  # a still believes it holds g0, but g1 is newest
    assert b.holds(listing, KEY)


def test_release_deletes_only_the_drivers_own_claim(tmp_path):
    store = ResultStore(tmp_path / "store")
    a, b = JobClaims(_driver(store)), JobClaims(_driver(store))
    a.create({KEY: 0})
    b.held[KEY] = 0  # b believes it holds the very same file (a stale view)
    b.release([KEY])
    assert a.listing(live=set()).claims[KEY] == {0: [a.io.token]}
    a.release([KEY])
    assert a.listing(live=set()).claims == {}


def test_a_lease_is_live_until_stopped_and_others_see_it(store):
    a, b = _driver(store), _driver(store)
    lease_a, lease_b = Lease(a, lease_s=30), Lease(b, lease_s=30)
    lease_a.heartbeat(force=True)
    assert a.token in lease_b.live()
    lease_a.stop()
    assert a.token not in lease_b.live()
    assert lease_b.live() == {b.token}  # a driver always counts itself alive


def test_a_done_marker_is_won_once_and_says_who_and_which_file(store):
    a, b = DoneMarkers(_driver(store)), DoneMarkers(_driver(store))
    mark = json.dumps({"driver": a.io.token, "file": "part-x.parquet"}).encode()
    assert a.create({KEY}, mark) == ({KEY}, set())
    won, _ = b.create({KEY}, json.dumps({"driver": b.io.token, "file": "part-y.parquet"}).encode())
    assert won == set()
    assert b.done([KEY, ("job-b", 1)]) == {KEY}
    tokens = b.marks(KEY)
    assert tokens is not None
    assert [b.read(p) for p in b.paths(KEY, tokens)] == [{"driver": a.io.token, "file": "part-x.parquet"}]
    a.withdraw([KEY])
    assert b.done([KEY]) == set()


def test_commit_without_the_newest_claim_loses_and_settle_finds_the_orphan(tmp_path):
    store = ResultStore(tmp_path / "store")
    io_a, io_b = _driver(store), _driver(store)
    parts = {}
    for name, io in (("a", io_a), ("b", io_b)):
        jobs, lease, markers = JobClaims(io), Lease(io, lease_s=30), DoneMarkers(io)
        lease.heartbeat(force=True)
        parts[name] = (jobs, Fence(store, jobs, lease, markers))
    parts["a"][0].create({KEY: 0})
    parts["b"][0].create({KEY: 1})
    assert parts["a"][1].commit([KEY], store.new_part_name()).lost == {KEY}
    file = store.new_part_name()
    assert parts["b"][1].commit([KEY], file).won == {KEY}
    # b dies before writing its file: its marker is an orphan once b is no longer alive
    parts["b"][1].lease.stop()
    settled = parts["a"][1].settle([KEY])
    assert settled.orphan == {KEY: file}
    with pytest.raises(StoreFenced):  # fenced out: b, waking up, cannot publish it any more
        store.write([result_row("job-a", status="ok", attempt=1)], name=file)
    assert not store.published(file)


def test_rows_are_checked_before_anything_is_written():
    with pytest.raises(StoreError, match="status 'nope'"):
        result_table([{**result_row("j", status="ok", attempt=1), "status": "nope"}])
    with pytest.raises(StoreError, match="needs a name"):
        manifest_table({"jobs": []})
    with pytest.raises(StoreError, match="unknown analysis table"):
        analysis_schema("no-such-table")


def _too_long(source: str, path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if length > limit:
                found.append(f"{path.name}: {node.name} is {length} lines (at most {limit})")
    return found


def test_no_storage_class_or_function_is_longer_than_the_bar():
    found = [line for path in sorted(STORAGE.glob("*.py")) for line in _too_long(path.read_text(), path)]
    assert not found, "\n".join(found)


def test_the_length_check_can_fail():
    long_function = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    assert _too_long(long_function, Path("m.py")) == [
        f"m.py: f is {MAX_FUNCTION_LINES + 1} lines (at most 100)"
    ]
