"""Test: the relevant hypothesis space of one seed example, searched top-down within a meter.

The seed is a positive example ``h(c1..ck)`` in background ``B``. Its *bottom clause* is ``B`` plus
the statics; every candidate rule is a generalisation of part of it that still covers the seed.
The candidates are made by the refinement operator (:mod:`learners.ilp.refine`: generate); this
module tests them and decides which to refine further (test), Popper-style one stage per module.

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
positives than any clause found, and keeps only consistent clauses wider than those. Each consistent
clause is then tried with literals left out and constants made variables (:func:`generalise`).

When the beam ends without a consistent clause, :meth:`Search.exhaustive` searches breadth-first
over connected sets of fully lifted bottom literals (Progol-style), which finds rules whose
literals only pay off together. The best inconsistent clauses are kept as material for the
fallback partial cover.

Why a :class:`~learners.ilp.meter.Meter` and not a deadline: every candidate tested spends one unit
of it, and the search stops only when it is used up (or at the caps below, which count tests too).
Nothing here reads the clock, so with a work meter the search takes the same steps in the same
order on any machine, however loaded; a meter in seconds keeps the old wall-clock behaviour.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from learners.ilp.bias import Bias, Clause
from learners.ilp.coverage import (
    Facts,
    Targets,
    TooLarge,
    body_table_or_none,
    counts,
    extend,
    group_counts,
)
from learners.ilp.meter import Meter
from learners.ilp.refine import Bottom, Refinement, Refiner, generalisations, reductions, related, splits
from learners.ilp.relations import Table
from tasks import arrays

__all__ = ["Bottom", "Held", "Node", "Search", "SearchResult", "generalise"]

LEVEL_AFTER_FOUND = 300
"""Candidates tested after the first consistent clause of a level."""
WIDEN_TESTS = 3000
"""Candidates tested after the first consistent clause, looking for a wider one."""
MAX_CHILDREN = 400
"""Candidates tested per beam node and level (bottoms with hundreds of statics)."""
GENERALISE_TESTS = 200
"""Candidates tested per search when its consistent clauses' constants are made variables."""
RELATED_TESTS = 100
"""Candidates tested per search when two constants of its consistent clauses are made variables
joined by a static (`refine.related`; after the above)."""
SPLIT_TESTS = 100
"""Candidates tested per search when its consistent clauses' variables are split (after the above)."""
Steps = Callable[[Clause, tuple[str, ...]], Iterable[tuple[Clause, tuple[str, ...]]]]
"""What a generalisation pass makes of a clause (with its theta)."""


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
    """Top-down beam search from one seed over one sample of the training examples: tests the
    candidates the :class:`~learners.ilp.refine.Refiner` makes, one unit of the meter each."""

    def __init__(
        self,
        bias: Bias,
        facts: Facts,
        targets: Targets,
        bottom: Bottom,
        meter: Meter,
        wanted: np.ndarray | None = None,
        widen: bool = False,
    ):
        """``meter``: the allowance of this search; each candidate tested spends a unit, and the
        search returns (``timed_out``) once it is expired. ``wanted``: the sample positives the
        current hypothesis misses (default: all); the beam ranks clauses by how many of these
        they cover, so each seed looks for what is missing. ``widen``: after the first consistent
        clauses, look deeper for a wider one (`run`)."""
        self.bias = bias
        self.s = bias.settings
        self.facts = facts
        self.targets = targets
        self.bottom = bottom
        self.refiner = Refiner(bias, bottom)
        self.meter = meter
        self.wanted = targets.positives if wanted is None else wanted
        self.wanted_mask = arrays.isin(targets.positive_table.cols["key"], self.wanted)
        self.group_cache: dict = {}
        self.n_pos = max(len(self.wanted), 1)
        self.n_neg = max(facts.n * targets.table.n - len(targets.positives), 1)
        self.tested = 0
        self.widen = widen

    # -- testing ---------------------------------------------------------------------------------
    def _node(self, clause: Clause, theta: tuple[str, ...], table: Table) -> Node | None:
        """Test ``clause`` (with its bindings ``table``) on the sample: one unit of work."""
        self.tested += 1
        self.meter.spend()
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
        """The most general clause covering the seed, tested (None: it covers no wanted positive)."""
        clause, theta = self.refiner.root(head_pred, seed_args)
        return self._node(clause, theta, Table.unit())

    def refinements(self, node: Node) -> Iterator[Refinement]:
        """(clause, theta, what changed) for every one-step specialisation of ``node``."""
        return self.refiner.refinements(node.clause, node.theta)

    def _test_refinement(self, bindings: Table, refinement: Refinement) -> Node | None:
        """The child ``refinement`` makes of a beam node whose body has ``bindings``, tested
        (None: too many bindings, or it covers no wanted positive)."""
        clause, theta, lit = refinement
        try:
            if lit is None:
                table = bindings
            elif isinstance(lit, int):  # a head variable named (`Refiner._named_head`)
                table = _named(bindings, lit, self.facts.constants.index.get(theta[lit]))
            elif isinstance(lit, tuple):  # a literal, then the variable it binds named or an offset from it
                table = extend(bindings, lit[0], self.facts, self.s.max_rows)
                if isinstance(lit[1], int):
                    table = _named(table, lit[1], self.facts.constants.index.get(theta[lit[1]]))
                else:
                    table = extend(table, lit[1], self.facts, self.s.max_rows)
            else:
                table = extend(bindings, lit, self.facts, self.s.max_rows)
        except TooLarge:
            return None
        return self._node(clause, theta, table)

    # -- the search --------------------------------------------------------------------------------
    def run(
        self, head_pred: str, seed_args: tuple[str, ...], beam_width: int | None = None, max_results: int = 12
    ) -> SearchResult:
        """The beam search (module docstring); ``timed_out`` when the meter expired first."""
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
                bindings = self._bindings(node)
                if bindings is None:
                    continue
                node_budget = self.tested + MAX_CHILDREN
                for refinement in self.refinements(node):
                    if self.tested >= node_budget:
                        break  # refinements come most promising first; a huge level must not stall
                    if self.meter.expired():
                        return self._result(consistent, partial, True)
                    if level_budget is not None and self.tested > level_budget:
                        break
                    key = _canonical(refinement[0], refinement[1])
                    if key in seen:
                        continue
                    seen.add(key)
                    child = self._test_refinement(bindings, refinement)
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
                child = bindings = None  # gone before the next node's bindings are recomputed
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
            beam = self._next_beam(children, beam_width or self.s.beam)
        if self.s.generalise:
            consistent += generalise(self, consistent)
        return self._result(consistent, partial, False)

    def _next_beam(self, children: list[Node], width: int) -> list[Node]:
        """The best ``width`` safe children and ``width // 2`` (at least 2) unsafe ones (their
        bindings, if dropped, are recomputed when each is expanded: `_bindings`). Ties prefer the
        shorter clause (a named head with no body, ``goal(robot, 0).``, before ``goal(A, 0) :-
        input_toggle(A, X, Y)``: the short rules are under it), then more variables (a literal that
        binds new variables without changing the coverage yet, like does(A, Action) before
        beats(Action, B), is kept on the plateau)."""
        children.sort(key=lambda n: (-round(n.score, 9), n.clause.length, -len(n.clause.types)))
        safe = [n for n in children if n.clause.safe()]
        unsafe = sorted((n for n in children if not n.clause.safe()), key=_closer_to_safe)
        # the best lifted clauses (no constant in the body) keep a place: a literal that pays off only
        # with the next one (`true_cell(X, Y, knight)`, then `true_cell(X, Y, hole)`) scores nothing
        # alone and is crowded out by literals with constants that fit a part of the positives
        lifted = _distinct_lifted(safe[width:], max(width // 2, 2) if self.s.lifted else 0)
        taken = {id(n) for n in lifted}
        rest = [n for n in safe[width:] if id(n) not in taken]
        precise = _most_precise(rest, max(width // 2, 2) if self.s.precise else 0)
        return safe[:width] + lifted + precise + unsafe[: max(width // 2, 2)]

    def _bindings(self, node: Node) -> Table | None:
        """A beam node's bindings, to expand it: its table, or, if the memory bound dropped that,
        the table recomputed from its body (None: too large now). The node gives its table up
        here: the children carry what the next level needs.

        Why recomputed tables are not kept on the node: recomputing every dropped table of the
        beam before expanding any held them all at once, each up to ``max_rows`` rows beside the
        level's ``Held`` budget: fizzbuzz ``next_success`` peaked at 0.7-1.0 GiB there. Now one
        recomputed table is alive at a time, and the nodes expanded are the same, in the same order.
        """
        table, node.table = node.table, None
        if table is not None:
            return table
        return body_table_or_none(node.clause, self.facts, self.s.max_rows)

    def exhaustive(self, head_pred: str, seed_args: tuple[str, ...], max_results: int = 12) -> SearchResult:
        """Breadth-first over sets of *lifted* bottom literals (Progol-style), shortest first.

        The beam can miss a rule whose literals only pay off together (``does(P, A), beats(A, B),
        does(Q, B)``: the first two change no coverage). Here every bottom atom has one lifted
        form (`Refiner.lifted`), clauses grow one connected literal at a time, a clause covering
        no wanted positive is pruned, and a consistent one is a result.
        """
        root = self.root(head_pred, seed_args)
        if root is None:
            return SearchResult([], [], self.tested, False)
        lits, types_t, theta_t = self.refiner.lifted(root.clause, root.theta)
        head_vars = {a for a in root.clause.head_args if isinstance(a, int)}
        level: list[tuple[Clause, Table | None, frozenset[int]]] = [(root.clause, root.table, frozenset())]
        seen: set[frozenset[int]] = set()
        consistent: list[Node] = []
        for _ in range(self.s.max_body):
            nxt: list[tuple[Clause, Table | None, frozenset[int]]] = []
            held = Held(self.s.held_cells)
            for clause, table, used in level:
                if table is None:  # dropped by the memory bound: recompute from the body
                    table = body_table_or_none(clause, self.facts, self.s.max_rows)
                    if table is None:
                        continue
                reach = head_vars | {v for lit in clause.body for v in lit.variables()}
                for i, lit in enumerate(lits):
                    if i in used or not (lit.variables() & reach) and clause.body:
                        continue
                    chosen = used | {i}
                    if chosen in seen:
                        continue
                    seen.add(chosen)
                    if self.meter.expired():
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
        consistent.sort(key=lambda n: (-n.pos, n.clause.length, n.clause.specificity()))
        partial.sort(key=lambda n: (-n.score, n.clause.length))
        return SearchResult(
            [n.clause for n in consistent], [n.clause for n in partial[:4]], self.tested, timed_out
        )


def generalise(search: Search, found: list[Node]) -> list[Node]:
    """The clauses of ``found`` with literals left out (`refine.reductions`) and constants made
    variables (`refine.generalisations`), greedily, one step at a time while the clause stays
    consistent on the sample and covers no fewer wanted positives; then, in passes of their own
    and on the same terms, with two constants made variables joined by a static (`refine.related`;
    kept only where it covers strictly more: a longer clause that covers no more is a guess) and
    with variables split in two (`refine.splits`). Each changed clause is returned beside its
    original (the solver's tie-break, `Clause.specificity`, prefers it where both cover the same).

    Bounded by ``GENERALISE_TESTS``, ``RELATED_TESTS`` and ``SPLIT_TESTS`` tests, one unit of the
    meter each, in a fixed order: a work-bound run takes the same steps on any machine. The later
    passes have their own allowances: sharing one, the splits of the first clauses took the tests
    the later clauses' constants needed. (Kept only where a split covered strictly more wanted
    positives, alquerque's jump rule was not reached: the hypothesis already covered most jumps,
    so one split alone added none of the positives still wanted.)
    """
    seen = {_canonical(n.clause, n.theta) for n in found}
    general = _greedy(
        search, found, seen, GENERALISE_TESTS,
        lambda c, th: itertools.chain(reductions(c, th), generalisations(search.bias, c, th)),
    )  # fmt: skip
    passes: list[tuple[int, Steps, bool]] = []
    if search.s.related:
        passes.append((RELATED_TESTS, lambda c, th: related(search.bias, search.bottom, c, th), True))
    if search.s.split:
        passes.append((SPLIT_TESTS, splits, False))
    out = [m for n, m in zip(found, general, strict=True) if m is not n]
    for tests, steps, wider in passes:
        made = _greedy(search, general, seen, tests, steps, wider)
        out += [m for n, m in zip(general, made, strict=True) if m is not n]
        general = made
    return out


def _greedy(
    search: Search,
    found: list[Node],
    seen: set,
    tests: int,
    steps: Steps,
    wider: bool = False,
) -> list[Node]:
    """What ``steps`` make of each clause of ``found`` (in its place; the node itself where
    nothing was kept), one step at a time while the clause stays consistent on the sample and
    covers no fewer wanted positives (``wider``: strictly more), within ``tests`` tests."""
    out: list[Node] = []
    budget = search.tested + tests
    for node in found:
        current, changed = node, True
        while changed:
            changed = False
            for clause, theta in steps(current.clause, current.theta):
                if search.tested >= budget or search.meter.expired():
                    break
                key = _canonical(clause, theta)
                if key in seen:
                    continue
                seen.add(key)
                child = _test_clause(search, clause, theta)
                if child is not None and child.neg == 0 and child.pos >= current.pos + wider:
                    current, changed = child, True
                    break
        out.append(current)
    return out


def _test_clause(search: Search, clause: Clause, theta: tuple[str, ...]) -> Node | None:
    """``clause`` tested from its body alone, without keeping its bindings (None: too many
    bindings, or it covers no wanted positive)."""
    table = body_table_or_none(clause, search.facts, search.s.max_rows)
    node = None if table is None else search._node(clause, theta, table)
    return None if node is None else _bare(node)


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


def _distinct_lifted(nodes: list[Node], places: int) -> list[Node]:
    """The first ``places`` lifted clauses of ``nodes``, in their order, one per clause text
    (read only until the places are filled: a level has thousands of children, and a clause's
    text costs microseconds).

    Why: one lifted literal reached from several seed constants is one clause under several
    thetas (``true_cell(Pos1, Pos2, Mark1)`` from each cell of the seed); they score alike and
    filled every lifted place, so the one other lifted clause the rule needed never got one
    (sokoban ``terminal``, "some target holds no box": ``true_target(X, Y), not true_at(X, Y, _)``
    was not found at 60 s in three runs; with one place per clause it is found in 1 s).
    """
    return _first_by_text((n for n in nodes if _lifted(n.clause)), places)


def _most_precise(nodes: list[Node], places: int) -> list[Node]:
    """The ``places`` most precise clauses of ``nodes`` (Laplace: ``(pos + 1) / (pos + neg + 2)``),
    one per clause text, ties to the higher score (``nodes``' order).

    Why: the beam's score is a balanced-accuracy gain, where a negative weighs ``1/N`` against a
    positive's ``1/P`` and ``N`` is every false ground atom: a clause covering every positive and
    thousands of negatives outranks one covering a quarter of them and few negatives. A target of
    several rules, each precise on its share (tron's four moves, ``next_at(X, Y, O) :- true_at(Z, Y,
    O), succ(X, Z), controls(R, O), does(R, left)``), then never keeps the precise branch past its
    second literal; the overgeneral branch fills the beam to the budget.
    """
    if places <= 0:
        return []
    return _first_by_text(sorted(nodes, key=lambda n: -(n.pos + 1) / (n.pos + n.neg + 2)), places)


def _first_by_text(nodes: Iterable[Node], places: int) -> list[Node]:
    """The first ``places`` nodes, in their order, one per clause text (read only until the
    places are filled)."""
    out: dict[str, Node] = {}
    for n in nodes:
        if len(out) >= places:
            break
        out.setdefault(n.clause.text(), n)
    return list(out.values())


def _lifted(clause: Clause) -> bool:
    """No constant in the body: every argument of every body literal is a variable."""
    return all(isinstance(a, int) for lit in clause.body for a in lit.args)


def _closer_to_safe(node: Node) -> tuple:
    """Unsafe clauses: best group score, then fewest unbound head variables, then shortest."""
    bound = node.clause.bound()
    unbound = sum(1 for a in node.clause.head_args if isinstance(a, int) and a not in bound)
    return -round(node.score, 9), unbound, node.clause.length
