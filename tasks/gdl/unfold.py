"""Unfold query-bound helper relations before grounding, so the grounder only builds what is asked.

A bottom-up grounder instantiates every rule for every value its body allows. A helper relation
that the game only ever *asks about* with some arguments fixed, as crisscross's

    (<= (goal red ?payoff) (count e3 e4 f3 f4 red ?payoff))
    (<= (count ?x ?y ?z ?w ?player 75) (true (cell ?x ?player)) ... )

is still grounded for every combination of cells (830k atoms), though four are ever asked for.
Unfolding (replacing each use of ``count`` by the bodies of its rules, unified with the call)
makes the grounder instantiate only the asked-for cases: a standard, meaning-preserving
transformation of a stratified program for a positive, non-recursive relation.

A relation is unfolded when all of these hold: it is not a GDL keyword relation; it is not
recursive; it depends on the state (so it never appears among a task's static atoms); it never
occurs under ``not`` or inside ``or``; and every use passes at least one ground argument (it is
query-bound). If unfolding would more than multiply the number of rules by `MAX_GROWTH`, the
rules are left as they are.
"""

from __future__ import annotations

import itertools

from tasks.gdl.ast import Const, Distinct, Func, Literal, Not, Or, Rule, Term, Var, atoms_of, relation

KEYWORD_RELATIONS = frozenset("role init true does legal next goal terminal base input distinct".split())
MAX_GROWTH = 4.0

Subst = dict[str, Term]


def _walk(t: Term, s: Subst) -> Term:
    while isinstance(t, Var) and t.name in s:
        t = s[t.name]
    return t


def _unify(a: Term, b: Term, s: Subst) -> Subst | None:
    a, b = _walk(a, s), _walk(b, s)
    if isinstance(a, Var):
        return s if isinstance(b, Var) and a.name == b.name else {**s, a.name: b}
    if isinstance(b, Var):
        return {**s, b.name: a}
    if isinstance(a, Const) and isinstance(b, Const):
        return s if a.name == b.name else None
    if isinstance(a, Func) and isinstance(b, Func) and a.name == b.name and len(a.args) == len(b.args):
        for x, y in zip(a.args, b.args, strict=True):
            unified = _unify(x, y, s)
            if unified is None:
                return None
            s = unified
        return s
    return None


def _map_vars(x, on_var):
    """``x`` (a term or literal) rebuilt with each variable replaced by ``on_var(variable)``."""
    if isinstance(x, Var):
        return on_var(x)
    if isinstance(x, Const):
        return x
    if isinstance(x, Func):
        return Func(x.name, tuple(_map_vars(a, on_var) for a in x.args), x.pos)
    if isinstance(x, Not):
        return Not(_map_vars(x.lit, on_var), x.pos)
    if isinstance(x, Distinct):
        return Distinct(_map_vars(x.left, on_var), _map_vars(x.right, on_var), x.pos)
    if isinstance(x, Or):
        return Or(tuple(_map_vars(lit, on_var) for lit in x.lits), x.pos)
    raise TypeError(f"unexpected {x!r}")


def _subst(x, s: Subst):
    def bound(v: Var):
        t = _walk(v, s)
        return t if isinstance(t, Var) else _subst(t, s)

    return _map_vars(x, bound)


def _rename(x, k: int):
    """A rule's variables renamed apart (a space cannot occur in a KIF variable name)."""
    return _map_vars(x, lambda v: Var(f"{v.name} {k}", v.pos))


def _ground(t: Term) -> bool:
    if isinstance(t, Var):
        return False
    return all(_ground(a) for a in t.args) if isinstance(t, Func) else True


def candidates(rules: list[Rule], dynamic: set[str]) -> set[tuple[str, int]]:
    """The relations `unfold` would replace (module docstring)."""
    from tasks.gdl.checks import dependency_graph, strongly_connected

    g = dependency_graph(rules)
    comp = strongly_connected(g)
    recursive = {h for h, edges in g.items() for b, _, _ in edges if comp[h] == comp[b]}
    defined = {relation(r.head) for r in rules}
    out = {q for q in defined if q[0] not in KEYWORD_RELATIONS and q[0] in dynamic and q not in recursive}
    for r in rules:
        for lit in r.body:
            for atom, neg in atoms_of(lit):
                q = relation(atom)
                args = atom.args if isinstance(atom, Func) else ()
                if q in out and (neg or isinstance(lit, Or) or not any(_ground(a) for a in args)):
                    out.discard(q)
    return {q for q in out if q[1] > 0}


def unfold(rules: list[Rule], dynamic: set[str]) -> list[Rule]:
    """The rules with the query-bound helper relations unfolded (or unchanged; module docstring)."""
    todo = candidates(rules, dynamic)
    if not todo:
        return rules
    limit = MAX_GROWTH * len(rules) + 100
    k = 0
    for q in sorted(todo):
        defs = [r for r in rules if relation(r.head) == q]
        out: list[Rule] = []
        for r in rules:
            if relation(r.head) == q:
                continue
            options: list[list[tuple[list[Literal], Subst | None]]] = []
            for lit in r.body:
                if isinstance(lit, Const | Func) and relation(lit) == q:
                    alts = []
                    for d in defs:
                        k += 1
                        head, body = _rename(d.head, k), [_rename(b, k) for b in d.body]
                        alts.append((body, _unify(lit, head, {})))
                    options.append([a for a in alts if a[1] is not None])
                else:
                    options.append([([lit], {})])
            for combo in itertools.product(*options):
                s: Subst | None = {}
                for _, sub in combo:
                    for name, t in (sub or {}).items():
                        s = _unify(Var(name), t, s) if s is not None else None
                if s is None:
                    continue
                new_body = tuple(_subst(x, s) for part, _ in combo for x in part)
                out.append(Rule(_subst(r.head, s), new_body, r.pos))
                if len(out) > limit:  # stop inside the product: one rule's alone can exhaust memory
                    return rules
        rules = out
    return rules
