"""Frame-style clauses: ``h(X..) :- b(X..), l1, ..., lk``, the literals chosen as a set.

Most ``next_*`` sub-predicates are "stays as it is unless a move changes it" (the frame problem):
``next_cell(X, Y, M) :- true_cell(X, Y, M), not does_move(_, X, Y, _, _), not does_move(_, _, _, X, Y)``.
A top-down beam meets such a rule one negation at a time, and each negation alone still covers
negatives, so the beam rarely keeps the right partial rule long enough. Here the literals are
picked together, over every training example at once:

1. The *base* is a body predicate with exactly the head's types (``true_f`` for ``next_f``;
   ``input_f`` for ``legal_f``) with the head's variables: its bindings are the rows (example, X..),
   each a positive or a negative target atom.
2. Every candidate literal over a background predicate uses head variables of compatible type or
   ``_`` (safe: each variable is bound by the base): negated ones with at least one variable,
   or over a dynamic predicate with one constant and no variable (``not true_season(winter)``: a
   state-wide exception);
   positive guards over fluents and moves (``does_move(_, _, _, _, _)``: a move was made); positive
   statics over head variables (``succ(Y1, Y2)``); ``X = Y`` and ``X != Y`` between head variables
   (``_noframeequal`` drops these). Each candidate's effect is the set of rows it removes - one
   vectorised semi-join each, kept as one bit per row.
3. **One clause** (`_greedy`): a weighted set cover - remove every negative row, keep as many
   positive rows as possible. Greedy: first literals that remove no positive (most negatives
   first), then, if negatives remain, the literal with the best balanced-accuracy gain. At most
   ``max_body - 1`` literals. Every prefix is returned too (material for the fallback cover).
   The literals are chosen on a sample of the examples; where the clause keeps a negative row
   of an example outside it, such examples join the sample and the choice is made again
   (`_choose`).
4. **Several clauses** (`_sequential_cover`, ``_noframecover`` drops it): FOIL's sequential
   covering over the same rows, for targets one clause cannot express ("a straight move to an
   empty square, or a diagonal one onto anything but my own piece"; "sheep move onto a blank,
   and so do wolves"). Each clause grows by FOIL gain until it keeps no negative row, at most
   ``2 * max_body - 2`` literals, and its redundant literals are pruned; the positives it covers
   are set aside and the next clause starts from the base.

The learner verifies each clause on every training example like any other candidate, and the
combine step chooses among them. Nothing is game-specific: the base and the literals come from
the signature's types alone.

The step is bounded by a :class:`~learners.ilp.meter.Meter`, never by the clock: each literal
tested spends a unit, and so does each step of the sequential cover. With a work meter the same
literals are tested and the same clauses chosen on any machine, however loaded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from learners.base import Budget
from learners.ilp.bias import NEQ, Bias, Clause, Literal
from learners.ilp.coverage import Facts, Targets, TooLarge, _literal_table, _with_examples, body_table
from learners.ilp.meter import Meter
from learners.ilp.relations import Table, join, pack
from tasks import arrays

MAX_CANDIDATES = 8000
"""Candidate literals tested per base at least (each is one semi-join over the base's rows)."""
LITERAL_BITS = 2**30
"""Past ``MAX_CANDIDATES``, literals are made while their removed-row bits fit in this many bits
(128 MiB): a base of 32,000 rows takes 33,000 literals. A fixed cap cut every kind of literal
alike, and a seven-argument move with hundreds of thousands of static literals crowded out the
few hundred over fluents: alquerque's ``true_cell(X3, Y3, blank)`` (the landing square is
empty) was literal 11,318 of 8,000."""
MAX_LITERAL_BITS = 2**31
"""...and never more literals than fit in this many bits (256 MiB), ``MAX_CANDIDATES`` or not: a
base of 800,000 rows (platformjumpers' ``legal_jump``, 40 examples of 20,000 moves) took 8,000
literals, 800 MB of bits, and its fit peaked at 2.4 GiB under a work bound, which lets the step
test them all; it now takes 2,684 (about as many as a 60 s budget's share ever tested there)."""
COUNT_CHUNK_BYTES = 2**25
"""`_Rows.count` works on this many bytes of the bit matrix at a time (32 MiB), so its temporaries
stay small beside the matrix itself."""
FRAME_CONSTANTS = 10
"""A literal may name one constant of a type with at most this many (``true_cell(X, Y, b)``)."""
SAMPLE = 200
"""Literals are chosen on the rows of at most this many training examples (the learner then
verifies each clause on all of them): a static base such as ``input_move`` has a row per move
and example, and each candidate is a semi-join over those rows."""
SAMPLE_ROWS = 50_000
COUNTER_ROUNDS = 2
"""Times the literals are chosen once more, on the sample and the examples where the one clause
chosen keeps a negative row (`_choose`)."""
MIN_SAMPLE = 40
"""...and of fewer examples (at least ``MIN_SAMPLE``) where a base has so many rows per example
that 200 would pass ``SAMPLE_ROWS``: platformjumpers' ``valid_move`` has 1,080 moves a state,
216,000 rows for 200 examples, and the deadline allowed 6,000 of its literals at 1.8 ms each."""


def bases(bias: Bias) -> list[str]:
    """Body predicates with exactly the head's argument types (the head's own fluent first)."""
    types = bias.head_types
    if not types:
        return []
    out = [p for p, ts in sorted(bias.body_types.items()) if ts == types]
    own = "true_" + bias.head_pred.split("_", 1)[-1]
    return sorted(out, key=lambda p: p != own)


def candidates(
    bias: Bias,
    base: str,
    n_vars: int,
    types: tuple[str, ...],
    meter: Meter | None = None,
    cap: int = MAX_CANDIDATES,
) -> list[Literal]:
    """Literals whose arguments are head variables (each at most once), ``_`` or one constant.

    Negated ones need a variable (``not does_move(_, X, Y, _, _)``: "nobody moves from X,Y"),
    unless over a dynamic predicate (``not true_season(winter)``: "unless it is winter");
    positive ones are guards over dynamic predicates (``does_move(_, _, _, _, _)``: "a move was
    made", false in a terminal state where every fluent is dropped; ``true_cell(X2, Y2, b)``:
    "the target square is empty") or statics over head variables and no ``_`` (``succ(Y1, Y2)``);
    first the comparisons of head variables (`_comparisons`). A constant is one of a type with at most ``FRAME_CONSTANTS``.
    One stream per predicate, number of arguments that are not ``_`` and rank (`_literals`); the streams take turns
    (fluents and moves first), so ``cap`` cuts a little of every kind of literal
    rather than every literal of the kinds that come last. Once ``meter`` (None: unbounded) is
    expired, what was made so far (making literals spends nothing: testing them does).
    """
    meter = _unbounded(meter)
    preds = sorted(bias.body_types, key=lambda p: (p in bias.static_preds, p))  # fluents and moves first
    streams = [
        _literals(bias, pred, base, n_vars, types, k, rank)
        for pred in preds
        for k in range(len(bias.body_types[pred]) + 1)
        for rank in range(4 if k else 1)
    ]
    out: list[Literal] = _comparisons(bias, types) if bias.settings.frame_equal else []
    while streams and len(out) < cap and not meter.expired():
        for stream in list(streams):
            lit = next(stream, None)
            if lit is None:
                streams.remove(stream)
            else:
                out.append(lit)
    return out[:cap]


def _comparisons(bias: Bias, types: tuple[str, ...]) -> list[Literal]:
    """``X = Y`` and ``X != Y`` between head variables of one type family (``X1 = X2``: a straight move)."""
    pairs = [
        (a, b) for a, b in itertools.combinations(range(len(types)), 2) if bias.compatible(types[a], types[b])
    ]
    return [Literal(NEQ, pair, negated) for pair in pairs for negated in (True, False)]


def _literals(bias: Bias, pred: str, base: str, n_vars: int, types: tuple[str, ...], k: int, rank: int):
    """The candidate literals over ``pred`` with exactly ``k`` arguments that are not ``_``, of one
    ``rank``: 0 variables in the head's order, 1 the same and a constant, 2 variables in another
    order, 3 the same and a constant (a prior, not a limit: every rank has its stream)."""
    ts = bias.body_types[pred]
    dynamic = pred not in bias.static_preds
    if k == 0:
        if dynamic and ts:
            yield Literal(pred, (None,) * len(ts))
        return
    options = []
    for t in ts:
        small = bias.constants.get(t, []) if bias.settings.frame_constants else []
        consts = small if 0 < len(small) <= FRAME_CONSTANTS else []
        options.append([v for v in range(n_vars) if bias.compatible(types[v], t)] + list(consts))

    def ordered(vs: list[int]) -> bool:
        return all(a < b for a, b in zip(vs, vs[1:], strict=False))

    def phase(values: tuple) -> int:
        """Variables in the head's order before any other order; no constant before one."""
        vs = [a for a in values if isinstance(a, int)]
        return (0 if ordered(vs) else 2) + (len(vs) < len(values))

    yield from _assignments(pred, ts, options, base, n_vars, k, dynamic, lambda v: phase(v) == rank)


def _assignments(pred, ts, options, base, n_vars, k, dynamic, keep):
    """Literals over ``pred`` with ``k`` arguments filled from ``options``, those ``keep`` accepts."""
    for at in itertools.combinations(range(len(ts)), k):
        for values in _distinct_product([options[j] for j in at]):
            if not keep(values):
                continue
            combo: list = [None] * len(ts)
            for j, a in zip(at, values, strict=True):
                combo[j] = a
            args = tuple(combo)
            if pred == base and args == tuple(range(n_vars)):
                continue
            has_var = any(isinstance(a, int) for a in values)
            if has_var or dynamic:  # ``not true_season(winter)``: unless a state-wide condition
                yield Literal(pred, args, negated=True)
            if dynamic or (has_var and None not in args):
                yield Literal(pred, args)


def _distinct_product(options: list[list]) -> Iterator[tuple]:
    """``itertools.product(*options)`` in its order, less the tuples that repeat a variable (an
    int) or hold more than one constant, pruned as it goes: the plain product of a 6-argument
    move over a few variables and ten constants each has millions of tuples and few that pass
    (ttcc4's ``next_cell`` spent 43 s here before any literal was tested)."""

    def walk(i: int, used: frozenset, consts: int) -> Iterator[tuple]:
        if i == len(options):
            yield ()
            return
        for a in options[i]:
            is_var = isinstance(a, int)
            if (is_var and a in used) or (not is_var and consts):
                continue
            for rest in walk(i + 1, used | {a} if is_var else used, consts + (not is_var)):
                yield (a, *rest)

    return walk(0, frozenset(), 0)


def _removes(table: Table, lit: Literal, facts: Facts) -> np.ndarray:
    """Rows of ``table`` that adding ``lit`` to the body removes."""
    if lit.pred == NEQ:
        a, b = lit.args
        same = table.cols[a] == table.cols[b]
        return ~same if lit.negated else same
    lt = _literal_table(Literal(lit.pred, lit.args), facts)
    on = [c for c in lt.cols if c in table.cols]
    if lt.n == 0:
        holds = np.zeros(table.n, dtype=bool)
    elif not on:
        holds = np.ones(table.n, dtype=bool)
    else:
        lk, rk = pack([table.cols[c] for c in on], [[lt.cols[c] for c in on]])
        holds = arrays.isin(lk, rk)
    return holds if lit.negated else ~holds


def frame_clauses(
    bias: Bias, facts: Facts, targets: Targets, max_rows: int, meter: Meter | None = None, seed: int = 0
) -> list[Clause]:
    """Every clause of the frame step, one-clause prefixes then the cover (:func:`frame_step`)."""
    single, several = frame_step(bias, facts, targets, max_rows, meter, seed)
    return single + several


def frame_step(
    bias: Bias, facts: Facts, targets: Targets, max_rows: int, meter: Meter | None = None, seed: int = 0
) -> tuple[list[Clause], list[Clause]]:
    """Frame clauses for the head of ``bias`` (see the module docstring): the one-clause set cover
    and its prefixes, and the sequential cover's clauses; ([], []) when there is no base.

    The learner uses them differently (`learners.ilp.loop.frame_stage`): the cover's clauses fit the sample
    closely, and as seeds' context they steered the loop away from rules it otherwise finds.
    Each literal tested spends a unit of ``meter`` (None: unbounded); once it is expired no more
    are tested (what was chosen so far is returned). ``seed`` (the job's) draws the examples the
    literals are chosen on (`_sample`).
    """
    meter = _unbounded(meter)
    out: list[Clause] = []
    several: list[Clause] = []
    given = meter.left()
    k = len(bias.head_types)
    head = tuple(range(k))
    for base in bases(bias):
        clause = Clause(bias.head_pred, head, (Literal(base, head),), bias.head_types)
        try:
            table = _base_rows(clause, facts, max_rows, seed)
        except TooLarge:
            continue
        label = _labels(table, k, facts, targets)
        if label is None:
            continue
        scored, is_pos = label
        table = table.take(np.flatnonzero(scored))
        if not is_pos.any():
            continue
        out.append(clause)
        if is_pos.all():
            continue
        chosen, bodies, lits = _choose(bias, base, table, is_pos, facts, meter, given, seed)

        def clause_of(body: list[int], base: str = base, lits: list[Literal] = lits) -> Clause:
            return Clause(
                bias.head_pred, head, (Literal(base, head), *(lits[i] for i in body)), bias.head_types
            )

        out += [clause_of(chosen[:i]) for i in range(1, len(chosen) + 1)]
        several += [clause_of(body) for body in bodies]
    return out, several


def _choose(
    bias: Bias,
    base: str,
    table: Table,
    is_pos: np.ndarray,
    facts: Facts,
    meter: Meter,
    given: float,
    seed: int,
) -> tuple[list[int], list[list[int]], list[Literal]]:
    """The one clause's literals (`_greedy`) and the cover's clauses (`_sequential_cover`) over a
    sample of the base's labelled rows ``table``, as indices into the literals tested (returned).

    The literals are chosen on the rows of a sample of examples (`_sample`); a negative that only
    a few examples show (a crop burnt by arson among thousands of states) is often not in it, and
    the clause chosen keeps it. So the choice is checked on every row: the examples where the
    one clause keeps a negative row join the sample (`_counterexamples`), and the literals are
    tested and chosen once more, at most ``COUNTER_ROUNDS`` times, while the meter has what the
    first round spent left (a work meter: the same rounds on any machine).
    """
    k = len(bias.head_types)
    ex = table.cols["ex"]
    examples = arrays.unique(ex[_sample(ex, SAMPLE, seed)])
    rounds = 0
    bodies: list[list[int]]
    while True:
        start = meter.now()
        keep = np.flatnonzero(arrays.isin(ex, examples))
        rows_table, rows_pos = table.take(keep), is_pos[keep]
        if not rows_pos.any():  # no positive in the sample: nothing to keep, no gain to weigh
            return [], [], []
        if rows_pos.all():  # no negative in the sample: the cover has nothing to remove
            chosen, bodies, lits = [], [], []
        else:
            cap = min(max(MAX_CANDIDATES, LITERAL_BITS // rows_table.n), MAX_LITERAL_BITS // rows_table.n)
            lits = candidates(bias, base, k, bias.head_types, meter, cap)
            rows = _Rows(len(lits), rows_table.n)
            sampled = facts.of_examples(examples)  # the rows are the sample's: so are the facts read
            for i, lit in enumerate(lits):
                if meter.expired():
                    lits = lits[:i]
                    break
                meter.spend()
                rows.set(i, _removes(rows_table, lit, sampled))
            rows.bits = rows.bits[: len(lits)]  # a view: the literals tested before the meter expired
            chosen = _greedy(rows, rows_pos, bias.settings.max_body - 1) if lits else []
            bodies = []
            if lits and bias.settings.frame_cover:
                # the cover is cheap next to testing the literals, which may have used the whole meter
                bodies = _sequential_cover(
                    rows, rows_pos, 2 * bias.settings.max_body - 2, meter.grace(given / 4)
                )
        if rounds == COUNTER_ROUNDS or meter.left() < meter.now() - start or meter.expired():
            return chosen, bodies, lits
        missed = _counterexamples(table, is_pos, chosen, lits, facts, examples, meter, seed, rows_table.n)
        if len(missed) == 0:
            return chosen, bodies, lits
        examples = arrays.union([examples, missed])
        rounds += 1


def _counterexamples(
    table: Table,
    is_pos: np.ndarray,
    body: list[int],
    lits: list[Literal],
    facts: Facts,
    sampled: np.ndarray,
    meter: Meter,
    seed: int,
    sample_rows: int,
) -> np.ndarray:
    """Examples outside ``sampled`` where the clause of ``body`` (over the base's rows ``table``)
    keeps a negative row: at most ``SAMPLE // 2`` of them, drawn with ``seed``, and no more than
    half of ``SAMPLE_ROWS`` rows (at least one example). Each literal tested on every row spends
    what testing it on that many sampled rows (``sample_rows``) would, times over.

    Only the one clause is checked: the cover's clauses are many (up to 12 of 8 literals), and
    checking them all on a base of a million rows took longer than the rest of the frame step."""
    alive = ~is_pos
    cost = max(1, -(-table.n // max(1, sample_rows)))
    for i in body:
        meter.spend(cost)
        alive &= ~_removes(table, lits[i], facts)
    ex = table.cols["ex"]
    missed = arrays.unique(ex[alive])
    missed = missed[~arrays.isin(missed, sampled)]
    if len(missed) == 0:
        return missed
    rows = ex[arrays.isin(ex, missed)]
    return arrays.unique(rows[_sample(rows, SAMPLE // 2, seed, SAMPLE_ROWS // 2, 1)])


class _Rows:
    """Which base rows each candidate literal removes, one bit per row (a literal x row matrix of
    8,000 literals over 70,000 rows is 70 MB packed, 560 MB as bools), with counts under a mask.

    The matrix is allocated once, row ``i`` being ``np.packbits`` of literal ``i``'s removed rows
    (a list of rows stacked at the end held it twice)."""

    def __init__(self, n_literals: int, n: int) -> None:
        # whole 64-bit words per literal: :meth:`count` ANDs and counts eight bytes at a time
        self.bits = np.zeros((n_literals, -(-n // 64) * 8), dtype=np.uint8)
        self.n = n

    def set(self, i: int, removed: np.ndarray) -> None:
        """Literal ``i`` removes the rows where ``removed`` (booleans over the rows) is true."""
        packed = np.packbits(removed)
        self.bits[i, : len(packed)] = packed

    @classmethod
    def of(cls, removed: list[np.ndarray]) -> _Rows:
        """The matrix of each literal's removed rows given as booleans (the tests' way in)."""
        rows = cls(len(removed), len(removed[0]) if removed else 0)
        for i, r in enumerate(removed):
            rows.set(i, r)
        return rows

    def removed(self, i: int) -> np.ndarray:
        return np.unpackbits(self.bits[i], count=self.n).astype(bool)

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per literal: how many rows of ``mask`` it removes (a chunk of literals at a time:
        :data:`COUNT_CHUNK_BYTES`)."""
        packed = np.zeros(self.bits.shape[1], dtype=np.uint8)
        bits = np.packbits(mask)
        packed[: len(bits)] = bits
        words = packed.view(np.uint64)
        step = max(1, COUNT_CHUNK_BYTES // max(1, self.bits.shape[1]))
        out = np.empty(len(self.bits), dtype=np.int64)
        for i in range(0, len(self.bits), step):
            chunk = self.bits[i : i + step].view(np.uint64)
            out[i : i + step] = np.bitwise_count(chunk & words).sum(axis=1, dtype=np.int64)
        return out


def _greedy(rows: _Rows, is_pos: np.ndarray, max_lits: int) -> list[int]:
    """One clause's literals as a weighted set cover: remove every negative row, keep as many
    positive rows as possible (a literal that loses no positive first, then the best
    balanced-accuracy gain, then the fewest positives lost; the first such literal)."""
    n_pos, n_neg = int(is_pos.sum()), int((~is_pos).sum())
    alive = np.ones(len(is_pos), dtype=bool)
    chosen: list[int] = []
    while len(chosen) < max_lits and (alive & ~is_pos).any():
        removes_neg, removes_pos = rows.count(alive & ~is_pos), rows.count(alive & is_pos)
        ok = removes_neg > 0
        ok[chosen] = False
        if not ok.any():
            break
        gain = removes_neg / n_neg - removes_pos / n_pos
        for key in (removes_pos == 0, gain, -removes_pos):
            ok &= key == key[ok].max()
        best = int(np.flatnonzero(ok)[0])
        if gain[best] <= 0:
            break
        chosen.append(best)
        alive &= ~rows.removed(best)
    return chosen


def _sequential_cover(
    rows: _Rows, is_pos: np.ndarray, max_lits: int, meter: Meter | None = None, max_clauses: int = 12
) -> list[list[int]]:
    """Several clauses over one base, each consistent on the rows, together covering the positives.

    FOIL's sequential covering on the base's rows: a clause grows by the literal of the best FOIL
    gain over the positives no earlier clause covers, until it keeps no negative row; those
    positives are then set aside and the next clause starts from the base again. This is the
    combine step's material for targets that one clause cannot express (a straight move to an
    empty square *or* a diagonal move onto an opponent): each clause is chosen over every row
    at once, not met one literal at a time by the beam. Each step (every candidate's FOIL gain
    over the rows, for one literal of a clause) spends a unit of ``meter`` (None: unbounded); no
    clause starts once it is expired.
    """
    meter = _unbounded(meter)
    todo = is_pos.copy()
    out: list[list[int]] = []
    while todo.any() and len(out) < max_clauses and not meter.expired():
        alive = np.ones(len(is_pos), dtype=bool)
        chosen: list[int] = []
        while len(chosen) < max_lits:
            p0, n0 = int((alive & todo).sum()), int((alive & ~is_pos).sum())
            if n0 == 0 or p0 == 0:
                break
            meter.spend()
            p1 = p0 - rows.count(alive & todo)
            n1 = n0 - rows.count(alive & ~is_pos)
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = p1 * (np.log2(p1 / (p1 + n1)) - np.log2(p0 / (p0 + n0)))
            gain[(p1 == 0) | (n1 == n0)] = -np.inf
            gain[chosen] = -np.inf
            best = int(np.argmax(gain))
            if not gain[best] > 0:
                break
            chosen.append(best)
            alive &= ~rows.removed(best)
        if (alive & ~is_pos).any() or not (alive & todo).any():
            break
        out.append(_pruned(rows, is_pos, chosen))
        todo &= ~alive
    return out


def _unbounded(meter: Meter | None) -> Meter:
    """``meter``, or one that never expires (a step called on its own, as in the tests)."""
    return Meter(Budget()) if meter is None else meter


def _pruned(rows: _Rows, is_pos: np.ndarray, chosen: list[int]) -> list[int]:
    """``chosen`` less each literal (last chosen first) whose removal lets in no negative row: FOIL's
    greedy order keeps early literals that later ones made redundant."""
    keep = list(chosen)
    for i in reversed(chosen):
        rest = [j for j in keep if j != i]
        alive = np.ones(len(is_pos), dtype=bool)
        for j in rest:
            alive &= ~rows.removed(j)
        if not (alive & ~is_pos).any():
            keep = rest
    return keep


def _sample(
    ex: np.ndarray, n: int, seed: int = 0, max_rows: int = SAMPLE_ROWS, least: int = MIN_SAMPLE
) -> np.ndarray:
    """Indices of the rows whose example is one of the examples `_draw` keeps."""
    examples = arrays.unique(ex)
    per_example = np.bincount(np.searchsorted(examples, ex), minlength=len(examples))
    chosen = _draw(per_example, n, max_rows, least, seed)
    if len(chosen) == len(examples):
        return np.arange(len(ex))
    return np.flatnonzero(arrays.isin(ex, examples[chosen]))


def _draw(per_example: np.ndarray, n: int, max_rows: int, least: int, seed: int = 0) -> np.ndarray:
    """Positions (sorted) of at most ``n`` examples drawn with ``seed``, fewer (the first drawn,
    at least ``least``) where their rows (``per_example``) would pass ``max_rows``."""
    order = np.arange(len(per_example))
    if len(order) > n:
        order = np.random.default_rng(seed).choice(len(order), size=n, replace=False)
    rows = np.cumsum(per_example[order])
    if len(rows) and rows[-1] > max_rows:
        order = order[: max(least, int(np.searchsorted(rows, max_rows, side="right")))]
    return np.sort(order).astype(np.int64)


def _base_rows(clause: Clause, facts: Facts, max_rows: int, seed: int = 0) -> Table:
    """The base's bindings with their examples. A static base (``input_move``: every move there
    is) holds in every example; where that cross product is too large, it is crossed with some
    examples only (`_some_examples`)."""
    table = body_table(clause, facts, max_rows)
    try:
        return _with_examples(table, facts, max_rows)
    except TooLarge:
        if "ex" in table.cols:
            raise
        return join(table, _some_examples(facts.n, table.n, seed), [], max_rows)


def _some_examples(n: int, rows_each: int, seed: int = 0) -> Table:
    """The examples a static base of ``rows_each`` rows is crossed with when all ``n`` would be too
    many rows (freeforall's 1,104 moves over thousands of states): as many as ``SAMPLE_ROWS``
    allows, at least ``MIN_SAMPLE`` (`_draw`, as `_sample` draws). `_sample` then keeps them all."""
    chosen = _draw(np.full(n, rows_each), SAMPLE, SAMPLE_ROWS, MIN_SAMPLE, seed)
    return Table({"ex": chosen}, len(chosen))


def _labels(table: Table, k: int, facts: Facts, targets: Targets) -> tuple[np.ndarray, np.ndarray] | None:
    """Per base row: whether its head atom is scored (a candidate atom), and whether it is positive."""
    cand = targets.table
    if any(v not in table.cols for v in range(k)) or "ex" not in table.cols:
        return None
    rk, ck = pack([table.cols[v] for v in range(k)], [[cand.cols[("a", j)] for j in range(k)]])
    order = np.argsort(ck, kind="stable")
    at = np.searchsorted(ck[order], rk)
    at_ok = np.minimum(at, len(ck) - 1) if len(ck) else at
    scored = (at < len(ck)) & (ck[order][at_ok] == rk) if len(ck) else np.zeros(table.n, dtype=bool)
    atom = cand.cols["atom"][order][at_ok]
    keys = table.cols["ex"] * targets.n_atoms + atom
    is_pos = arrays.isin(keys, targets.positives)
    return scored, is_pos[scored]
