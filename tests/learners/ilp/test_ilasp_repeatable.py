"""The ilasp learner reruns identically: the job's seed reaches it, and with a work bound
(``ilasp_w<N>``) the same examples and seed give the same program on any machine and in any
process (another hash seed, a busy CPU), because no choice of the search depends on the clock."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

from learners.base import Budget, fit_with_seed, make_learner
from learners.ilp.ilasp import IlaspLearner
from tasks.iggp import Dataset

ROOT = Path(__file__).resolve().parents[3]
GAME, TARGET = "tictactoe", "terminal"
WORK = 20_000

FIT = """
import json, sys
from learners.base import Budget, make_learner
from tasks.iggp import Dataset
task = Dataset(sys.argv[1]).load_task(sys.argv[2], sys.argv[3]).learning_view()
learner = make_learner(sys.argv[4])
model = learner.fit(task, Budget(float(sys.argv[5])), seed=int(sys.argv[6]))
print(json.dumps({"rules": model.rules(), "work": learner.profile.work, "status": model.status,
                  "tested": learner.profile.tested}))
"""


def _fit_in_process(
    iggp_dir: Path, learner: str, hash_seed: str, seconds: float = 120.0, seed: int = 0
) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", FIT, str(iggp_dir), GAME, TARGET, learner, str(seconds), str(seed)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_job_seed_reaches_the_learner() -> None:
    """The worker hands the job's seed to ``fit`` (learners.base.fit_with_seed) only if it takes one."""
    assert "seed" in inspect.signature(IlaspLearner.fit).parameters


def test_the_work_bound_is_a_learner_parameter() -> None:
    learner = make_learner(f"ilasp_w{WORK}_nocombine")
    assert learner.settings.max_work == WORK and not learner.settings.combine
    assert make_learner("ilasp").settings.max_work is None


def test_a_work_bound_gives_the_same_program_in_any_process(iggp_dir: Path) -> None:
    """Two processes with other hash seeds, one beside a CPU burner, store the same program after
    the same amount of work: every share of the fit (the loop's, each seed's search, the concept
    library's second try) is cut from the work bound, not from the generous wall clock."""
    name = f"ilasp_w{WORK}"
    quiet = _fit_in_process(iggp_dir, name, "1")
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = _fit_in_process(iggp_dir, name, "2")
    finally:
        burner.kill()
        burner.wait()
    assert quiet == busy
    assert quiet["work"] > 0


def test_the_seed_changes_the_search_and_is_repeatable(iggp_dir: Path) -> None:
    """Another seed draws another sample and other seeds (the work done differs); the same seed
    repeats it exactly, in this process."""
    task = Dataset(iggp_dir).load_task(GAME, TARGET).learning_view()
    runs = []
    for seed in (0, 1, 0):
        learner = make_learner(f"ilasp_w{WORK // 4}")
        model = fit_with_seed(learner, task, Budget(120), lambda m: None, seed)
        runs.append((model.rules(), learner.profile.work, learner.profile.tested))
    assert runs[0] == runs[2]
    assert runs[0][1:] != runs[1][1:]
