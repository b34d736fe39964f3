"""The one symbolic evaluation path: learned rules + a split's backgrounds -> predicted target atoms.

Every rule-based model (``reference``, ``ilasp``, ``aspal``) predicts through :class:`RuleModel`,
so a difference in scores is a difference in rules, never in how they were run.

Two strategies give the same predictions (the tests check it) and differ in speed:

* ``batched`` (the default: never far behind, and up to 10x faster on big GDL programs): the rules are rewritten so that every dynamic atom
  carries an example index (``true_cell(E, 1, 2, x)``, see :func:`program.index_by_example`), the
  backgrounds of a chunk of examples go in as facts, and one grounding + one solve answers every
  example of the chunk. Statics and rules over statics only are grounded once per chunk, not per
  example.
* ``externals`` (the issue's wording): the rules, the statics as facts and an ``#external`` for
  every background atom are grounded once per (model, task); each example then only switches
  externals on and off (``assign_external``) and solves. No re-grounding per example, but one
  solver call per example.

``bench/bench_evaluate.py`` measures both. Models are pickled between processes (the orchestrator
ships them out of Ray workers), so the clingo state is a cache that is never pickled.
"""

from __future__ import annotations

from dataclasses import dataclass

import clingo
import numpy as np
import scipy.sparse as sp

from learners.ilp.program import (
    EXAMPLE_PRED,
    EXAMPLE_VAR,
    Signature,
    asp_constant,
    check_rules,
    index_by_example,
    parse_statements,
    relevant_rules,
)
from tasks.gdl.terms import IDENT
from tasks.task import Split, Task, parse_atom

STRATEGIES = ("batched", "externals")
DEFAULT_CHUNK = 512
"""Examples per grounding in the batched strategy: bounds memory on big splits (measured: larger
chunks gain little once the per-call overhead is amortised)."""


@dataclass(frozen=True)
class AspAtom:
    """A flattened atom spelled for clingo: ``name`` and its arguments' text (``1,2,x``; ``""``)."""

    name: str
    args: str
    arity: int

    def text(self) -> str:
        return f"{self.name}({self.args})" if self.arity else self.name

    def indexed(self, example: str) -> str:
        """The atom with an example index as first argument: ``true_cell(7,1,2,x)``."""
        return f"{self.name}({example},{self.args})" if self.arity else f"{self.name}({example})"

    @property
    def signature(self) -> Signature:
        return self.name, self.arity


def spell(task: Task, atoms: list[str], constants: dict[str, str]) -> list[AspAtom]:
    """Flattened atoms as :class:`AspAtom` (text only: building clingo symbols in Python is slow)."""
    out = []
    for a in atoms:
        name, args = parse_atom(a)
        if not IDENT.match(name):
            raise ValueError(f"task {task.name}: predicate of {a!r} is not an ASP identifier")
        for c in args:
            if c not in constants:
                constants[c] = str(asp_constant(c))
        out.append(AspAtom(name, ",".join(constants[c] for c in args), len(args)))
    return out


@dataclass
class _TaskAtoms:
    """A task's atoms spelled for clingo, computed once per task (shared by all strategies)."""

    background: list[AspAtom]
    target: list[AspAtom]
    static_mask: np.ndarray  # over background ids
    target_signatures: set[Signature]

    @classmethod
    def of(cls, task: Task) -> _TaskAtoms:
        constants: dict[str, str] = {}
        background = spell(task, task.background_atoms.names, constants)
        target = spell(task, task.target_atoms.names, constants)
        static_mask = np.zeros(len(background), dtype=bool)
        static_mask[np.asarray(task.statics, dtype=np.int64)] = True
        return cls(background, target, static_mask, {a.signature for a in target})

    def static_signatures(self) -> set[Signature]:
        """Predicates all of whose background atoms are statics: the same in every example."""
        sig: dict[Signature, bool] = {}
        for a, static in zip(self.background, self.static_mask.tolist(), strict=True):
            sig[a.signature] = sig.get(a.signature, True) and static
        return {k for k, static in sig.items() if static}

    def background_signatures(self) -> set[Signature]:
        return {a.signature for a in self.background}


_ATOMS_CACHE: dict[int, tuple[object, object, _TaskAtoms]] = {}


def task_atoms(task: Task) -> _TaskAtoms:
    """The clingo symbols of a task's vocabularies, cached by vocabulary identity.

    ``Task.for_predicate`` shares the background vocabulary but not the target one, so both are
    part of the key; the cache holds the vocabularies so their ids cannot be reused while cached.
    """
    key = id(task.background_atoms) ^ (id(task.target_atoms) << 1)
    hit = _ATOMS_CACHE.get(key)
    if hit is not None and hit[0] is task.background_atoms and hit[1] is task.target_atoms:
        return hit[2]
    atoms = _TaskAtoms.of(task)
    if len(_ATOMS_CACHE) >= 16:
        _ATOMS_CACHE.pop(next(iter(_ATOMS_CACHE)))
    _ATOMS_CACHE[key] = (task.background_atoms, task.target_atoms, atoms)
    return atoms


def _body_signatures(rules: str) -> set[Signature]:
    """Every predicate the rules mention (only those backgrounds are worth handing to clingo)."""
    found: set[Signature] = set()

    class Collect(clingo.ast.Transformer):
        def visit_SymbolicAtom(self, node):  # noqa: N802 (clingo's visitor naming)
            t = node.symbol
            if t.ast_type == clingo.ast.ASTType.Function:
                found.add((t.name, len(t.arguments)))
            elif t.ast_type == clingo.ast.ASTType.SymbolicTerm:
                found.add((t.symbol.name, len(t.symbol.arguments)))
            return node

    collect = Collect()
    for s in parse_statements(rules):
        collect(s)
    return found


def _target_codes(atoms: _TaskAtoms, indexed: bool) -> str:
    """Facts naming every target atom by its column, and ``#show`` of the columns that hold.

    Reading one integer per true atom (``E * m + j`` when example-indexed) is several times
    faster than decoding clingo symbols in Python, which dominated the evaluation time.
    """
    m = max(1, len(atoms.target))
    lines = [f"target_column__({a.text()},{j})." for j, a in enumerate(atoms.target)]
    for name, arity in sorted(atoms.target_signatures):
        args = [f"A{k}" for k in range(arity)]
        term = f"{name}({','.join(args)})" if arity else name
        if indexed:
            atom = f"{name}({','.join([EXAMPLE_VAR, *args])})"
            code = f"{EXAMPLE_VAR}*{m}+J"
        else:
            atom, code = term, "J"
        lines.append(f"#show {code} : {atom}, target_column__({term},J).")
    lines.append("#show.")  # nothing else is shown
    return "\n".join(lines)


def _control() -> clingo.Control:
    return clingo.Control(["--warn=none"])


def _empty(n_rows: int, n_cols: int) -> sp.csr_matrix:
    return sp.csr_matrix((n_rows, n_cols), dtype=bool)


class _Batched:
    """Example-indexed rules; one grounding and one solve per chunk of examples."""

    def __init__(self, rules: str, task: Task, chunk: int) -> None:
        self.atoms = task_atoms(task)
        rules = relevant_rules(rules, self.atoms.target_signatures)
        static = self.atoms.static_signatures()
        dynamic_bg = self.atoms.background_signatures() - static
        self.program, dynamic = index_by_example(rules, dynamic_bg | self.atoms.target_signatures)
        used = _body_signatures(rules)
        bg = self.atoms.background
        # Per background atom: the text of its fact with the example index left to fill in.
        self.fact_parts: list[tuple[str, str] | None] = [None] * len(bg)
        statics: list[str] = []
        self.always: list[int] = []  # statics of dynamic predicates: added to every example
        for i, a in enumerate(bg):
            if a.signature not in used:
                continue
            if self.atoms.static_mask[i] and a.signature not in dynamic:
                statics.append(a.text() + ".")
                continue
            self.fact_parts[i] = (f"{a.name}(", f",{a.args})." if a.arity else ").")
            if self.atoms.static_mask[i]:
                self.always.append(i)
        self.statics = "\n".join(statics)
        m = max(1, len(self.atoms.target))
        self.width = m
        # clingo integers are 32 bit: the shown code E * m + j must fit.
        self.chunk = max(1, min(chunk, (2**31 - 1) // m - 1))
        self.shows = _target_codes(self.atoms, indexed=True)

    def predict(self, split: Split) -> sp.csr_matrix:
        n, m = split.n_examples, len(self.atoms.target)
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        for start in range(0, n, self.chunk):
            r, c = self._chunk(split, start, min(n, start + self.chunk))
            rows.append(r)
            cols.append(c)
        if not rows:
            return _empty(n, m)
        r, c = np.concatenate(rows), np.concatenate(cols)
        return sp.csr_matrix((np.ones(len(r), dtype=bool), (r, c)), shape=(n, m))

    def _chunk(self, split: Split, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        parts = self.fact_parts
        # Examples are numbered from 0 within a chunk, so the shown codes stay small.
        facts = [f"{EXAMPLE_PRED}(0..{stop - start - 1}).", self.statics]
        b = split.background
        for e in range(start, stop):
            es = str(e - start)
            for i in b.indices[b.indptr[e] : b.indptr[e + 1]]:
                p = parts[i]
                if p is not None:
                    facts.append(p[0] + es + p[1])
            for i in self.always:
                p = parts[i]
                assert p is not None, "an always-true background atom has its text parts"
                facts.append(p[0] + es + p[1])
        ctl = _control()
        ctl.add("base", [], self.program)
        ctl.add("base", [], "\n".join(facts))
        ctl.add("base", [], self.shows)
        ctl.ground([("base", [])])
        codes: list[int] = []

        def on_model(model: clingo.Model) -> None:
            codes[:] = [s.number for s in model.symbols(shown=True)]

        ctl.solve(on_model=on_model)
        code = np.asarray(codes, dtype=np.int64)
        return code // self.width + start, code % self.width


class _Externals:
    """Rules grounded once per task with every background atom external; one solve per example."""

    def __init__(self, rules: str, task: Task) -> None:
        self.atoms = task_atoms(task)
        rules = relevant_rules(rules, self.atoms.target_signatures)
        used = _body_signatures(rules)
        bg = self.atoms.background
        lines: list[str] = []
        dynamic_ids: list[int] = []
        for i, a in enumerate(bg):
            if a.signature not in used:
                continue
            if self.atoms.static_mask[i]:
                lines.append(a.text() + ".")
            else:
                lines.append(f"#external {a.text()}.")
                dynamic_ids.append(i)
        shows = _target_codes(self.atoms, indexed=False)
        self.ctl = _control()
        self.ctl.add("base", [], rules)
        self.ctl.add("base", [], "\n".join(lines))
        self.ctl.add("base", [], shows)
        self.ctl.ground([("base", [])])
        # Background id -> solver literal of its external (0: clingo dropped it, it matters nowhere).
        self.literal = np.zeros(len(bg), dtype=np.int64)
        symbolic = self.ctl.symbolic_atoms
        for i in dynamic_ids:
            sym = symbolic[clingo.parse_term(bg[i].text())]
            if sym is not None and sym.is_external:
                self.literal[i] = sym.literal
        self.on: set[int] = set()

    def predict(self, split: Split) -> sp.csr_matrix:
        n, m = split.n_examples, len(self.atoms.target)
        rows: list[int] = []
        cols: list[int] = []
        b = split.background
        for e in range(n):
            lits = self.literal[b.indices[b.indptr[e] : b.indptr[e + 1]]]
            now = set(lits[lits != 0].tolist())
            for lit in self.on - now:
                self.ctl.assign_external(lit, False)
            for lit in now - self.on:
                self.ctl.assign_external(lit, True)
            self.on = now
            found: list[int] = []

            def on_model(model: clingo.Model, found: list[int] = found) -> None:
                found[:] = [s.number for s in model.symbols(shown=True)]

            self.ctl.solve(on_model=on_model)
            rows.extend([e] * len(found))
            cols.extend(found)
        return sp.csr_matrix((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(n, m))


class RuleModel:
    """A symbolic model: clingo rules over flattened IGGP predicates, evaluated by clingo.

    ``RuleModel("next_cell(X,Y,x) :- does_mark(P,X,Y), role_white(P).", name="ilasp")``. Heads may
    be target predicates or auxiliary ones (only the task's target atoms are read back). The rules
    are checked at construction: a :class:`program.RuleError` quotes the rule clingo rejects.
    """

    def __init__(
        self,
        rules: str,
        name: str = "rules",
        *,
        strategy: str = "batched",
        chunk: int = DEFAULT_CHUNK,
        note: str = "",
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown evaluation strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
        check_rules(rules, f"rules of model {name!r}")
        self.text = rules
        self.name = name
        self.strategy = strategy
        self.chunk = chunk
        self.note = note
        self._cache: tuple[Task, _Batched | _Externals] | None = None

    def rules(self) -> str:
        return self.text

    def describe(self) -> str:
        n = sum(1 for s in parse_statements(self.text) if s.ast_type == clingo.ast.ASTType.Rule)
        extra = f"; {self.note}" if self.note else ""
        return f"{self.name}: {n} rules{extra}"

    def _evaluator(self, task: Task) -> _Batched | _Externals:
        if self._cache is None or self._cache[0] is not task:
            ev = (
                _Batched(self.text, task, self.chunk)
                if self.strategy == "batched"
                else _Externals(self.text, task)
            )
            self._cache = (task, ev)
        return self._cache[1]

    def predict(self, task: Task, split: Split) -> sp.csr_matrix:
        """Boolean (n_examples x |target_atoms|) predictions; the grounding is cached per task."""
        if split.n_examples == 0:
            return _empty(0, len(task.target_atoms))
        return self._evaluator(task).predict(split)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_cache"] = None  # clingo state stays in the process that built it
        return state

    def __repr__(self) -> str:
        return f"RuleModel({self.name!r}, {len(self.text)} chars, strategy={self.strategy!r})"
