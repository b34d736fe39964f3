"""Information gain and greedy task selection on hand-made learner tables whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.analysis.selection import (
    PerformanceTable,
    check_selection,
    confusion,
    greedy_select,
    information_gain,
    task_correlation,
)


def _runs(task: str, means: dict[str, float], spread: float = 0.0, repeats: int = 3) -> list[dict]:
    out = []
    for learner, mu in means.items():
        for r in range(repeats):
            out.append({"task": task, "learner": learner, "repeat": r, "ba": mu + spread * (r - 1)})
    return out


def test_gain_is_zero_for_identical_and_maximal_for_separated_learners():
    same = np.full((1, 4), 0.7)
    assert information_gain(same, np.full_like(same, 0.05)) == pytest.approx(0.0, abs=1e-12)
    apart = np.array([[0.1, 0.4, 0.7, 1.0]])
    assert information_gain(apart, np.full_like(apart, 0.01)) == pytest.approx(math.log2(4), abs=1e-6)
    c = confusion(apart, np.full_like(apart, 0.2))
    assert np.allclose(c.sum(axis=1), 1.0) and np.all(np.diag(c) == c.max(axis=1))


def test_noise_lowers_the_gain():
    mu = np.array([[0.5, 0.6, 0.7]])
    sharp = information_gain(mu, np.full_like(mu, 0.01))
    blurred = information_gain(mu, np.full_like(mu, 0.2))
    assert sharp > blurred > 0


def test_greedy_prefers_discriminating_and_complementary_tasks():
    runs = []
    runs += _runs("flat", {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5})
    runs += _runs("ab|cd", {"a": 0.2, "b": 0.2, "c": 0.9, "d": 0.9}, spread=0.01)
    runs += _runs("ab|cd again", {"a": 0.25, "b": 0.25, "c": 0.85, "d": 0.85}, spread=0.01)
    runs += _runs("ac|bd", {"a": 0.2, "b": 0.9, "c": 0.2, "d": 0.9}, spread=0.01)
    table = PerformanceTable.from_runs(runs, ["ba"])
    sel = greedy_select(table, k=2)
    assert sel.tasks[0] in {"ab|cd", "ab|cd again", "ac|bd"}
    # the second choice splits the pairs the first one left together: 2 bits in all
    assert {sel.tasks[0], sel.tasks[1]} != {"ab|cd", "ab|cd again"}
    assert sel.cumulative_gain[-1] == pytest.approx(2.0, abs=1e-3)
    assert sel.single_gain["flat"] == pytest.approx(0.0, abs=1e-9)
    assert sel.max_gain == 2.0


def test_missing_runs_are_an_error():
    with pytest.raises(ValueError, match="no runs of learner 'b' on task 't2'"):
        PerformanceTable.from_runs(
            [
                {"task": "t1", "learner": "a", "ba": 1},
                {"task": "t1", "learner": "b", "ba": 0},
                {"task": "t2", "learner": "a", "ba": 1},
            ],
            ["ba"],
        )


def test_selected_ranking_beats_random_subsets():
    rng = np.random.default_rng(1)
    skill = {"a": 0.3, "b": 0.5, "c": 0.7, "d": 0.9}
    runs = []
    for t in range(30):
        informative = t < 5
        for learner, s in skill.items():
            base = s if informative else rng.uniform(0.2, 1.0)
            for r in range(3):
                runs.append(
                    {"task": f"t{t}", "learner": learner, "repeat": r, "ba": base + rng.normal(0, 0.01)}
                )
    table = PerformanceTable.from_runs(runs, ["ba"])
    sel = greedy_select(table, k=3)
    check = check_selection(table, sel, samples=200)
    assert check.tau_selected >= check.tau_random_mean


def test_task_correlation_clusters_similar_tasks():
    runs = _runs("x1", {"a": 0.1, "b": 0.5, "c": 0.9}) + _runs("y1", {"a": 0.9, "b": 0.5, "c": 0.1})
    runs += _runs("x2", {"a": 0.2, "b": 0.6, "c": 0.95}) + _runs("y2", {"a": 0.8, "b": 0.4, "c": 0.2})
    table = PerformanceTable.from_runs(runs, ["ba"])
    corr, order = task_correlation(table)
    i = {t: k for k, t in enumerate(table.tasks)}
    assert corr[i["x1"], i["x2"]] > 0.9 and corr[i["x1"], i["y1"]] < -0.9
    pos = {table.tasks[t]: p for p, t in enumerate(order)}
    assert abs(pos["x1"] - pos["x2"]) == 1 and abs(pos["y1"] - pos["y2"]) == 1


def test_ties_are_reported_as_ties_with_what_decided_them():
    # two learners far apart on three tasks: each alone gives log2 2 = 1 bit, so all three tie
    runs = []
    runs += _runs("wide", {"a": 0.1, "b": 0.9}, spread=0.01)
    runs += _runs("narrow", {"a": 0.45, "b": 0.55}, spread=0.01)
    runs += _runs("twin", {"a": 0.45, "b": 0.55}, spread=0.01)
    sel = greedy_select(PerformanceTable.from_runs(runs, ["ba"]), k=3)
    # at the paper's resolution all three give 1 bit: a tie the project breaks by widening sigma,
    # which keeps "wide" (the larger margin) ahead
    assert sel.cumulative_gain[0] == pytest.approx(1.0, abs=1e-6)
    assert (sel.tasks[0], sel.tied[0], sel.decided_by[0]) == ("wide", 2, "widened x4")
    # narrow and twin are identical: nothing tells them apart at any resolution
    assert sel.tasks[1:] == ["narrow", "twin"] and sel.decided_by[1] == "tie: table order"
    assert sel.tied[2] == 0 and sel.decided_by[2] == "gain"
