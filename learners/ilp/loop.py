"""The ILASP* loop of one learning: one target, one :class:`learners.ilp.mode.Mode`, one allowance.

The stages, one module each, in the order the loop runs them:

1. facts: the training split as fact tables (:mod:`learners.ilp.coverage`);
2. baseline: the best of the rules that need no search (inertia, frequent facts) is reported
   before any search (:mod:`learners.ilp.baseline`);
3. frame step: frame clauses and the facts true in every example enter the pool
   (:func:`frame_stage`, :mod:`learners.ilp.frame`);
4. seed search: a positive no hypothesis covers yet is searched for (:mod:`learners.ilp.seeds`);
   the clauses found are verified on every training example into the pool (:mod:`learners.ilp.pool`);
5. combine: the hypothesis is chosen from the pool (:mod:`learners.ilp.combine`); back to 4 until
   every positive is covered (or set aside) or the loop's allowance is used up;
6. fallback selection, when the hypothesis is not complete (:mod:`learners.ilp.fallback`).

:class:`Learning` holds what every stage reads (the inputs of this learning); :class:`LoopState`
what the loop changes from one iteration to the next. The allowance is a
:class:`learners.ilp.meter.Meter`: the loop stops when a reserve is left for the final combine
and the fallback (:func:`reserve`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from learners.base import Report
from learners.ilp.baseline import baseline, report_baseline
from learners.ilp.bias import Bias, Clause, Settings, bias_for
from learners.ilp.combine import Hypotheses, hypotheses
from learners.ilp.cover import ScoredRule
from learners.ilp.coverage import Targets, facts_for
from learners.ilp.fallback import fallback
from learners.ilp.frame import frame_step
from learners.ilp.learning import Learned, Learning, program_of
from learners.ilp.meter import Meter
from learners.ilp.mode import Mode
from learners.ilp.pool import Pool, covered
from learners.ilp.profile import Profile
from learners.ilp.scoring import Scorer
from learners.ilp.seeds import SeedSearch
from tasks import arrays
from tasks.task import Task, parse_atom

RESERVE_SHARE = 0.1
"""The loop stops when this share of its allowance is left for the final combine and the fallback,
but never less than ``MIN_RESERVE_SECONDS`` nor more than ``MAX_RESERVE_SHARE`` (:func:`reserve`)."""
MIN_RESERVE_SECONDS = 1.0
MAX_RESERVE_SHARE = 0.25
FRAME_SHARE = 0.25
"""At most this share of the loop's allowance goes to testing frame literals (usually well under a second)."""


@dataclass
class LoopState:
    """What the loop changes: the hypothesis, what counts as covered, the seeds set aside."""

    hypothesis: list[ScoredRule] = field(default_factory=list)
    covered_now: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    status: str = "budget"
    set_aside: set[int] = field(default_factory=set)
    best_reported: float = -1.0
    explained: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Positives the frame step's cover (``late``) explains; the final combine adds that cover."""
    drawn: int = 0

    def next_seed(self, uncovered: np.ndarray, rng: np.random.Generator) -> int:
        """A seed drawn from ``uncovered``: every other draw from the positives ``explained`` does
        not hold, the rest from those it does (from either side while the other is empty).

        Why: drawn uniformly, the seeds were nearly all frame positives where the frame is most
        of the positives (every cell of a board that keeps its piece), and the budget went before
        the effects were searched (alquerque ``next_cell``: 19 of 31 seeds set aside, the jumps
        never searched; 0.986 -> 0.991 at a work bound of 50,000, 0.990 -> 1.000 at 60 s). Drawn
        only outside the frame cover while any were left, the cover stood unsearched where it
        fits the sample closely (switches ``next_at``, a dozen long frame clauses: 0.953 -> 0.940
        on test); alternating keeps both (0.953)."""
        self.drawn += 1
        inside = arrays.isin(uncovered, self.explained)
        fresh, explained = uncovered[~inside], uncovered[inside]
        if not len(explained) or (len(fresh) and self.drawn % 2):
            explained = fresh
        return int(explained[rng.integers(len(explained))])

    def hand_out(self, learning: Learning, rules: list[ScoredRule]) -> None:
        """The anytime contract: report each hypothesis better (on train) than the last reported."""
        model = learning.program(rules, "iteration")
        if model.train_ba > self.best_reported:
            self.best_reported = model.train_ba
            learning.report(model)


def learn(task: Task, settings: Settings, mode: Mode, meter: Meter, seed: int, report: Report) -> Learned:
    """Learn ``task``'s target as ``mode`` says, within ``meter``; ``seed`` draws the sample and seeds."""
    profile = Profile()
    train = task.split("train")
    with profile.timing("facts"):
        facts = facts_for(task, train)
        targets = mode.targets(task, train, facts.constants)
    n_neg = facts.n * targets.table.n - len(targets.positives)
    pool = Pool(targets.positives, n_neg)
    scorer = Scorer(task, mode, pool.clauses, settings.max_rows, meter)
    if len(targets.positives) == 0:
        profile.status = "no positives"
        model = program_of([], mode, task.predicates[0], 0, n_neg, "no positive training example", 0)
        report(model)
        return Learned(model, profile, scorer)
    bias = mode.bias(bias_for(task, settings))
    lr = Learning(task, settings, mode, meter, profile, report, train, facts, targets, bias, pool, scorer)
    loop = meter.less(reserve(meter))
    rng = np.random.default_rng(seed)
    seeds = SeedSearch(lr, rng)
    combine = hypotheses(lr)
    with profile.timing("verify"):
        base = baseline(lr)
    state = LoopState(best_reported=report_baseline(lr, base))
    late = frame_stage(lr, state, combine, loop, seed)
    state.explained = covered(late)
    pending = np.setdiff1d(targets.positives, covered(pool.consistent), assume_unique=True)
    if len(pending) == 0:
        state.status = "complete"
    seed_key = state.next_seed(pending, rng) if len(pending) else -1
    while seed_key >= 0:
        seed_key = iterate(lr, state, seeds, combine, loop, seed_key, rng)
    with profile.timing("solve"):
        state.hypothesis = combine.final(state.hypothesis, late)
    profile.status = state.status
    if len(covered(state.hypothesis)) == lr.n_pos:
        final = lr.program(state.hypothesis, "complete")
        report(final)
        return Learned(final, profile, scorer)
    return Learned(fallback(lr, state.hypothesis, state.status, base, state.best_reported), profile, scorer)


def reserve(meter: Meter) -> float:
    """What the loop leaves of ``meter`` for the final combine and the fallback: ``RESERVE_SHARE``
    of the allowance, at least ``MIN_RESERVE_SECONDS`` (as units), at most ``MAX_RESERVE_SHARE``.

    Why: both stages are bounded clingo optimisations that stop early with their best answer, and
    on the IGGP tasks the budget cuts they took at most 0.6 s after a 15 s loop (pilgrimage
    ``legal``, a validate split of 1M atoms). A fixed quarter, kept before, left every budget-cut
    job a quarter of its budget unused (60 s jobs returned after a median 45 s). Short allowances
    (a second learning of a few seconds) keep a quarter, as before.
    """
    left = meter.left()
    if not math.isfinite(left):
        return 0.0
    return min(MAX_RESERVE_SHARE * left, max(RESERVE_SHARE * left, meter.units(MIN_RESERVE_SECONDS)))


def frame_stage(
    lr: Learning, state: LoopState, combine: Hypotheses, loop: Meter, seed: int = 0
) -> list[ScoredRule]:
    """The frame step's clauses and the always-true facts into the pool, before any seed.

    The one-clause frame rules join at once; the sequential cover's rules (``late``, returned)
    only if with them the pool covers every positive now: as seeds' context they fit the sample
    closely and steered the loop away from rules it otherwise finds. The final combine adds them.
    ``seed`` (the job's) draws the frame step's sample of examples.
    """
    with lr.profile.timing("verify"):
        frame_meter = loop.share(FRAME_SHARE)
        single, several = (
            frame_step(lr.bias, lr.facts, lr.targets, lr.settings.max_rows, frame_meter, seed)
            if lr.settings.frame
            else ([], [])
        )
        framed = lr.verify_all(always_facts(lr.task, lr.bias, lr.targets, lr.facts.n) + single)
        verified = [lr.verify(c) for c in several]
        late = [r for r in verified if r is not None and len(r.neg) == 0]
        for partial in verified:
            if partial is not None and len(partial.neg):
                lr.pool.add_partial(partial)
        if len(covered(lr.pool.consistent + late)) == lr.n_pos:
            framed += [r for r in late if lr.pool.add_consistent(r)]  # the cover completes the target now
            late = []
    if framed:
        with lr.profile.timing("solve"):
            state.hypothesis, state.covered_now = combine.after_frame(framed, state.hypothesis)
        state.hand_out(lr, state.hypothesis)
    return late


def iterate(
    lr: Learning, state: LoopState, seeds: SeedSearch, combine: Hypotheses, loop: Meter, seed: int,
    rng: np.random.Generator,
) -> int:  # fmt: skip
    """One iteration: search ``seed``, verify, combine; the next seed, or -1 when the loop ends."""
    positives = lr.targets.positives
    missing = np.setdiff1d(positives, state.covered_now, assume_unique=True)
    found = seeds.search(seed, loop, missing)
    with lr.profile.timing("verify"):
        new_rules = lr.verify_all(found.consistent)
        for clause in found.partial:
            rule = lr.verify(clause)
            if rule is not None:
                lr.pool.add_partial(rule)
    with lr.profile.timing("solve"):
        state.hypothesis, state.covered_now = combine.after_seed(new_rules, seed, loop)
    lr.profile.iterations += 1
    if seed not in state.covered_now:
        state.set_aside.add(seed)
    state.hand_out(lr, state.hypothesis)
    uncovered = np.setdiff1d(positives, state.covered_now, assume_unique=True)
    if state.set_aside:
        uncovered = uncovered[~arrays.isin(uncovered, sorted(state.set_aside))]
    if len(uncovered) == 0:
        state.status = "complete" if not state.set_aside else "bias too small"
        return -1
    if loop.expired():
        return -1
    return state.next_seed(uncovered, rng)


def always_facts(task: Task, bias: Bias, targets: Targets, n_examples: int) -> list[Clause]:
    """The facts ``legal(player, noop).`` of the target atoms positive in every training example.

    Why: such a fact is consistent by construction and no rule with a body is shorter, but the
    search specialises bodies, so without this it returns a coincidence of the few examples
    (``legal(player, noop) :- not true_value(0).``) that the next state refutes.
    """
    if not n_examples:
        return []
    atoms, counts = np.unique(targets.positives % targets.n_atoms, return_counts=True)
    return [
        Clause(bias.head_pred, parse_atom(task.target_atoms.names[int(a)])[1], (), ())
        for a in atoms[counts == n_examples]
    ]
