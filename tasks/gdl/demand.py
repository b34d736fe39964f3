"""Demand-driven grounding: a magic-sets rewrite, so that static relations are derived only as asked.

clingo grounds bottom-up: a static relation (one that depends on neither ``true`` nor ``does``)
is instantiated in full, whether play ever asks about most of it or not. mummymaze1p's
``direction-from`` (two board positions and a direction, over the 51 numbers of its ``succ``
chain) has 6.5 million ground atoms, of which a state asks about a handful: the positions of the
mummy and the explorer. Even grounding the rules with one state's facts (`tasks.gdl.perstate`)
then takes longer than any bound.

The magic-sets rewrite (Bancilhon, Maier, Sagiv and Ullman 1986; Beeri and Ramakrishnan 1991)
makes the bottom-up grounder compute top-down demand first:

* Every body atom of a *demanded* relation (set below) is called with an *adornment*: which
  arguments are bound (``b``: all their variables are bound) when it is reached, reading the
  body left to right from the head's bound arguments (sideways information passing). Negated
  literals and ``distinct`` are taken as soon as their variables are bound (safety binds them all
  in some positive literal), so that a negated call is ground at call time except for the
  variables that only it mentions ("no instance holds").
* A *magic* rule records each call: ``magic p/2 bf(X) :- guard, the atoms before the call.``
  The guard is the calling rule's own magic atom when its head relation is demanded.
* Each rule of a demanded relation is copied once per adornment it is called with, guarded by
  that adornment's magic atom over the head's bound arguments: it derives only asked-for
  instances. The relation keeps its name (all adornments derive into it; each derived atom is
  true in the plain program, and every asked-for one is derived), so nothing outside changes.

The queries play asks (``legal``, ``next``, ``goal``, ``terminal``, also ``init``, ``role``,
``base``, ``input``) are asked with nothing bound, so their rules and those of every relation not
demanded are kept as they are: they seed the demand from their own bodies.

Which relations are demanded (`demanded_relations`): the static relations defined by rules
(facts cost nothing to keep), except the ones cheap to keep whole, whose every rule has at most
one positive body atom over a relation kept whole (the extension is then no bigger than its
source's); plus the state-dependent relations through which demand for those passes (they
depend on one: mummymaze1p's ``movetoward`` carries the bound positions to ``direction-from``).
0-ary relations are kept whole (a proposition has nothing to bind).

Negation. A negated demanded literal is complete for its call when the program is stratified
with the magic rules in: its magic atom (from the bound arguments, which safety makes all the
arguments' variables bound elsewhere in the body) must be computed, and the relation for it,
before the negation is read. Magic rules therefore take only the positive atoms (and
``distinct``) before a call, never a negated literal, and the rewritten program is checked for a
cycle through ``not`` (a demanded relation negated inside a recursion whose demand flows back
through it); the relations of such a cycle are then kept whole and the rewrite is redone, until
it is stratified (at worst nothing is demanded and the program is the plain one). The answers of
legal/next/goal/terminal/init are then exactly the plain program's: the tests check this against
the plain rules on small games (tests/tasks/gdl/test_gdl_demand.py).

Limits: demand follows bindings only; a relation always called with nothing bound is still
grounded whole (its magic atom is a proposition). The per-state engine uses this only when the
plain program without a state does not ground within its bound (docs/gdl.md, "Demand-driven
grounding"); the static atoms it lists are those of the relations kept whole.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from tasks.gdl.asp import expand_or
from tasks.gdl.ast import Const, Func, Literal, Not, Rule, Term, relation, variables
from tasks.gdl.checks import dependency_graph, strongly_connected
from tasks.gdl.unfold import KEYWORD_RELATIONS

Rel = tuple[str, int]

MAGIC = "magic "
"""Prefix of the magic relations' names; the space keeps them apart from any KIF name."""


@dataclass(frozen=True)
class DemandProgram:
    """The rewritten rules, and the relations derived only for demanded bindings."""

    rules: list[Rule]
    demanded: frozenset[Rel]


def magic_name(rel: Rel, adornment: str) -> str:
    """The magic relation of ``rel`` called with ``adornment`` (``b``/``f`` per argument)."""
    return f"{MAGIC}{rel[0]}/{rel[1]} {adornment}"


def _is_atom(lit: Literal) -> bool:
    return isinstance(lit, Const | Func)


def _negated_atom(lit: Literal) -> Const | Func | None:
    return lit.lit if isinstance(lit, Not) and isinstance(lit.lit, Const | Func) else None


def _var_names(x: Term | Literal) -> set[str]:
    return {v.name for v in variables(x)}


def expand(rules: list[Rule]) -> list[Rule]:
    """The rules with ``or`` expanded (one rule per disjunct combination, as `tasks.gdl.asp` does)."""
    return [Rule(r.head, body, r.pos) for r in rules for body in expand_or(r.body)]


def demanded_relations(rules: list[Rule], static: set[str]) -> set[Rel]:
    """The relations to derive by demand (module docstring); ``rules`` without ``or``."""
    g = dependency_graph(rules)
    comp = strongly_connected(g)
    defs: dict[Rel, list[Rule]] = defaultdict(list)
    for r in rules:
        defs[relation(r.head)].append(r)
    idb = {q for q, rs in defs.items() if any(r.body for r in rs)}
    eligible = {q for q in idb if q[0] not in KEYWORD_RELATIONS and q[1] > 0}
    demand = {q for q in eligible if q[0] in static}

    def cheap(q: Rel) -> bool:
        for r in defs[q]:
            atoms = [relation(lit) for lit in r.body if isinstance(lit, Const | Func)]
            if len(atoms) > 1 or any(a in demand or comp.get(a) == comp[q] for a in atoms):
                return False
        return True

    changed = True
    while changed:
        changed = False
        for q in sorted(demand):
            if cheap(q):
                demand.discard(q)
                changed = True
    if not demand:
        return set()
    # the state-dependent relations that carry demand: those depending on a demanded one
    reach = set(demand)
    changed = True
    while changed:
        changed = False
        for h, edges in g.items():
            if h in eligible and h not in reach and any(b in reach for b, _, _ in edges):
                reach.add(h)
                changed = True
    return reach


class _Rewriter:
    """One magic-sets rewrite of ``rules`` (without ``or``) for the ``demanded`` relations."""

    def __init__(self, rules: list[Rule], demanded: set[Rel]):
        self.rules, self.demanded = rules, demanded
        self.defs: dict[Rel, list[Rule]] = defaultdict(list)
        for r in rules:
            self.defs[relation(r.head)].append(r)
        self.out: list[Rule] = []
        self.seen: set[tuple[Rel, str]] = set()
        self.todo: list[tuple[Rel, str]] = []

    def run(self) -> list[Rule]:
        for r in self.rules:
            if relation(r.head) not in self.demanded:
                self.out.append(r)
                self._magic_rules(r, None, set())
        while self.todo:
            q, adornment = self.todo.pop()
            for r in self.defs[q]:
                args = r.head.args if isinstance(r.head, Func) else ()
                bound_args = tuple(a for a, c in zip(args, adornment, strict=True) if c == "b")
                guard = _magic_atom(q, adornment, bound_args)
                self.out.append(Rule(r.head, (guard, *r.body), r.pos))
                self._magic_rules(r, guard, {n for a in bound_args for n in _var_names(a)})
        return self.out

    def _call(self, atom: Const | Func, bound: set[str], prefix: list[Literal], pos) -> None:
        """The magic rule of one call of a demanded relation, and its adornment to rewrite."""
        q = relation(atom)
        args = atom.args if isinstance(atom, Func) else ()
        adornment = "".join("b" if _var_names(a) <= bound else "f" for a in args)
        head = _magic_atom(q, adornment, tuple(a for a, c in zip(args, adornment, strict=True) if c == "b"))
        if not (len(prefix) == 1 and prefix[0] == head):  # magic(X) :- magic(X) adds nothing
            self.out.append(Rule(head, tuple(prefix), pos))
        if (q, adornment) not in self.seen:
            self.seen.add((q, adornment))
            self.todo.append((q, adornment))

    def _magic_rules(self, r: Rule, guard: Const | Func | None, bound: set[str]) -> None:
        """Sideways information passing through ``r``'s body, left to right (module docstring)."""
        everywhere = {n for lit in r.body if _is_atom(lit) for n in _var_names(lit)} | bound
        prefix: list[Literal] = [] if guard is None else [guard]
        pending = [lit for lit in r.body if not _is_atom(lit)]
        bound = set(bound)

        def take_ready() -> None:
            for lit in list(pending):
                if not (_var_names(lit) & everywhere) <= bound:
                    continue
                pending.remove(lit)
                neg = _negated_atom(lit)
                if neg is None:  # distinct, or its negation: a filter on bound variables
                    prefix.append(lit)
                elif relation(neg) in self.demanded:
                    self._call(neg, bound, prefix, r.pos)

        take_ready()
        for lit in r.body:
            if not isinstance(lit, Const | Func):
                continue
            if relation(lit) in self.demanded:
                self._call(lit, bound, prefix, r.pos)
            prefix.append(lit)
            bound |= _var_names(lit)
            take_ready()


def _magic_atom(q: Rel, adornment: str, bound_args: tuple[Term, ...]) -> Const | Func:
    name = magic_name(q, adornment)
    return Func(name, bound_args) if bound_args else Const(name)


def _relation_of(name: str, arity: int) -> Rel:
    """The demanded relation a (magic) relation stands for."""
    if name.startswith(MAGIC):
        rel = name[len(MAGIC) :].rsplit(" ", 1)[0]
        base, _, n = rel.rpartition("/")
        return base, int(n)
    return name, arity


def _through_negation(rules: list[Rule], demanded: set[Rel]) -> set[Rel]:
    """Demanded relations to keep whole so that the rewritten ``rules`` become stratified.

    Empty when they are. Otherwise the demanded relations negated on a cycle through ``not``
    (their demand flows back through the negation), or, where none is, every demanded relation
    on such a cycle.
    """
    g = dependency_graph(rules)
    comp = strongly_connected(g)
    bad = [(h, b) for h, edges in g.items() for b, neg, _ in edges if neg and comp[h] == comp[b]]
    if not bad:
        return set()
    negated = {_relation_of(*b) for _, b in bad} & demanded
    if negated:
        return negated
    cycles = {comp[h] for h, _ in bad}
    return ({_relation_of(*q) for q, c in comp.items() if c in cycles} & demanded) or set(demanded)


def demand_rewrite(rules: list[Rule], static: set[str]) -> DemandProgram:
    """The magic-sets rewrite of ``rules`` for the relations `demanded_relations` picks.

    ``static`` names the game's static relations (`tasks.gdl.game.Game.static_relations`). The
    result is stratified, and its legal/next/goal/terminal/init answers on any state and moves
    are the plain rules' (module docstring). Returns the rules unchanged when nothing is demanded.
    """
    plain = expand(rules)
    demanded = demanded_relations(plain, static)
    while demanded:
        out = _Rewriter(plain, demanded).run()
        bad = _through_negation(out, demanded)
        if not bad:
            return DemandProgram(out, frozenset(demanded))
        demanded -= bad  # keep them whole: their demand would depend on their own negation
    return DemandProgram(rules, frozenset())
