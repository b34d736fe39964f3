"""The language bias from a type signature, and clause text with variables named by type."""

from __future__ import annotations

import pytest

from learners.ilp.bias import NEQ, Clause, Literal, Settings, bias_for
from tasks.iggp import DatFile, task_from_dats
from tasks.signature import parse_typ

TYP = """
true, next :: prop -> bool.
does :: agent -> action -> bool.
cell :: pos -> pos -> mark -> prop.
control :: agent -> prop.
mark :: pos -> pos -> action.
noop :: action.
white, black :: agent.
x, o, b :: mark.
1, 2 :: pos.
"""


def _task(statics=("succ(1, 2)",)):
    dat = DatFile(
        ["next_cell(1, 1, x)", "next_cell(1, 2, x)"],
        list(statics),
        [
            (
                ["true_cell(1, 1, b)", "true_control(white)", "does_mark(white, 1, 1)", "does(black, noop)"],
                ["next_cell(1, 1, x)"],
            )
        ],
    )
    return task_from_dats("mini", "next", {"train": dat}, signature=parse_typ(TYP, "mini.typ"))


def test_bias_types_come_from_the_signature():
    bias = bias_for(_task().for_predicate("next_cell"))
    assert bias.head_pred == "next_cell"
    assert bias.head_types == ("pos", "pos", "mark")
    assert bias.body_types["true_cell"] == ("pos", "pos", "mark")
    assert bias.body_types["does_mark"] == ("agent", "pos", "pos")
    assert bias.body_types["does"] == ("agent", "action")
    assert bias.static_preds == {"succ"}
    assert bias.constants["mark"] == ["b", "o", "x"]
    assert bias.settings.max_body == 5


def test_undeclared_static_is_typed_by_its_constants():
    # the published coins.typ omits succ: its arguments get the declared type of their constants
    bias = bias_for(_task().for_predicate("next_cell"))
    assert bias.body_types["succ"] == ("pos", "pos")


def test_a_game_relation_sharing_a_flattened_name_is_typed_by_its_own_arity():
    # legal(R, mark(X, Y)) flattens to legal_mark/3; a rulesheet's own relation legal_mark/4 (as
    # tictactoe_3d_6player's legal_select/5) is another predicate: name/arity is the predicate in
    # ASP (before, a ValueError: "legal_mark has 4 arguments in the data, 3 in the signature")
    dat = DatFile(
        ["next_cell(1, 1, x)"], ["legal_mark(1, 2, x, 1)"],
        [(["true_cell(1, 1, b)", "does_mark(white, 1, 1)"], ["next_cell(1, 1, x)"])],
    )  # fmt: skip
    typ = TYP + "legal :: agent -> action -> bool.\n"
    task = task_from_dats("mini", "next", {"train": dat}, signature=parse_typ(typ, "mini.typ"))
    bias = bias_for(task.for_predicate("next_cell"))
    assert bias.body_types["legal_mark"] == ("pos", "pos", "mark", "pos")
    assert bias.body_types["does_mark"] == ("agent", "pos", "pos")


def test_bias_is_per_predicate():
    dat = DatFile(["next_cell(1, 1, x)", "next_control(white)"], [], [([], [])])
    task = task_from_dats("mini", "next", {"train": dat}, signature=parse_typ(TYP))
    with pytest.raises(ValueError, match="per target predicate"):
        bias_for(task)


def test_clause_text_names_variables_by_type_and_spells_constants():
    clause = Clause(
        "next_cell",
        (0, 1, "x"),
        (
            Literal("does_mark", (2, 0, 1)),
            Literal("true_control", (2,)),
            Literal("true_cell", (0, 1, None), True),
            Literal(NEQ, (0, 1)),
        ),
        ("pos", "pos", "agent"),
    )
    assert clause.text() == (
        "next_cell(Pos1,Pos2,x) :- does_mark(Agent1,Pos1,Pos2), true_control(Agent1), "
        "not true_cell(Pos1,Pos2,_), Pos1 != Pos2."
    )
    assert clause.length == 5 and clause.safe()
    assert Clause("terminal", (), (), ()).text() == "terminal."
    odd = Clause("p", ("Alice", "007"), (), ())
    assert odd.text() == 'p("Alice","007").'


def test_settings_are_the_same_for_every_game():
    assert Settings() == Settings()
    assert bias_for(_task().for_predicate("next_cell"), Settings(max_body=3)).settings.max_body == 3


def test_rules_name_only_declared_constants():
    """A signature bounds the constants rules may name; with none, any constant may be named."""
    from tasks.graphlog.as_task import world_task
    from tasks.graphlog.generator import GeneratorConfig, generate_suite

    declared = bias_for(_task().for_predicate("next_cell"))
    assert declared.may_name("x") and declared.may_name("1") and not declared.may_name("zz")
    # GraphLog declares a node type with no constants: node names and even u, v are never named
    world = generate_suite(GeneratorConfig(n_train=20, n_valid=5, n_test=5, world_nodes=60), [0])[0]
    task = world_task(world)
    graphlog = bias_for(task.for_predicate(task.predicates[0]))
    assert graphlog.constants == {"node": []}
    assert not any(graphlog.may_name(c) for c in ("u", "v", "n0", "n4"))
    unsigned = task_from_dats("mini", "next", {"train": DatFile(["next_cell(1, 1, x)"], [], [([], [])])})
    assert bias_for(unsigned.for_predicate("next_cell")).may_name("zz")
