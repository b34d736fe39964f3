"""The job queue without Ray: batching per task, retries and isolation, claims against other drivers.

Claims are real (:class:`orchestrator.storage.claims.Claims` on a local store in ``tmp_path``); the
jobs are plain :class:`~orchestrator.scheduling.sweep.Job` values, so no dataset is needed.
"""

from __future__ import annotations

import time

import pytest
from store_rows import row

from orchestrator.scheduling.jobqueue import JobQueue, stored_attempts
from orchestrator.scheduling.sweep import Job
from orchestrator.scheduling.sweeptypes import SweepOptions
from orchestrator.storage.claims import Claims
from orchestrator.storage.store import ResultStore


def _job(n: int, game: str = "g1", learner: str = "noop", budget_s: float = 0.1) -> Job:
    return Job(f"job{game}{n:03d}", "ds", "fp", game, "next", f"p{n}", learner, "{}", 0, 0, budget_s)


@pytest.fixture
def store(tmp_path) -> ResultStore:
    return ResultStore(tmp_path / "store")


def _queue(store: ResultStore, jobs: list[Job], renumbered: list[str] | None = None, **opts) -> JobQueue:
    options = SweepOptions("s1", **opts)
    claims = Claims(store, options.lease_s)
    forget = renumbered.append if renumbered is not None else (lambda job_id: None)
    return JobQueue(jobs, {j.learner: "cpu" for j in jobs}, {}, store, claims, options, forget)


def test_a_batch_holds_one_tasks_jobs_worth_about_batch_seconds(store):
    jobs = [_job(i, "g1") for i in range(20)] + [_job(i, "g2") for i in range(3)]
    queue = _queue(store, jobs, batch_seconds=0.5)
    [(key, batch)] = queue.take_batches([("cpu", None)], served=set(), workers=1)
    assert key == ("ds", "g1", "next")  # the task with the most jobs goes first
    assert len(batch) == 5 and {j.task_key for j in batch} == {key}  # 5 x 0.1 s of budget
    assert queue.left == {"cpu": 23 - 5}
    [(again, _)] = queue.take_batches([("cpu", key)], served=set(), workers=1)
    assert again == key  # an actor keeps the task it has in its cache


def test_measured_seconds_make_batches_of_tiny_jobs_larger_up_to_the_limits(store):
    jobs = [_job(i) for i in range(100)]
    queue = _queue(store, jobs, batch_seconds=0.5, max_batch=40)
    queue.observe("noop", 0.001)
    [(_, batch)] = queue.take_batches([("cpu", None)], served=set(), workers=1)
    assert len(batch) == 40  # max_batch, not the budget, bounds it now
    [(_, batch)], left = queue.take_batches([("cpu", None)], served=set(), workers=6), queue.left["cpu"]
    assert len(batch) == -(-60 // 6) and left == 50  # a fair share of what is left per actor


def test_idle_actors_prefer_tasks_no_busy_actor_works_on(store):
    jobs = [_job(i, "g1") for i in range(6)] + [_job(i, "g2") for i in range(3)]
    queue = _queue(store, jobs, batch_seconds=0.2)
    [(key, _)] = queue.take_batches([("cpu", None)], served={("ds", "g1", "next")}, workers=2)
    assert key == ("ds", "g2", "next")


def test_one_rounds_shares_are_cut_from_the_same_total(store):
    queue = _queue(store, [_job(i) for i in range(8)], batch_seconds=100)
    cut = queue.take_batches([("cpu", None), ("cpu", None)], served=set(), workers=2)
    assert [len(batch) for _, batch in cut] == [4, 4] and queue.left["cpu"] == 0


def test_a_lost_batch_is_rerun_one_job_at_a_time_and_retries_are_charged_to_single_jobs(store):
    jobs = [_job(i) for i in range(3)]
    queue = _queue(store, jobs, batch_seconds=100, max_retries=1)
    [(_, batch)] = queue.take_batches([("cpu", None)], served=set(), workers=1)
    assert len(batch) == 3
    assert queue.lost_batch(batch, "cpu") == []  # nobody is blamed for a batch
    assert not queue.retries and queue.left["cpu"] == 3
    [(_, alone)] = queue.take_batches([("cpu", None)], served=set(), workers=1)
    assert len(alone) == 1  # each suspect runs alone now
    assert queue.lost_batch(alone, "cpu") == []  # first death of that job: retried
    [(_, again)] = queue.take_batches([("cpu", None)], served=set(), workers=1)
    assert again == alone and queue.retries[alone[0].job_id] == 1
    assert queue.lost_batch(again, "cpu") == alone  # out of retries: the caller records it


def test_claimed_jobs_run_and_jobs_another_live_driver_holds_wait_for_its_row(store):
    jobs = [_job(i) for i in range(4)]
    other = Claims(store, lease_s=30)
    mine, theirs = jobs[:2], jobs[2:]
    assert other.claim([(j.job_id, 1) for j in theirs]).won == {(j.job_id, 1) for j in theirs}
    queue = _queue(store, jobs, lease_s=30, batch_seconds=100)
    [(_, batch)] = queue.take_batches([("cpu", None)], served=set(), workers=1)
    assert queue.claim(batch) == {j.job_id for j in mine}
    assert set(queue.deferred) == {j.job_id for j in theirs} and queue.pending()
    # the other driver stores one of them: the queue counts it as done elsewhere
    done = [(theirs[0].job_id, 1)]
    name = store.new_part_name()
    assert other.commit(done, name).won == set(done)
    store.write([row(theirs[0].job_id)], name)
    other.release(done)
    queue.recheck_deferred()
    assert set(queue.deferred) == {theirs[1].job_id} and queue.elsewhere == 1
    # the other driver exits cleanly without storing the last one: it is claimed and queued here
    other.close()
    queue.deferred_at = 0.0
    queue.recheck_deferred()
    assert not queue.deferred and queue.left["cpu"] == 1
    assert queue.take_batches([("cpu", None)], served=set(), workers=1)[0][1] == [theirs[1]]
    queue.claims.close()


def test_an_orphaned_attempt_makes_the_job_run_again_as_the_next_attempt(store):
    job = _job(0)
    dead = Claims(store, lease_s=1.0)
    dead.claim([(job.job_id, 1)])
    assert dead.commit([(job.job_id, 1)], store.new_part_name()).won  # marked, then it died unwritten
    time.sleep(1.3)
    renumbered: list[str] = []
    queue = _queue(store, [job], renumbered, lease_s=1.0)
    assert queue.claim([job]) == set()
    assert renumbered == [job.job_id] and queue.attempt(job) == 2 and job.job_id in queue.deferred
    queue.recheck_deferred()
    assert not queue.deferred and (job.job_id, 2) in queue.claims.held
    queue.claims.close()


def test_stored_attempts_reads_the_highest_attempt_per_job(store):
    store.write([row("a", 1), row("a", 3), row("b", 2)])
    assert stored_attempts(store, {"a", "b", "c"}) == {"a": 3, "b": 2}
