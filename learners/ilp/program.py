"""Flattened IGGP atoms as clingo terms, and rule programs checked and rewritten for evaluation.

Flattened atoms (``true_cell(1, 2, x)``, ``terminal()``) are plain ASP atoms once spelled right:
``terminal()`` is the propositional atom ``terminal``, and a constant that is not an ASP identifier
or an integer in canonical form (``Alice``, ``007``, ``a-b``) becomes an ASP *string*
(``"Alice"``). :func:`asp_constant` and :func:`flat_atom` are inverse, so every learner that writes
constants into rules must spell them with :func:`asp_constant` (or :func:`asp_atom`) to match the
backgrounds the evaluator feeds to clingo.

:func:`index_by_example` rewrites a rule program so that many examples can share one grounding:
every atom whose truth can differ between examples gets the example index as a new first
argument (``true_cell(E, 1, 2, x)``); atoms that are the same in every example (statics and what
follows from them alone) keep their arity and are grounded once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import clingo
import clingo.ast as ast

from tasks.asp import rejection
from tasks.gdl.terms import IDENT, INTEGER  # one spelling of constants for GDL and learned rules
from tasks.task import parse_atom

EXAMPLE_VAR = "ExampleIndex__"
"""The variable that carries the example index in rewritten rules (not one a learner would write)."""

EXAMPLE_PRED = "example__"
"""``example__(E)`` holds for every example index of a batch; it makes rewritten rules safe."""


class RuleError(ValueError):
    """A rule program clingo cannot parse or ground (unsafe variables, syntax): names the rule."""


def asp_constant(text: str) -> clingo.Symbol:
    """The clingo term for a constant of a flattened atom (identifier, integer, or else a string)."""
    if IDENT.match(text):
        return clingo.Function(text)
    if INTEGER.match(text):
        return clingo.Number(int(text))
    return clingo.String(text)


def constant_text(symbol: clingo.Symbol) -> str:
    """Inverse of :func:`asp_constant`."""
    if symbol.type == clingo.SymbolType.String:
        return symbol.string
    if symbol.type == clingo.SymbolType.Number:
        return str(symbol.number)
    if symbol.type == clingo.SymbolType.Function and not symbol.arguments and symbol.positive:
        return symbol.name
    raise ValueError(f"{symbol} is not a constant of a flattened atom")


def asp_atom(flat: str) -> clingo.Symbol:
    """The clingo atom for a flattened atom: ``true_cell(1, 2, x)`` -> ``true_cell(1,2,x)``."""
    name, args = parse_atom(flat)
    if not IDENT.match(name):
        raise ValueError(f"predicate of {flat!r} is not an ASP identifier (lower-case letter first)")
    return clingo.Function(name, [asp_constant(a) for a in args])


def flat_atom(symbol: clingo.Symbol) -> str:
    """Inverse of :func:`asp_atom`, in the dataset's spelling (``p(a, b)``, ``terminal()``)."""
    return f"{symbol.name}({', '.join(constant_text(a) for a in symbol.arguments)})"


def _source_lines(text: str, message: str) -> str:
    """The rule text that clingo's ``<block>:LINE:COL`` positions in ``message`` point at."""
    lines = text.splitlines()
    quoted: list[str] = []
    for m in re.finditer(r"<(?:block|string)>:(\d+):\d+(?:-(\d+):\d+)?", message):
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else first
        for n in range(first, min(last, len(lines)) + 1):
            line = f"  line {n}: {lines[n - 1].strip()}"
            if line not in quoted:
                quoted.append(line)
    return "\n".join(quoted)


def check_rules(rules: str, what: str = "rules") -> None:
    """Parse and ground ``rules`` on no data; a :class:`RuleError` quotes clingo and the bad rule."""
    detail = rejection(rules)
    if detail is not None:
        raise RuleError(f"clingo rejects the {what}: {detail}\n{_source_lines(rules, detail)}")


Signature = tuple[str, int]
"""A predicate as clingo sees it: (name, arity)."""


def parse_statements(rules: str) -> list[ast.AST]:
    statements: list[ast.AST] = []
    ast.parse_string(rules, statements.append)
    return statements


def _atom_function(atom: ast.AST) -> ast.AST | None:
    """The ``Function`` node of a symbolic atom (None for comparisons, aggregates, ...)."""
    if atom.ast_type != ast.ASTType.SymbolicAtom:
        return None
    term = atom.symbol
    if term.ast_type == ast.ASTType.Function:
        return term
    if term.ast_type == ast.ASTType.SymbolicTerm and term.symbol.type == clingo.SymbolType.Function:
        return term  # a constant atom such as ``terminal`` may come as a symbolic term
    return None


def _signature(term: ast.AST) -> Signature:
    if term.ast_type == ast.ASTType.Function:
        return term.name, len(term.arguments)
    return term.symbol.name, len(term.symbol.arguments)


class _Collect(ast.Transformer):
    """Records the (head, body-signatures) dependencies of every rule."""

    def __init__(self) -> None:
        self.atoms: list[Signature] = []

    def visit_SymbolicAtom(self, node: ast.AST) -> ast.AST:  # noqa: N802 (clingo's visitor naming)
        term = _atom_function(node)
        if term is not None:
            self.atoms.append(_signature(term))
        return node


def _rule_signatures(statement: ast.AST) -> tuple[list[Signature], list[Signature]]:
    head, body = _Collect(), _Collect()
    head(statement.head)
    for literal in statement.body:
        body(literal)
    return head.atoms, body.atoms


def dynamic_signatures(statements: list[ast.AST], seeds: Iterable[Signature]) -> set[Signature]:
    """Predicates whose truth may differ between examples: the seeds and all that depend on them."""
    dynamic = set(seeds)
    rules = [_rule_signatures(s) for s in statements if s.ast_type == ast.ASTType.Rule]
    changed = True
    while changed:
        changed = False
        for heads, body in rules:
            if any(b in dynamic for b in body):
                for h in heads:
                    if h not in dynamic:
                        dynamic.add(h)
                        changed = True
    return dynamic


_SHOWS = (ast.ASTType.ShowSignature, ast.ASTType.ShowTerm)


def relevant_rules(rules: str, targets: Iterable[Signature]) -> str:
    """Only the rules the ``targets`` depend on (plus constraints), without ``#show`` statements.

    A game's GDL defines legal, next, goal and terminal at once; a ``next`` task needs a fraction
    of it. Slicing before grounding made the reference model several times faster.
    """
    statements = [s for s in parse_statements(rules) if s.ast_type not in _SHOWS]
    deps: dict[Signature, set[Signature]] = {}
    for s in statements:
        if s.ast_type == ast.ASTType.Rule:
            heads, body = _rule_signatures(s)
            for h in heads:
                deps.setdefault(h, set()).update(body)
    needed = set(targets)
    todo = list(needed)
    while todo:
        for b in deps.get(todo.pop(), ()):
            if b not in needed:
                needed.add(b)
                todo.append(b)
    keep = []
    for s in statements:
        if s.ast_type == ast.ASTType.Rule:
            heads, _ = _rule_signatures(s)
            if heads and not any(h in needed for h in heads):
                continue
        if s.ast_type != ast.ASTType.Program:
            keep.append(str(s))
    return "\n".join(keep) + "\n"


class _AddExampleIndex(ast.Transformer):
    def __init__(self, dynamic: set[Signature]) -> None:
        self.dynamic = dynamic
        self.indexed = False

    def visit_SymbolicAtom(self, node: ast.AST) -> ast.AST:  # noqa: N802
        term = _atom_function(node)
        if term is None or _signature(term) not in self.dynamic:
            return node
        self.indexed = True
        loc = term.location
        name, args = (
            (term.name, list(term.arguments))
            if term.ast_type == ast.ASTType.Function
            else (term.symbol.name, [ast.SymbolicTerm(loc, a) for a in term.symbol.arguments])
        )
        return node.update(symbol=ast.Function(loc, name, [ast.Variable(loc, EXAMPLE_VAR), *args], 0))


def index_by_example(rules: str, dynamic_seeds: Iterable[Signature]) -> tuple[str, set[Signature]]:
    """Rewrite ``rules`` so that dynamic atoms carry the example index; returns (text, dynamic set).

    A rule whose head becomes indexed gets ``example__(E)`` in its body so that it stays safe when
    its body is all static (``legal_noop(R) :- role(R).``). ``#show`` statements are dropped: the
    evaluator decides what it reads.
    """
    statements = parse_statements(rules)
    dynamic = dynamic_signatures(statements, dynamic_seeds)
    out: list[str] = []
    for s in statements:
        if s.ast_type in _SHOWS or s.ast_type == ast.ASTType.Program:
            continue
        if s.ast_type != ast.ASTType.Rule:
            out.append(str(s))
            continue
        head = _AddExampleIndex(dynamic)
        new_head = head(s.head)
        body = _AddExampleIndex(dynamic)
        new_body = [body(lit) for lit in s.body]
        if head.indexed or body.indexed:
            loc = s.location
            guard = ast.Literal(
                loc,
                ast.Sign.NoSign,
                ast.SymbolicAtom(ast.Function(loc, EXAMPLE_PRED, [ast.Variable(loc, EXAMPLE_VAR)], 0)),
            )
            new_body = [guard, *new_body]
        out.append(str(s.update(head=new_head, body=new_body)))
    return "\n".join(out) + "\n", dynamic
