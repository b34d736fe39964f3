"""The GDL reader on text as people write it: symbols, comments, line ends, propositions, errors."""

from __future__ import annotations

import time
import warnings

import clingo
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.gdl import Game, GDLError, GDLWarning, parse_text
from tasks.gdl.terms import function_name_from_asp, function_name_to_asp, show, symbol_text, to_symbol

# KIF words: letters, digits and the ordinary specials; plus a few other printable characters
KIF_CHARS = st.sampled_from("abcxyzABCXYZ0123456789!$%&*+-./<=>@_~'`^#:|{}[]ü")
SYMBOL = st.text(KIF_CHARS, min_size=1, max_size=12).filter(lambda s: not s.startswith("?"))


@settings(max_examples=300, deadline=None)
@given(st.lists(SYMBOL, min_size=2, max_size=2, unique=True))
def test_function_names_map_to_clingo_injectively_and_back(names):
    a, b = (function_name_to_asp(n) for n in names)
    assert a != b
    for n in names:
        asp = function_name_to_asp(n)
        assert function_name_from_asp(asp) == n
        clingo.parse_term(f"{asp}(1)")  # a name clingo's parser accepts


def _ground_terms():
    return st.recursive(
        st.builds(lambda s: (s, ()), SYMBOL),
        lambda inner: st.builds(
            lambda n, args: (n, tuple(args)), SYMBOL, st.lists(inner, min_size=1, max_size=3)
        ),
        max_leaves=6,
    )


@settings(max_examples=300, deadline=None)
@given(_ground_terms())
def test_ground_terms_round_trip_through_clingo_text(term):
    sym = to_symbol(term)
    assert symbol_text(sym) == show(term)
    assert symbol_text(clingo.parse_term(str(sym))) == show(term)  # through clingo's own text


def test_odd_symbols_play_and_print_in_their_gdl_spelling():
    game = Game.from_text(
        "(role r1) (init (north-speed 1)) (<= (legal r1 (go++ ?x)) (true (north-speed ?x)))\n"
        "(<= (next (north-speed 2)) (does r1 (go++ 1))) (<= terminal (true (north-speed 2)))\n"
        "(<= (goal r1 100) (goal1-100 r1)) (goal1-100 r1)\n",
        "odd.kif",
    )
    e = game.engine()
    assert e.fluents == ["north-speed(1)", "north-speed(2)"] and e.moves == [["go++(1)", "go++(2)"]]
    assert e.goals(e.initial()) == {"r1": 100}
    assert game.evaluate(["north-speed(1)"])["legal"] == ["legal(r1,go++(1))"]


def test_comments_line_ends_bom_and_whitespace():
    text = (
        "\ufeff; a comment\r\n(role a) % not a comment inside\r\n% a Prolog-style comment line\r\n"
        "(<= (legal a (m ; comment inside an expression\n\t1))\u00a0(true p))\r(init p)\n"
        "(<= terminal (true q)) ; last line, no newline"
    )
    with pytest.warns(GDLWarning, match=r"2:10: skipped stray text .*'% not a comment inside'"):
        rules = [str(r) for r in parse_text(text).rules]
    assert rules == ["(role a)", "(<= (legal a (m 1)) (true p))", "(init p)", "(<= terminal (true q))"]


def test_stray_text_is_a_warning_with_file_line_and_nothing_else_is_dropped():
    with pytest.warns(GDLWarning, match=r"s.kif:3:1: skipped stray text .*'hello'"):
        prog = parse_text("(role a)\n(init p)\nhello (init q)\n", "s.kif")
    assert [str(r) for r in prog.rules] == ["(role a)", "(init p)", "(init q)"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("(<= (next (gameOver)) (true (gameOver)))", "(<= (next gameOver) (true gameOver))"),
        ("(<= (terminal) (gameOver))", "(<= terminal gameOver)"),
        ("(init (on))", "(init on)"),
        ("(<= (next on) (does r (flip)))", "(<= (next on) (does r flip))"),
        ("(<= (next on) (not (true (off))))", "(<= (next on) (not (true off)))"),
    ],
)
def test_a_proposition_written_as_a_zero_arity_compound_is_the_proposition(a, b):
    assert parse_text(a).rules == parse_text(b).rules


def test_spec_violations_name_position_rule_and_spec_rule():
    with pytest.raises(GDLError, match=r"unsafe rule: variable \?z.*breaks the GDL spec, safety") as e:
        Game.from_text("(role a)\n(<= (p ?x)\n    (q ?x ?y)\n    (distinct ?y ?z))\n(q 1 2)\n", "u.kif")
    assert (e.value.file, e.value.line, e.value.col) == ("u.kif", 4, 18)
    with pytest.raises(GDLError, match=r"not stratified.*breaks the GDL spec, stratification"):
        Game.from_text("(role a) (<= p (not q)) (<= q (not p))", "n.kif")
    with pytest.raises(GDLError, match=r"arity clash: p is used with 2.*breaks the GDL spec") as e:
        Game.from_text("(role a)\n(p 1)\n(<= q (p 1 2))\n", "a.kif")
    assert (e.value.line, e.value.col) == (3, 7)


def test_a_query_bound_head_variable_plays_anyway_when_lenient():
    text = "(role a) (role b) (<= (legal ?player noop)) (init s) (<= (next s) (true s)) (<= (goal ?r 0) (role ?r))"
    with pytest.raises(GDLError, match=r"\?player"):
        Game.from_text(text, "q.kif")
    game = Game.from_text(text, "q.kif", lenient=True)
    assert any("role domain" in n for n in game.leniencies)
    e = game.engine()
    assert [list(map(str, ids)) for ids in e.legal(e.initial())] == [["0"], ["0"]]


def test_an_undefined_relation_is_a_warning_with_its_position():
    with pytest.warns(GDLWarning, match=r"t.kif:2:17: relation nnot is used but defined by no rule"):
        Game.from_text("(role a)\n(<= (legal a x) (nnot p))\n", "t.kif")


SEED_GAME = (
    "(role x) (role o) (init (cell 1 b)) (init (control x))\n"
    "(<= (legal ?p (mark ?c)) (true (control ?p)) (true (cell ?c b)))\n"
    "(<= (next (cell ?c ?p)) (does ?p (mark ?c))) ; comment\n"
    "(<= (next (control o)) (true (control x)) (not (true (cell 1 x))))\n"
    "(<= terminal (not (true (cell 1 b)))) (<= (goal ?p 100) (role ?p) (distinct ?p o))\n"
)
_TOKENS = [
    "(",
    ")",
    "<=",
    "?x",
    "not",
    "or",
    "distinct",
    "true",
    "does",
    "role",
    "; c\n",
    "\n",
    "%",
    "1",
    "p",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_reader_fuzz_raises_only_gdl_errors_and_is_fast(data):
    import re

    toks = re.findall(r"[()]|[^\s()]+|\s+", SEED_GAME)
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(toks) - 1))
        op = data.draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if op == "delete" and len(toks) > 1:
            del toks[i]
        elif op == "insert":
            toks.insert(i, data.draw(st.sampled_from(_TOKENS)) + " ")
        else:
            toks.insert(i, toks[i])
    text = "".join(toks)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            Game.from_text(text, "fuzz.kif").to_asp()
        except GDLError:
            pass
    assert time.perf_counter() - t0 < 2.0


def test_query_bound_helpers_are_unfolded_and_play_the_same():
    from tasks.gdl.unfold import candidates, unfold

    text = (
        "(role a) (init (c 1 x)) (init (c 2 o)) (init (c 3 x))\n"
        "(<= (legal a (flip ?i)) (true (c ?i ?m)))\n"
        "(<= (next (c ?i o)) (does a (flip ?i)) (true (c ?i x)))\n"
        "(<= (next (c ?i x)) (does a (flip ?i)) (true (c ?i o)))\n"
        "(<= (next (c ?i ?m)) (true (c ?i ?m)) (does a (flip ?j)) (distinct ?i ?j))\n"
        "(<= (same ?i ?j ?m) (true (c ?i ?m)) (true (c ?j ?m)))\n"
        "(<= (goal a 100) (same 1 3 ?m)) (<= (goal a 0) (true (c 1 ?m)) (not (same 1 3 ?m)))\n"
        "(<= terminal (same 1 2 ?m))\n"
    )
    game = Game.from_text(text, "u.kif")
    assert candidates(game.rules, game.dynamic_relations) == set()  # 'same' is also negated
    text = text.replace("(not (same 1 3 ?m))", "(true (c 3 ?n)) (distinct ?m ?n)")
    game = Game.from_text(text, "u.kif")
    assert candidates(game.rules, game.dynamic_relations) == {("same", 3)}
    assert not any(r.head.name == "same" for r in unfold(game.rules, game.dynamic_relations))
    e = game.engine()
    ref = game.clingo_engine()  # grounds the rules without unfolding
    for tr in e.playouts(8, max_steps=6, seed=1):
        for s in tr.states:
            names = e.state_fluents(s)
            assert sorted(e.evaluate(names)["goal"]) == sorted(
                a for a in ref.derived(ref_state(ref, names)) if a.startswith("goal(")
            )
            assert e.terminal(s) == ref.terminal(ref_state(ref, names))


def ref_state(ref, names):
    import numpy as np

    s = np.zeros(len(ref.fluents), dtype=bool)
    s[[ref.fluents.index(f) for f in names]] = True
    return s
