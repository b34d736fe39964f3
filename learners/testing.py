"""Test learners: each one misbehaves in one specific way, so the orchestrator can be tested for real.

They exist to exercise budgets, failure capture and retries with real processes (no mocks):

* ``noop``            returns a model that predicts nothing, at once (the orchestration-overhead probe);
* ``sleep<S>``        reports the noop model, then sleeps S seconds inside ``time.sleep`` (a C call);
* ``stuck``           reports the noop model, blocks SIGINT/SIGTERM and runs an endless clingo solve:
                      only SIGKILL stops it (a budget must be enforced from outside);
* ``crash``           raises, so the job ends with ``status=error`` and a traceback;
* ``oom``             allocates resident memory until the per-job cap stops it (needs a cap);
* ``hog<MIB>``        holds MIB MiB resident for 5 s (memory pressure for Ray's memory monitor);
* ``die``             reports the noop model, then SIGKILLs its own process (a dying job process);
* ``dieworker``       SIGKILLs its parent process: under ``orch run`` that is the Ray actor hosting
                      the job (a dying Ray worker);
* ``gpusleep<S>``     asks for a GPU as GNN learners do, sleeps S seconds and says which GPUs its
                      process was given (fractional GPU placement, testable on a CPU machine).

None of these is a rule learner; ``orch learners list`` describes them as test learners.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import scipy.sparse as sp

from learners.base import Budget, Report, ignore_report, register
from procs.env import GPU_MEMORY_CAP_ENV, JOB_PROCESS_ENV, MEMORY_CAP_ENV
from tasks.task import Split, Task


class NothingModel:
    """Predicts no target atom in any example (all negatives)."""

    def predict(self, task: Task, split: Split) -> sp.csr_matrix:
        return sp.csr_matrix((split.n_examples, len(task.target_atoms)), dtype=bool)

    def describe(self) -> str:
        return "predicts nothing (test learner)"

    def rules(self) -> str | None:
        return None


class _TestLearner:
    name = "test"

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        raise NotImplementedError


@register("noop", description="Test learner: returns a model that predicts nothing, instantly.", testing=True)
class NoopLearner(_TestLearner):
    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        return NothingModel()


@register(
    r"sleep(?P<seconds>\d+(?:\.\d+)?)",
    description="Test learner: reports a model, then sleeps S seconds in time.sleep (a C call).",
    params="seconds: how long to sleep",
    example="sleep2",
    testing=True,
)
class SleepLearner(_TestLearner):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        model = NothingModel()
        report(model)
        time.sleep(self.seconds)
        return model


# Pigeonhole: 40 pigeons in 39 holes is unsatisfiable and exponential for CDCL solvers.
_PIGEONHOLE = """
pigeon(1..40). hole(1..39).
1 { in(P, H) : hole(H) } 1 :- pigeon(P).
:- in(P, H), in(Q, H), P < Q.
"""


@register(
    "stuck",
    description="Test learner: reports a model, then an endless clingo solve that ignores SIGTERM.",
    testing=True,
)
class StuckLearner(_TestLearner):
    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        import clingo

        model = NothingModel()
        report(model)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        ctl = clingo.Control(["--models=0"])
        ctl.add("base", [], _PIGEONHOLE)
        ctl.ground([("base", [])])
        ctl.solve()
        return model


@register(
    "crash", description="Test learner: raises an exception (status=error with a traceback).", testing=True
)
class CrashLearner(_TestLearner):
    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        raise RuntimeError(f"crash test learner: deliberate failure on {task.name}")


@register(
    "oom", description="Test learner: allocates memory until the per-job memory cap stops it.", testing=True
)
class OomLearner(_TestLearner):
    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        cap = os.environ.get(MEMORY_CAP_ENV)  # set by procs.supervise in a capped job process
        if cap is None:
            raise RuntimeError("oom test learner refuses to run without a memory cap (--memory-per-job)")
        hoard: list = []
        # Resident memory, 16 MiB at a time (np.ones touches every page), up to twice the cap: the
        # watchdog must stop it before; if it does not, the job ends ok and the test says so.
        while len(hoard) * (16 << 20) < 2 * int(cap):
            hoard.append(np.ones(1 << 21, dtype=np.float64))
        time.sleep(budget.seconds or 0)  # hold it: a late watchdog still sees the peak
        return NothingModel()


@register(
    r"hog(?P<mib>\d+)",
    description="Test learner: holds MIB MiB of resident memory for 5 s (memory pressure on the node).",
    params="mib: resident memory to hold",
    example="hog1024",
    testing=True,
)
class HogLearner(_TestLearner):
    def __init__(self, mib: str) -> None:
        self.mib = int(mib)

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        held = [np.ones(1 << 21, dtype=np.float64) for _ in range(self.mib // 16)]  # 16 MiB each, touched
        time.sleep(5.0)
        del held
        return NothingModel()


@register(
    "die",
    description="Test learner: reports a model, then SIGKILLs its own process (a dying worker).",
    testing=True,
)
class DieLearner(_TestLearner):
    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        report(NothingModel())
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable: the process was killed")


@register(
    "dieworker",
    description="Test learner: SIGKILLs its parent process (under orch run: the Ray worker).",
    testing=True,
)
class DieWorkerLearner(_TestLearner):
    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        # set by procs.supervise in each job process
        parent = os.environ.get(JOB_PROCESS_ENV)
        if parent is None or int(parent) != os.getppid():
            raise RuntimeError("dieworker test learner only runs inside an orch job process")
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)  # the parent's death takes this process down too (PR_SET_PDEATHSIG)
        raise AssertionError("unreachable: the parent was killed")


class SeenModel(NothingModel):
    """Predicts nothing, and its description says what the job's process saw (for placement tests)."""

    def __init__(self, seen: str) -> None:
        self.seen = seen

    def describe(self) -> str:
        return self.seen


@register(
    r"gpusleep(?P<seconds>\d+(?:\.\d+)?)",
    description="Test learner: asks for a GPU like a GNN, sleeps S seconds, and describes the GPUs it saw.",
    params="seconds: how long to sleep",
    resources={"num_cpus": 1, "num_gpus": 1},
    example="gpusleep1",
    testing=True,
)
class GpuSleepLearner(_TestLearner):
    """Never touches CUDA: it reports ``CUDA_VISIBLE_DEVICES`` (which Ray sets from the actor's GPU
    ids, fractional or not), the GPU memory cap its process was given and its wall-clock span, so a
    test can check placement, the cap and overlap."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> NothingModel:
        began = time.time()
        time.sleep(self.seconds)
        gpus, cap = os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get(GPU_MEMORY_CAP_ENV)
        return SeenModel(f"gpus={gpus} cap={cap} began={began!r} ended={time.time()!r} pid={os.getpid()}")
