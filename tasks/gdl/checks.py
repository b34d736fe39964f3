"""Static checks that make a GDL program well defined (Love et al. 2008, sect. 4).

* Safety: every variable of a rule's head, of a negated literal and of a ``distinct`` occurs in
  a positive body atom (checked per disjunct after ``or`` expansion).
* Stratification: no cycle in the relation dependency graph goes through ``not``.
* Role of the distinguished relations: ``true``/``does`` are never derived; ``init`` does not
  depend on ``true``/``does``; ``legal``, ``goal`` and ``terminal`` do not depend on ``does``
  (the engine computes them from the state alone, as GDL defines).
* Recursion restriction (GDL's restricted function symbols): see `unrestricted_recursion`. A
  violation is not an error by itself (many games are fine in practice); the engine then grounds
  under a time bound instead of trusting that grounding terminates.

Every error names the offending rule by file:line:col.
"""

from __future__ import annotations

import warnings
from collections import defaultdict

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from tasks.gdl.asp import expand_or
from tasks.gdl.ast import Const, Distinct, Func, Not, Or, Rule, Var, atoms_of, relation, variables
from tasks.gdl.errors import GDLError, GDLWarning

Rel = tuple[str, int]


SPEC_SAFETY = (
    "GDL spec, safety (Love et al. 2008, sect. 4): every variable of the head, of a negated literal "
    "and of a 'distinct' must occur in a positive body literal"
)
SPEC_STRATIFIED = (
    "GDL spec, stratification (Love et al. 2008, sect. 4): no relation may depend on itself through 'not'"
)
SPEC_ARITY = "GDL spec (KIF): a relation has one arity; here one name is used with several"
SPEC_ROLES = "GDL spec (Love et al. 2008, sect. 2): the distinguished relations' restrictions"
ROLE_POSITIONS = {("legal", 2): 0, ("goal", 2): 0, ("does", 2): 0, ("input", 2): 0}
"""Argument positions that hold a role: a head variable there may be bound by ``(role ?r)``."""


def _var_pos(x, name: str):
    return next((v.pos for v in variables(x) if v.name == name and v.pos is not None), None)


UNIVERSE = " universe"
"""The domain relation of `bind_query_variables`; the space keeps it apart from any KIF name."""


def _constants(x, out: set[str]) -> None:
    if isinstance(x, Const):
        out.add(x.name)
    elif isinstance(x, Func):
        for a in x.args:
            _constants(a, out)
    elif isinstance(x, Not):
        _constants(x.lit, out)
    elif isinstance(x, Distinct):
        _constants(x.left, out)
        _constants(x.right, out)
    elif isinstance(x, Or):
        for lit in x.lits:
            _constants(lit, out)


def bind_query_variables(rules: list[Rule]) -> tuple[list[Rule], list[str]]:
    """The documented leniency for a harmless safety violation (docs/gdl.md, "play anyway").

    A head variable that no positive body literal binds, as in ``(<= (legal ?player noop))``,
    is bound by the query in a GGP player (it asks ``legal(white, ?m)``). Here it is bound by a
    domain added to the body: in a role position (first argument of legal, goal, does, input)
    by ``(role ?player)``; elsewhere by the universe, every constant the rules mention (a query
    can ask about no other atomic value). Returns the rules and one note per rule changed.
    """
    out, notes = [], []
    universe: set[str] = set()
    for r in rules:
        body_sets = [
            {v.name for lit in body if isinstance(lit, Const | Func) for v in variables(lit)}
            for body in expand_or(r.body)
        ]
        free = [v for v in dict.fromkeys(variables(r.head)) if any(v.name not in b for b in body_sets)]
        if not free:
            out.append(r)
            continue
        key = relation(r.head)
        role_arg = (
            r.head.args[ROLE_POSITIONS[key]] if key in ROLE_POSITIONS and isinstance(r.head, Func) else None
        )
        extra = []
        for v in free:
            dom = "role" if v == role_arg else UNIVERSE
            extra.append(Func(dom, (v,), v.pos))
            notes.append(f"{r.pos}: head variable ?{v.name} of {key[0]} bound by its {dom.strip()} domain")
        out.append(Rule(r.head, (*r.body, *extra), r.pos))
    if any(f.name == UNIVERSE for r in out for f in r.body if isinstance(f, Func)):
        for r in rules:
            for x in r.head.args if isinstance(r.head, Func) else ():
                _constants(x, universe)
            for lit in r.body:
                for atom, _ in atoms_of(lit):
                    for x in atom.args if isinstance(atom, Func) else ():
                        _constants(x, universe)
                if isinstance(lit, Distinct):
                    _constants(lit, universe)
        out += [Rule(Func(UNIVERSE, (Const(c),)), ()) for c in sorted(universe)]
    return out, notes


def check_safety(rules: list[Rule]) -> None:
    """Head and ``distinct`` variables must be bound by a positive body atom (else `GDLError`).

    A negated literal with variables bound nowhere else is tolerated with a `GDLWarning`: some
    published games (the sokoban family) write ``(not (true (target ?p)))`` meaning "no target at
    all", which is what the authors' Prolog-based interpreter computed (negation as failure,
    i.e. not-exists). `tasks.gdl.asp` translates it that way with an auxiliary predicate.
    """
    for r in rules:
        for body in expand_or(r.body):
            bound = {v.name for lit in body if isinstance(lit, Const | Func) for v in variables(lit)}
            where = [("head", r.head)] + [
                ("negated literal" if isinstance(lit, Not) else "distinct", lit)
                for lit in body
                if isinstance(lit, Not | Distinct)
            ]
            for what, x in where:
                free = sorted({v.name for v in variables(x)} - bound)
                if not free:
                    continue
                if isinstance(x, Not) and not isinstance(x.lit, Distinct):  # a "negated literal"
                    warnings.warn(
                        f"{r.pos}: variable(s) {', '.join('?' + v for v in free)} occur only in {x}; "
                        "read as 'not exists' (negation as failure)",
                        GDLWarning,
                        stacklevel=3,
                    )
                    continue
                raise GDLError.at(
                    _var_pos(x, free[0]) or r.pos,
                    f"unsafe rule: variable ?{free[0]} in the {what} {x} does not occur in a "
                    f"positive body atom: {r} [breaks the {SPEC_SAFETY}]",
                )


def check_arity(rules: list[Rule]) -> None:
    """Each relation name is used with one arity (`GDLError` at the second use otherwise)."""
    first: dict[str, tuple[int, Rule]] = {}
    for r in rules:
        for atom in [r.head, *(a for lit in r.body for a, _ in atoms_of(lit))]:
            name, n = relation(atom)
            if name not in first:
                first[name] = (n, r)
            elif first[name][0] != n:
                m, other = first[name]
                raise GDLError.at(
                    atom.pos or r.pos,
                    f"arity clash: {name} is used with {n} argument(s) here and with {m} at "
                    f"{other.pos}: {r} [breaks the {SPEC_ARITY}]",
                )


def warn_undefined(rules: list[Rule]) -> list[str]:
    """A `GDLWarning` (file:line:col) per relation used in a body but defined by no rule or fact.

    Such a literal is never true (a typo like ``nnot`` or ``ture``); ``true`` and ``does`` are
    inputs and are exempt.
    """
    defined = {relation(r.head)[0] for r in rules} | {"true", "does"}
    seen: set[str] = set()
    out = []
    for r in rules:
        for lit in r.body:
            for atom, _ in atoms_of(lit):
                name = relation(atom)[0]
                if name in defined or name in seen:
                    continue
                seen.add(name)
                msg = f"{atom.pos or r.pos}: relation {name} is used but defined by no rule or fact: {r}"
                warnings.warn(msg, GDLWarning, stacklevel=3)
                out.append(msg)
    return out


def dependency_graph(rules: list[Rule]) -> dict[Rel, list[tuple[Rel, bool, Rule]]]:
    """head relation -> [(body relation, negated, rule)]."""
    g: dict[Rel, list[tuple[Rel, bool, Rule]]] = defaultdict(list)
    for r in rules:
        h = relation(r.head)
        g[h]  # noqa: B018  (every head is a node)
        for lit in r.body:
            for atom, neg in atoms_of(lit):
                g[h].append((relation(atom), neg, r))
    return g


def strongly_connected(g: dict[Rel, list[tuple[Rel, bool, Rule]]]) -> dict[Rel, int]:
    """Strongly connected components of the dependency graph: relation -> component id."""
    nodes = sorted(set(g) | {b for edges in g.values() for b, _, _ in edges})
    ix = {n: i for i, n in enumerate(nodes)}
    src = [ix[h] for h, edges in g.items() for _ in edges]
    dst = [ix[b] for edges in g.values() for b, _, _ in edges]
    m = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(len(nodes), len(nodes)))
    _, labels = connected_components(m, directed=True, connection="strong")
    return {n: int(labels[i]) for n, i in ix.items()}


def check_stratified(rules: list[Rule]) -> None:
    g = dependency_graph(rules)
    comp = strongly_connected(g)
    for h, edges in g.items():
        for b, neg, r in edges:
            if neg and comp[h] == comp[b]:
                raise GDLError.at(
                    r.pos,
                    f"not stratified: {h[0]}/{h[1]} depends on itself through 'not {b[0]}' in rule {r} "
                    f"[breaks the {SPEC_STRATIFIED}]",
                )


def _reaches(g: dict[Rel, list[tuple[Rel, bool, Rule]]], start: Rel, targets: set[str]) -> Rule | None:
    """A rule on a dependency path from ``start`` to a relation named in ``targets``, if any."""
    seen = {start}
    todo = [start]
    while todo:
        v = todo.pop()
        for b, _, r in g.get(v, []):
            if b[0] in targets:
                return r
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return None


def check_roles(rules: list[Rule]) -> None:
    """``true``/``does`` are never derived and ``init`` is static (errors); ``legal``/``goal``/
    ``terminal`` should not depend on ``does``: a `GDLWarning`, since two published games
    (firesheep, tiny2) do. The engines compute those three in a state with no moves, as
    Algorithm 1 of the IGGP paper does, so such ``does``-dependent rules never fire there.
    """
    for r in rules:
        if relation(r.head)[0] in ("true", "does"):
            raise GDLError.at(
                r.pos, f"'{r.head.name}' cannot be the head of a rule: {r} [breaks the {SPEC_ROLES}]"
            )
    g = dependency_graph(rules)
    banned = {"init": {"true", "does"}, "legal": {"does"}, "goal": {"does"}, "terminal": {"does"}}
    for rel in list(g):
        name = rel[0]
        if name in banned:
            bad = _reaches(g, rel, banned[name])
            if bad is None:
                continue
            msg = f"'{name}' must not depend on {sorted(banned[name])}: {bad}"
            if name == "init":
                raise GDLError.at(bad.pos, f"{msg} [breaks the {SPEC_ROLES}]")
            warnings.warn(f"{bad.pos}: {msg}; evaluated in the state without moves", GDLWarning, stacklevel=3)


def unrestricted_recursion(rules: list[Rule]) -> list[Rule]:
    """Rules that break GDL's recursion restriction (Love et al. 2008, def. 15).

    For a rule with head p(s1..sn) and a positive body atom q(t1..tk) where p and q are in one
    dependency cycle, each tj must be ground, one of the si, or a variable bound by a positive
    body atom whose relation is outside p's cycle. Such rules cannot build ever larger terms, so
    grounding terminates; rules returned here might not.
    """
    g = dependency_graph(rules)
    comp = strongly_connected(g)
    cyclic = {c for h, edges in g.items() for b, _, _ in edges if comp[h] == comp[b] for c in [comp[h]]}
    bad = []
    for r in rules:
        h = relation(r.head)
        if comp.get(h) not in cyclic:
            continue
        safe_vars = {
            v.name
            for lit in r.body
            if isinstance(lit, Const | Func) and comp.get(relation(lit)) != comp[h]
            for v in variables(lit)
        }
        head_args = set(r.head.args) if isinstance(r.head, Func) else set()
        for lit in r.body:
            if isinstance(lit, Func) and comp.get(relation(lit)) == comp[h]:
                for t in lit.args:
                    ground = not any(True for _ in variables(t))
                    if not (ground or t in head_args or (isinstance(t, Var) and t.name in safe_vars)):
                        bad.append(r)
                        break
                else:
                    continue
                break
    return bad


def check(rules: list[Rule], lenient: bool = False) -> None:
    """All the static checks that make a GDL program well defined (module docstring).

    ``lenient`` tolerates an arity clash (clingo keeps ``p/1`` and ``p/2`` apart, so the game
    still has one meaning); the other leniency, `bind_query_variables`, rewrites rules and is
    applied by `tasks.gdl.game.Game` before this check.
    """
    if not lenient:
        check_arity(rules)
    check_safety(rules)
    check_roles(rules)
    check_stratified(rules)
    warn_undefined(rules)
