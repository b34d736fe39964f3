"""Validate scores by joins (learners/ilp/scoring.py) are clingo's counts, in every mode, and a fit
decides with them, never with clingo."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from learners.base import Budget, ignore_report
from learners.ilp import concepts, scoring
from learners.ilp.bias import Settings
from learners.ilp.default_rules import defaults_for
from learners.ilp.ilasp import IlaspLearner
from learners.ilp.learning import LearnedProgram
from learners.ilp.loop import learn
from learners.ilp.meter import Meter
from learners.ilp.mode import Mode
from learners.metrics import evaluate, pool
from tasks.iggp import Dataset
from tasks.task import Split, Task


def _modes(task: Task) -> list[tuple[str, Task, Mode]]:
    """Every mode the learner may learn ``task``'s target in, with the task it learns over."""
    out = [("plain", task, Mode())]
    if task.target == "terminal":
        out.append(("complement", task, Mode(invert=True)))
    defaults = defaults_for(task)
    if defaults is not None:
        out.append(("defaults", task, Mode(defaults=defaults)))
    if concepts.has_library(task):
        extended, library = concepts.extend(task)
        out.append(("library", extended, Mode(library=tuple(library))))
    return out


def _clingo(program: LearnedProgram, task: Task):
    return pool(evaluate(program, task, ["validate"])["validate"].values())


@pytest.mark.parametrize(
    ("game", "target"),
    [
        ("tictactoe", "terminal"),
        ("tictactoe", "goal"),
        ("battle_of_numbers", "goal"),
        ("scissors_paper_stone", "next"),
    ],
)
def test_joined_counts_are_clingos_for_every_mode_and_many_programs(iggp_dir, game, target):
    """The learned program and random sets of the rules its learning tested (inconsistent ones
    too), written as each mode writes them: the counts by joins equal clingo's on the plain task
    (a library program carries its definitions there, and is joined over the extended task)."""
    task = Dataset(iggp_dir).load_task(game, target).learning_view()
    draw = random.Random(0)
    checked: set[str] = set()
    for p in task.predicates:
        sub = task.for_predicate(p)
        for name, over, mode in _modes(sub):
            learned = learn(over, Settings(), mode, Meter.of(Budget(3)), 0, ignore_report)
            texts = sorted(learned.scorer.clauses)
            programs = [list(learned.program.learned_rules)]
            programs += [draw.sample(texts, min(len(texts), draw.randint(1, 4))) for _ in range(4) if texts]
            for rules in programs:
                program = LearnedProgram(
                    mode.program(rules, sub.predicates[0]), status="-", iterations=0, train_ba=0
                )
                assert learned.scorer.joined(rules) == _clingo(program, sub), (p, name, rules)
            checked.add(name)
    assert "plain" in checked and (target == "next" or "library" in checked)


def test_a_default_naming_an_atom_the_split_does_not_score_is_left_to_clingo(iggp_dir):
    """``goal(o, 0) :- not goal(o, 50), not goal(o, 100).`` with ``goal(o, 50)`` not scored on
    validate: the joins never derive it, clingo may, so the joins give no answer."""
    task = Dataset(iggp_dir).load_task("tictactoe", "goal").learning_view().for_predicate("goal")
    defaults = defaults_for(task)
    assert defaults is not None
    validate = task.split("validate")
    hidden = int(defaults.others[0][0])
    fewer = Split(
        validate.name,
        validate.background,
        validate.positives,
        validate.candidates[validate.candidates != hidden],
    )
    narrowed = replace(task, splits={**task.splits, "validate": fewer})
    mode, meter = Mode(defaults=defaults), Meter.of(Budget(10))
    assert scoring.Scorer(task, mode, {}, Settings().max_rows, meter).joined([]) is not None
    assert scoring.Scorer(narrowed, mode, {}, Settings().max_rows, meter).joined([]) is None


def test_a_fit_scores_validate_by_joins_once_per_program(iggp_dir, monkeypatch):
    """tictactoe ``terminal`` runs every on-demand step (complement, library, refit); none of
    their validate scores goes to clingo, and each program is joined once per learning."""
    clingo_calls: list[str] = []
    joins: list[tuple[int, tuple[str, ...]]] = []
    real_evaluate, real_joined = scoring.evaluate, scoring.Scorer.joined

    def counted_evaluate(model, task, splits):
        clingo_calls.append(model.text)
        return real_evaluate(model, task, splits)

    def counted_joined(self, rules):
        joins.append((id(self), tuple(rules)))
        return real_joined(self, rules)

    monkeypatch.setattr(scoring, "evaluate", counted_evaluate)
    monkeypatch.setattr(scoring.Scorer, "joined", counted_joined)
    task = Dataset(iggp_dir).load_task("tictactoe", "terminal").learning_view()
    IlaspLearner().fit(task, Budget(20))
    assert joins and not clingo_calls
    assert len(joins) == len(set(joins))


def test_scoring_spends_work_once_per_program(iggp_dir):
    """A program scored on validate counts one unit of work per rule on the fit's meter; asked
    again (the memo answers), it counts nothing: the work bound counts work done."""
    task = Dataset(iggp_dir).load_task("tictactoe", "terminal").learning_view()
    sub = task.for_predicate(task.predicates[0])
    meter = Meter.of(Budget(60), max_work=10**6)
    scorer = scoring.Scorer(sub, Mode(), {}, Settings().max_rows, meter)
    program = LearnedProgram(Mode().program([], sub.predicates[0]), status="-", iterations=0, train_ba=0)
    first = scorer.counts([], program)
    assert meter.work is not None and meter.work.done == 1
    assert scorer.counts([], program) == first and meter.work.done == 1
