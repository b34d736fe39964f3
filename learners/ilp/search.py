"""Generate and test: the relevant hypothesis space of one seed example, searched top-down.

The seed is a positive example ``h(c1..ck)`` in background ``B``. Its *bottom clause* is ``B`` plus
the statics; every candidate rule is a generalisation of part of it that still covers the seed:

* the head starts fully general (``h(V1..Vk)``, typed variables) and may be specialised by putting
  back a seed constant (``next_cell(Pos1, Pos2, x)``);
* a positive literal comes from a bottom atom; each of its arguments becomes the clause's variable
  for that constant (same type family), a new typed variable, or stays the constant - so the seed
  stays covered (the Progol property). A literal sharing no variable with the clause is allowed
  for background fluents (an existence test such as ``does(Agent, noop)``: "a move was made"),
  not for statics (always true). A literal keeps at most one constant besides its variables, or
  is a fluent with at most one variable (``true_jumper(red, 10, Y)``: "red reached column 10"),
  or a fully ground fluent (``true_cell(1, 1, x)``);
* a negated literal ``not p(...)`` uses bound variables, ``_`` and at most one constant, and must
  be false in the seed; ``X != Y`` joins two bound variables whose seed values differ.

Each candidate is tested on a sample of the training examples with vectorised joins
(:mod:`learners.ilp.coverage`), most general first, in a beam ranked by ``pos/P - neg/N`` (a
balanced-accuracy gain over the positives the current hypothesis still misses). A clause that
covers no negative is a result and is not refined (its refinements are longer and cover less:
dominated). Three details keep the beam useful:

* an unsafe clause (a head variable not yet bound) may only add literals that bind head
  variables, and is ranked by coverage of (example, bound head values) groups - half the beam is
  reserved for such clauses, so a binding literal that changes nothing yet is not crowded out;
* clauses are identified up to body order and variable numbering (variables named by their seed
  constant), so permutations do not fill the beam;
* ties prefer clauses with more variables (``does(P, A)`` before ``beats(A, B)`` pays off).

The search ends with the level of its first consistent clauses; a widening search (a 0-ary
target: ``terminal``) goes on, for a bounded number of candidates, with the children that cover more
positives than any clause found, and keeps only consistent clauses wider than those.

When the beam ends without a consistent clause, :meth:`Search.exhaustive` searches breadth-first
over connected sets of fully lifted bottom literals (Progol-style), which finds rules whose
literals only pay off together. The best inconsistent clauses are kept as material for the
fallback partial cover.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from learners.ilp.bias import NEQ, Bias, Clause, Literal, Term
from learners.ilp.coverage import Facts, Targets, TooLarge, body_table, counts, extend, group_counts
from learners.ilp.relations import Table

NEW = object()
MAX_NEGATIONS = 200
LEVEL_AFTER_FOUND = 300
WIDEN_TESTS = 3000  # candidates tested after the first consistent clause, looking for a wider one
MAX_CHILDREN = 400  # candidates tested per beam node and level (bottoms with hundreds of statics)  # candidates tested after the first consistent clause of a level
NEG_CONSTANTS = 6
MAX_CONSTANTS = 1  # constants in a literal that also has variables (ground fluents are separate)  # constants are tried in a negated literal only for types this small


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
    ):
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


@dataclass
class Node:
    clause: Clause
    theta: tuple[str, ...]  # the seed constant of each variable
    table: Table | None  # None: dropped to bound memory, recomputed from the body when needed
    pos: int
    neg: int
    score: float


def _cells(table: Table | None) -> int:
    return 0 if table is None else table.n * max(len(table.cols), 1)


class Held:
    """A budget of table cells (int64 values) kept alive at once by one search level.

    Why: a level tests hundreds of children per beam node and each child's bindings can reach
    ``max_rows`` rows; keeping them all until the beam is chosen is what drove single jobs to
    5-6 GiB. Past the budget a child keeps only its score; the few that enter the beam recompute
    their bindings from the body (a handful of joins).
    """

    def __init__(self, budget: int):
        self.budget = budget
        self.cells = 0

    def keep(self, table: Table | None) -> Table | None:
        c = _cells(table)
        if self.cells + c > self.budget:
            return None
        self.cells += c
        return table


@dataclass
class SearchResult:
    consistent: list[Clause]
    partial: list[Clause]
    tested: int
    timed_out: bool


class Search:
    """Top-down beam search from one seed over one sample of the training examples."""

    def __init__(
        self,
        bias: Bias,
        facts: Facts,
        targets: Targets,
        bottom: Bottom,
        deadline: float,
        wanted: np.ndarray | None = None,
        widen: bool = False,
    ):
        """``wanted``: the sample positives the current hypothesis misses (default: all); the beam
        ranks clauses by how many of these they cover, so each seed looks for what is missing.
        ``widen``: after the first consistent clauses, look deeper for a wider one (`run`)."""
        self.bias = bias
        self.s = bias.settings
        self.facts = facts
        self.targets = targets
        self.bottom = bottom
        self.deadline = deadline
        self.wanted = targets.positives if wanted is None else wanted
        self.wanted_mask = np.isin(targets.positive_table.cols["key"], self.wanted)
        self.group_cache: dict = {}
        self.n_pos = max(len(self.wanted), 1)
        self.n_neg = max(facts.n * targets.table.n - len(targets.positives), 1)
        self.tested = 0
        self.widen = widen

    # -- testing ---------------------------------------------------------------------------------
    def _node(self, clause: Clause, theta: tuple[str, ...], table: Table) -> Node | None:
        self.tested += 1
        if clause.safe():
            pos, pos_all, derived = counts(
                table, clause, self.facts, self.targets, self.wanted_mask, self.group_cache
            )
            n_pos, n_neg = self.n_pos, self.n_neg
        else:
            pos, pos_all, derived, n_pos, n_neg = group_counts(
                table, clause, self.facts, self.targets, self.wanted_mask, self.group_cache
            )
        if pos == 0:
            return None
        neg = derived - pos_all
        return Node(clause, theta, table, pos, neg, pos / n_pos - neg / n_neg)

    def root(self, head_pred: str, seed_args: tuple[str, ...]) -> Node | None:
        known = set(self.bottom.by_const)
        args: list = []
        for j, c in enumerate(seed_args):
            # a constant no body atom can bind stays a constant (if the language may name it)
            args.append(j if c in known or not self.bias.may_name(c) else c)
        clause = Clause(head_pred, tuple(args), (), tuple(self.bias.head_types))
        return self._node(clause, tuple(seed_args), Table.unit())

    # -- generating ------------------------------------------------------------------------------
    def refinements(self, node: Node):
        """(clause, theta, literal or None) for every one-step specialisation of ``node``."""
        c, theta, bias = node.clause, node.theta, self.bias
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
            for clause, th, lit in self._positive(c, theta, existing):
                if lit.variables() & unbound:
                    yield clause, th, lit
                    for named, _, a in self._named_head(clause, th, lit.variables() & unbound):
                        yield named, th, (lit, a)
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
        yield from self._positive(c, theta, existing)

    def _named_head(self, c: Clause, theta: tuple[str, ...], bound: set[int]):
        """A bound head variable replaced by its seed constant, in the head and the body alike:
        ``goal(white, 100) :- true_cell(X, 8, white)`` from ``goal(A, 100) :- true_cell(X, 8, A)``.

        Why: a head constant was only tried while its variable was unbound, and a clause with a
        bare ground head derives the atom in every example, so it scored too low to stay in the
        beam; the literal that would have made it exact came after it was gone. The third
        argument of the refinement is the variable named (the run filters the bindings on it).
        Only where every body literal with the variable is positive and still in the language.
        """
        bias = self.bias
        for a in sorted(bound):
            if a not in c.head_args or not bias.may_name(theta[a]):
                continue
            const = theta[a]
            with_a = [lit for lit in c.body if a in lit.args]
            if any(lit.negated or lit.pred == NEQ for lit in with_a):
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

    def _positive(self, c: Clause, theta: tuple[str, ...], existing: list[int]):
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
                if len(types_out) > max_vars:
                    continue
                lit = Literal(pred, tuple(args))
                if lit in c.body:
                    continue
                yield (
                    Clause(c.head_pred, c.head_args, c.body + (lit,), tuple(types_out)),
                    tuple(theta_out),
                    lit,
                )

    def _negated(self, c: Clause, theta: tuple[str, ...], bound: list[int]):
        bias, count = self.bias, 0
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
                if not any(isinstance(a, int) for a in combo) and not (absent and n_const):
                    continue  # an absence test names a constant: ``not true_cell(_, _, b)``
                pattern = tuple(theta[a] if isinstance(a, int) else a for a in combo)
                if self.bottom.holds(pred, pattern):
                    continue  # the seed must stay covered
                lit = Literal(pred, tuple(combo), negated=True)
                if lit in c.body or Literal(pred, tuple(combo)) in c.body:
                    continue
                yield Clause(c.head_pred, c.head_args, c.body + (lit,), c.types), theta, lit
                count += 1
                if count >= MAX_NEGATIONS:
                    return

    # -- the search --------------------------------------------------------------------------------
    def run(
        self, head_pred: str, seed_args: tuple[str, ...], beam_width: int | None = None, max_results: int = 12
    ) -> SearchResult:
        root = self.root(head_pred, seed_args)
        consistent: list[Node] = []
        partial: list[Node] = []
        if root is None:
            return SearchResult([], [], self.tested, False)
        beam, seen = [root], {_canonical(root.clause, root.theta)}
        widest = 0  # positives of the widest consistent clause so far (0: none yet)
        widen_until: int | None = None  # the test count where looking for a wider one ends
        for _ in range(self.s.max_body + 1):
            children: list[Node] = []
            held = Held(self.s.held_cells)
            level_budget = widen_until  # once a consistent clause appears, test only a few more
            for node in beam:
                if level_budget is not None and self.tested > level_budget:
                    break
                node_budget = self.tested + MAX_CHILDREN
                for clause, theta, lit in self.refinements(node):
                    if self.tested >= node_budget:
                        break  # refinements come most promising first; a huge level must not stall
                    if time.monotonic() > self.deadline:
                        return self._result(consistent, partial, True)
                    if level_budget is not None and self.tested > level_budget:
                        break
                    key = _canonical(clause, theta)
                    if key in seen:
                        continue
                    seen.add(key)
                    assert node.table is not None  # beam nodes are materialised
                    try:
                        if lit is None:
                            table = node.table
                        elif isinstance(lit, int):  # a head variable named (`_named_head`)
                            table = _named(node.table, lit, self.facts.constants.index.get(theta[lit]))
                        elif isinstance(lit, tuple):  # a literal that binds it, and the variable named
                            table = extend(node.table, lit[0], self.facts, self.s.max_rows)
                            table = _named(table, lit[1], self.facts.constants.index.get(theta[lit[1]]))
                        else:
                            table = extend(node.table, lit, self.facts, self.s.max_rows)
                    except TooLarge:
                        continue
                    child = self._node(clause, theta, table)
                    if child is None:
                        continue
                    if child.clause.safe():
                        if child.neg == 0:
                            if child.pos <= widest:
                                continue  # no wider than one found at a shallower level
                            consistent.append(_bare(child))
                            if level_budget is None:
                                level_budget = self.tested + LEVEL_AFTER_FOUND
                            continue
                        partial.append(_bare(child))
                    child.table = held.keep(child.table)
                    children.append(child)
            if not children or len(consistent) >= max_results:
                break
            if consistent:
                # the first consistent clauses end the search, unless widening: a short clause
                # with constants is often a coincidence of a few states (horseshoe's
                # ``inv_terminal :- true_step(11).``) where a longer one says why (the player to
                # move has a piece next to a blank); the children covering more positives than
                # any found go on, for at most ``WIDEN_TESTS`` more candidates
                if not self.widen:
                    break
                widest = max(n.pos for n in consistent)
                if widen_until is None:
                    widen_until = self.tested + WIDEN_TESTS
                children = [n for n in children if n.pos > widest]
                if not children or self.tested >= widen_until:
                    break
            # ties: prefer more variables (a literal that binds new variables without changing the
            # coverage yet, like does(A, Action) before beats(Action, B), is kept on the plateau)
            width = beam_width or self.s.beam
            children.sort(key=lambda n: (-round(n.score, 9), -len(n.clause.types), n.clause.length))
            safe = [n for n in children if n.clause.safe()]
            unsafe = sorted((n for n in children if not n.clause.safe()), key=_closer_to_safe)
            beam = [n for n in safe[:width] + unsafe[: max(width // 2, 2)] if self._materialise(n)]
            del children, safe, unsafe
        return self._result(consistent, partial, False)

    def _materialise(self, node: Node) -> bool:
        """Give ``node`` its bindings back if the memory bound dropped them (False: too large now)."""
        if node.table is None:
            try:
                node.table = body_table(node.clause, self.facts, self.s.max_rows)
            except TooLarge:
                return False
        return True

    def exhaustive(self, head_pred: str, seed_args: tuple[str, ...], max_results: int = 12) -> SearchResult:
        """Breadth-first over sets of *lifted* bottom literals (Progol-style), shortest first.

        The beam can miss a rule whose literals only pay off together (``does(P, A), beats(A, B),
        does(Q, B)``: the first two change no coverage). Here every bottom atom has one lifted
        form (each constant becomes its variable), clauses grow one connected literal at a time,
        a clause covering no wanted positive is pruned, and a consistent one is a result.
        """
        root = self.root(head_pred, seed_args)
        if root is None:
            return SearchResult([], [], self.tested, False)
        bias, bottom = self.bias, self.bottom
        types = list(root.clause.types)
        theta = list(root.theta)
        var_of: dict[tuple[str, str], int] = {}
        for v, a in enumerate(root.clause.head_args):
            if isinstance(a, int):
                var_of.setdefault((theta[v], bias.family.get(types[v], types[v])), v)
        lits: list[Literal] = []
        for pred, consts in bottom.atoms:
            ts = bias.body_types.get(pred)
            if ts is None:
                continue
            args = []
            for c, t in zip(consts, ts, strict=True):
                key = (c, bias.family.get(t, t))
                if key not in var_of:
                    var_of[key] = len(types)
                    types.append(t)
                    theta.append(c)
                args.append(var_of[key])
            lits.append(Literal(pred, tuple(args)))
        lits = list(dict.fromkeys(lits))
        types_t, theta_t = tuple(types), tuple(theta)
        head_vars = {a for a in root.clause.head_args if isinstance(a, int)}
        level: list[tuple[Clause, Table | None, frozenset[int]]] = [(root.clause, root.table, frozenset())]
        seen: set[frozenset[int]] = set()
        consistent: list[Node] = []
        for _ in range(self.s.max_body):
            nxt: list[tuple[Clause, Table | None, frozenset[int]]] = []
            held = Held(self.s.held_cells)
            for clause, table, used in level:
                if table is None:  # dropped by the memory bound: recompute from the body
                    try:
                        table = body_table(clause, self.facts, self.s.max_rows)
                    except TooLarge:
                        continue
                reach = head_vars | {v for lit in clause.body for v in lit.variables()}
                for i, lit in enumerate(lits):
                    if i in used or not (lit.variables() & reach) and clause.body:
                        continue
                    chosen = used | {i}
                    if chosen in seen:
                        continue
                    seen.add(chosen)
                    if time.monotonic() > self.deadline:
                        return self._result(consistent, [], True)
                    if len(
                        {v for lt in clause.body for v in lt.variables()} | lit.variables()
                    ) > self.s.max_vars + len(head_vars):
                        continue
                    child_clause = Clause(head_pred, root.clause.head_args, clause.body + (lit,), types_t)
                    try:
                        child_table = extend(table, lit, self.facts, self.s.max_rows)
                    except TooLarge:
                        continue
                    node = self._node(child_clause, theta_t, child_table)
                    if node is None:
                        continue
                    if child_clause.safe() and node.neg == 0:
                        consistent.append(_bare(node))
                        continue
                    nxt.append((child_clause, held.keep(child_table), chosen))
            if consistent or not nxt:
                break
            level = nxt
        return self._result(consistent[:max_results], [], False)

    def _result(self, consistent: list[Node], partial: list[Node], timed_out: bool) -> SearchResult:
        consistent.sort(key=lambda n: (-n.pos, n.clause.length, n.clause.singletons()))
        partial.sort(key=lambda n: (-n.score, n.clause.length))
        return SearchResult(
            [n.clause for n in consistent], [n.clause for n in partial[:4]], self.tested, timed_out
        )


def _constants_allowed(n_const: int, arity: int, dynamic: bool) -> bool:
    """Whether a positive body literal with ``n_const`` constants is in the language: at most
    ``MAX_CONSTANTS`` besides its variables, or a fluent with one argument open
    (``true_jumper(red, 10, Y)``), or a ground fluent (a ground static always holds)."""
    if n_const == arity:
        return dynamic
    return n_const <= MAX_CONSTANTS or (dynamic and n_const == arity - 1)


def _bare(node: Node) -> Node:
    """A result node without its bindings (results are kept by the clause; tables are memory)."""
    return Node(node.clause, node.theta, None, node.pos, node.neg, node.score)


def _named(table: Table, var: int, cid: int | None) -> Table:
    """The bindings where ``var`` is the constant ``cid``, without its column."""
    keep = np.flatnonzero(table.cols[var] == cid) if cid is not None else np.zeros(0, dtype=np.int64)
    return Table({k: v[keep] for k, v in table.cols.items() if k != var}, len(keep))


def _canonical(clause: Clause, theta: tuple[str, ...]) -> tuple:
    """A clause up to body order and variable numbering: head variables named by their position,
    body variables by their seed constant.

    A body literal introduces one variable per seed constant (and type family), so this
    identifies ``does(A, X), succ(N, M)`` with ``succ(N, M), does(A, X)`` whatever order
    introduced the variables - duplicates would otherwise crowd the beam. Head variables are
    one per argument: ``next_cell(3, 1, 1, 2, 7)`` has two variables for ``1``, and naming them
    by the constant would make ``does_mark(R, A, B, C, D, M)`` one clause with
    ``does_mark(R, A, B, B, D, M)``, so only the first (the wrong one) was ever tested.
    """
    head_var = {a: j for j, a in reversed(list(enumerate(clause.head_args))) if isinstance(a, int)}

    def term(a):
        if not isinstance(a, int):
            return a
        return ("h", head_var[a]) if a in head_var else ("v", theta[a])

    head = tuple(term(a) for a in clause.head_args)
    return head, frozenset((lit.pred, lit.negated, tuple(term(a) for a in lit.args)) for lit in clause.body)


def _closer_to_safe(node: Node) -> tuple:
    """Unsafe clauses: best group score, then fewest unbound head variables, then shortest."""
    bound = node.clause.bound()
    unbound = sum(1 for a in node.clause.head_args if isinstance(a, int) and a not in bound)
    return -round(node.score, 9), unbound, node.clause.length


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
