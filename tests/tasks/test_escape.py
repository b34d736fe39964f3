"""KIF names reach every learner as ASP identifiers (tasks/escape.py), and print back as GDL spells them.

The property test builds a tiny GDL game whose role, fluent, move, static relation and constant
names are drawn from KIF's alphabet, generates its tasks (inferred ``.typ`` written and read back),
and fits every learner that applies to IGGP tasks on each target: none may raise.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.escape import (
    escape_atom,
    escape_name,
    escape_predicate,
    unescape_atom,
    unescape_predicate,
    unescape_text,
)
from tasks.gdl.kif import KEYWORDS
from tasks.gdl.terms import IDENT, INTEGER

KIF_CHARS = "abcxyzABCXYZ0123456789-+*/<>=!._:&$@^~'%"
"""KIF symbol characters (docs/gdl.md): letters, digits and punctuation other than ( ) ; \" and blanks."""


def kif_symbol() -> st.SearchStrategy[str]:
    return st.text(KIF_CHARS, min_size=1, max_size=6).filter(
        lambda s: (
            s.lower() not in KEYWORDS | {"or", "not", "distinct", "<="}
            and ":-" not in s
            and not s.startswith("?")
        )
    )


@given(st.lists(kif_symbol(), min_size=1, max_size=4))
def test_escaping_round_trips_and_gives_asp_identifiers(parts):
    flat = "_".join(parts)
    safe = escape_predicate(flat)
    assert IDENT.match(safe), safe
    assert unescape_predicate(safe) == flat
    # escaping commutes with flattening's "_" join: a signature escaped name by name agrees
    assert "_".join(escape_name(p) for p in parts) == safe


@given(st.lists(kif_symbol(), min_size=2, max_size=2, unique=True))
def test_escaping_is_injective(pair):
    assert escape_predicate(pair[0]) != escape_predicate(pair[1])


def test_plain_identifiers_and_published_spellings_are_unchanged():
    for name in ("true_cell", "next_control", "legal", "terminal", "succ", "does_mark", "goal"):
        assert escape_predicate(name) == name
    assert escape_atom("true_cell(1, 2, x)") == "true_cell(1, 2, x)"
    assert escape_atom("++(1, 2)") == "k0x02b02b(1, 2)"
    assert unescape_atom("true_k0xnorth02dspeed(3)") == "true_north-speed(3)"
    program = 'next_k0xnorth02dspeed(X) :- true_k0xnorth02dspeed(Y), k0x02b02b(Y, X), p("k0x").'
    assert unescape_text(program) == 'next_north-speed(X) :- true_north-speed(Y), ++(Y, X), p("k0x").'


GAME = """
(role {R})
(init ({F} {C1}))
({S} {C1} {C2}) ({S} {C2} {C3})
(<= (legal {R} ({M} ?x)) (true ({F} ?x)) ({S} ?x ?y))
(<= (legal {R} noop) (true ({F} ?x)))
(<= (next ({F} ?y)) (does {R} ({M} ?x)) (true ({F} ?x)) ({S} ?x ?y))
(<= (next ({F} ?x)) (does {R} noop) (true ({F} ?x)))
(<= terminal (true ({F} {C3})))
(<= (goal {R} 100) (true ({F} {C3})))
(<= (goal {R} 0) (not (true ({F} {C3}))))
"""
LEARNERS = ("true", "inertia", "mean", "knn5", "reference", "ilasp", "aspal1")


def _distinct_names(names: list[str]) -> bool:
    lowered = [n.lower() for n in names]
    return len(set(lowered)) == len(names) and not any(INTEGER.match(n) for n in names[:4])


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(kif_symbol(), min_size=7, max_size=7).filter(_distinct_names))
def test_every_learner_fits_a_game_spelled_with_kif_symbols(tmp_path_factory, names):
    from learners.base import Budget, learner_applies, make_learner
    from tasks.generate import generate_game
    from tasks.iggp import Dataset

    r, f, m, s, c1, c2, c3 = names
    if {"noop", "100", "0"} & {n.lower() for n in names}:
        return
    out = tmp_path_factory.mktemp("kif")
    gdl = Path(out) / "g.txt"
    gdl.write_text(GAME.format(R=r, F=f, M=m, S=s, C1=c1, C2=c2, C3=c3))
    generate_game(gdl, None, out / "ds", episodes=5, steps=4, seed=0)
    ds = Dataset(out / "ds")
    assert ds.signature("g") is not None  # the inferred .typ is read back by orch's own reader
    started = time.monotonic()
    for target in ds.targets("g"):
        task = ds.load_task("g", target)
        assert ds.predicates("g", target) == task.predicates  # what a sweep plans is what a job loads
        for predicate in task.predicates:
            assert IDENT.match(predicate), predicate
            one = task.for_predicate(predicate)
            for name in LEARNERS:
                learner = make_learner(name)
                if not learner_applies(learner, one)[0]:
                    continue
                model = learner.fit(one.learning_view(), Budget(1.0), lambda _m: None)
                test = one.split("test")
                predicted = sp.csr_matrix(model.predict(one, test), dtype=bool)
                if name == "reference":  # the game's own rules meet the escaped predicates exactly
                    assert (predicted != test.positives).nnz == 0, (predicate, names)
                rules = model.rules()
                if rules:
                    printed = unescape_text(rules)
                    assert "k0x" not in re.sub(r'"[^"]*"', "", printed), printed
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("name", ["east-speed", "1+", "Wknight", "a.b", "%x", "k0xy"])
def test_inferred_type_names_and_declared_names_survive_the_typ_file(tmp_path, name):
    from tasks.gdl.types import signature_text
    from tasks.signature import Declaration, Signature, parse_typ

    sig = Signature(
        [
            Declaration(name, ("t_1",), "bool", 1),
            Declaration("c" + name, (), "t_1", 2),
            Declaration(escape_name(name) + "_1", (), "t_1", 3),
        ]
    )
    back = parse_typ(signature_text(sig), "x.typ")
    assert [(d.name, d.arg_types, d.result) for d in back.declarations] == [
        (d.name, d.arg_types, d.result) for d in sig.declarations
    ]
