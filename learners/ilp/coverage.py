"""Testing candidate rules outside the solver: a rule's coverage over many examples as vectorised joins.

A split's backgrounds become one fact table per background predicate (columns: the example index
``"ex"`` and the argument constants, interned as ints); statics become tables without ``"ex"``. A
rule body is a conjunctive query over those tables (:mod:`learners.ilp.relations`), and what the
rule derives is the set of (example, target atom) pairs, encoded as ``ex * |target_atoms| + atom``
("keys"). Comparing keys with the split's positives gives the rule's true and false positives over
*every* example at once - thousands of candidate tests per second instead of a clingo call each.

Work shared across the sub-predicates of one target: the parse of the background vocabulary and
the fact tables of a split are cached by the identity of the vocabulary / background matrix,
which ``Task.for_predicate`` shares between sub-predicates (``next_cell``, ``next_control`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from learners.ilp.bias import NEQ, OFFSET, Clause, Literal, is_integer
from learners.ilp.relations import Column, Table, TooLarge, join, matched, pack, semi
from tasks import arrays
from tasks.atoms import parse_atoms
from tasks.task import Split, Task, Vocabulary, parse_atom

__all__ = ["Facts", "Targets", "TooLarge", "extend", "derive", "evaluate_clause", "facts_for", "targets_for"]


NOT_INTEGER = np.iinfo(np.int64).min // 4
"""The value of a constant that is no integer: far from every integer plus an offset."""


class Constants:
    """Interned constants (shared by background and target atoms of a task)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self._integers: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None

    def id(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(name)
        return i

    def integers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(value of each id, ``NOT_INTEGER`` for a constant that is none; the integer values
        sorted; the id spelling each), for ``Y = X + K``: built once per set of constants (again
        only when more were interned since)."""
        if self._integers is None or self._integers[0] != len(self.names):
            values = np.array([int(c) if is_integer(c) else NOT_INTEGER for c in self.names], dtype=np.int64)
            ids = np.flatnonzero(values != NOT_INTEGER)
            order = np.argsort(values[ids], kind="stable")
            self._integers = (len(self.names), values, values[ids][order], ids[order])
        return self._integers[1:]


@dataclass
class ParsedVocabulary:
    """Every atom of a vocabulary as (predicate id, argument constant ids)."""

    preds: list[str]
    pred_of: np.ndarray  # atom -> predicate id
    args: np.ndarray  # atom x max_arity constant ids (-1 padding)
    arity: dict[str, int]

    @classmethod
    def of(cls, vocab: Vocabulary, constants: Constants) -> ParsedVocabulary:
        preds: dict[str, int] = {}
        arity: dict[str, int] = {}
        parsed = parse_atoms(vocab.names)
        width = max((len(args) for _, args in parsed), default=0)
        pred_of = np.zeros(len(parsed), dtype=np.int64)
        args = np.full((len(parsed), max(width, 1)), -1, dtype=np.int64)
        for i, (name, a) in enumerate(parsed):
            pred_of[i] = preds.setdefault(name, len(preds))
            arity.setdefault(name, len(a))
            for j, c in enumerate(a):
                args[i, j] = constants.id(c)
        return cls(list(preds), pred_of, args, arity)


_CACHE: dict[tuple, tuple[tuple, object]] = {}
_CACHE_SIZE = 32


def _cached(kind: str, owners: tuple, build):
    """A small cache keyed by the identity of every object the value is built from: the owners
    are held, so their ids cannot be reused meanwhile.

    Why every one: a target vocabulary parsed against one task's constants is not the parse
    against another's. Keyed by the vocabulary alone, the concept library's extended task (the
    same target vocabulary, new constant ids) got the plain task's parse, and its ``goal``
    searches ran over scrambled target arguments."""
    key = (kind, *map(id, owners))
    hit = _CACHE.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], owners, strict=True)):
        return hit[1]
    value = build()
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = (owners, value)
    return value


def _constants(task: Task) -> Constants:
    return _cached("constants", (task.background_atoms,), Constants)


def _parsed(vocab: Vocabulary, constants: Constants) -> ParsedVocabulary:
    return _cached("parsed", (vocab, constants), lambda: ParsedVocabulary.of(vocab, constants))


@dataclass
class Facts:
    """The backgrounds of some examples of a split, as fact tables (column ``j`` = argument ``j``)."""

    constants: Constants
    rows: np.ndarray  # split row of each example here (example i here is split row rows[i])
    dynamic: dict[str, Table]
    static: dict[str, Table]
    atoms_of: list[set[tuple[str, tuple[int, ...]]]] | None = None

    @property
    def n(self) -> int:
        return len(self.rows)

    def table(self, pred: str) -> Table | None:
        """``pred``'s facts; None where no example here holds it."""
        t = self.dynamic.get(pred)
        return t if t is not None else self.static.get(pred)

    def all_examples(self) -> Table:
        return Table({"ex": np.arange(self.n, dtype=np.int64)}, self.n)

    def of_examples(self, examples: np.ndarray) -> Facts:
        """These facts with the dynamic tables cut to ``examples`` (sorted indices here), each when
        first read; same indices, same statics. A literal's bindings on a sample of the examples
        then cost what the sample holds, not what the split does (the frame step tests thousands
        of literals on the rows of 200 examples of a split of 15,000)."""
        return _ExampleFacts(self.constants, self.rows, self.dynamic, self.static, None, examples)


class _ExampleFacts(Facts):
    """:meth:`Facts.of_examples`: the dynamic tables cut on first read."""

    def __init__(self, constants, rows, dynamic, static, atoms_of, examples: np.ndarray) -> None:
        super().__init__(constants, rows, dynamic, static, atoms_of)
        self._examples = examples
        self._cut: dict[str, Table] = {}

    def table(self, pred: str) -> Table | None:
        t = self.dynamic.get(pred)
        if t is None:
            return self.static.get(pred)
        cut = self._cut.get(pred)
        if cut is None:
            cut = self._cut[pred] = t.take(np.flatnonzero(arrays.isin(t.cols["ex"], self._examples)))
        return cut


def _build_facts(task: Task, split: Split, rows: np.ndarray) -> Facts:
    constants = _constants(task)
    vocab = _parsed(task.background_atoms, constants)
    statics = np.asarray(task.statics, dtype=np.int64)
    is_static_atom = np.zeros(len(vocab.pred_of), dtype=bool)
    is_static_atom[statics] = True
    sub = split.background[rows] if len(rows) != split.n_examples else split.background
    coo = sub.tocoo()
    ex, atom = coo.row.astype(np.int64), coo.col.astype(np.int64)
    keep = ~is_static_atom[atom]
    ex, atom = ex[keep], atom[keep]
    dyn_preds = set(vocab.pred_of[atom].tolist())
    # a predicate with both static and per-example atoms: its statics hold in every example
    mixed = [i for i in statics if vocab.pred_of[i] in dyn_preds]
    if mixed:
        m = np.asarray(mixed, dtype=np.int64)
        ex = np.concatenate([ex, np.repeat(np.arange(len(rows)), len(m))])
        atom = np.concatenate([atom, np.tile(m, len(rows))])
    order = np.argsort(vocab.pred_of[atom], kind="stable")
    ex, atom = ex[order], atom[order]
    pids = vocab.pred_of[atom]
    bounds = np.searchsorted(pids, np.arange(len(vocab.preds) + 1))
    dynamic: dict[str, Table] = {}
    for p, name in enumerate(vocab.preds):
        lo, hi = bounds[p], bounds[p + 1]
        if hi > lo:
            a = atom[lo:hi]
            cols: dict[Column, np.ndarray] = {"ex": ex[lo:hi]}
            for j in range(vocab.arity[name]):
                cols[("a", j)] = vocab.args[a, j]
            dynamic[name] = Table(cols, int(hi - lo))
    static: dict[str, Table] = {}
    for p, name in enumerate(vocab.preds):
        if p in dyn_preds:
            continue
        a = statics[vocab.pred_of[statics] == p]
        if len(a):
            static[name] = Table({("a", j): vocab.args[a, j] for j in range(vocab.arity[name])}, len(a))
    return Facts(constants, np.asarray(rows, dtype=np.int64), dynamic, static)


def facts_for(task: Task, split: Split, rows: np.ndarray | None = None) -> Facts:
    """Fact tables of ``split`` (or of its ``rows``), cached for the whole split across sub-predicates."""
    if rows is None:
        all_rows = np.arange(split.n_examples, dtype=np.int64)
        owners = (split.background, task.background_atoms)
        return _cached("facts", owners, lambda: _build_facts(task, split, all_rows))
    return _build_facts(task, split, np.asarray(rows, dtype=np.int64))


def example_atoms(task: Task, split: Split, row: int) -> list[tuple[str, tuple[str, ...]]]:
    """The dynamic background atoms of one example, parsed (the raw material of a bottom clause)."""
    statics = set(int(i) for i in task.statics)
    names = task.background_atoms.names
    return [parse_atom(names[i]) for i in split.background_of(row) if int(i) not in statics]


@dataclass
class Targets:
    """The scored target atoms of a split as a table, and its positives as keys and as a table."""

    table: Table  # columns ("a", j) and "atom": the candidate atoms
    n_atoms: int
    positives: np.ndarray  # sorted keys ex * n_atoms + atom over the examples in ``rows``
    rows: np.ndarray
    positive_table: Table = field(init=False)  # columns "ex", ("a", j), "key": one row per positive key

    def __post_init__(self) -> None:
        ex, atom = np.divmod(self.positives, max(self.n_atoms, 1))
        where = np.searchsorted(self.table.cols["atom"], atom)
        cols: dict[Column, np.ndarray] = {"ex": ex, "key": self.positives}
        for c, v in self.table.cols.items():
            if c != "atom":
                cols[c] = v[where]
        self.positive_table = Table(cols, len(ex))

    def every_key(self) -> np.ndarray:
        """Every scored key, sorted: each example here x each candidate atom."""
        atoms = self.table.cols["atom"]
        return (np.arange(len(self.rows), dtype=np.int64)[:, None] * self.n_atoms + atoms).ravel()


def targets_for(task: Task, split: Split, constants: Constants, rows: np.ndarray | None = None) -> Targets:
    vocab = _parsed(task.target_atoms, constants)
    cand = arrays.unique(np.asarray(split.candidates, dtype=np.int64))
    arity = len(parse_atom(task.target_atoms.names[0])[1]) if len(task.target_atoms) else 0
    cols: dict[Column, np.ndarray] = {("a", j): vocab.args[cand, j] for j in range(arity)}
    cols["atom"] = cand
    rows = np.arange(split.n_examples, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    pos = split.positives[rows].tocoo()
    is_cand = np.zeros(len(task.target_atoms), dtype=bool)
    is_cand[cand] = True
    keep = is_cand[pos.col]
    keys = arrays.unique(pos.row[keep].astype(np.int64) * len(task.target_atoms) + pos.col[keep])
    return Targets(Table(cols, len(cand)), len(task.target_atoms), keys, rows)


def _literal_table(lit: Literal, facts: Facts) -> Table:
    """The bindings of one literal alone: its facts filtered by constants and repeated variables."""
    base = facts.table(lit.pred)
    if base is None:
        return _holds_nowhere(lit)
    mask = np.ones(base.n, dtype=bool)
    first: dict[int, int] = {}
    for j, a in enumerate(lit.args):
        col = base.cols.get(("a", j))
        if col is None:
            return _holds_nowhere(lit)
        if isinstance(a, str):
            cid = facts.constants.index.get(a)
            if cid is None:
                return _holds_nowhere(lit)
            mask &= col == cid
        elif isinstance(a, int):
            if a in first:
                mask &= col == base.cols[("a", first[a])]
            else:
                first[a] = j
    idx = np.flatnonzero(mask)
    cols: dict[Column, np.ndarray] = {v: base.cols[("a", j)][idx] for v, j in first.items()}
    if "ex" in base.cols:
        cols["ex"] = base.cols["ex"][idx]
    out = Table(cols, len(idx))
    if not lit.negated and None in lit.args:
        out = out.distinct()  # ``_`` projects: one binding per distinct value of the rest
    return out


def _holds_nowhere(lit: Literal) -> Table:
    """No bindings, but a column for each of the literal's variables, so that the literals after it
    (a comparison, an offset, the head) still find them bound: for a predicate or constant that a
    split never holds (validate can lack what train has)."""
    return Table({a: np.zeros(0, dtype=np.int64) for a in lit.args if isinstance(a, int)}, 0)


def _with_examples(table: Table, facts: Facts, max_rows: int) -> Table:
    """Make the example index explicit (a body of statics only holds in every example)."""
    if "ex" in table.cols:
        return table
    return join(table, facts.all_examples(), [], max_rows)


def extend(table: Table, lit: Literal, facts: Facts, max_rows: int) -> Table:
    """The bindings of ``body, lit`` from the bindings of ``body``."""
    if lit.pred == NEQ:
        a, b = lit.args  # negated: ``X = Y``
        return table.take(np.flatnonzero((table.cols[a] == table.cols[b]) == lit.negated))
    if lit.pred == OFFSET:
        return _offset(table, lit, facts)
    lt = _literal_table(lit, facts)
    if lit.negated:
        if "ex" in lt.cols:
            table = _with_examples(table, facts, max_rows)
        on = [c for c in lt.cols if c in table.cols]
        return semi(table, lt, on, keep=False)
    on = [c for c in lt.cols if c in table.cols]
    return join(table, lt, on, max_rows)


def _offset(table: Table, lit: Literal, facts: Facts) -> Table:
    """``Y = X + K``: a filter where ``Y`` is bound already, else ``Y``'s binding.

    Columns hold constant ids: ``X``'s integer value plus ``K`` is mapped back to the id of the
    constant that spells it. A row whose ``X + K`` names no constant drops out. clingo would still
    derive the head atom with that new integer, but it is no target atom of the task (the task's
    target atoms are interned constants), so it is never scored; and a body literal over ``Y``
    could not hold for it either (facts hold only interned constants). ``Y`` is bound only for a
    head variable or a bound one (`learners.ilp.refine.Refiner._offsets`), never for a variable
    a negated literal alone would read.
    """
    x, y, k = lit.args
    values, sorted_values, sorted_ids = facts.constants.integers()
    if len(sorted_values) == 0:
        return table.take(np.zeros(0, dtype=np.int64))
    xs = values[table.cols[x]]
    want = xs + int(str(k))
    at = np.minimum(np.searchsorted(sorted_values, want), len(sorted_values) - 1)
    hit = (xs != NOT_INTEGER) & (sorted_values[at] == want)
    ys = sorted_ids[at]
    if y in table.cols:
        return table.take(np.flatnonzero(hit & (table.cols[y] == ys)))
    keep = np.flatnonzero(hit)
    out = table.take(keep)
    out.cols[y] = ys[keep]
    return out


def _head_fit(atoms: Table, clause: Clause, facts: Facts) -> tuple[np.ndarray, dict] | None:
    """Rows of ``atoms`` that fit the head's constants and repeated variables, and the renaming of
    argument columns to head variables; None when a head constant never occurs in the facts."""
    mask = np.ones(atoms.n, dtype=bool)
    rename: dict = {}
    for j, a in enumerate(clause.head_args):
        col = atoms.cols[("a", j)]
        if isinstance(a, str):
            cid = facts.constants.index.get(a)
            if cid is None:
                return None
            mask &= col == cid
        elif a in rename.values():
            first = next(k for k, v in rename.items() if v == a)
            mask &= col == atoms.cols[first]
        else:
            rename[("a", j)] = a
    return mask, rename


def _head_matches(atoms: Table, clause: Clause, facts: Facts) -> tuple[Table, list[int]] | None:
    """Target atoms (rows of ``atoms``) that fit the head's constants and repeated variables,
    with argument columns renamed to the head variables; also the head variables in order."""
    fit = _head_fit(atoms, clause, facts)
    if fit is None:
        return None
    mask, rename = fit
    kept = atoms.take(np.flatnonzero(mask))
    cols = {rename.get(k, k): v for k, v in kept.cols.items() if k in rename or not isinstance(k, tuple)}
    return Table(cols, kept.n), list(rename.values())


def counts(
    table: Table,
    clause: Clause,
    facts: Facts,
    targets: Targets,
    wanted: np.ndarray,
    cache: dict | None = None,
) -> tuple[int, int, int]:
    """(wanted positives covered, positives covered, atoms derived) without listing the derived atoms.

    The derived atoms are counted group by group (body bindings x candidate atoms agreeing on the
    bound head variables), so a general clause costs as little to test as a specific one.
    ``wanted`` is a boolean mask over ``targets.positive_table`` rows.
    """
    key = ("head", clause.head_args)
    matches = cache.get(key) if cache is not None else None
    if matches is None:
        matches = (
            _head_matches(targets.table, clause, facts),
            _head_matches(targets.positive_table, clause, facts),
        )
        if cache is not None:
            cache[key] = matches
    cand, pos = matches
    if cand is None or pos is None:
        return 0, 0, 0
    (cand, head_vars), (pos, _) = cand, pos
    bound = [v for v in head_vars if v in table.cols]
    has_ex = "ex" in table.cols
    proj = table.select(["ex", *bound] if has_ex else bound).distinct()
    if proj.n == 0:
        return 0, 0, 0
    if bound:
        pk, ck = pack([proj.cols[v] for v in bound], [[cand.cols[v] for v in bound]])
        values, per_value = np.unique(ck, return_counts=True)
        at = np.searchsorted(values, pk)
        at_ok = np.minimum(at, len(values) - 1) if len(values) else at
        hit = (at < len(values)) & (values[at_ok] == pk) if len(values) else np.zeros(len(pk), dtype=bool)
        derived = int(per_value[at_ok][hit].sum()) if len(values) else 0
    else:
        derived = proj.n * cand.n
    if not has_ex:
        derived *= facts.n
    on = (["ex"] if has_ex else []) + bound
    keys_hit = matched(pos, proj, on) if on else np.ones(pos.n, dtype=bool)
    full_wanted = wanted[_row_ids(targets.positive_table, pos)]
    return int((keys_hit & full_wanted).sum()), int(keys_hit.sum()), derived


def group_counts(
    table: Table,
    clause: Clause,
    facts: Facts,
    targets: Targets,
    wanted: np.ndarray,
    cache: dict | None = None,
) -> tuple[int, int, int, int, int]:
    """Coverage of an *unsafe* clause, counted on groups: (example, values of the bound head variables).

    A clause that has not bound all head variables yet would derive every value of the others,
    which makes every such clause look equally bad (a plateau: ``true_score(P, S0)`` before
    ``succ(S0, S)``). Counted per group instead - a group is positive when it holds a positive
    atom - it is scored as if its remaining head variables will be bound well, the optimistic
    estimate a top-down search needs. Returns (wanted positive groups covered, positive groups
    covered, groups derived, wanted positive groups, negative groups). What depends only on the
    head and the bound variables is kept in ``cache`` (one per search: ``wanted`` is fixed there).
    """
    head_vars = [a for a in dict.fromkeys(clause.head_args) if isinstance(a, int)]
    bound = [v for v in head_vars if v in table.cols]
    key = (clause.head_args, tuple(bound))
    prep = cache.get(key) if cache is not None else None
    if prep is None:
        prep = _GroupPrep.of(clause, bound, facts, targets, wanted)
        if cache is not None:
            cache[key] = prep
    if prep.empty:
        return 0, 0, 0, 1, 1
    has_ex = "ex" in table.cols
    proj = table.select(["ex", *bound] if has_ex else bound).distinct()
    jk = prep.bound_key([proj.cols[v] for v in bound], proj.n)
    at = np.minimum(np.searchsorted(prep.cvals, jk), len(prep.cvals) - 1)
    valid = prep.cvals[at] == jk
    if has_ex:
        derived = int(valid.sum())
        proj_group = proj.cols["ex"][valid] * len(prep.cvals) + at[valid]
        covered = arrays.isin(prep.pos_group, proj_group)
    else:
        derived = int(valid.sum()) * facts.n
        covered = arrays.isin(prep.pos_dense, at[valid])
    hit = np.zeros(prep.n_groups, dtype=bool)
    hit[prep.group_id[covered]] = True
    hit_wanted = np.zeros(prep.n_groups, dtype=bool)
    hit_wanted[prep.group_id[covered & prep.wanted_rows]] = True
    return int(hit_wanted.sum()), int(hit.sum()), derived, prep.n_wanted, prep.n_neg


def _no_ints() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


@dataclass
class _GroupPrep:
    """The body-independent part of :func:`group_counts` for one head pattern and bound set."""

    empty: bool
    radix: int = 1
    # (empty arrays until `of` fills them; an `empty` prep is never read)
    cvals: np.ndarray = field(default_factory=_no_ints)  # sorted distinct bound-value keys of the candidates
    pos_dense: np.ndarray = field(
        default_factory=_no_ints
    )  # per matching positive: its bound values in cvals
    pos_group: np.ndarray = field(default_factory=_no_ints)  # per matching positive: ex * |cvals| + pos_dense
    group_id: np.ndarray = field(default_factory=_no_ints)  # per matching positive: dense id of its group
    wanted_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    n_groups: int = 0
    n_wanted: int = 1
    n_neg: int = 1

    def bound_key(self, cols: list[np.ndarray], n: int) -> np.ndarray:
        key = np.zeros(n, dtype=np.int64)
        for c in cols:
            key = key * self.radix + c
        return key

    @classmethod
    def of(
        cls, clause: Clause, bound: list[int], facts: Facts, targets: Targets, wanted: np.ndarray
    ) -> _GroupPrep:
        cm = _head_matches(targets.table, clause, facts)
        pm = _head_matches(targets.positive_table, clause, facts)
        if cm is None or pm is None or cm[0].n == 0:
            return cls(True)
        (cand, _), (pos, _) = cm, pm
        radix = len(facts.constants.names) + 1
        if radix ** max(len(bound), 1) >= 2**62:
            radix = 0  # too many bound variables to pack: fall back to dense renumbering
        prep = cls(False, radix)
        if radix:
            ck = prep.bound_key([cand.cols[v] for v in bound], cand.n)
            pk = prep.bound_key([pos.cols[v] for v in bound], pos.n)
        else:
            ck, pk = pack([cand.cols[v] for v in bound], [[pos.cols[v] for v in bound]])
        prep.cvals = arrays.unique(ck)
        prep.pos_dense = np.searchsorted(prep.cvals, pk)
        prep.pos_group = pos.cols["ex"] * len(prep.cvals) + prep.pos_dense
        groups, prep.group_id = np.unique(prep.pos_group, return_inverse=True)
        prep.n_groups = len(groups)
        prep.wanted_rows = wanted[_row_ids(targets.positive_table, pos)]
        prep.n_wanted = max(len(arrays.unique(prep.group_id[prep.wanted_rows])), 1)
        prep.n_neg = max(facts.n * len(prep.cvals) - prep.n_groups, 1)
        if not radix:
            return cls(True)  # (rare) cannot look bodies up by key: treat as unscorable
        return prep


def _row_ids(full: Table, part: Table) -> np.ndarray:
    """Row numbers in ``full`` of the rows of ``part`` (matched by their unique ``key``)."""
    return np.searchsorted(full.cols["key"], part.cols["key"])


def derive(table: Table, clause: Clause, facts: Facts, targets: Targets, max_rows: int) -> np.ndarray:
    """Keys (ex * n_atoms + atom, distinct, unsorted) of the scored target atoms the clause derives.

    Head variables not bound by the body (an unsafe clause, met while refining) range over every
    candidate atom: that is the coverage the clause's safe refinements are bounded by.
    """
    cand = targets.table
    fit = _head_fit(cand, clause, facts)
    if fit is None:
        return np.zeros(0, dtype=np.int64)
    mask, rename = fit
    cand = cand.take(np.flatnonzero(mask))
    cand = Table(
        {rename[k]: v for k, v in cand.cols.items() if k in rename} | {"atom": cand.cols["atom"]}, cand.n
    )
    bound = [v for v in dict.fromkeys(rename.values()) if v in table.cols]
    proj = table.select(["ex", *bound] if "ex" in table.cols else bound).distinct()
    proj = _with_examples(proj, facts, max_rows)
    out = join(proj, cand, bound, max_rows)
    # distinct already: ``proj`` is, and an atom fixes the values of the bound head variables
    return out.cols["ex"] * targets.n_atoms + out.cols["atom"]


def body_table(clause: Clause, facts: Facts, max_rows: int) -> Table:
    """The bindings of ``clause``'s body over ``facts`` (raises TooLarge past ``max_rows``)."""
    table = Table.unit()
    for lit in clause.body:
        table = extend(table, lit, facts, max_rows)
    return table


def body_table_or_none(clause: Clause, facts: Facts, max_rows: int) -> Table | None:
    """:func:`body_table`, None where it is too large: a search skips such a clause."""
    try:
        return body_table(clause, facts, max_rows)
    except TooLarge:
        return None


def evaluate_clause(clause: Clause, facts: Facts, targets: Targets, max_rows: int) -> np.ndarray:
    """Keys the clause derives over ``facts``' examples (raises TooLarge when it is too general)."""
    return derive(body_table(clause, facts, max_rows), clause, facts, targets, max_rows)
