"""GDL rules as a clingo program.

The translation keeps GDL's relations and function terms as they are, so the ASP program speaks
the same vocabulary as the game (``true(cell(1,2,x))``, ``legal(white,mark(1,2))``):

* ``(<= h b1 ... bn)`` becomes ``h :- b1, ..., bn.``; facts become ``h.``
* variables ``?x`` become ``V_x`` (characters clingo does not allow are written ``_xHH``);
* constants stay when they are clingo identifiers or integers, and are quoted strings otherwise
  (``Knight`` -> ``"Knight"``); `tasks.gdl.terms.symbol_text` prints them back unquoted;
* function/relation names that are not lower-case clingo identifiers get a prefix and an escape
  (``Wknight`` -> ``k0xWknight``, ``north-speed`` -> ``k0xnorth02dspeed``; tasks.escape), undone again by
  `tasks.gdl.terms.symbol_text` (`tasks.gdl.terms.function_name_to_asp`); so any KIF symbol works;
* ``(distinct a b)`` becomes ``a != b``; ``(not (distinct a b))`` becomes ``a = b``;
* ``(not L)`` stays ``not L``; ``(not (or A B))`` becomes ``not A, not B``;
* ``(not A)`` where A has variables bound nowhere else (read as "no instance of A holds") becomes
  ``not gdl_not_K(...)`` with an auxiliary rule ``gdl_not_K(...) :- A.`` placed just before;
* ``(or A B)`` is expanded: a rule with disjunctive bodies becomes one rule per combination of
  disjuncts (disjunctive normal form), so no auxiliary predicates are introduced.

Each rule is preceded by a ``% file:line`` comment giving its GDL source. ``true`` and ``does``
appear only in bodies: the state and the moves are supplied by whoever uses the program.
"""

from __future__ import annotations

import itertools
import re

from tasks.gdl.ast import Const, Distinct, Func, Literal, Not, Or, Rule, Term, Var, variables
from tasks.gdl.errors import GDLError
from tasks.gdl.terms import constant_to_asp, function_name_to_asp

_VAR_CHAR = re.compile(r"[^A-Za-z0-9]")


def var_name(name: str) -> str:
    """``?x`` -> ``V_x``; injective on GDL variable names."""
    return "V_" + _VAR_CHAR.sub(lambda m: f"_x{ord(m.group()):02X}", name)


def term_to_asp(t: Term) -> str:
    if isinstance(t, Var):
        return var_name(t.name)
    if isinstance(t, Const):
        return constant_to_asp(t.name)
    name = function_name_to_asp(t.name)
    return f"{name}({','.join(term_to_asp(a) for a in t.args)})"


def atom_to_asp(a: Const | Func) -> str:
    if isinstance(a, Const):
        return function_name_to_asp(a.name)
    return term_to_asp(a)


def expand_or(body: tuple[Literal, ...]) -> list[tuple[Literal, ...]]:
    """The body in disjunctive normal form: one conjunction per choice of disjuncts."""
    options: list[list[tuple[Literal, ...]]] = []
    for lit in body:
        if isinstance(lit, Or):
            alts: list[tuple[Literal, ...]] = []
            for sub in lit.lits:
                alts.extend(expand_or((sub,)))
            options.append(alts)
        elif isinstance(lit, Not) and isinstance(lit.lit, Or):
            options.append([tuple(Not(sub, lit.pos) for sub in lit.lit.lits)])
        else:
            options.append([(lit,)])
    return [tuple(x for part in combo for x in part) for combo in itertools.product(*options)]


def literal_to_asp(lit: Literal) -> str:
    if isinstance(lit, Distinct):
        return f"{term_to_asp(lit.left)} != {term_to_asp(lit.right)}"
    if isinstance(lit, Not):
        inner = lit.lit
        if isinstance(inner, Distinct):
            return f"{term_to_asp(inner.left)} = {term_to_asp(inner.right)}"
        if isinstance(inner, Const | Func):
            return f"not {atom_to_asp(inner)}"
        raise GDLError.at(lit.pos, f"unsupported negation: {lit}")
    if isinstance(lit, Const | Func):
        return atom_to_asp(lit)
    raise GDLError.at(getattr(lit, "pos", None), f"unsupported literal: {lit}")


def rule_to_asp(
    rule: Rule,
    aux: list[str] | None = None,
    projections: dict[tuple[str, tuple[str, ...]], str] | None = None,
) -> list[str]:
    """The ASP rules for one GDL rule (several when its body has ``or``).

    A negated atom with variables bound nowhere else in the body means "no instance holds"
    (see `tasks.gdl.checks.check_safety`); it becomes ``not gdl_not_K(bound vars)`` with an
    auxiliary rule ``gdl_not_K(bound vars) :- atom.``, appended to ``aux``.

    With ``projections`` (a dict shared over the program), a positive body atom with variables
    that occur nowhere else in the rule is replaced by ``gdl_proj_K(other vars)`` defined by
    ``gdl_proj_K(other vars) :- atom.``: the same models, but the grounder no longer multiplies
    the rule by the values of those variables (firesheep's fire-spread rule needs this).
    """
    head = atom_to_asp(rule.head)
    out = []
    for body in expand_or(rule.body):
        bound = {v.name for lit in body if isinstance(lit, Const | Func) for v in variables(lit)}
        parts = []
        for i, lit in enumerate(body):
            if isinstance(lit, Not) and isinstance(lit.lit, Const | Func):
                names = list(dict.fromkeys(v.name for v in variables(lit.lit)))
                if any(n not in bound for n in names):
                    if aux is None:
                        raise GDLError.at(lit.pos, f"negated literal with unbound variables: {lit}")
                    shared = [var_name(n) for n in names if n in bound]
                    aux_head = f"gdl_not_{len(aux) + 1}" + (f"({','.join(shared)})" if shared else "")
                    aux.append(f"{aux_head} :- {atom_to_asp(lit.lit)}.")
                    parts.append(f"not {aux_head}")
                    continue
            if projections is not None and aux is not None and isinstance(lit, Const | Func):
                elsewhere = {v.name for v in variables(rule.head)}
                elsewhere |= {v.name for j, other in enumerate(body) if j != i for v in variables(other)}
                names = list(dict.fromkeys(v.name for v in variables(lit)))
                kept = tuple(var_name(n) for n in names if n in elsewhere)
                if len(kept) < len(names):
                    key = (atom_to_asp(lit), kept)
                    if key not in projections:
                        name = f"gdl_proj_{len(aux) + 1}" + (f"({','.join(kept)})" if kept else "")
                        projections[key] = name
                        aux.append(f"{name} :- {key[0]}.")
                    parts.append(projections[key])
                    continue
            parts.append(literal_to_asp(lit))
        out.append(f"{head} :- {', '.join(parts)}." if parts else f"{head}.")
    return out


def program_to_asp(rules: list[Rule], project: bool = False) -> str:
    """The program text; ``project`` adds the grounding-size projections of `rule_to_asp`."""
    lines = ["% GDL rules translated for clingo (tasks.gdl.asp): true/1 and does/2 are inputs."]
    aux: list[str] = []
    projections: dict[tuple[str, tuple[str, ...]], str] | None = {} if project else None
    for r in rules:
        if r.pos is not None:
            lines.append(f"% {r.pos.file}:{r.pos.line}")
        before = len(aux)
        asp = rule_to_asp(r, aux, projections)
        lines.extend(aux[before:])
        lines.extend(asp)
    return "\n".join(lines) + "\n"
