"""The language bias: which rules may be learned, generated only from the task's type signature.

A hypothesis is a set of non-recursive normal rules with stratified negation over the flattened
IGGP language. For a target predicate ``h`` (``next_cell``) the bias says:

* the head is ``h`` with each argument a variable or a constant of its type;
* body literals are the task's background predicates (the ``true_*`` fluents, ``does*`` for
  ``next`` tasks, the statics), positive or negated, with typed variables and constants; at most
  ``max_body`` literals (default 5), at most ``max_vars`` variables besides the head's;
* ``X != Y`` between variables of one type family (``inequalities``);
* ``Y = X + K`` between variables of one integer type family, ``K`` from the seed (``offsets``);
* ``not p(...)`` only on a single literal whose variables are bound by positive literals, or
  anonymous (``not does_mark(_, X, Y)``: "nobody marks X,Y") - safe and stratified.

Types come from ``task.signature.arg_types(flat_predicate)``; a subtype declaration (``pos :> int``)
puts two types in one *family* (a variable may flow between them). Without a signature (hand-made
tasks) every argument has the single type ``t``. Nothing here is specific to one game.

Clauses are plain immutable values: variables are ints, constants are strings, ``None`` is ``_``.
:meth:`Clause.text` writes clingo text with variables named by type (``Pos1``, ``Agent1``) and
constants spelled by :func:`learners.ilp.program.asp_constant`, the evaluator's own spelling.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from learners.ilp.program import asp_constant
from tasks.task import Task, parse_atom

NEQ = "!="
OFFSET = "+"
"""``Literal(OFFSET, (x, y, k))`` is ``Y = X + K``: ``k`` the offset spelled as a string (a
constant to the code that walks arguments, never a variable), the predicate no name can have."""
MAX_OFFSET = 10
"""Largest ``|K|`` of an offset literal (a score's jump, not a distance across a board)."""
UNTYPED = "t"
SPECIFICITY_PER_CONSTANT = 100
"""A constant (in the head or the body) outweighs any number of singleton variables in
:meth:`Clause.specificity`."""

Term = int | str | None
"""A variable (int), a constant (str), or the anonymous variable (None, negated literals only)."""


@dataclass(frozen=True)
class Settings:
    """Search limits; the same for every game (no game-specific tuning).

    ``beam``: initial beam width (it doubles while seeds find nothing); ``sample``: examples the
    search tests candidates on (every kept rule is then verified on all training examples);
    ``max_rows``: a join larger than this is abandoned (the candidate is too general to test).
    """

    max_body: int = 5
    max_vars: int = 6
    negation: bool = True
    inequalities: bool = True
    beam: int = 6
    sample: int = 200
    max_rows: int = 2_000_000
    frame: bool = True
    """Frame-style candidates ``h(X..) :- b(X..), not ...`` (:mod:`learners.ilp.frame`)."""
    frame_constants: bool = True
    """Frame literals may name one constant of a small type (``true_cell(X2, Y2, b)``)."""
    frame_cover: bool = True
    """Several frame clauses over one base by sequential covering (:func:`learners.ilp.frame.frame_clauses`)."""
    frame_equal: bool = True
    """Frame literals ``X = Y`` and ``X != Y`` between head variables of one type family."""
    combine: bool = True
    """Seeds from what no found rule covers, one optimisation over all rules (else ILASP*'s cover)."""
    absence: bool = True
    """Negated literals with no variable, only constants and ``_`` (``not true_cell(_, _, b)``)."""
    complement: bool = True
    """A 0-ary target may be learned as ``h :- not inv_h`` with ``inv_h`` learned, when the direct
    program is not exact (``IlaspLearner._learn``; docs/ilp.md has the measured effect)."""
    defaults: bool = True
    """A functional target (one value per key in every example: ``goal``) may be learned as its
    non-default atoms plus one default rule per key, when the direct program is not exact
    (:mod:`learners.ilp.default_rules`)."""
    refit: bool = True
    """A train-perfect program is learned once more from train and validate pooled and replaced
    if that is complete too (``IlaspLearner._refit``)."""
    concepts: bool = True
    """``goal`` and ``terminal`` learn over a library of closures and counts defined from the
    signature (:mod:`learners.ilp.concepts`)."""
    seen_moves: bool = True
    """A ``legal`` target of a game that declares no moves (no ``input`` relation) gets the moves
    seen legal in training as a static base (:mod:`learners.ilp.seen_moves`)."""
    widen: bool = True
    """A 0-ary target's (``terminal``) seeds search past their first consistent clauses, for a
    bounded number of candidates, for one covering more positives (:meth:`learners.ilp.search.Search.run`).
    Only 0-ary: with head arguments a wider clause can join keys by coincidence (one rule for
    both roles' wins, ``goal(R, 100) :- true_cell(C, 3, R), true_cell(D, 1, R)``)."""
    lifted: bool = True
    """The beam keeps a place for its best lifted clauses (no constant in the body), which score
    nothing until the literal that joins them comes (:meth:`learners.ilp.search.Search._next_beam`)."""
    precise: bool = True
    """The beam keeps a place for its most precise clauses beside its best-scored ones
    (:func:`learners.ilp.search._most_precise`): a rule of several precise clauses is not crowded
    out by one overgeneral branch."""
    offsets: bool = True
    """``Y = X + K`` between variables of one integer type family, ``K`` the seed's difference
    (``next_score(Y) :- true_score(X), Y = X + 5``: a chain of five ``succ`` is past the body limit;
    :meth:`learners.ilp.refine.Refiner.refinements`)."""
    lines: bool = True
    """The concept library has lines: ``K`` atoms of a fluent in a row, a column or a diagonal
    over two integer arguments (``line_true_cell_1_2(x, 3)``; :mod:`learners.ilp.concepts`)."""
    held_cells: int = 16_000_000
    """Table cells (int64) one search level keeps alive (128 MiB); see :class:`learners.ilp.search.Held`."""
    data_atoms: int | None = 2_000_000
    """A train or validate split with more atoms (positives and background) is learned from a
    seeded sample of its examples that fits (:mod:`learners.ilp.data_bound`); None: whole splits."""
    generalise: bool = True
    """Each consistent clause a seed's search ends with is tried with a body literal left out and
    with its constants made variables, one at a time, while it stays consistent and covers no
    fewer positives (:func:`learners.ilp.search.generalise`): the beam reaches a clause through
    the seed's constants and one literal at a time, and nothing else would ask whether the rule
    needs them."""
    split: bool = True
    """With ``generalise``, a consistent clause's variables are also split in two where it stays
    consistent and covers no fewer positives (:func:`learners.ilp.refine.splits`): a seed's
    coincidences of values (a jump whose landing row equals its column) are joined into the
    clause by the refinement operator, and only a split asks whether the rule needs them."""
    related: bool = True
    """With ``generalise``, two constants of a consistent clause are also made variables joined by
    a binary static that holds of them in the seed (:func:`learners.ilp.refine.related`): a rule
    that compares two values (``greater(X, Y)`` between two scores) is out of the beam's reach."""
    max_work: int | None = None
    """A deterministic work bound (``ilasp_w<N>``): the fit's shares are counted in units of work
    instead of seconds, so a rerun on a loaded machine takes the same steps
    (:mod:`learners.ilp.meter`); the wall-clock budget still holds as a hard stop."""


@dataclass(frozen=True)
class Literal:
    """``p(args)``, ``not p(args)``, ``X != Y`` (``pred == NEQ``), ``X = Y`` (``NEQ``, negated) or
    ``Y = X + K`` (``pred == OFFSET``, args ``(X, Y, "K")``)."""

    pred: str
    args: tuple[Term, ...]
    negated: bool = False

    def variables(self) -> set[int]:
        return {a for a in self.args if isinstance(a, int)}

    @property
    def builtin(self) -> bool:
        """A comparison or an offset: no predicate of the task, and never a fact table."""
        return self.pred in (NEQ, OFFSET)


def offset(x: int, y: int, k: int) -> Literal:
    """``Y = X + K``."""
    return Literal(OFFSET, (x, y, str(k)))


@dataclass(frozen=True)
class Clause:
    """``head :- body``; ``types[v]`` is the type of variable ``v``."""

    head_pred: str
    head_args: tuple[Term, ...]
    body: tuple[Literal, ...]
    types: tuple[str, ...]

    @property
    def length(self) -> int:
        """The ILASP cost of a rule: its number of literals, head included."""
        return 1 + len(self.body)

    def bound(self) -> set[int]:
        """Variables bound by positive body literals, and by an offset ``Y = X + K`` whose ``X`` is
        bound (clingo binds ``Y`` by it, in any order of the body)."""
        out: set[int] = set()
        for lit in self.body:
            if not lit.negated and not lit.builtin:
                out |= lit.variables()
        offsets = [(lit.args[0], lit.args[1]) for lit in self.body if lit.pred == OFFSET]
        while True:
            more = {y for x, y in offsets if x in out and isinstance(y, int) and y not in out}
            if not more:
                return out
            out |= more

    def safe(self) -> bool:
        return all(a in self.bound() for a in self.head_args if isinstance(a, int))

    def singletons(self) -> int:
        """Variables that occur once: a literal joined to nothing else by them."""
        seen = Counter(a for a in self.head_args if isinstance(a, int))
        for lit in self.body:
            seen.update(a for a in lit.args if isinstance(a, int))
        return sum(1 for n in seen.values() if n == 1)

    def constants(self) -> int:
        """Constants in the head and the body (an offset's ``K`` belongs to the builtin)."""
        body = sum(1 for lit in self.body if lit.pred != OFFSET for a in lit.args if isinstance(a, str))
        return body + sum(1 for a in self.head_args if isinstance(a, str))

    def specificity(self) -> int:
        """The tie-break between equally short rules covering the same positives: fewer
        constants first, then fewer singleton variables.

        Why constants first: a rule naming a constant where a variable would do is the guess that
        fits only the states seen (``next_gameOver :- does(white, finish)`` when only white
        finished in training, black in test); a variable says the rule holds for every value.
        Singletons come second (``r(X, Y) :- p(X, Z), q(Z, Y)`` over ``r(X, Y) :- p(X, Z),
        q(W, Y)``: the literals that share variables are the better guess) and are no ban: rules
        like ``terminal :- true_cell(X, Y, b)`` need them.
        """
        return SPECIFICITY_PER_CONSTANT * self.constants() + self.singletons()

    def key(self) -> tuple:
        """Identity up to the order of body literals."""
        return (self.head_args, frozenset(self.body))

    def text(self) -> str:
        names = _variable_names(self)

        def term(a: Term) -> str:
            if a is None:
                return "_"
            if isinstance(a, int):
                return names[a]
            return str(asp_constant(a))

        def atom(pred: str, args: tuple[Term, ...]) -> str:
            return pred if not args else f"{pred}({','.join(term(a) for a in args)})"

        head = atom(self.head_pred, self.head_args)
        body = []
        for lit in self.body:
            if lit.pred == NEQ:
                body.append(f"{term(lit.args[0])} {'=' if lit.negated else '!='} {term(lit.args[1])}")
            elif lit.pred == OFFSET:
                x, y, k = lit.args
                sign = "-" if int(str(k)) < 0 else "+"
                body.append(f"{term(y)} = {term(x)} {sign} {abs(int(str(k)))}")
            else:
                body.append(("not " if lit.negated else "") + atom(lit.pred, lit.args))
        return head + "." if not body else f"{head} :- {', '.join(body)}."


def _variable_names(clause: Clause) -> dict[int, str]:
    """``Pos1, Pos2, Agent1``: numbered per type in order of first occurrence."""
    order: list[int] = []
    for a in clause.head_args + tuple(a for lit in clause.body for a in lit.args):
        if isinstance(a, int) and a not in order:
            order.append(a)
    counts: dict[str, int] = {}
    names: dict[int, str] = {}
    for v in order:
        t = clause.types[v]
        base = "".join(w[:1].upper() + w[1:] for w in t.replace("-", "_").split("_") if w) or "V"
        if not base[0].isalpha():
            base = "V" + base
        counts[base] = counts.get(base, 0) + 1
        names[v] = f"{base}{counts[base]}"
    return names


@dataclass
class Bias:
    """The language of one target predicate: typed head and body predicates, type families."""

    head_pred: str
    head_types: tuple[str, ...]
    body_types: dict[str, tuple[str, ...]]
    static_preds: set[str]
    family: dict[str, str] = field(default_factory=dict)
    constants: dict[str, list[str]] = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)
    fluents: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    """Each fluent's ground atoms seen in the learning splits, sorted: the candidates of a ground
    absence test ``not true_on(3, 4)`` (:meth:`learners.ilp.refine.Refiner._negated`)."""

    def __post_init__(self) -> None:
        self._declared = {c for cs in self.constants.values() for c in cs}
        self._integer = {t for t, cs in self.constants.items() if cs and all(map(is_integer, cs))}

    def compatible(self, a: str, b: str) -> bool:
        return self.family.get(a, a) == self.family.get(b, b)

    def integer(self, t: str) -> bool:
        """Whether every declared constant of type ``t`` is an integer (clingo's spelling of one):
        where ``Y = X + K`` means arithmetic. No signature, no integer types."""
        return t in self._integer

    def may_name(self, constant: str) -> bool:
        """Whether a rule may mention ``constant``: one the signature declares (of any type), or
        any constant when there is no signature.

        Why: an example's other constants are labels of that example alone (GraphLog's node names
        ``n4``); a rule that names one fits its seed and means nothing anywhere else.
        """
        return not self.constants or constant in self._declared


def is_integer(text: str) -> bool:
    """Whether ``text`` is clingo's spelling of an integer (``5``, ``-2``; not ``05`` or ``+5``)."""
    return text.lstrip("-").isdigit() and str(int(text)) == text


def type_families(signature: object) -> dict[str, str]:
    """Type -> representative of its subtype-connected family (union-find over ``a :> b``)."""
    parent: dict[str, str] = {}

    def find(t: str) -> str:
        while parent.get(t, t) != t:
            t = parent[t]
        return t

    for sup, subs in getattr(signature, "subtypes", {}).items():
        for sub in subs:
            ra, rb = find(sup), find(sub)
            if ra != rb:
                parent[rb] = ra
    return {t: find(t) for t in set(parent) | set(parent.values())}


def _undeclared_types(task: Task, sig, pred: str, arity: int) -> tuple[str, ...]:
    """Types for a predicate (of this arity) missing from the signature, from the declared types of
    its constants."""
    seen: list[set[str]] = [set() for _ in range(arity)]
    for i in task.seen_background_ids():
        name, args = parse_atom(task.background_atoms.names[i])
        if name == pred and len(args) == arity:
            for j, c in enumerate(args):
                seen[j].add(c)
    out = []
    for j, values in enumerate(seen):
        fits = [(len(cs), t) for t in sorted(sig.types()) if values <= set(cs := sig.constants(t))]
        out.append(min(fits)[1] if fits else f"{pred}_{j + 1}")
    return tuple(out)


def bias_for(task: Task, settings: Settings | None = None) -> Bias:
    """The bias of a single-predicate task (``task.for_predicate(p)``), from its signature.

    Body predicates are those occurring in the task's backgrounds and statics (so ``does*`` only
    for ``next``); their types come from the signature. Only the splits the task holds are read:
    under ``fit`` that is train and validate (:meth:`tasks.task.Task.learning_view`), never test.
    A predicate the signature does not declare
    (some published ``.typ`` files omit statics such as ``succ``) gets, per argument, the most
    specific declared type whose constants include every value seen there (:func:`_undeclared_types`).
    """
    settings = settings or Settings()
    preds = task.predicates
    if len(preds) != 1:
        raise ValueError(
            f"task {task.name}: the bias is per target predicate; use task.for_predicate(p) ({preds})"
        )
    head = preds[0]
    sig = task.signature
    seen = task.seen_background_ids()  # the task's own splits: train and validate under fit()
    arities: dict[str, int] = {}
    for i in seen:
        name, args = parse_atom(task.background_atoms.names[i])
        arities.setdefault(name, len(args))
    head_arity = len(parse_atom(task.target_atoms.names[0])[1]) if len(task.target_atoms) else 0

    declared = sig.all_flat_predicates() if sig is not None else {}

    def types_of(pred: str, arity: int) -> tuple[str, ...]:
        if sig is None:
            return (UNTYPED,) * arity
        if pred not in declared or len(declared[pred]) != arity:
            # undeclared, or a game relation of another arity that shares the name of a flattened
            # predicate (a rulesheet's own legal_select/5 beside legal(R, select(X, Y)) flattened to
            # legal_select/3): in ASP, name/arity is the predicate
            return _undeclared_types(task, sig, pred, arity)
        return tuple(declared[pred])

    static_ids = set(int(i) for i in task.statics)
    fluents: dict[str, list[tuple[str, ...]]] = {}
    for i in seen:
        if int(i) not in static_ids:
            name, args = parse_atom(task.background_atoms.names[i])
            fluents.setdefault(name, []).append(tuple(args))
    dynamic = set(fluents)
    body_types = {p: types_of(p, n) for p, n in arities.items()}
    static_preds = set(arities) - dynamic
    family = type_families(sig) if sig is not None else {}
    all_types = set(types_of(head, head_arity)) | {t for ts in body_types.values() for t in ts}
    constants = {t: list(sig.constants(t)) for t in all_types} if sig is not None else {}
    fluents = {p: sorted(set(atoms)) for p, atoms in sorted(fluents.items())}
    return Bias(
        head, types_of(head, head_arity), body_types, static_preds, family, constants, settings, fluents
    )
