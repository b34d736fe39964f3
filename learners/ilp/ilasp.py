"""The ``ilasp`` learner: ILASP*'s loop (relevant examples + relevant hypothesis space) on clingo.

The loop (IGGP paper sect. 5.2.4), one target predicate at a time:

1. Start with one relevant example (a training positive).
2. Build the relevant hypothesis space for the newest relevant example: its bottom clause searched
   top-down (:mod:`learners.ilp.search`), each candidate tested over the training examples outside
   the solver (:mod:`learners.ilp.coverage`). Keep rules that entail no negative and cover a
   positive; drop a rule when a rule no longer than it covers the same positives or more.
3. clingo picks the shortest set of kept rules covering every relevant example
   (:class:`learners.ilp.solve.RelevantCover`, multi-shot: the new rules and example are a new
   program part, nothing is re-grounded). That is the hypothesis of this iteration: ``report`` it.
4. Find a training positive the hypothesis misses; if there is none, stop; else it becomes a
   relevant example and the loop goes on (a positive no consistent rule covers is set aside).

Beyond the published ILASP*:

* the space is built bottom-up from examples and tested with vectorised joins on a sample, then
  verified on all training examples; inequalities ``X != Y`` and negation with anonymous variables
  (``not does_mark(_, X, Y)``) are in the language;
* sub-predicates of one target share the parsed vocabulary and the fact tables (cached by the
  identity of the background matrix that ``Task.for_predicate`` shares);
* the search widens its beam (doubling) each time a seed yields nothing, and falls back to a
  breadth-first search over lifted bottom literals (:meth:`learners.ilp.search.Search.exhaustive`);
* when the loop ends without covering every positive (budget, unsatisfiable, bias too small), the
  returned program is the better, on the validate split, of the last iteration's hypothesis and a
  best partial cover (clingo maximising training balanced accuracy over consistent *and*
  inconsistent candidate rules, plus the inertia rule and frequent ground facts of
  :func:`baseline_clauses`) - a sensible answer instead of nothing (or the empty program, when
  validation says every learned program is worse than predicting nothing).

* frame clauses (:mod:`learners.ilp.frame`) enter the pool before the loop;
* with ``Settings.combine`` (default) seeds are positives no rule found so far covers, and the
  hypothesis is the best subset of *all* consistent rules (greedy while looping, one clingo
  optimisation at the end) instead of ILASP*'s relevant-example cover;
* a train-perfect program is learned once more from train and validate pooled, and replaced if
  that is complete too (`IlaspLearner._refit`, ``Settings.refit``);
* ``Settings.complement`` learns a 0-ary target's complement, when the direct program is not exact, as an invented
  ``inv_`` predicate;
* ``Settings.concepts``: ``goal`` and ``terminal`` learn over a library of closures (recursion),
  counts and lines (``Settings.lines``) defined from the signature (:mod:`learners.ilp.concepts`); a program that uses one
  carries its definition. docs/ilp.md lists the language, the switches and their measured effect.

Budget: the loop stops at ``LOOP_SHARE`` of the budget, one seed's search gets at most
``SEARCH_SHARE`` of what is left, and the fallback cover and selection use the rest.

A task with no positive training example learns the empty program. The model is a
:class:`learners.ilp.evaluate.RuleModel`, so it predicts through the one symbolic evaluation path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from learners.base import Budget, Report, ignore_report, register
from learners.ilp import concepts
from learners.ilp.bias import Clause, Literal, Settings, bias_for
from learners.ilp.coverage import (
    Facts,
    Targets,
    TooLarge,
    evaluate_clause,
    example_atoms,
    facts_for,
    targets_for,
)
from learners.ilp.defaults import Defaults, defaults_for
from learners.ilp.evaluate import RuleModel
from learners.ilp.frame import frame_step
from learners.ilp.search import Bottom, Search, SearchResult
from learners.ilp.solve import RelevantCover, ScoredRule, best_partial_cover, greedy_cover
from learners.metrics import balanced_accuracy, evaluate
from learners.metrics import pool as pool_counts
from tasks.task import Task, parse_atom

SEED = 0
SEARCH_SHARE = 0.34
"""At most this share of the loop's remaining time goes to one seed's search (the loop needs several)."""
MAX_BEAM = 96
"""The beam doubles (up to this) each time a seed's search ends without a consistent rule."""
SEED_CAP = 1 / 4
"""With the combine step, one seed's search gets at most this share of the whole budget (5 s of 60)
at first; the cap doubles each time a search times out without a consistent rule."""
FRAME_SHARE = 0.25
"""At most this share of the loop's time goes to testing frame literals (usually well under a second)."""
COMPLEMENT_SHARE = 0.3
"""A 0-ary target's direct search gets ``1 -`` this share of the budget, so that its complement,
tried when the direct program is not exact, has time left (`IlaspLearner._learn`)."""
CONCEPT_SHARE = 0.5
"""With a concept library (``goal``, ``terminal``), the plain search gets ``1 -`` this share of the
budget, so that the search over the library, tried when the plain program is not exact, has time
left (`IlaspLearner._with_concepts`)."""
DEFAULTS_SHARE = 0.3
"""Share of a functional target's budget for learning it with defaults, when the direct program
is not exact (`IlaspLearner._learn`)."""
INVERTED = "inv_"
"""Prefix of the invented predicate that holds where the target does not."""
LOOP_SHARE = 0.75
"""The loop stops at this share of the budget; the rest is for the fallback cover and selection."""
REFIT_SHARE = 0.8
"""A refit on train+validate (`IlaspLearner._refit`) gets this share of the time left."""
MIN_REFIT_SECONDS = 0.5
"""No refit with less time left than this."""


class LearnedProgram(RuleModel):
    """A RuleModel that also records how the ILASP* loop ended (shown by ``describe``).

    ``fallback`` is True when the loop ended without a hypothesis covering every training positive,
    so the program is whichever of the last hypothesis, the best partial cover and the empty
    program scored best on validate. ILASP* itself returns no program there; the results store
    keeps this flag (``extra.fallback``) so reports can also count such models as failures.
    """

    def __init__(self, rules: str, *, status: str, iterations: int, train_ba: float, fallback: bool = False):
        super().__init__(
            rules, name="ilasp", note=f"{status}, {iterations} iterations, train BA {train_ba:.3f}"
        )
        self.status = status
        self.iterations = iterations
        self.train_ba = train_ba
        self.fallback = fallback

    @property
    def budget_cut(self) -> bool:
        """Whether the budget stopped the loop (`learners.base.budget_cut`: the row says ``timeout``)."""
        return self.status == "budget"


@dataclass
class Profile:
    """Where the time went (seconds), for the bench."""

    facts: float = 0.0
    search: float = 0.0
    verify: float = 0.0
    solve: float = 0.0
    select: float = 0.0
    tested: int = 0
    iterations: int = 0
    status: str = ""
    notes: list[str] = field(default_factory=list)


def _balanced(tp: int, fp: int, n_pos: int, n_neg: int) -> float:
    """Balanced accuracy from covered positives/negatives and the totals (the paper's edge cases)."""
    return balanced_accuracy(tp, fp, n_neg - fp, n_pos - tp)


class Pool:
    """Verified candidate rules: consistent ones (for the cover) and partial ones (for the fallback)."""

    def __init__(self, positives: np.ndarray, n_neg: int, max_keys: int = 16_000_000):
        self.positives = positives
        self.n_neg = n_neg
        self.max_keys = max_keys
        self.consistent: list[ScoredRule] = []
        self.partial: list[ScoredRule] = []
        self.partial_keys = 0
        self.clauses: dict[str, Clause] = {}

    def add_partial(self, rule: ScoredRule) -> None:
        """Keep an inconsistent rule for the fallback cover, within ``max_keys`` stored keys.

        Why: a general rule's covered negatives can be millions of keys; kept for every seed they
        made the pool the biggest thing in memory. Past the bound the rules with the worst
        balanced-accuracy gain (pos/P - neg/N) are dropped first.
        """
        self.partial.append(rule)
        self.partial_keys += len(rule.pos) + len(rule.neg)
        if self.partial_keys > self.max_keys:
            p, n = max(len(self.positives), 1), max(self.n_neg, 1)
            self.partial.sort(key=lambda r: len(r.pos) / p - len(r.neg) / n, reverse=True)
            while self.partial_keys > self.max_keys // 2 and len(self.partial) > 1:
                r = self.partial.pop()
                self.partial_keys -= len(r.pos) + len(r.neg)

    def verify(self, clause: Clause, facts: Facts, targets: Targets, max_rows: int) -> ScoredRule | None:
        text = clause.text()
        if text in self.clauses:
            return None
        self.clauses[text] = clause
        try:
            keys = evaluate_clause(clause, facts, targets, max_rows)
        except TooLarge:
            return None
        hit = np.isin(keys, self.positives, assume_unique=True)
        if not hit.any():
            return None
        return ScoredRule(text, clause.length, keys[hit], keys[~hit], clause.singletons())

    def add_consistent(self, rule: ScoredRule) -> bool:
        """Keep ``rule`` unless a rule no costlier than it covers a superset of its positives.

        Cost is (length, singleton variables): the solver's order of preference.
        """
        for other in self.consistent:
            if _cost(other) <= _cost(rule) and len(other.pos) >= len(rule.pos):
                if np.isin(rule.pos, other.pos, assume_unique=True).all():
                    return False
        self.consistent = [
            o
            for o in self.consistent
            if not (_cost(rule) <= _cost(o) and np.isin(o.pos, rule.pos, assume_unique=True).all())
        ]
        self.consistent.append(rule)
        return True


def _cost(rule: ScoredRule) -> tuple[int, int]:
    return rule.length, rule.singletons


@dataclass
class IlaspLearner:
    """ILASP*-style learner; see the module docstring. ``settings`` are the same for every game."""

    settings: Settings = field(default_factory=Settings)
    name: str = "ilasp"
    profile: Profile = field(default_factory=Profile)
    _clauses: dict[str, Clause] = field(default_factory=dict, repr=False)  # rule text -> clause (last fit)
    _invert: bool = field(default=False, repr=False)  # learning the complement (see fit)
    _defaults: Defaults | None = field(default=None, repr=False)  # learning the non-default atoms (_learn)
    _head: str = field(default="", repr=False)
    _concepts: list[concepts.Concept] = field(default_factory=list, repr=False)  # the library (fit)

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> LearnedProgram:
        """Learn the target from train (validate chooses), then once more from both (`_refit`);
        ``goal`` and ``terminal`` over the concept library too, on demand (`_with_concepts`)."""
        started = time.monotonic()
        self._concepts = []
        task, model = self._with_concepts(task, budget, report)
        return self._refit(task, budget, model, time.monotonic() - started, report)

    def _with_concepts(self, task: Task, budget: Budget, report: Report) -> tuple[Task, LearnedProgram]:
        """Learn in the plain language first; over the concept library only if that is not exact.

        Why: the library's counts make short programs that fit a handful of positives by
        coincidence (measured with the library always on: tictactoe_terminal 0.99 -> 0.83 on test,
        "at least K marks" instead of the lines; breakthrough_terminal 1.0 -> 0.91). So, as for
        the complement, the plain search gets ``1 - CONCEPT_SHARE`` of the budget; only if its
        program is not complete and exact on validate is the target learned once more over the
        library (:mod:`learners.ilp.concepts`), and that program stands only if strictly better on
        validate. Returns the task the standing program was learned on (the refit needs it).
        """
        extended, library = (
            concepts.extend(task, self.settings.lines) if self.settings.concepts else (task, [])
        )
        if not library:
            return task, self._learn(task, budget, report)

        def over_library(budget: Budget) -> LearnedProgram:
            self._concepts = library
            return self._learn(extended, budget, ignore_report)

        model, second = self._on_demand(
            task, budget, CONCEPT_SHARE, lambda budget: self._learn(task, budget, report), over_library,
            "concepts", report,
        )  # fmt: skip
        if not second:
            self._concepts = []
        return (extended if second else task), model

    def _on_demand(
        self, task: Task, budget: Budget, share: float, first: Callable[[Budget], LearnedProgram],
        second: Callable[[Budget], LearnedProgram], what: str, report: Report,
    ) -> tuple[LearnedProgram, bool]:  # fmt: skip
        """``first`` with ``1 - share`` of the budget; ``second`` only if that program is not
        complete and exact on validate (and ``MIN_REFIT_SECONDS`` are left), with ``REFIT_SHARE``
        of what is left, standing only if strictly better on validate (`_second_try`). The
        complement, the defaults and the concept library are learned this way. Returns the
        program that stands and whether it is the second."""
        remaining = budget.remaining()
        finite = remaining != float("inf")
        program = first(Budget(remaining * (1 - share)) if finite else Budget())
        left = budget.remaining()
        if left < MIN_REFIT_SECONDS:
            return program, False
        first_ba = _validate_ba(task, program)
        if program.status == "complete" and first_ba == 1.0:
            return program, False
        kept = self._second_try(
            lambda: second(Budget(left * REFIT_SHARE) if finite else Budget()), program,
            lambda learned: _validate_ba(task, learned) > first_ba, what, report,
        )  # fmt: skip
        return kept, kept is not program

    def _refit(
        self, task: Task, budget: Budget, model: LearnedProgram, took: float, report: Report
    ) -> LearnedProgram:
        """The same learning on train and validate pooled (`Task.pooled_train`), kept if complete.

        Why: the loop learns from train so that validate can choose between its programs (and the
        empty one). The fewer the examples, the more programs are train-perfect (a target whose
        positives are a handful of terminal states), and the shortest of them need not be the
        concept. When validate shows that (the train-perfect program is not exact on it), the
        program is learned once more from every example the learner may see and replaced if the
        new one is complete on all of them. A program exact on validate is kept: a refit is a new
        search (other seeds, other rules) and is not always better (measured: walkabout_terminal
        1.0 -> 0.833 on test when refit regardless). Runs only if the time left is at least what
        the first fit took; the refit gets ``REFIT_SHARE`` of it, so the worker's hard budget
        never kills it (the train program was reported first, in any case).
        """
        if not self.settings.refit or model.status != "complete" or model.fallback:
            return model
        remaining = budget.remaining()
        pooled = task.pooled_train()
        if pooled is None or remaining < max(took, MIN_REFIT_SECONDS) or _validate_ba(task, model) == 1.0:
            return model
        refit_budget = Budget(remaining * REFIT_SHARE) if remaining != float("inf") else Budget()
        return self._second_try(
            lambda: self._learn(pooled, refit_budget, ignore_report), model,
            lambda refit: refit.status == "complete", "refit on train+validate", report,
        )  # fmt: skip

    def _second_try(
        self, learn: Callable[[], LearnedProgram], first: LearnedProgram,
        better: Callable[[LearnedProgram], bool], what: str, report: Report,
    ) -> LearnedProgram:  # fmt: skip
        """Learn once more (a refit, the complement); keep it if ``better``, else keep ``first``.

        Either way the profile counts both learnings' time and work, and says which one stands;
        the clauses found by the first are restored when the second is given up.
        """
        profile, clauses = self.profile, dict(self._clauses)
        second = learn()
        second_status = self.profile.status
        self._add_profile(profile)
        if not better(second):
            self.profile.status = f"{profile.status} ({what}: {second_status}, not kept)"
            self._clauses = clauses
            return first
        self.profile.status = f"{second_status} ({what})"
        second.note += f"; {what}"
        report(second)
        return second

    def _learn(self, task: Task, budget: Budget, report: Report = ignore_report) -> LearnedProgram:
        """Learn the target; a 0-ary target (``terminal``) may also be learned as its complement,
        a functional one (``goal``) as its non-default atoms and a default rule per key.

        The complement (``terminal :- not inv_terminal.`` with ``inv_terminal`` learned from the
        swapped labels) is an invented predicate: "the game goes on while some box is off its
        target" is one short rule where "the game is over when every box is on a target" is none.
        The defaults (:mod:`learners.ilp.defaults`): ``goal(white, 0) :- not goal(white, 100).``,
        with only the wins searched. Both are tried on demand (`_on_demand`): the direct search
        gets ``1 - COMPLEMENT_SHARE`` (``1 - DEFAULTS_SHARE``) of the budget, and only if its
        program is not complete and exact on validate does the second learning get the rest; it
        replaces the direct program only if strictly better on validate. (Tried first, the
        complement overfitted where the positive class is rare: a complement exact on a validate
        split with two positives was returned at once, and scored 0.5 on test.)
        """
        self._invert, self._defaults = False, None
        arity0 = len(task.target_atoms) > 0 and not parse_atom(task.target_atoms.names[0])[1]
        defaults = defaults_for(task) if self.settings.defaults and not arity0 else None
        if arity0 and self.settings.complement:
            share, what = COMPLEMENT_SHARE, "complement"
        elif defaults is not None:
            share, what = DEFAULTS_SHARE, "defaults"
        else:
            return self._fit(task, budget, report)

        def second(budget: Budget) -> LearnedProgram:
            self._invert, self._defaults = arity0, defaults
            try:
                return self._fit(task, budget, ignore_report)
            finally:
                self._invert, self._defaults = False, None

        model, _ = self._on_demand(
            task, budget, share, lambda budget: self._fit(task, budget, report), second, what, report
        )
        return model

    def _add_profile(self, earlier: Profile) -> None:
        """Count an earlier learning's time and work (a search given up on) in this fit's profile."""
        for k in ("facts", "search", "verify", "solve", "select", "tested", "iterations"):
            setattr(self.profile, k, getattr(self.profile, k) + getattr(earlier, k))

    def _targets(self, task: Task, split, constants, rows=None) -> Targets:
        targets = targets_for(task, split, constants, rows)
        if self._defaults is not None:
            return self._defaults.restrict(targets)
        return _complement(targets) if self._invert else targets

    def _fit(
        self, task: Task, budget: Budget, report: Callable[[LearnedProgram], None] = ignore_report
    ) -> LearnedProgram:
        self.profile = prof = Profile()
        self._head = task.predicates[0]
        train = task.split("train")
        t0 = time.monotonic()
        facts = facts_for(task, train)
        targets = self._targets(task, train, facts.constants)
        prof.facts += time.monotonic() - t0
        positives = targets.positives
        n_pos, n_neg = len(positives), facts.n * targets.table.n - len(positives)
        if n_pos == 0:
            prof.status = "no positives"
            model = self._model([], n_pos, n_neg, "no positive training example", 0)
            report(model)
            return model
        bias = bias_for(task, self.settings)
        widen = self.settings.widen and not parse_atom(task.target_atoms.names[0])[1]
        if self._invert:
            bias = replace(bias, head_pred=INVERTED + bias.head_pred)
        remaining = budget.remaining()
        loop_deadline = time.monotonic() + (
            remaining * LOOP_SHARE if remaining != float("inf") else remaining
        )

        def loop_left() -> float:
            return loop_deadline - time.monotonic()

        rng = np.random.default_rng(SEED)
        statics = [parse_atom(a) for a in task.static_atoms()]
        pool = Pool(positives, n_neg)
        self._clauses = pool.clauses
        cover = RelevantCover()
        sample_rows = np.sort(rng.choice(facts.n, size=min(self.settings.sample, facts.n), replace=False))
        sample = None
        set_aside: set[int] = set()
        hypothesis: list[ScoredRule] = []
        covered_now = np.zeros(0, dtype=np.int64)
        status = "budget"
        beam_width = self.settings.beam
        best_reported = -1.0
        seed_cap = remaining * SEED_CAP if remaining != float("inf") else remaining
        max_rows = self.settings.max_rows

        def solve_seconds() -> float:
            return max(min(loop_left(), budget.remaining() * 0.2), 0.1)

        def add(clauses: list[Clause]) -> list[ScoredRule]:
            """Verify ``clauses`` on all training examples; the new consistent rules kept."""
            new_rules = []
            for clause in clauses:
                rule = pool.verify(clause, facts, targets, max_rows)
                if rule is None:
                    continue
                if len(rule.neg) == 0:
                    if pool.add_consistent(rule):
                        new_rules.append(rule)
                else:
                    pool.add_partial(rule)
            return [r for r in new_rules if r in pool.consistent]

        def combine(optimise: bool = False) -> list[ScoredRule]:
            """The combine step: the subset of every consistent rule found so far that covers the
            most training positives, then has the fewest literals - greedy while the loop runs,
            one clingo optimisation (kept if no worse) at the end."""
            greedy = [pool.consistent[i] for i in greedy_cover(pool.consistent, positives)]
            if not optimise:
                return greedy
            ids = best_partial_cover(pool.consistent, n_pos, n_neg, max(budget.remaining() * 0.25, 0.2))
            best = [pool.consistent[i] for i in ids]
            size = [(-len(_union([r.pos for r in h])), sum(r.length for r in h)) for h in (best, greedy)]
            return best if size[0] <= size[1] else greedy

        def hand_out(rules: list[ScoredRule]) -> None:
            nonlocal best_reported
            model = self._model(rules, n_pos, n_neg, "iteration", prof.iterations)
            if model.train_ba > best_reported:  # the anytime contract: hand out each better hypothesis
                best_reported = model.train_ba
                report(model)

        t = time.monotonic()
        deadline = time.monotonic() + max(loop_left(), 0.0) * FRAME_SHARE
        single, several = (
            frame_step(bias, facts, targets, max_rows, deadline) if self.settings.frame else ([], [])
        )
        framed = add(always_facts(task, bias, targets, facts.n) + single)
        verified = [pool.verify(c, facts, targets, max_rows) for c in several]
        late = [r for r in verified if r is not None and len(r.neg) == 0]
        for partial in verified:
            if partial is not None and len(partial.neg):
                pool.add_partial(partial)
        if len(_union([r.pos for r in pool.consistent + late])) == n_pos:
            framed += [r for r in late if pool.add_consistent(r)]  # the cover completes the target now
            late = []
        prof.verify += time.monotonic() - t
        if framed:
            t = time.monotonic()
            if self.settings.combine:
                hypothesis = combine()
            else:
                cover.add(framed, [])
            prof.solve += time.monotonic() - t
            covered_now = _union([r.pos for r in (hypothesis if self.settings.combine else framed)])
            hand_out(hypothesis)
        pending = np.setdiff1d(positives, _union([r.pos for r in pool.consistent]), assume_unique=True)
        if len(pending) == 0:
            status = "complete"
        seed = int(pending[rng.integers(len(pending))]) if len(pending) else -1
        while seed >= 0:
            ex, atom = divmod(seed, targets.n_atoms)
            if sample is None or ex not in set(sample_rows.tolist()):
                sample_rows = np.union1d(sample_rows, [ex])
                t = time.monotonic()
                sample = facts_for(task, train, sample_rows)
                prof.facts += time.monotonic() - t
            sample_targets = self._targets(task, train, sample.constants, sample_rows)
            bottom = Bottom.of(example_atoms(task, train, ex), statics)
            t = time.monotonic()
            share = max(loop_left(), 0.0) * SEARCH_SHARE
            if self.settings.combine:
                share = min(share, seed_cap)  # many small searches: many-rule targets need many seeds
            wanted = _to_sample(
                np.setdiff1d(positives, covered_now, assume_unique=True), sample_rows, targets.n_atoms
            )
            search = Search(bias, sample, sample_targets, bottom, time.monotonic() + share, wanted, widen)
            seed_args = parse_atom(task.target_atoms.names[atom])[1]
            found = search.run(bias.head_pred, seed_args, beam_width)
            if not found.consistent and not found.timed_out:
                deeper = search.exhaustive(bias.head_pred, seed_args)
                found = SearchResult(deeper.consistent, found.partial, search.tested, deeper.timed_out)
            if not found.consistent and not found.timed_out:
                beam_width = min(beam_width * 2, MAX_BEAM)  # the space was too narrow: widen it
            if not found.consistent and found.timed_out:
                seed_cap *= 2  # the rules left need longer searches
            prof.search += time.monotonic() - t
            prof.tested += found.tested
            t = time.monotonic()
            new_rules = add(found.consistent)
            for clause in found.partial:
                rule = pool.verify(clause, facts, targets, max_rows)
                if rule is not None:
                    pool.add_partial(rule)
            prof.verify += time.monotonic() - t
            t = time.monotonic()
            if self.settings.combine:
                hypothesis = combine()
                covered_now = _union([r.pos for r in pool.consistent])  # seeds: what no rule covers yet
            else:
                cover.add(new_rules, [seed])
                chosen, _ = cover.solve(solve_seconds())
                hypothesis = [cover.rules[r] for r in chosen]
                covered_now = _union([r.pos for r in hypothesis])
            prof.solve += time.monotonic() - t
            prof.iterations += 1
            if seed not in covered_now:
                set_aside.add(seed)
            hand_out(hypothesis)
            uncovered = np.setdiff1d(positives, covered_now, assume_unique=True)
            uncovered = uncovered[~np.isin(uncovered, list(set_aside))] if set_aside else uncovered
            if len(uncovered) == 0:
                status = "complete" if not set_aside else "bias too small"
                break
            if loop_left() <= 0:
                break
            seed = int(uncovered[rng.integers(len(uncovered))])
        if self.settings.combine:
            t = time.monotonic()
            for rule in late:  # the frame step's cover, kept out of the seeds' way until now
                pool.add_consistent(rule)
            hypothesis = combine(optimise=True)
            prof.solve += time.monotonic() - t
        prof.status = status
        if len(_union([r.pos for r in hypothesis])) == n_pos:
            final = self._model(hypothesis, n_pos, n_neg, "complete", prof.iterations)
            report(final)
            return final
        t = time.monotonic()
        for clause in baseline_clauses(task, bias, targets, facts.n):
            rule = pool.verify(clause, facts, targets, self.settings.max_rows)
            if rule is not None:
                pool.add_partial(rule)
        candidates = pool.consistent + pool.partial
        partial_ids = best_partial_cover(candidates, n_pos, n_neg, max(budget.remaining() * 0.5, 0.2))
        fallback = [candidates[i] for i in partial_ids]
        options = [
            (hypothesis, status),
            (fallback, f"{status}; best partial cover"),
            ([], f"{status}; empty"),
        ]
        best = self._select(task, options, n_pos, n_neg)
        best.fallback = True
        prof.select += time.monotonic() - t
        report(best)
        return best

    def _model(
        self, rules: list[ScoredRule], n_pos: int, n_neg: int, status: str, iterations: int
    ) -> LearnedProgram:
        tp = len(_union([r.pos for r in rules]))
        fp = len(_union([r.neg for r in rules]))
        text = "\n".join(r.text for r in rules)
        if self._invert:
            text = "\n".join([*(r.text for r in rules), f"{self._head} :- not {INVERTED}{self._head}."])
        if self._defaults is not None:
            text = "\n".join([*(r.text for r in rules), self._defaults.rules])
        defined = concepts.definitions(text, self._concepts)
        if defined:  # a program that uses a concept carries its definition
            text += "\n" + defined
        return LearnedProgram(
            text, status=status, iterations=iterations, train_ba=_balanced(tp, fp, n_pos, n_neg)
        )

    def _select(self, task: Task, options, n_pos: int, n_neg: int) -> LearnedProgram:
        """The option with the best validate balanced accuracy (train if no validate), then shortest.

        Validate coverage is computed by the same joins as training coverage (cheap); the chosen
        program still predicts through RuleModel like every other symbolic model.
        """
        models = [self._model(rules, n_pos, n_neg, why, self.profile.iterations) for rules, why in options]
        if "validate" not in task.splits or len(models) == 1:
            return max(models, key=lambda m: (m.train_ba, -len(m.text)))
        split = task.split("validate")
        facts = facts_for(task, split)
        targets = self._targets(task, split, facts.constants)
        v_pos = len(targets.positives)
        v_neg = facts.n * targets.table.n - v_pos
        scored = []
        for (rules, _), m in zip(options, models, strict=True):
            keys = []
            for r in rules:
                try:
                    keys.append(
                        evaluate_clause(self._clauses[r.text], facts, targets, self.settings.max_rows)
                    )
                except TooLarge:
                    keys.append(np.zeros(0, dtype=np.int64))
            derived = _union(keys)
            tp = int(np.isin(derived, targets.positives).sum())
            scored.append((_balanced(tp, len(derived) - tp, v_pos, v_neg), m.train_ba, -len(m.text), m))
        return max(scored, key=lambda s: s[:3])[3]


def always_facts(task: Task, bias, targets: Targets, n_examples: int) -> list[Clause]:
    """The facts ``legal(player, noop).`` of the target atoms positive in every training example.

    Why: such a fact is consistent by construction and no rule with a body is shorter, but the
    search specialises bodies, so without this it returns a coincidence of the few examples
    (``legal(player, noop) :- not true_value(0).``) that the next state refutes.
    """
    if not n_examples:
        return []
    atoms, counts = np.unique(targets.positives % targets.n_atoms, return_counts=True)
    head = bias.head_pred
    return [
        Clause(head, parse_atom(task.target_atoms.names[int(a)])[1], (), ())
        for a in atoms[counts == n_examples]
    ]


def baseline_clauses(
    task: Task, bias, targets: Targets, n_examples: int, max_facts: int = 64
) -> list[Clause]:
    """Rules of the language that need no search, as material for the fallback cover.

    The inertia rule ``next_p(X..) :- true_p(X..)`` (when ``true_p`` has the same types), and the
    ground facts of the atoms that are positive in at least half of the training examples (the
    *Mean* baseline, written as rules). Only the BA-optimal cover decides whether they are used.
    """
    out: list[Clause] = []
    head, types = bias.head_pred, bias.head_types
    if head.startswith("next_") and bias.body_types.get("true_" + head[5:]) == types and types:
        args = tuple(range(len(types)))
        out.append(Clause(head, args, (Literal("true_" + head[5:], args),), types))
    if n_examples:
        atoms, counts = np.unique(targets.positives % targets.n_atoms, return_counts=True)
        frequent = atoms[counts * 2 >= n_examples]
        frequent = frequent[np.argsort(-counts[counts * 2 >= n_examples], kind="stable")][:max_facts]
        for a in frequent:
            out.append(Clause(head, parse_atom(task.target_atoms.names[int(a)])[1], (), ()))
    return out


def _complement(targets: Targets) -> Targets:
    """The same candidate atoms with the labels swapped (for learning a target's complement)."""
    n_ex = len(targets.rows)
    every = (np.arange(n_ex, dtype=np.int64)[:, None] * targets.n_atoms + targets.table.cols["atom"]).ravel()
    flipped = np.setdiff1d(np.unique(every), targets.positives, assume_unique=True)
    return Targets(targets.table, targets.n_atoms, flipped, targets.rows)


def _validate_ba(task: Task, model: LearnedProgram) -> float:
    """Balanced accuracy on the validate split through the one evaluation path (train BA without one)."""
    if "validate" not in task.splits:
        return model.train_ba
    return pool_counts(evaluate(model, task, ["validate"])["validate"].values()).balanced_accuracy


def _to_sample(keys: np.ndarray, rows: np.ndarray, n_atoms: int) -> np.ndarray:
    """Full-split keys of examples in the sample, renumbered to the sample's example indices."""
    ex, atom = np.divmod(keys, n_atoms)
    at = np.searchsorted(rows, ex)
    inside = (at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == ex)
    return np.sort(at[inside] * n_atoms + atom[inside])


def _union(keys: list[np.ndarray]) -> np.ndarray:
    if not keys:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(keys))


@register(
    r"ilasp(?:_b(?P<max_body>\d+))?(?P<switches>(?:_(?:no)?(?:frameconst|framecover|frameequal|frame|concepts|lines|widen|combine|absence|complement|defaults|refit))*)",
    description="ILASP*-style ILP on clingo: relevant examples + a relevant hypothesis space from typed bottom "
    "clauses, candidates tested by vectorised joins, frame clauses chosen as a set, one clingo optimisation "
    "combines every rule found (falls back to the best partial cover).",
    params="max_body: most body literals per rule (default 5; e.g. ilasp_b3); _noframe, _nocombine, "
    "_noabsence, _norefit, _noframeconst, _noframecover, _noframeequal, _noconcepts, _nolines, _nowiden, _nocomplement, _nodefaults switch a default feature off "
    "(e.g. ilasp_noframe_nocombine, ilasp_nocomplement)",
    example="ilasp",
    symbolic=True,
)
def make_ilasp(max_body: int | None = None, switches: str | None = None) -> IlaspLearner:
    changes: dict = {}
    fields = {"frameconst": "frame_constants", "framecover": "frame_cover", "frameequal": "frame_equal"}
    for word in (switches or "").split("_")[1:]:
        changes[fields.get(word.removeprefix("no"), word.removeprefix("no"))] = not word.startswith("no")
    if max_body is not None:
        changes["max_body"] = max_body
    return IlaspLearner(replace(Settings(), **changes))
