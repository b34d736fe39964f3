"""The KIF parser and the static checks: positions, errors, tolerated stray lines, imports."""

from __future__ import annotations

import warnings

import pytest

from tasks.gdl import Game, GDLError, GDLWarning, Pos, parse_file, parse_text
from tasks.gdl.ast import Const, Distinct, Func, Not, Or, Var

SMALL = """; a comment line
(ROLE white)   ; keywords are case-insensitive
(<= (Legal white (mark ?x))
    (TRUE (cell ?x b)))
"""


def test_positions_and_case_insensitive_keywords():
    prog = parse_text(SMALL, "small.kif")
    assert [str(r) for r in prog.rules] == ["(role white)", "(<= (legal white (mark ?x)) (true (cell ?x b)))"]
    fact, rule = prog.rules
    assert (fact.pos.file, fact.pos.line, fact.pos.col) == ("small.kif", 2, 1)
    assert (rule.pos.line, rule.pos.col) == (3, 1)
    body = rule.body[0]
    assert isinstance(body, Func) and (body.pos.line, body.pos.col) == (4, 5)
    var = rule.head.args[1].args[0]
    assert isinstance(var, Var) and var.name == "x" and (var.pos.line, var.pos.col) == (3, 24)


def test_literal_kinds():
    prog = parse_text("(<= p (q ?x) (not (r ?x)) (distinct ?x a) (or (s ?x) (t ?x)) (and (u ?x)))")
    (rule,) = prog.rules
    assert isinstance(rule.head, Const) and rule.head.name == "p"
    kinds = [type(lit) for lit in rule.body]
    assert kinds == [Func, Not, Distinct, Or, Func]  # (and ...) is spliced into the body


def test_stray_prolog_lines_are_skipped_with_a_warning():
    text = "(role a)\n\nlegal_mark(W,X):-true_control(W),\n    lm1(X).\n(init (p 1))\n"
    with pytest.warns(GDLWarning, match=r"x.kif:3-4: skipped 2 non-GDL"):
        prog = parse_text(text, "x.kif")
    assert len(prog.rules) == 2
    assert prog.skipped[0][0].line == 3


def test_other_stray_text_is_skipped_with_a_warning_naming_the_line():
    with pytest.warns(GDLWarning, match=r"y.kif:2:1: skipped stray text .*'hello world'"):
        prog = parse_text("(role a)\nhello world (role b)\n", "y.kif")
    assert [str(r) for r in prog.rules] == ["(role a)", "(role b)"]  # the expression is kept
    assert prog.skipped[0][0] == Pos("y.kif", 2, 1)


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("(role a)\n(<= (p ?x)\n   (q ?x)\n", 2, "never closed"),
        ("(role a))\n", 1, r"unbalanced '\)'"),
        ("(role a)\n()\n", 2, "empty expression"),
        ("(<= (not p) q)\n", 1, "cannot stand as a rule head"),
        ("(<= p (distinct a))\n", 1, "two terms"),
    ],
)
def test_syntax_errors_carry_file_and_line(text, line, what):
    with pytest.raises(GDLError, match=what) as e:
        parse_text(text, "bad.kif")
    assert e.value.file == "bad.kif" and e.value.line == line


def test_unsafe_rule_is_rejected_naming_the_rule():
    text = "(role a)\n(q 1)\n(<= (p ?x ?y)\n    (q ?x))\n"
    with pytest.raises(GDLError, match=r"unsafe rule: variable \?y") as e:
        Game.from_text(text, "unsafe.kif")
    assert (e.value.file, e.value.line) == ("unsafe.kif", 3)
    with pytest.raises(GDLError, match="unsafe"):
        Game.from_text("(role a)\n(q 1)\n(<= p (q ?x) (distinct ?x ?z))\n")
    with pytest.raises(GDLError, match="unsafe"):  # each 'or' branch must bind the head variables
        Game.from_text("(role a)\n(q 1)\n(r 1)\n(<= (p ?x) (or (q ?x) (r ?y)))\n")


def test_negation_with_free_variables_means_not_exists():
    text = "(role a)\n(q 1)\n(q 2)\n(r 2 5)\n(<= (p ?x) (q ?x) (not (r ?x ?z)))\n(<= none (not (r ?y ?z)))\n"
    with pytest.warns(GDLWarning, match=r"\?z occur only in \(not \(r \?x \?z\)\)"):
        game = Game.from_text(text, "free.kif")
    asp = game.to_asp()
    assert "gdl_not_1(V_x) :- r(V_x,V_z)." in asp and "p(V_x) :- q(V_x), not gdl_not_1(V_x)." in asp
    assert "none :- not gdl_not_2." in asp
    ctl_atoms = _model(asp)
    assert "p(1)" in ctl_atoms and "p(2)" not in ctl_atoms and "none" not in ctl_atoms


def _model(asp: str) -> set[str]:
    import clingo

    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], asp)
    ctl.ground([("base", [])])
    out: set[str] = set()
    ctl.solve(on_model=lambda m: out.update(str(s) for s in m.symbols(atoms=True)))
    return out


def test_recursion_through_not_is_rejected():
    text = "(role a)\n(q 1)\n(<= (p ?x) (q ?x) (not (r ?x)))\n(<= (r ?x) (q ?x) (s ?x))\n(<= (s ?x) (p ?x))\n"
    with pytest.raises(GDLError, match=r"not stratified: p/1 depends on itself through 'not r'") as e:
        Game.from_text(text, "loop.kif")
    assert e.value.line == 3


def test_positive_recursion_is_fine():
    Game.from_text(
        "(role a)\n(e 1 2)\n(<= (path ?x ?y) (e ?x ?y))\n(<= (path ?x ?z) (e ?x ?y) (path ?y ?z))\n"
    )


def test_distinguished_relations_are_checked():
    with pytest.raises(GDLError, match="cannot be the head"):
        Game.from_text("(role a)\n(true (p 1))\n")
    with pytest.raises(GDLError, match="'init' must not depend"):
        Game.from_text("(role a)\n(<= (init (p 1)) (true (p 2)))\n")
    with pytest.warns(GDLWarning, match="'legal' must not depend on \\['does'\\]"):  # firesheep does it
        Game.from_text("(role a)\n(<= (legal a x) (does a y))\n")


def test_import_includes_the_core_file(tmp_path):
    (tmp_path / "core.txt").write_text("(role robot)\n(<= (legal robot (go ?x)) (true (at ?x)))\n")
    (tmp_path / "map1.txt").write_text("import core\n\n(init (at 1))\n")
    prog = parse_file(tmp_path / "map1.txt")
    assert [str(r) for r in prog.rules] == [
        "(role robot)",
        "(<= (legal robot (go ?x)) (true (at ?x)))",
        "(init (at 1))",
    ]
    assert prog.rules[0].pos.file.endswith("core.txt") and prog.rules[2].pos.line == 3
    with pytest.raises(GDLError, match="does not exist"):
        parse_text("import nowhere\n", "m.kif", base_dir=tmp_path)


def test_to_asp_translation():
    game = Game.from_text(
        "(role a)\n(q 1)\n(q 2)\n(r 2)\n(<= (p ?x) (q ?x) (or (r ?x) (distinct ?x 2)) (not (s ?x)))\n(s Big)\n"
    )
    asp = game.to_asp()
    assert "p(V_x) :- q(V_x), r(V_x), not s(V_x)." in asp
    assert "p(V_x) :- q(V_x), V_x != 2, not s(V_x)." in asp
    assert 's("Big").' in asp  # not a clingo identifier: quoted


def test_projection_for_grounding_keeps_the_model():
    game = Game.from_text("(role a)\n(q 1 5)\n(q 1 6)\n(q 2 7)\n(r 1)\n(r 3)\n(<= (p ?x) (r ?x) (q ?x ?y))\n")
    projected = game.asp_for_grounding
    assert "gdl_proj_1(V_x) :- q(V_x,V_y)." in projected and "p(V_x) :- r(V_x), gdl_proj_1(V_x)." in projected
    plain = _model(game.to_asp())
    assert plain == {a for a in _model(projected) if not a.startswith("gdl_")}
    assert "p(1)" in plain and "p(3)" not in plain


def test_every_shared_game_parses(iggp_dir):
    games = sorted((iggp_dir / "games").glob("*.txt"))
    assert len(games) >= 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GDLWarning)
        for path in games:
            prog = parse_file(path)
            assert prog.rules, path
            if path.name == "cyclic.txt":  # the dataset's example of a bad program
                with pytest.raises(GDLError, match="cyclic.txt:7"):
                    Game(prog)
            else:
                Game(prog)  # passes the static checks
