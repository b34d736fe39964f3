"""The ``ilasp`` learner: ILASP*'s loop (relevant examples + relevant hypothesis space) on clingo.

The loop (IGGP paper sect. 5.2.4), one target predicate at a time:

1. Start with one relevant example (a training positive).
2. Build the relevant hypothesis space for the newest relevant example: its bottom clause searched
   top-down (:mod:`learners.ilp.search`), each candidate tested over the training examples outside
   the solver (:mod:`learners.ilp.coverage`). Keep rules that entail no negative and cover a
   positive; drop a rule when a rule no longer than it covers the same positives or more.
3. clingo picks the shortest set of kept rules covering every relevant example
   (:class:`learners.ilp.cover.RelevantCover`, multi-shot: the new rules and example are a new
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
  :mod:`learners.ilp.baseline`) - a sensible answer instead of nothing (or the empty program, when
  validation says every learned program is worse than predicting nothing).

* frame clauses (:mod:`learners.ilp.frame`) enter the pool before the loop;
* with ``Settings.combine`` (default) seeds are positives no rule found so far covers, and the
  hypothesis is the best subset of *all* consistent rules (greedy while looping, one clingo
  optimisation at the end) instead of ILASP*'s relevant-example cover;
* a train-perfect program is learned once more from train and validate pooled, and replaced if
  that is complete too (`IlaspLearner._refit`, ``Settings.refit``);
* ``Settings.complement`` learns a 0-ary target's complement, when the direct program is not
  exact, as an invented ``inv_`` predicate;
* ``Settings.concepts``: ``goal`` and ``terminal`` learn over a library of closures (recursion),
  counts and lines (``Settings.lines``) defined from the signature (:mod:`learners.ilp.concepts`);
  a program that uses one carries its definition;
* ``Settings.seen_moves``: a ``legal`` target of a game that declares no moves (no ``input``
  relation: GGP rulesheets) gets the moves seen legal in training as a static base
  (:mod:`learners.ilp.seen_moves`). docs/ilp.md lists the language, the switches and their
  measured effect.

The stages live one per module: :mod:`learners.ilp.loop` runs them (frame step, seed search
:mod:`learners.ilp.seeds`, combine :mod:`learners.ilp.combine`, fallback selection
:mod:`learners.ilp.fallback`); this module decides which learnings a fit runs (plain, complement,
defaults, concept library, refit), each a :class:`learners.ilp.mode.Mode` passed down, never a flag.

Budget: every share is cut from one :class:`learners.ilp.meter.Meter`: wall-clock seconds by
default, or units of work with ``ilasp_w<N>`` (the same steps on any machine; the wall-clock
budget still holds as a hard stop). The loop stops when a reserve is left
(:func:`learners.ilp.loop.reserve`), one seed's search gets at most ``SEARCH_SHARE`` of what is
left, and the fallback cover and selection use the reserve. The job's seed (``fit(..., seed=)``)
draws the search sample and the seeds.

A task with no positive training example learns the empty program. The model is a
:class:`learners.ilp.evaluate.RuleModel`, so it predicts through the one symbolic evaluation path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

from learners.base import CUT_BY_CLOCK, CUT_BY_WORK, Budget, Report, ignore_report, register
from learners.ilp import concepts, data_bound, seen_moves
from learners.ilp.bias import Settings
from learners.ilp.default_rules import defaults_for
from learners.ilp.learning import Learned, LearnedProgram
from learners.ilp.loop import learn
from learners.ilp.meter import Meter
from learners.ilp.mode import Mode
from learners.ilp.profile import Profile
from tasks.task import Task, parse_atom

__all__ = ["IlaspLearner", "LearnedProgram", "make_ilasp"]

SEED = 0
"""The seed of a fit called without one (``orch learn``, tests); a sweep passes the job's."""
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
REFIT_SHARE = 0.8
"""A refit on train+validate (`IlaspLearner._refit`) gets this share of the time left."""
MIN_REFIT_SECONDS = 0.5
"""No second learning with less time left than this (counting work: about that much work)."""


def _noted(program: LearnedProgram, note: str) -> LearnedProgram:
    """``program`` with ``note`` added to its description (once)."""
    if note and note not in program.note:
        program.note = f"{program.note}; {note}"
    return program


def _reported_with_note(report: Report, note: str, program: LearnedProgram) -> None:
    report(_noted(program, note))


Learn = Callable[[Meter], Learned]
"""One learning within an allowance."""


@dataclass
class IlaspLearner:
    """ILASP*-style learner; see the module docstring. ``settings`` are the same for every game.

    ``profile`` is the last fit's (the bench reads it); nothing else carries from one fit to the next.
    """

    settings: Settings = field(default_factory=Settings)
    name: str = "ilasp"
    profile: Profile = field(default_factory=Profile)

    def fit(
        self, task: Task, budget: Budget, report: Report = ignore_report, seed: int | None = None
    ) -> LearnedProgram:
        """Learn the target from train (validate chooses), then once more from both (`_refit`);
        ``goal`` and ``terminal`` over the concept library too, on demand (`_with_concepts`)."""
        meter = Meter.of(budget, self.settings.max_work)
        seed = SEED if seed is None else seed
        started = meter.now()
        task, bounded = data_bound.within(task, self.settings.data_atoms, seed)
        if bounded:  # every program this fit reports (a timeout keeps the last) says it
            report = partial(_reported_with_note, report, bounded)
        task, given = self._given(task)
        task, base, learned = self._with_concepts(task, given, meter, seed, report)
        learned = self._refit(task, base, meter, seed, learned, meter.now() - started, report)
        self.profile = learned.profile
        self.profile.work = meter.work.done if meter.work is not None else 0
        program = learned.program
        if program.budget_cut:  # the work bound's cut, unless the wall clock had run out by then too
            program.cut_by = CUT_BY_WORK if meter.counts_work and not budget.expired() else CUT_BY_CLOCK
        return _noted(program, bounded)

    def _given(self, task: Task) -> tuple[Task, Mode]:
        """``task`` with the moves seen legal in training where its game declares none
        (:mod:`learners.ilp.seen_moves`), and the plain mode, which carries their facts."""
        if not self.settings.seen_moves:
            return task, Mode()
        task, moves = seen_moves.extend(task)
        return task, Mode(library=(moves,) if moves is not None else ())

    def _with_concepts(
        self, task: Task, plain: Mode, meter: Meter, seed: int, report: Report
    ) -> tuple[Task, Mode, Learned]:
        """Learn in the plain language first; over the concept library only if that is not exact.

        Why: the library's counts make short programs that fit a handful of positives by
        coincidence (measured with the library always on: tictactoe_terminal 0.99 -> 0.83 on test,
        "at least K marks" instead of the lines; breakthrough_terminal 1.0 -> 0.91). So, as for
        the complement, the plain search gets ``1 - CONCEPT_SHARE`` of the budget; only if its
        program is not complete and exact on validate is the target learned once more over the
        library (:mod:`learners.ilp.concepts`; its atoms are computed only then, seconds on a big
        board), and that program stands only if strictly better on validate. Returns the task and
        mode the standing program was learned with (the refit needs them).
        """
        if not (self.settings.concepts and concepts.has_library(task)):
            return task, plain, self._learn(task, plain, meter, seed, report)
        extension: list[tuple[Task, Mode]] = []

        def over_library(m: Meter) -> Learned:
            # extended only when needed: the closures and lines of a big board take seconds
            extended, library = concepts.extend(task, self.settings.lines)
            mode = replace(plain, library=plain.library + tuple(library))
            extension.append((extended, mode))
            return self._learn(extended, mode, m, seed, ignore_report)

        learned, second = self._on_demand(
            meter, CONCEPT_SHARE, lambda m: self._learn(task, plain, m, seed, report), over_library,
            "concepts", report,
        )  # fmt: skip
        return (*extension[0], learned) if second else (task, plain, learned)

    def _on_demand(
        self, meter: Meter, share: float, first: Learn, second: Learn, what: str, report: Report
    ) -> tuple[Learned, bool]:
        """``first`` with ``1 - share`` of the allowance; ``second`` only if that program is not
        complete and exact on validate (and ``MIN_REFIT_SECONDS`` are left), with ``REFIT_SHARE``
        of what is left, standing only if strictly better on validate (`_second_try`). The
        complement, the defaults and the concept library are learned this way. Returns the
        learning that stands and whether it is the second."""
        learned = first(meter.share(1 - share))
        if meter.left() < meter.units(MIN_REFIT_SECONDS):
            return learned, False
        rest = meter.share(REFIT_SHARE)
        first_ba = self._validate_ba(learned)
        if learned.program.status == "complete" and first_ba == 1.0:
            return learned, False
        kept = self._second_try(
            lambda: second(rest),
            learned,
            lambda again: self._validate_ba(again) > first_ba,
            what,
            report,
        )
        return kept, kept.program is not learned.program

    def _refit(
        self, task: Task, base: Mode, meter: Meter, seed: int, learned: Learned, took: float, report: Report
    ) -> Learned:
        """The same learning on train and validate pooled (`Task.pooled_train`), kept if complete.

        Why: the loop learns from train so that validate can choose between its programs (and the
        empty one). The fewer the examples, the more programs are train-perfect (a target whose
        positives are a handful of terminal states), and the shortest of them need not be the
        concept. When validate shows that (the train-perfect program is not exact on it), the
        program is learned once more from every example the learner may see and replaced if the
        new one is complete on all of them. A program exact on validate is kept: a refit is a new
        search (other seeds, other rules) and is not always better (measured: walkabout_terminal
        1.0 -> 0.833 on test when refit regardless). Runs only if the allowance left is at least
        what the first fit took; the refit gets ``REFIT_SHARE`` of it, so the worker's hard budget
        never kills it (the train program was reported first, in any case).
        """
        model = learned.program
        if not self.settings.refit or model.status != "complete" or model.fallback:
            return learned
        pooled = task.pooled_train()
        if pooled is None or meter.left() < max(took, meter.units(MIN_REFIT_SECONDS)):
            return learned
        if self._validate_ba(learned) == 1.0:
            return learned
        rest = meter.share(REFIT_SHARE)
        return self._second_try(
            lambda: self._learn(pooled, base, rest, seed, ignore_report), learned,
            lambda refit: refit.program.status == "complete", "refit on train+validate", report,
        )  # fmt: skip

    def _second_try(
        self, learn_again: Callable[[], Learned], first: Learned, better: Callable[[Learned], bool],
        what: str, report: Report,
    ) -> Learned:  # fmt: skip
        """Learn once more (a refit, the complement); keep it if ``better``, else keep ``first``.

        Either way the profile counts both learnings' time and work, and says which one stands.
        """
        second = learn_again()
        profile = second.profile
        second_status = profile.status
        profile.add(first.profile)
        if not better(second):
            profile.status = f"{first.profile.status} ({what}: {second_status}, not kept)"
            return first._replace(profile=profile)
        profile.status = f"{second_status} ({what})"
        second.program.note += f"; {what}"
        report(second.program)
        return second

    @staticmethod
    def _validate_ba(learned: Learned) -> float:
        """Balanced accuracy of ``learned``'s program on the validate split (train BA without one),
        scored as its learning tested rules (:mod:`learners.ilp.scoring`), memoised per learning,
        within the fit's meter."""
        scorer, program = learned.scorer, learned.program
        if not scorer.has_split:
            return program.train_ba
        with learned.profile.timing("select"):
            return scorer.balanced_accuracy(program.learned_rules, program)

    def _learn(self, task: Task, base: Mode, meter: Meter, seed: int, report: Report) -> Learned:
        """Learn the target; a 0-ary target (``terminal``) may also be learned as its complement,
        a functional one (``goal``) as its non-default atoms and a default rule per key.

        The complement (``terminal :- not inv_terminal.`` with ``inv_terminal`` learned from the
        swapped labels) is an invented predicate: "the game goes on while some box is off its
        target" is one short rule where "the game is over when every box is on a target" is none.
        The defaults (:mod:`learners.ilp.default_rules`): ``goal(white, 0) :- not goal(white, 100).``,
        with only the wins searched. Both are tried on demand (`_on_demand`): the direct search
        gets ``1 - COMPLEMENT_SHARE`` (``1 - DEFAULTS_SHARE``) of the budget, and only if its
        program is not complete and exact on validate does the second learning get the rest; it
        replaces the direct program only if strictly better on validate. (Tried first, the
        complement overfitted where the positive class is rare: a complement exact on a validate
        split with two positives was returned at once, and scored 0.5 on test.)
        """
        settings = self.settings
        arity0 = len(task.target_atoms) > 0 and not parse_atom(task.target_atoms.names[0])[1]
        defaults = defaults_for(task) if settings.defaults and not arity0 else None
        if arity0 and settings.complement:
            share, what, other = COMPLEMENT_SHARE, "complement", replace(base, invert=True)
        elif defaults is not None:
            share, what, other = DEFAULTS_SHARE, "defaults", replace(base, defaults=defaults)
        else:
            return learn(task, settings, base, meter, seed, report)
        learned, _ = self._on_demand(
            meter, share, lambda m: learn(task, settings, base, m, seed, report),
            lambda m: learn(task, settings, other, m, seed, ignore_report), what, report,
        )  # fmt: skip
        return learned


@register(
    r"ilasp(?:_b(?P<max_body>\d+))?(?:_d(?P<data_atoms>\d+))?(?:_w(?P<max_work>\d+))?(?P<switches>(?:_(?:no)?(?:frameconst|framecover|frameequal|frame|concepts|lines|seen|widen|lifted|precise|generalise|related|split|offsets|combine|absence|complement|defaults|refit))*)",
    description="ILASP*-style ILP on clingo: relevant examples + a relevant hypothesis space from typed bottom "
    "clauses, candidates tested by vectorised joins, frame clauses chosen as a set, one clingo optimisation "
    "combines every rule found (falls back to the best partial cover).",
    params="max_body: most body literals per rule (default 5; e.g. ilasp_b3); data_atoms: the data bound, atoms of a split learned from (default 2000000; e.g. ilasp_d300000); max_work: a deterministic work "
    "bound, units of work instead of seconds (e.g. ilasp_w100000; the budget still holds); _noframe, _nocombine, "
    "_noabsence, _norefit, _noframeconst, _noframecover, _noframeequal, _noconcepts, _noseen, _nolines, _nowiden, _nolifted, _noprecise, _nogeneralise, _norelated, _nosplit, _nooffsets, _nocomplement, _nodefaults switch a default feature off "
    "(e.g. ilasp_noframe_nocombine, ilasp_nocomplement)",
    example="ilasp",
    symbolic=True,
)
def make_ilasp(
    max_body: int | None = None,
    data_atoms: int | None = None,
    max_work: int | None = None,
    switches: str | None = None,
) -> IlaspLearner:
    changes: dict = {}
    fields = {
        "frameconst": "frame_constants", "framecover": "frame_cover", "frameequal": "frame_equal", "seen": "seen_moves",
    }  # fmt: skip
    for word in (switches or "").split("_")[1:]:
        changes[fields.get(word.removeprefix("no"), word.removeprefix("no"))] = not word.startswith("no")
    if max_body is not None:
        changes["max_body"] = max_body
    if data_atoms is not None:
        changes["data_atoms"] = data_atoms
    if max_work is not None:
        changes["max_work"] = max_work
    return IlaspLearner(replace(Settings(), **changes))
