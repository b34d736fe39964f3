"""Constants made variables and literals left out after the search (``Settings.generalise``,
``_nogeneralise``) and the tie-break that prefers a variable to a constant (``Clause.specificity``).

``finish``: the game is over once the player in control plays ``finish`` (not ``continue`` or
``skip``). In training only white ever finishes; in test black finishes too. ``does(white, finish)`` and
``does(Agent, finish)`` cover the same training examples; only the second is the rule. The seed's
search may reach the first only (the refinement operator names the seed's constants; `search.generalise`
then asks whether the rule needs them), and before the tie-break counted constants, the equally
short rule with a constant won where both were found.
"""

from __future__ import annotations

import numpy as np
from ilp_tasks import test_ba

from learners.base import Budget, make_learner
from learners.ilp.bias import Bias, Clause, Literal, bias_for, offset
from learners.ilp.concepts import COUNT_TYPE
from learners.ilp.coverage import body_table, example_atoms, facts_for, targets_for
from learners.ilp.meter import Meter
from learners.ilp.refine import Bottom, generalisations, reductions
from learners.ilp.search import Search, generalise
from tasks.iggp import DatFile, task_from_dats
from tasks.signature import parse_typ

FINISH_TYP = """
true, next :: prop -> bool.
does :: agent -> action -> bool.
control :: agent -> prop.
gameOver :: prop.
white, black :: agent.
finish, continue, skip, wait :: action.
"""


def _finish(seed: int, n: int, black_finishes: bool) -> DatFile:
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        mover, other = ("white", "black") if rng.random() < 0.5 else ("black", "white")
        may_finish = mover == "white" or black_finishes
        moves = ["finish", "continue", "skip"] if may_finish else ["continue", "skip"]
        move = str(rng.choice(moves))
        background = [f"true_control({mover})", f"does({mover}, {move})", f"does({other}, wait)"]
        examples.append((background, ["next_gameOver"] if move == "finish" else []))
    return DatFile(["next_gameOver"], [], examples)


def _task():
    dats = {
        "train": _finish(1, 200, False),
        "validate": _finish(2, 60, False),
        "test": _finish(3, 200, True),
    }
    task = task_from_dats("finish", "next", dats, signature=parse_typ(FINISH_TYP, "finish.typ"))
    return task.for_predicate("next_gameOver")


def test_the_learned_rule_names_a_variable_where_the_training_data_allows_one():
    task = _task()
    for name in ("ilasp_w100000", "ilasp_w100000_nogeneralise"):  # the tie-break alone suffices here
        model = make_learner(name).fit(task.learning_view(), Budget(300))
        assert model.rules().strip() == "next_gameOver :- does(Agent1,finish).", (name, model.rules())
        assert test_ba(model, task) == 1.0


def _generalised(body: tuple[Literal, ...]) -> list[str]:
    """What `search.generalise` makes of ``next_gameOver :- body`` over the training split."""
    task = _task()
    train = task.split("train")
    facts = facts_for(task, train)
    targets = targets_for(task, train, facts.constants)
    ex = int(targets.positives[0]) // targets.n_atoms
    bottom = Bottom.of(example_atoms(task, train, ex), [])
    search = Search(bias_for(task), facts, targets, bottom, Meter(Budget()))
    clause = Clause("next_gameOver", (), body, ())
    node = search._node(clause, (), body_table(clause, facts, 10**6))
    assert node is not None and node.neg == 0
    return [n.clause.text() for n in generalise(search, [node])]


def test_search_makes_constants_variables_while_the_clause_stays_consistent():
    white_finishes = Literal("does", ("white", "finish"))
    assert _generalised((white_finishes,)) == ["next_gameOver :- does(Agent1,finish)."]
    # true_control(white) is redundant (only white finishes in training): left out first, then
    # white made a variable; making finish a variable too would cover negatives
    assert _generalised((Literal("true_control", ("white",)), white_finishes)) == [
        "next_gameOver :- does(Agent1,finish)."
    ]
    # every redundant literal goes, one at a time (does(black, wait): white moved)
    assert _generalised(
        (
            Literal("true_control", ("white",)),
            Literal("does", ("white", "finish")),
            Literal("does", ("black", "wait")),
        )
    ) == ["next_gameOver :- does(Agent1,finish)."]


def test_reductions_leave_out_one_literal_where_the_clause_stays_safe():
    control, finish = Literal("true_control", (0,)), Literal("does", (0, "finish"))
    not_skip = Literal("does", (0, "skip"), negated=True)
    made = [
        c.text()
        for c, _ in reductions(
            Clause("next_gameOver", (), (control, finish, not_skip), ("agent",)), ("white",)
        )
    ]
    assert made == [
        "next_gameOver :- does(Agent1,finish), not does(Agent1,skip).",
        "next_gameOver :- true_control(Agent1), not does(Agent1,skip).",
        "next_gameOver :- true_control(Agent1), does(Agent1,finish).",
    ]
    # a negated literal alone is no clause, and a head variable must stay bound
    assert [
        c.text() for c, _ in reductions(Clause("next_gameOver", (), (control, not_skip), ("agent",)), ())
    ] == ["next_gameOver :- true_control(Agent1)."]
    head_bound = Clause("next_control", (0,), (control, Literal("does", (1, "finish"))), ("agent", "agent"))
    assert [c.text() for c, _ in reductions(head_bound, ())] == [
        "next_control(Agent1) :- true_control(Agent1)."
    ]


def test_specificity_counts_constants_before_singletons():
    named = Clause("next_gameOver", (), (Literal("does", ("white", "finish")),), ())
    lifted = Clause("next_gameOver", (), (Literal("does", (0, "finish")),), ("agent",))
    assert lifted.singletons() == 1 and named.singletons() == 0
    assert lifted.specificity() < named.specificity()


def test_generalisations_keep_offsets_thresholds_and_safety():
    task = _task()
    bias = bias_for(task)
    # every position of one constant (in one type family) becomes the same new variable
    both = Clause(
        "next_gameOver",
        (),
        (Literal("true_control", ("white",)), Literal("does", ("white", "finish"))),
        (),
    )
    made = [c.text() for c, _ in generalisations(bias, both, ())]
    assert made == [
        "next_gameOver :- true_control(Agent1), does(Agent1,finish).",
        "next_gameOver :- true_control(white), does(white,Action1).",
    ]
    # a constant only in a negated literal would leave its variable unbound: not made
    negated = Clause("next_gameOver", (), (Literal("does", ("white", "finish"), negated=True),), ())
    assert list(generalisations(bias, negated, ())) == []
    # an offset's K is no constant of the language, and a count's threshold stays
    small = Bias("h", ("int",), {"line": ("agent", COUNT_TYPE), "score": ("agent", "int")}, set())
    kept = Clause(
        "h",
        (0,),
        (Literal("line", ("white", "3")), Literal("score", ("white", 1)), offset(1, 0, 2)),
        ("int", "int"),
    )
    assert [c.text() for c, _ in generalisations(small, kept, ("5", "3"))] == [
        "h(Int1) :- line(Agent1,3), score(Agent1,Int2), Int1 = Int2 + 2."
    ]
