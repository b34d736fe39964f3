"""Choosing the tasks that tell learners apart: continuous information gain and greedy top-k.

The method of the benchmark-selection paper (../shared/papers/information_gain_benchmark_selection
and notes.md), for learners instead of game-playing agents:

* Learners a_1..a_n. On problem g (a task under one metric), learner i has mean mu_ig and
  standard deviation sigma_ig over repeated runs (seeds or resampled training sets).
* The chance that a run of a_i "looks like" a_j: P(a_j | a_i) = N(mu_ig; mu_jg, sigma_jg) / Σ_k N(mu_ig;
  mu_kg, sigma_kg). C_ij = P(a_j | a_i) is a confusion matrix whose rows sum to 1.
* With a uniform prior, IG(g) = log2 n - H(A_hat | A) = (1/n) Σ_i Σ_j C_ij log2(C_ij / q_j), where
  q_j = (1/n) Σ_i C_ij. Its maximum is log2 n (every learner identified).
* Several problems S are treated as independent: each density becomes the product over g in S,
  computed as a sum of log densities. Several metrics per task (balanced accuracy and perfectly
  solved) are separate problems in that product. Sigma is floored so that a zero-variance learner
  does not give an infinite density.
* Greedy selection adds, one at a time, the problem that maximises IG(S ∪ {g}) and records the
  cumulative gain. A task is chosen with all of its metrics at once.
* Ties: the project's own addition, not the paper's. With few learners the gain saturates at
  log2 n and many candidates tie; they are then compared by their gain with every deviation
  widened 4, 16 and 64 times (:data:`TIE_SCALES`), and a tie at every resolution goes to the first
  task in table order. Each pick records how many candidates tied with it at the paper's own
  resolution and what decided it (``Selection.tied``, ``Selection.decided_by``), so outputs show
  ties as ties instead of as a ranking the method does not give.

The check: rank the learners by their mean score on the chosen k tasks and on all tasks, and
compare the two rankings with Kendall's tau; as a baseline, the mean tau of random k-task subsets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import kendalltau

SIGMA_FLOOR = 0.01
"""Standard-deviation floor, in metric units (metrics here lie in [0, 1])."""

TIE_SCALES = (1, 4, 16, 64)
"""Resolutions for breaking ties in greedy selection. With few learners the gain saturates at
log2 n after two or three tasks, and every further candidate ties. Candidates are then compared by
their gain with every deviation widened 4, 16, 64 times: the task that keeps the learners apart at a
coarser resolution (a larger margin between them) wins. Without ties the first entry decides."""


@dataclass
class PerformanceTable:
    """Per-task, per-learner mean and deviation of each metric over repeats.

    ``mu`` and ``sigma`` have shape (n_tasks, n_metrics, n_learners).
    """

    tasks: list[str]
    metrics: list[str]
    learners: list[str]
    mu: np.ndarray
    sigma: np.ndarray
    repeats: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def from_runs(cls, runs: list[dict], metrics: list[str]) -> PerformanceTable:
        """Build from rows ``{"task", "learner", "repeat", metric: value, ...}`` (one row per run).

        A (task, learner) pair without runs is an error: information gain needs every learner on
        every task it compares.
        """
        tasks = sorted({r["task"] for r in runs})
        learners = sorted({r["learner"] for r in runs})
        ti = {t: i for i, t in enumerate(tasks)}
        li = {a: i for i, a in enumerate(learners)}
        values: dict[tuple[int, int, int], list[float]] = {}
        for r in runs:
            for m, metric in enumerate(metrics):
                values.setdefault((ti[r["task"]], m, li[r["learner"]]), []).append(float(r[metric]))
        shape = (len(tasks), len(metrics), len(learners))
        mu, sigma, reps = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=int)
        for t in range(len(tasks)):
            for a in range(len(learners)):
                for m in range(len(metrics)):
                    v = values.get((t, m, a))
                    if not v:
                        raise ValueError(f"no runs of learner {learners[a]!r} on task {tasks[t]!r}")
                    mu[t, m, a], sigma[t, m, a], reps[t, m, a] = np.mean(v), np.std(v), len(v)
        return cls(tasks, metrics, learners, mu, sigma, reps)


def _log_density(mu: np.ndarray, sigma: np.ndarray, floor: float) -> np.ndarray:
    """log N(mu_i; mu_j, sigma_j) for all learner pairs, summed over the leading problem axes.

    ``mu``/``sigma`` have shape (..., n); the result has shape (n, n) with [i, j] = log P(a_i's mean
    | a_j's distribution).
    """
    s = np.maximum(sigma, floor).reshape(-1, mu.shape[-1])
    m = mu.reshape(-1, mu.shape[-1])
    diff = m[:, :, None] - m[:, None, :]  # (problems, i, j)
    sj = s[:, None, :]
    return (-0.5 * (diff / sj) ** 2 - np.log(sj) - 0.5 * math.log(2 * math.pi)).sum(axis=0)


def confusion(mu: np.ndarray, sigma: np.ndarray, floor: float = SIGMA_FLOOR) -> np.ndarray:
    """C_ij = P(a_j | a_i) over the given problems (rows sum to 1)."""
    logp = _log_density(mu, sigma, floor)
    logp -= logp.max(axis=1, keepdims=True)
    p = np.exp(logp)
    return p / p.sum(axis=1, keepdims=True)


def information_gain(mu: np.ndarray, sigma: np.ndarray, floor: float = SIGMA_FLOOR) -> float:
    """IG in bits of the problems in ``mu``/``sigma`` (shape (..., n_learners)); at most log2 n."""
    c = confusion(mu, sigma, floor)
    n = c.shape[0]
    q = c.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(c > 0, c * np.log2(c / q[None, :]), 0.0)
    return float(terms.sum() / n)


@dataclass
class Selection:
    tasks: list[str]
    cumulative_gain: list[float]
    single_gain: dict[str, float]
    max_gain: float
    tied: list[int] = field(default_factory=list)
    """Per pick: how many other candidates had the same gain at the paper's resolution."""
    decided_by: list[str] = field(default_factory=list)
    """Per pick: ``gain``, ``widened xS`` (the tie-break that decided) or ``tie: table order``."""


def greedy_select(table: PerformanceTable, k: int, floor: float = SIGMA_FLOOR) -> Selection:
    """Greedy top-k tasks by cumulative information gain (all metrics of a task count together)."""
    chosen: list[int] = []
    cumulative: list[float] = []
    single = {t: information_gain(table.mu[i], table.sigma[i], floor) for i, t in enumerate(table.tasks)}
    tied: list[int] = []
    decided: list[str] = []
    for _ in range(min(k, len(table.tasks))):
        keys: dict[int, tuple[float, ...]] = {}
        for i in range(len(table.tasks)):
            if i in chosen:
                continue
            idx = [*chosen, i]
            keys[i] = tuple(
                round(information_gain(table.mu[idx], table.sigma[idx] * s, floor * s), 9) for s in TIE_SCALES
            )
        best = max(keys, key=keys.__getitem__)  # the first of equal keys: table order
        rivals = [i for i in keys if i != best and keys[i][0] == keys[best][0]]
        chosen.append(best)
        cumulative.append(keys[best][0])
        tied.append(len(rivals))
        decided.append(_decided_by(keys, best, rivals))
    return Selection(
        [table.tasks[i] for i in chosen], cumulative, single, math.log2(len(table.learners)), tied, decided
    )


def _decided_by(keys: dict[int, tuple[float, ...]], best: int, rivals: list[int]) -> str:
    if not rivals:
        return "gain"
    for level in range(1, len(TIE_SCALES)):
        if all(keys[i][: level + 1] < keys[best][: level + 1] for i in rivals):
            return f"widened x{TIE_SCALES[level]}"
    return "tie: table order"


def ranking_scores(table: PerformanceTable, task_ids: list[int] | np.ndarray) -> np.ndarray:
    """Each learner's mean score over the given tasks and all metrics (higher is better)."""
    return table.mu[np.asarray(task_ids)].mean(axis=(0, 1))


def kendall(a: np.ndarray, b: np.ndarray) -> float:
    tau = kendalltau(a, b).statistic
    return 0.0 if np.isnan(tau) else float(tau)


@dataclass
class SelectionCheck:
    tau_selected: float
    tau_random_mean: float
    tau_random_std: float
    random_samples: int


def check_selection(
    table: PerformanceTable, selection: Selection, samples: int = 1000, seed: int = 0
) -> SelectionCheck:
    """Kendall tau of the learner ranking on the chosen tasks vs all tasks, and vs random subsets."""
    full = ranking_scores(table, np.arange(len(table.tasks)))
    ids = [table.tasks.index(t) for t in selection.tasks]
    tau = kendall(ranking_scores(table, ids), full)
    rng = np.random.default_rng(seed)
    k = len(ids)
    taus = [
        kendall(ranking_scores(table, rng.choice(len(table.tasks), size=k, replace=False)), full)
        for _ in range(samples)
    ]
    return SelectionCheck(tau, float(np.mean(taus)), float(np.std(taus)), samples)


def task_correlation(table: PerformanceTable, metric: int = 0) -> tuple[np.ndarray, list[int]]:
    """Task-by-task Pearson correlation of learner performance, and a hierarchical-clustering order.

    Tasks on which every learner scores the same have no correlation (NaN, drawn blank).
    """
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    x = table.mu[:, metric, :]
    centred = x - x.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(centred, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = (centred @ centred.T) / np.outer(norm, norm)
    dist = 1 - np.nan_to_num(corr, nan=0.0)
    np.fill_diagonal(dist, 0.0)
    dist = np.clip((dist + dist.T) / 2, 0, 2)
    order = (
        leaves_list(linkage(squareform(dist, checks=False), "average")) if len(x) > 1 else np.arange(len(x))
    )
    return corr, [int(i) for i in order]


def runs_from_store(store, sweep: str | None = None) -> list[dict]:
    """One row per complete (task, learner, seed, repeat) run: its pooled ``ba`` and ``perfect``.

    Incomplete tasks (a predicate failed or is missing) are left out, as in the report tables.
    """
    from learners.metrics import pool
    from orchestrator.analysis.report import task_scores

    scores, predicates = task_scores(store, sweep)
    out = []
    for s in scores:
        preds = predicates[(s.game, s.target)]
        if not s.complete(preds):
            continue
        for (seed, repeat), counts in s.runs.items():
            c = pool(v for v in counts.values() if v is not None)
            out.append(
                {
                    "task": f"{s.game}_{s.target}",
                    "learner": s.learner,
                    "seed": seed,
                    "repeat": repeat,
                    "ba": c.balanced_accuracy,
                    "perfect": float(c.perfect),
                }
            )
    return out


def complete_runs(runs: list[dict]) -> list[dict]:
    """Keep only tasks on which every learner has runs (information gain compares all learners)."""
    learners = {r["learner"] for r in runs}
    per_task: dict[str, set[str]] = {}
    for r in runs:
        per_task.setdefault(r["task"], set()).add(r["learner"])
    keep = {t for t, ls in per_task.items() if ls == learners}
    return [r for r in runs if r["task"] in keep]
