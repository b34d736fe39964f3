"""Generate: the refinement operator of one seed's search, from its bottom clause.

Why a module of its own: the seed search is generate and test (Popper's stages, one per
module). This module only *makes* candidate clauses, in a fixed order, from the bias and the
seed's bottom clause; it never looks at the training examples. Testing them (vectorised joins,
the beam, the work meter) is :mod:`learners.ilp.search`. Keeping the two apart lets each be read,
changed and bounded on its own: the order of candidates decides what a work budget of ``N`` tests
reaches, so it lives in one place.

The language (see :mod:`learners.ilp.search` for how it is searched):

* the head starts fully general (``h(V1..Vk)``, typed variables) and may be specialised by putting
  back a seed constant (``next_cell(Pos1, Pos2, x)``), also once its variable is bound
  (`Refiner._named_head`);
* a positive literal comes from a bottom atom; each of its arguments becomes the clause's variable
  for that constant (same type family), a new typed variable, or stays the constant - so the seed
  stays covered (the Progol property). A literal sharing no variable with the clause is allowed
  for background fluents (an existence test such as ``does(Agent, noop)``: "a move was made"),
  not for statics (always true). A literal keeps at most one constant besides its variables, or
  is a fluent with at most one variable (``true_jumper(red, 10, Y)``: "red reached column 10"),
  or a fully ground fluent (``true_cell(1, 1, x)``);
* a negated literal ``not p(...)`` uses bound variables, ``_`` and at most one constant, and must
  be false in the seed; ``X != Y`` joins two bound variables whose seed values differ;
* ``Y = X + K`` (an offset) joins two variables of one integer type family, ``K`` their seed
  values' difference (``0 < |K| <= MAX_OFFSET``): between two bound variables a filter, from a
  bound ``X`` to an unbound head variable ``Y`` a binding, and with a positive literal that binds
  ``X`` (``true_score(X), Y = X + 5``) a binding in one step (`Refiner._offsets`);
* after the search, a consistent clause's literals left out (`reductions`) and its constants made
  variables (`generalisations`), one at a time: the way back from the beam's path and the seed's
  constants to the rule.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from learners.ilp.bias import MAX_OFFSET, NEQ, OFFSET, Bias, Clause, Literal, Term, is_integer, offset
from learners.ilp.concepts import COUNT_TYPE

NEW = object()
"""A bottom constant that becomes a new variable of the literal (not one the clause has)."""
MAX_NEGATIONS = 200
"""Negated literals made per clause (there are many predicates x bound variables x constants)."""
NEG_CONSTANTS = 6
"""Constants are tried in a negated literal only for types this small."""
MAX_CONSTANTS = 1
"""Constants in a literal that also has variables (ground fluents are separate)."""

Refinement = tuple[
    Clause, tuple[str, ...], Literal | int | tuple[Literal, int] | tuple[Literal, Literal] | None
]
"""(clause, theta, what changed): ``None`` the head only, a literal added, an ``int`` a head
variable named by its seed constant, or (literal, variable) both at once, or (literal, offset):
a literal and the offset that binds a head variable from it, in that order."""


@dataclass
class Bottom:
    """The seed's bottom clause: its background atoms and the statics, indexed by constant."""

    atoms: list[tuple[str, tuple[str, ...]]]
    dynamic: list[bool]
    by_const: dict[str, list[int]] = field(default_factory=dict)
    by_pred: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    _projections: dict[tuple[str, tuple[int, ...]], set[tuple[str, ...]]] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def of(
        cls, dynamic_atoms: list[tuple[str, tuple[str, ...]]], static_atoms: list[tuple[str, tuple[str, ...]]]
    ) -> Bottom:
        atoms = list(dynamic_atoms) + list(static_atoms)
        b = cls(atoms, [True] * len(dynamic_atoms) + [False] * len(static_atoms))
        for i, (p, args) in enumerate(atoms):
            for c in set(args):
                b.by_const.setdefault(c, []).append(i)
            b.by_pred.setdefault(p, []).append(args)
        return b

    def holds(self, pred: str, pattern: tuple[str | None, ...]) -> bool:
        """Whether some atom of ``pred`` matches ``pattern`` (``None`` matches anything).

        One hash lookup: the atoms are projected once per (predicate, bound positions). A scan
        per candidate took 80 of 90 s of one seed's search on a bottom with thousands of statics
        (platformjumpers ``legal_jump``), past the search's deadline.
        """
        where = tuple(j for j, x in enumerate(pattern) if x is not None)
        key = (pred, where)
        projected = self._projections.get(key)
        if projected is None:
            projected = {tuple(args[j] for j in where) for args in self.by_pred.get(pred, [])}
            self._projections[key] = projected
        return tuple(pattern[j] for j in where) in projected


class Refiner:
    """The candidate clauses of one seed: the most general one, and each clause's refinements,
    most promising first (the search's per-node cap cuts the tail)."""

    def __init__(self, bias: Bias, bottom: Bottom) -> None:
        self.bias = bias
        self.s = bias.settings
        self.bottom = bottom

    def root(self, head_pred: str, seed_args: tuple[str, ...]) -> tuple[Clause, tuple[str, ...]]:
        """The most general clause covering the seed (no body), and its theta."""
        known = set(self.bottom.by_const)
        args: list = []
        for j, c in enumerate(seed_args):
            # a constant no body atom can bind stays a constant (if the language may name it)
            args.append(j if c in known or not self.bias.may_name(c) else c)
        return Clause(head_pred, tuple(args), (), tuple(self.bias.head_types)), tuple(seed_args)

    def refinements(self, c: Clause, theta: tuple[str, ...]) -> Iterator[Refinement]:
        """(clause, theta, what changed) for every one-step specialisation of ``c``."""
        bias = self.bias
        bound = c.bound()
        head_vars = [a for a in c.head_args if isinstance(a, int)]
        for j, a in enumerate(c.head_args):
            if isinstance(a, int) and a not in bound and bias.may_name(theta[a]):
                args = c.head_args[:j] + (theta[a],) + c.head_args[j + 1 :]
                yield Clause(c.head_pred, args, c.body, c.types), theta, None
        yield from self._named_head(c, theta, bound)
        if len(c.body) >= self.s.max_body:
            return
        existing = list(dict.fromkeys(head_vars + sorted(bound)))
        unbound = {v for v in head_vars if v not in bound}
        if unbound:  # an unsafe clause first binds its head variables (then it can be scored exactly)
            others = []
            for clause, th, lit in self._positive(c, theta, existing):
                if lit.variables() & unbound:
                    yield clause, th, lit
                    for named, _, named_arg in self._named_head(clause, th, lit.variables() & unbound):
                        assert isinstance(named_arg, int)  # _named_head names one head variable
                        yield named, th, (lit, named_arg)
                else:
                    others.append((clause, th, lit))
            if (
                self.s.offsets
            ):  # a head variable bound by an offset: from a bound variable, or from a new fluent
                yield from self._offsets(c, theta, sorted(bound), sorted(unbound))
                if len(c.body) + 2 <= self.s.max_body:
                    for clause, th, lit in others:
                        if lit.pred in bias.static_preds:
                            continue  # ``succ(X, 7), Y = X + 1`` is a ground head in disguise
                        new = sorted(v for v in lit.variables() if v >= len(c.types))
                        for made, _, off in self._offsets(clause, th, new, sorted(unbound)):
                            yield made, th, (lit, off)
            return
        # cheap, often decisive constraints first (anti-joins and filters), then new literals
        if self.s.negation and (bound or self.s.absence):
            yield from self._negated(c, theta, sorted(bound))
        if self.s.inequalities:
            for u, v in itertools.combinations(sorted(bound), 2):
                if theta[u] != theta[v] and bias.compatible(c.types[u], c.types[v]):
                    lit = Literal(NEQ, (u, v))
                    if lit not in c.body:
                        yield Clause(c.head_pred, c.head_args, c.body + (lit,), c.types), theta, lit
        if self.s.offsets:
            yield from self._offsets(c, theta, sorted(bound), sorted(bound))
        yield from self._positive(c, theta, existing)

    def _offsets(
        self, c: Clause, theta: tuple[str, ...], sources: list[int], targets: list[int]
    ) -> Iterator[tuple[Clause, tuple[str, ...], Literal]]:
        """``c`` plus ``Y = X + K`` for ``X`` in ``sources``, ``Y`` in ``targets`` (another variable),
        both of one integer type family, ``K`` their seed values' difference (``0 < |K| <=
        MAX_OFFSET``): the seed's one ``K``, as a bottom literal's constants are the seed's.

        Between two bound variables each pair once (``Y = X + 3``, not also ``X = Y - 3``).
        """
        bias = self.bias
        for x in sources:
            for y in targets:
                if x == y or (y in sources and x in targets and y < x):
                    continue
                tx, ty = c.types[x], c.types[y]
                if not (bias.integer(tx) and bias.integer(ty) and bias.compatible(tx, ty)):
                    continue
                if not (is_integer(theta[x]) and is_integer(theta[y])):
                    continue  # an undeclared constant in the seed
                k = int(theta[y]) - int(theta[x])
                if not 0 < abs(k) <= MAX_OFFSET:
                    continue
                lit = offset(x, y, k)
                if lit not in c.body:
                    yield Clause(c.head_pred, c.head_args, c.body + (lit,), c.types), theta, lit

    def lifted(
        self, root: Clause, theta: tuple[str, ...]
    ) -> tuple[list[Literal], tuple[str, ...], tuple[str, ...]]:
        """Every bottom atom in one lifted form (each constant its variable, one per constant and
        type family, the head's first), with the types and theta of all those variables: the
        material of the breadth-first search (:meth:`learners.ilp.search.Search.exhaustive`)."""
        bias = self.bias
        types = list(root.types)
        theta_out = list(theta)
        var_of: dict[tuple[str, str], int] = {}
        for v, a in enumerate(root.head_args):
            if isinstance(a, int):
                var_of.setdefault((theta_out[v], bias.family.get(types[v], types[v])), v)
        lits: list[Literal] = []
        for pred, consts in self.bottom.atoms:
            ts = bias.body_types.get(pred)
            if ts is None:
                continue
            args = []
            for c, t in zip(consts, ts, strict=True):
                key = (c, bias.family.get(t, t))
                if key not in var_of:
                    var_of[key] = len(types)
                    types.append(t)
                    theta_out.append(c)
                args.append(var_of[key])
            lits.append(Literal(pred, tuple(args)))
        return list(dict.fromkeys(lits)), tuple(types), tuple(theta_out)

    def _named_head(self, c: Clause, theta: tuple[str, ...], bound: set[int]) -> Iterator[Refinement]:
        """A bound head variable replaced by its seed constant, in the head and the body alike:
        ``goal(white, 100) :- true_cell(X, 8, white)`` from ``goal(A, 100) :- true_cell(X, 8, A)``.

        Why: a head constant was only tried while its variable was unbound, and a clause with a
        bare ground head derives the atom in every example, so it scored too low to stay in the
        beam; the literal that would have made it exact came after it was gone. The third
        element of the refinement is the variable named (the search filters the bindings on it).
        Only where every body literal with the variable is positive and still in the language.
        """
        bias = self.bias
        for a in sorted(bound):
            if a not in c.head_args or not bias.may_name(theta[a]):
                continue
            const = theta[a]
            with_a = [lit for lit in c.body if a in lit.args]
            if any(lit.negated or lit.builtin for lit in with_a):
                continue
            named = {
                lit: Literal(lit.pred, tuple(const if x == a else x for x in lit.args)) for lit in with_a
            }
            static = bias.static_preds
            if not all(
                _constants_allowed(
                    sum(1 for x in lit.args if isinstance(x, str)), len(lit.args), lit.pred not in static
                )
                for lit in named.values()
            ):
                continue
            body = tuple(named.get(lit, lit) for lit in c.body)
            head = tuple(const if x == a else x for x in c.head_args)
            yield Clause(c.head_pred, head, body, c.types), theta, a

    def _positive(
        self, c: Clause, theta: tuple[str, ...], existing: list[int]
    ) -> Iterator[tuple[Clause, tuple[str, ...], Literal]]:
        """``c`` plus one positive literal from a bottom atom linked to its variables, then from a
        fluent of the bottom (linked or not), every predicate early (`_round_robin`)."""
        bias, bottom = self.bias, self.bottom
        const_vars: dict[str, list[int]] = {}
        for v in existing:
            const_vars.setdefault(theta[v], []).append(v)
        linked = sorted({i for v in existing for i in bottom.by_const.get(theta[v], [])})
        ground = _round_robin([i for i, d in enumerate(bottom.dynamic) if d], bottom)
        linked = _round_robin(linked, bottom)  # every predicate early, fluents first (there are fewer)
        max_vars = len(c.head_args) + self.s.max_vars
        for i in dict.fromkeys(linked + ground):
            pred, consts = bottom.atoms[i]
            types = bias.body_types.get(pred)
            if types is None:
                continue
            options = []
            for cst, t in zip(consts, types, strict=True):
                link = [v for v in const_vars.get(cst, []) if bias.compatible(c.types[v], t)]
                named = [cst] if bias.may_name(cst) else []
                options.append(link + named if link else [NEW, *named])
            for combo in itertools.product(*options):
                if not _constants_allowed(
                    sum(1 for a in combo if isinstance(a, str)), len(combo), bottom.dynamic[i]
                ):
                    continue
                made = _with_literal(c, theta, pred, combo, consts, types)
                if made is not None and len(made[0].types) <= max_vars:
                    yield made

    def _negated(self, c: Clause, theta: tuple[str, ...], bound: list[int]) -> Iterator[Refinement]:
        """``c`` plus one negated literal over bound variables, ``_`` and at most one constant,
        false in the seed, then, for a clause with no bound variable, the ground absence tests
        (at most ``MAX_NEGATIONS`` in all).

        An absence test may be all ``_``: ``terminal :- not true_time(_).`` ("the clock has run
        out", forager2) says in one literal what a clause of constants only approximated.
        """
        bias, count = self.bias, 0
        made: set[Literal] = set()
        for pred, types in sorted(bias.body_types.items()):
            options = []
            for t in types:
                opts: list = [v for v in bound if bias.compatible(c.types[v], t)] + [None]
                consts = bias.constants.get(t, [])
                if 0 < len(consts) <= NEG_CONSTANTS:
                    opts += consts
                options.append(opts)
            absent = self.s.absence and pred not in bias.static_preds
            for combo in itertools.product(*options):
                n_const = sum(1 for a in combo if isinstance(a, str))
                if n_const > 1:
                    continue
                if not any(isinstance(a, int) for a in combo) and not absent:
                    continue  # an absence test: ``not true_cell(_, _, b)``, ``not true_time(_)``
                pattern = tuple(theta[a] if isinstance(a, int) else a for a in combo)
                if self.bottom.holds(pred, pattern):
                    continue  # the seed must stay covered
                lit = Literal(pred, tuple(combo), negated=True)
                if lit in c.body or Literal(pred, tuple(combo)) in c.body:
                    continue
                yield Clause(c.head_pred, c.head_args, c.body + (lit,), c.types), theta, lit
                made.add(lit)
                count += 1
                if count >= MAX_NEGATIONS:
                    return
        if bound or not self.s.absence:
            return
        # a clause with no variable in its body: ground absence tests over the fluent atoms the data
        # shows (``goal(robot, 0) :- not true_on(3, 4)``; ``next(p) :- does(robot, a), not true(p)``),
        # which the one-constant rule above cannot name (two constants, or a type of ten)
        for pred, atoms in bias.fluents.items():
            if pred not in bias.body_types:
                continue
            for args in atoms:
                lit = Literal(pred, args, negated=True)
                if lit in made or lit in c.body or Literal(pred, args) in c.body:
                    continue
                if self.bottom.holds(pred, args) or not all(map(bias.may_name, args)):
                    continue
                yield Clause(c.head_pred, c.head_args, c.body + (lit,), c.types), theta, lit
                count += 1
                if count >= MAX_NEGATIONS:
                    return


def _with_literal(
    c: Clause,
    theta: tuple[str, ...],
    pred: str,
    combo: tuple,
    consts: tuple[str, ...],
    types: tuple[str, ...],
) -> tuple[Clause, tuple[str, ...], Literal] | None:
    """``c`` plus the literal ``pred(combo)``, each ``NEW`` a fresh variable per seed constant
    (typed, its theta the constant); None when the body has that literal already."""
    fresh: dict[str, int] = {}
    types_out = list(c.types)
    theta_out = list(theta)
    args: list[Term] = []
    for a, cst, t in zip(combo, consts, types, strict=True):
        if a is NEW:
            if cst not in fresh:
                fresh[cst] = len(types_out)
                types_out.append(t)
                theta_out.append(cst)
            args.append(fresh[cst])
        else:
            assert isinstance(a, int | str)  # a variable or a constant; NEW is handled above
            args.append(a)
    lit = Literal(pred, tuple(args))
    if lit in c.body:
        return None
    return Clause(c.head_pred, c.head_args, c.body + (lit,), tuple(types_out)), tuple(theta_out), lit


def _constants_allowed(n_const: int, arity: int, dynamic: bool) -> bool:
    """Whether a positive body literal with ``n_const`` constants is in the language: at most
    ``MAX_CONSTANTS`` besides its variables, or a fluent with one argument open
    (``true_jumper(red, 10, Y)``), or a ground fluent (a ground static always holds)."""
    if n_const == arity:
        return dynamic
    return n_const <= MAX_CONSTANTS or (dynamic and n_const == arity - 1)


def _round_robin(atoms: list[int], bottom: Bottom) -> list[int]:
    """Bottom atoms interleaved by predicate (fluents first), so that a per-node cap on tested
    candidates never starves a predicate with few atoms behind one with hundreds."""
    by_pred: dict[str, list[int]] = {}
    for i in sorted(atoms, key=lambda i: not bottom.dynamic[i]):
        by_pred.setdefault(bottom.atoms[i][0], []).append(i)
    queues = list(by_pred.values())
    out: list[int] = []
    for k in range(max((len(q) for q in queues), default=0)):
        out += [q[k] for q in queues if k < len(q)]
    return out


def generalisations(
    bias: Bias, c: Clause, theta: tuple[str, ...]
) -> Iterator[tuple[Clause, tuple[str, ...]]]:
    """``c`` with one of its constants made a new variable, wherever that constant stands in one
    type family (head and body alike), for each constant in the order it first appears; only the
    safe results (every variable of the head, of a negated literal and of a builtin bound by a
    positive literal).

    Why: the refinement operator reaches a clause through the seed's constants, so a clause that
    covers every positive of the sample with ``does(white, finish)`` is not asked whether
    ``does(Agent, finish)`` does as well. Left as they are: offsets' ``K`` and comparisons
    (builtins), and a count's threshold (``line_true_cell_1_2(x, 3)``: "three in a row" is the
    rule; "some number in a row" always holds).
    """
    if len(c.types) >= len(c.head_args) + bias.settings.max_vars:
        return  # no variable left to make
    for (const, _), where in _constant_slots(bias, c).items():
        made = _with_new_variable(c, [(i, j) for i, j, _t in where], where[0][2])
        if _safe_in_any_order(made):
            yield made, theta + (const,)


def related(
    bias: Bias, bottom: Bottom, c: Clause, theta: tuple[str, ...]
) -> Iterator[tuple[Clause, tuple[str, ...]]]:
    """``c`` with two of its constants ``a``, ``b`` made new variables ``X``, ``Y`` (wherever each
    stands in its type family, as in `generalisations`) and a binary static ``s(X, Y)`` added that
    holds of ``s(a, b)`` in the seed's bottom clause; only the safe results.

    Why: a seed's clause names the values of its one example, and where the rule is a relation
    between two values, neither constant alone can be made a variable: battle_of_numbers'
    ``goal(Agent1,100) :- true_capture(Agent1,2), true_capture(Agent2,1)`` is consistent on the
    sample, either constant made a variable is not, and the rule is ``greater(X, Y)`` between
    them. The beam reaches the three-literal rule only through a two-literal body that covers
    every example, which no beam keeps; this step asks the question directly.

    The two constants stand in different atoms (or one in the head): two arguments of one atom are
    related by chance more often than not (``true_target(2, 3)`` made ``true_target(X, Y),
    succ(X, Y)``, a coincidence of sokoban's few targets, and cost its ``terminal``).
    """
    if len(c.types) + 2 > len(c.head_args) + bias.settings.max_vars or len(c.body) >= bias.settings.max_body:
        return
    slots = _constant_slots(bias, c)
    binary = sorted(p for p in bias.static_preds if len(bias.body_types.get(p, ())) == 2)
    for ((a, fa), wa), ((b, fb), wb) in itertools.permutations(slots.items(), 2):
        if {i for i, _j, _t in wa} & {i for i, _j, _t in wb}:
            continue  # two arguments of one atom: a cell's coordinates are related by chance
        for pred in binary:
            ta, tb = bias.body_types[pred]
            if (
                bias.family.get(ta, ta) != fa
                or bias.family.get(tb, tb) != fb
                or not bottom.holds(pred, (a, b))
            ):
                continue
            made = _with_new_variable(c, [(i, j) for i, j, _t in wa], wa[0][2])
            made = _with_new_variable(made, [(i, j) for i, j, _t in wb], wb[0][2])
            x, y = len(made.types) - 2, len(made.types) - 1
            made = Clause(made.head_pred, made.head_args, made.body + (Literal(pred, (x, y)),), made.types)
            if _safe_in_any_order(made):
                yield made, theta + (a, b)


def _constant_slots(bias: Bias, c: Clause) -> dict[tuple[str, str], list[tuple[int, int, str]]]:
    """Where each constant of ``c`` stands, by (constant, type family): (literal or -1 for the
    head, argument, type); offsets' ``K`` and count thresholds are no such places."""
    slots: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
    for j, a in enumerate(c.head_args):
        if isinstance(a, str):
            t = bias.head_types[j]
            slots.setdefault((a, bias.family.get(t, t)), []).append((-1, j, t))
    for i, lit in enumerate(c.body):
        types = () if lit.builtin else bias.body_types.get(lit.pred, ())
        for j, (a, t) in enumerate(zip(lit.args, types, strict=False)):
            if isinstance(a, str) and t != COUNT_TYPE:
                slots.setdefault((a, bias.family.get(t, t)), []).append((i, j, t))
    return slots


def _safe_in_any_order(c: Clause) -> bool:
    """Every variable of the head, of a negated literal and of a builtin bound by a positive literal."""
    bound = c.bound()
    return c.safe() and all(lit.variables() <= bound for lit in c.body if lit.negated or lit.builtin)


MAX_SPLITS = 15
"""Splits tried per variable of a clause (`splits`): every one of a variable seen up to five times."""


def splits(c: Clause, theta: tuple[str, ...]) -> Iterator[tuple[Clause, tuple[str, ...]]]:
    """``c`` with some of one variable's places in positive body literals given a new variable of
    its type (the inverse of unifying two variables), fewest places first, at most
    ``MAX_SPLITS`` per variable; only the safe results whose body is still joined in order
    (`reductions`). The new variable's theta is its seed constant marked with its number, so
    that the search's identity of clauses (`search._canonical`, body variables named by their
    seed constant) keeps it apart from the variable it was split from.

    Why: a literal's argument whose seed constant is already some variable's value is joined to
    that variable (`Refiner._positive`), so on a small board a seed's coincidences become the
    rule's equalities. alquerque's score goes up by 10 with any jump, but each seed made a rule
    for its own jump shape (``does_jump(A, P1, P2, P3, P4, P5, P5)``: landing column equal to
    landing row), six rules and still short of the rule; a cell emptied by a jump likewise.
    Splitting the variable back is what asks whether the equality is needed.
    """
    places: dict[int, list[tuple[int, int]]] = {}  # variable -> (literal or -1 for the head, arg)
    for j, a in enumerate(c.head_args):
        if isinstance(a, int):
            places.setdefault(a, []).append((-1, j))
    movable: dict[int, list[tuple[int, int]]] = {}
    for i, lit in enumerate(c.body):
        for j, a in enumerate(lit.args):
            if isinstance(a, int):
                places.setdefault(a, []).append((i, j))
                if not lit.negated and not lit.builtin:
                    movable.setdefault(a, []).append((i, j))
    for v in sorted(places):
        first = places[v][0]
        rest = [p for p in movable.get(v, []) if p != first]
        subsets = itertools.chain.from_iterable(
            itertools.combinations(rest, size) for size in range(1, len(rest) + 1)
        )
        for moved in itertools.islice(subsets, MAX_SPLITS):
            made = _with_new_variable(c, moved, c.types[v])
            if made.safe() and _bound_in_order(made.body):
                yield made, theta + (f"{theta[v]}#{len(c.types)}",)


def _with_new_variable(c: Clause, places: Iterable[tuple[int, int]], type_: str) -> Clause:
    """``c`` with a new variable of type ``type_`` at ``places`` (literal, argument; literal -1:
    the head), every other argument as it was: what `generalisations` (a constant's places) and
    `splits` (some of a variable's places) make."""
    new = len(c.types)
    head = list(c.head_args)
    body = [list(lit.args) for lit in c.body]
    for i, j in places:
        if i < 0:
            head[j] = new
        else:
            body[i][j] = new
    return Clause(
        c.head_pred,
        tuple(head),
        tuple(Literal(lit.pred, tuple(args), lit.negated) for lit, args in zip(c.body, body, strict=True)),
        c.types + (type_,),
    )


def reductions(c: Clause, theta: tuple[str, ...]) -> Iterator[tuple[Clause, tuple[str, ...]]]:
    """``c`` with one body literal left out, for each literal in order; only the safe results
    (as in `generalisations`) that keep a positive literal.

    Why: the beam reaches a clause one literal at a time, and a literal that was needed to bind a
    head variable or to rank a child above its siblings may be redundant once the clause is
    complete: ``next_cell(X, Y, blank) :- true_cell(Z, W, blank), does_jump(R, X, Y, ...)`` where
    the first literal bound the head's ``blank`` before the head was named (alquerque: eleven such
    clauses, each a corner of "the cell jumped from is blank"). Leaving it out gives the rule.
    """
    for i in range(len(c.body)):
        body = c.body[:i] + c.body[i + 1 :]
        made = Clause(c.head_pred, c.head_args, body, c.types)
        if any(not lit.negated and not lit.builtin for lit in body) and made.safe() and _bound_in_order(body):
            yield made, theta


def _bound_in_order(body: tuple[Literal, ...]) -> bool:
    """Every variable of a negated literal or a builtin is bound by the literals before it (an
    offset's ``X``; its ``Y`` is bound by it): the order in which the body's bindings are joined
    (`coverage.body_table`)."""
    bound: set[int] = set()
    for lit in body:
        if lit.pred == OFFSET and not lit.negated:
            x = lit.args[0]
            if isinstance(x, int) and x not in bound:
                return False
            bound |= lit.variables()
        elif lit.negated or lit.builtin:
            if not lit.variables() <= bound:
                return False
        else:
            bound |= lit.variables()
    return True
