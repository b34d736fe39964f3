"""Predictive power of learned IGGP models: applicability and effects precision/recall.

The mapping (../shared/papers/predictive_power_metrics.txt, notes.md): the learned model M is the
learned ``legal`` and ``next`` rules, the environment E is the reference game. E's side is read
from the published test data, which the oracle check (``orch games check``) shows to agree with
the GDL rules on every example.

* Applicability, per action a (a ground ``legal`` atom, i.e. a role and its move) over the test
  states of the legal task: TP = |app_M ∩ app_E|, FP = |app_M - app_E|, FN = |app_E - app_M|.
* Effects, per action a (the joint move of a ``next`` example, its ``does*`` atoms) over the test
  states s of the next task where a is applicable in both M and E (in E it is, since it was
  played; in M every role's move must be predicted legal by the learned legal rules):
  TP = |(a_M(s) - s) ∩ (a_E(s) - s)|, FP = |(a_M(s) - s) - a_E(s)|, FN = |(a_M(s) ∩ s) - a_E(s)|,
  summed over the states of each action.
  A terminal state has no moves: no action is taken there, so it is not an example of effects
  (it used to count as an extra, empty joint action, which lowered effects recall).
* P = TP/(TP+FP), R = TP/(TP+FN), with P = 1 when TP+FP = 0 and R = 1 when TP+FN = 0 (as the
  reference code behaves). Macro-averaged over the actions that occur (in M or in E): an action
  that neither side ever takes would add a vacuous P = R = 1.

Only rule-based learners (a ``program`` in the store) are scored here: their rules are
re-evaluated on the test backgrounds through the one symbolic evaluation path. Runs left out are listed with why
(:func:`score_store`'s ``skipped``), so the output says how many runs each figure covers.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from orchestrator.storage.schema import FINAL_STATUSES
from tasks.task import Split, Task, Vocabulary, bool_csr, parse_atom


@dataclass(frozen=True)
class PR:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return 1.0 if self.tp + self.fp == 0 else self.tp / (self.tp + self.fp)

    @property
    def recall(self) -> float:
        return 1.0 if self.tp + self.fn == 0 else self.tp / (self.tp + self.fn)


def macro(per_action: dict[str, PR]) -> tuple[float, float]:
    """Macro-averaged (precision, recall) over actions; (1.0, 1.0) when there are none."""
    if not per_action:
        return 1.0, 1.0
    ps = [c.precision for c in per_action.values()]
    rs = [c.recall for c in per_action.values()]
    return float(np.mean(ps)), float(np.mean(rs))


def applicability(task: Task, split: Split, predicted: sp.spmatrix | np.ndarray) -> dict[str, PR]:
    """Per legal atom over the split's states: TP/FP/FN of the predicted legal atoms."""
    cand = np.asarray(split.candidates)
    pred = sp.csr_matrix(predicted, dtype=bool)[:, cand]
    true = split.positives[:, cand]
    tp = np.asarray(pred.multiply(true).sum(axis=0)).ravel()
    pp = np.asarray(pred.sum(axis=0)).ravel()
    tt = np.asarray(true.sum(axis=0)).ravel()
    out = {}
    for j, c in enumerate(cand):
        if pp[j] or tt[j]:
            out[task.target_atoms[c]] = PR(int(tp[j]), int(pp[j] - tp[j]), int(tt[j] - tp[j]))
    return out


def _renamed(atom: str, old: str, new: str) -> str | None:
    """``true_cell(1, 2, x)`` -> ``next_cell(1, 2, x)`` (old='true', new='next'); None if not ``old*``."""
    name, args = parse_atom(atom)
    if name != old and not name.startswith(old + "_"):
        return None
    return f"{new}{name[len(old) :]}({', '.join(args)})"


def state_action_task(next_task: Task, legal_targets: Vocabulary, split: str = "test") -> Task:
    """The next task's states as a legal task: same backgrounds, legal atoms as targets.

    Lets the learned legal rules be evaluated on exactly the states (and moves) of the next task.
    """
    s = next_task.split(split)
    empty = bool_csr([[] for _ in range(s.n_examples)], len(legal_targets))
    as_legal = Split(split, s.background, empty, np.arange(len(legal_targets)))
    return Task(
        next_task.game,
        "legal",
        next_task.background_atoms,
        legal_targets,
        next_task.statics,
        {split: as_legal},
        next_task.signature,
        next_task.source,
    )


def effects(
    next_task: Task,
    split: Split,
    predicted_next: sp.spmatrix | np.ndarray,
    legal_task_on_states: Task | None = None,
    predicted_legal: sp.spmatrix | np.ndarray | None = None,
) -> dict[str, PR]:
    """Per joint action: effects TP/FP/FN over the states where the action is applicable in both.

    ``predicted_legal`` (over ``legal_task_on_states.target_atoms``, one row per example of
    ``split``) decides applicability in M; without it every played action counts as applicable.
    """
    bg, tv = next_task.background_atoms, next_task.target_atoms
    pred = sp.csr_matrix(predicted_next, dtype=bool)
    legal_pred = None if predicted_legal is None else sp.csr_matrix(predicted_legal, dtype=bool)
    state_col: dict[int, int] = {}
    move_as_legal: dict[int, str] = {}
    for i, atom in enumerate(bg.names):
        nxt = _renamed(atom, "true", "next")
        if nxt is not None and nxt in tv:
            state_col[i] = tv.index[nxt]
        legal = _renamed(atom, "does", "legal")
        if legal is not None:
            move_as_legal[i] = legal
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for e in range(split.n_examples):
        row = split.background_of(e)
        moves = [i for i in row if i in move_as_legal]
        if not moves:  # a terminal state: nobody moves, so there is no action and no effect
            continue
        action = " ".join(sorted(bg.names[i] for i in moves))
        if legal_pred is not None and legal_task_on_states is not None:
            legal_now = {
                legal_task_on_states.target_atoms[j]
                for j in legal_pred.indices[legal_pred.indptr[e] : legal_pred.indptr[e + 1]]
            }
            if not all(move_as_legal[i] in legal_now for i in moves):
                continue
        s = {state_col[i] for i in row if i in state_col}
        m = set(pred.indices[pred.indptr[e] : pred.indptr[e + 1]].tolist())
        env = set(split.positives_of(e).tolist())
        c = counts[action]
        c[0] += len((m - s) & (env - s))
        c[1] += len((m - s) - env)
        c[2] += len((m & s) - env)
    return {a: PR(*c) for a, c in counts.items()}


@dataclass
class PredictivePower:
    applicability_precision: float
    applicability_recall: float
    effects_precision: float
    effects_recall: float
    actions: int
    joint_actions: int

    def as_dict(self) -> dict:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def predictive_power(
    legal_model, next_model, legal_task: Task, next_task: Task, split: str = "test"
) -> PredictivePower:
    """Both measures for one game's learned legal and next models (any :class:`learners.base.Model`)."""
    ls = legal_task.split(split)
    app = applicability(legal_task, ls, legal_model.predict(legal_task, ls))
    on_states = state_action_task(next_task, legal_task.target_atoms, split)
    legal_on_next = legal_model.predict(on_states, on_states.split(split))
    ns = next_task.split(split)
    eff = effects(next_task, ns, next_model.predict(next_task, ns), on_states, legal_on_next)
    ap, ar = macro(app)
    ep, er = macro(eff)
    return PredictivePower(ap, ar, ep, er, len(app), len(eff))


# --- over a results store ------------------------------------------------------------------------

PREDICTIVE = "predictive"
"""The store's analysis table of this module (``orchestrator.storage.schema.PREDICTIVE_SCHEMA``)."""


def rule_model(program: str | None, name: str):
    """A RuleModel for a stored ``program`` column, or None when the model has no rules.

    No guessing: the store keeps rules and descriptions in separate columns, so a program that
    clingo rejects is an error, not a sign that the text was a description.
    """
    from learners.ilp.evaluate import RuleModel

    if program is None:
        return None
    try:
        return RuleModel(program, name=name)  # "" is the empty program (nothing holds)
    except Exception as e:  # noqa: BLE001 (re-raised with what it is about)
        raise ValueError(f"the stored program of {name} is not a clingo program: {e}") from e


RUN = ("sweep", "dataset", "game", "learner", "seed", "repeat")
"""What identifies a run: one learner's jobs over the predicates of a game (one seed and repeat)."""


def stored_runs(store, keep) -> dict[tuple, list[dict]]:
    """The store's latest scored job rows for which ``keep(row)`` holds, grouped by :data:`RUN`."""
    rows = store.latest([*RUN, "target", "predicate", "status", "program"]).to_pylist()
    runs: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r["status"] in FINAL_STATUSES and keep(r):
            runs[tuple(r[k] for k in RUN)].append(r)
    return dict(sorted(runs.items(), key=str))


def cached_source(sources: dict, spec: str):
    """``open_source(spec)``, opened once per spec across the runs of one analysis."""
    from tasks.sources import open_source

    if spec not in sources:
        sources[spec] = open_source(spec)
    return sources[spec]


def score_store(
    store, dataset: str | None = None, split: str = "test", skipped: list[dict] | None = None
) -> list[dict]:
    """Predictive power of every rule-based run in ``store`` that has both legal and next rows.

    A run is (sweep, dataset, game, learner, seed, repeat); its legal (next) model is the union of
    the stored rules of its legal_* (next_*) jobs. ``dataset`` overrides the stored dataset path.
    Each run left out is appended to ``skipped`` (the run's keys and a ``reason``).
    """
    from learners.ilp.evaluate import RuleModel

    out: list[dict] = []
    sources: dict[str, object] = {}
    for key, rows in stored_runs(store, lambda r: r["target"] in ("legal", "next")).items():
        run = dict(zip(RUN, key, strict=True))
        learner, game = run["learner"], run["game"]
        models = {t: [r["program"] for r in rows if r["target"] == t] for t in ("legal", "next")}
        if not models["legal"] or not models["next"]:
            if skipped is not None:
                missing = "legal" if not models["legal"] else "next"
                skipped.append({**run, "reason": f"no scored {missing} job"})
            continue
        parts = {t: [rule_model(m, f"{learner} {t}") for m in models[t]] for t in ("legal", "next")}
        if any(m is None for ms in parts.values() for m in ms):
            if skipped is not None:
                skipped.append({**run, "reason": "not rules (a non-symbolic model)"})
            continue
        legal = RuleModel("\n".join(m.rules() for m in parts["legal"]), name=f"{learner} legal")
        nxt = RuleModel("\n".join(m.rules() for m in parts["next"]), name=f"{learner} next")
        source = cached_source(sources, dataset or run["dataset"])
        pp = predictive_power(
            legal, nxt, source.load_task(game, "legal"), source.load_task(game, "next"), split
        )
        out.append({**run, **pp.as_dict()})
    return out


def write_predictive(store, rows: list[dict]) -> str | None:
    """Store predictive-power rows in the store's versioned ``predictive`` table (atomic, data only)."""
    return store.write_analysis(PREDICTIVE, rows)


def read_predictive(store) -> list[dict]:
    """Every stored predictive-power row, the newest per run (older stores' ``predictive/`` too)."""
    latest: dict[tuple, dict] = {}
    for r in store.read_analysis(PREDICTIVE).to_pylist():
        r.pop("schema_version", None)
        latest[tuple(r[k] for k in RUN)] = r
    return list(latest.values())
