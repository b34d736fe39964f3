"""The GDL abstract syntax: terms, body literals and rules, each with its source position.

GDL (Love et al. 2008) is Datalog with stratified negation and restricted function symbols,
written in KIF prefix syntax. Atoms and compound terms share one shape (`Func`), because in KIF
a relation application and a function application look the same; what an expression *is*
depends only on where it appears (head/body position vs. argument position).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tasks.gdl.errors import Pos


@dataclass(frozen=True)
class Var:
    """A variable, written ``?x`` in KIF; ``name`` excludes the question mark."""

    name: str
    pos: Pos | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return f"?{self.name}"


@dataclass(frozen=True)
class Const:
    """A constant (object or nullary relation), e.g. ``white``, ``100``, ``terminal``."""

    name: str
    pos: Pos | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Func:
    """A compound term or atom ``(name arg...)`` with at least one argument."""

    name: str
    args: tuple[Term, ...]
    pos: Pos | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return f"({self.name} {' '.join(map(str, self.args))})"


Term = Var | Const | Func
"""A term; atoms are the terms that stand in literal position (their name is the relation)."""


@dataclass(frozen=True)
class Not:
    """Negation as failure: ``(not L)``; must be stratified."""

    lit: Literal
    pos: Pos | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return f"(not {self.lit})"


@dataclass(frozen=True)
class Distinct:
    """Syntactic inequality of two terms: ``(distinct a b)``."""

    left: Term
    right: Term
    pos: Pos | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return f"(distinct {self.left} {self.right})"


@dataclass(frozen=True)
class Or:
    """Disjunction in a rule body: ``(or L1 L2 ...)``; expanded into several rules for ASP."""

    lits: tuple[Literal, ...]
    pos: Pos | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return f"(or {' '.join(map(str, self.lits))})"


Literal = Var | Const | Func | Not | Distinct | Or


@dataclass(frozen=True)
class Rule:
    """``(<= head body...)``, or a fact when ``body`` is empty."""

    head: Const | Func
    body: tuple[Literal, ...]
    pos: Pos | None = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        if not self.body:
            return str(self.head)
        return f"(<= {self.head} {' '.join(map(str, self.body))})"


@dataclass
class Program:
    """A parsed GDL file: its rules in source order, plus what the parser skipped (with why)."""

    rules: list[Rule]
    file: str
    skipped: list[tuple[Pos, str]] = field(default_factory=list)
    asserted_distinct: list[Distinct] = field(default_factory=list)
    """Ground ``(distinct a b)`` facts written in the file (skipped as rules; see `tasks.gdl.kif`)."""


def relation(atom: Term) -> tuple[str, int]:
    """The relation (name, arity) of an atom."""
    if isinstance(atom, Func):
        return atom.name, len(atom.args)
    if isinstance(atom, Const):
        return atom.name, 0
    raise TypeError(f"not an atom: {atom}")


def variables(x: Term | Literal) -> Iterator[Var]:
    """All variable occurrences in a term or literal, left to right."""
    if isinstance(x, Var):
        yield x
    elif isinstance(x, Func):
        for a in x.args:
            yield from variables(a)
    elif isinstance(x, Not):
        yield from variables(x.lit)
    elif isinstance(x, Distinct):
        yield from variables(x.left)
        yield from variables(x.right)
    elif isinstance(x, Or):
        for lit in x.lits:
            yield from variables(lit)


def atoms_of(lit: Literal, negated: bool = False) -> Iterator[tuple[Term, bool]]:
    """The atoms a literal mentions, each with whether it occurs under negation."""
    if isinstance(lit, Not):
        yield from atoms_of(lit.lit, not negated)
    elif isinstance(lit, Or):
        for sub in lit.lits:
            yield from atoms_of(sub, negated)
    elif isinstance(lit, Const | Func):
        yield lit, negated
