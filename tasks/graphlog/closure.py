"""A rule program applied to GraphLog query graphs as a logic program: rules compose along paths.

Why: ILP learners (``ilasp``) learn one non-recursive definition per target predicate, e.g.
``rel_r5(X, Y) :- r2(X, Z), r7(Z, Y).``, and the common evaluation path applies those clauses once
to the background edges. A GraphLog query is resolved by composing rules along a path of length up
to 10, so one application only answers 2-hop queries. Read as a logic program, the learned heads
are relations too: the *bridge* ``rK(X, Y) :- rel_rK(X, Y).`` feeds every derived ``rel_rK`` back
into the bodies, and the least model is the closure of the graph under the rules. A world's own
rules (``Rule.clingo()``, heads ``rK``) need no bridge; they must resolve every query graph to
exactly its target, which checks the generator and this module at once.

How (clingo, thin): the program is rewritten so that every atom carries a graph id as its first
argument (``r3(G, n4, u)``), the graphs of a chunk go in as facts (their edges, ``query(G, u, v)``
as in :mod:`tasks.graphlog.as_task`, and their nodes), and one ground + one solve answers the whole
chunk. Nodes are named as in the Task encoding (``u``, ``v``, ``n4``), so learned clauses with the
constants ``u``/``v`` mean what they meant during learning.

Termination: every rule head gets ``node__(G, T)`` for each of its arguments ``T``, so derived atoms
range over the graph's own nodes only and grounding is finite whatever the clauses say (function
terms or arithmetic in a head cannot build new terms). Clauses clingo itself rejects (syntax,
unsafe variables) raise :class:`ClosureError` quoting clingo, before any rewriting.

Several stable models can only come from clauses with negation through the bridge (ILP learns
stratified programs, which have exactly one); we then take what holds in all of them (clingo's
cautious consequences). A chunk without any model is solved graph by graph, and a graph without
a model derives nothing (``Closure.unsat`` lists it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import clingo
import clingo.ast as ast
import numpy as np

from tasks.asp import rejection
from tasks.graphlog.as_task import graph_atoms, node_name
from tasks.graphlog.graphs import GraphSet
from tasks.graphlog.rules import Rule

GRAPH_VAR = "GraphId__"
"""The variable carrying the graph id in rewritten rules (not one a learner would write)."""

_RELATION = re.compile(r"^(?:rel_)?r(\d+)$")
_SKIPPED = tuple(
    getattr(ast.ASTType, t)
    for t in ("Program", "ShowSignature", "ShowTerm", "Comment")
    if hasattr(ast.ASTType, t)
)
DEFAULT_CHUNK = 1000
"""Graphs per grounding: a few hundred graphs of ~11 edges ground in milliseconds; the chunk only
bounds memory on big splits."""


class ClosureError(ValueError):
    """Clause text the closure cannot run: clingo's message (syntax, safety) or the unsupported form."""


@dataclass
class Closure:
    """Per graph, the relations derived for its query pair (u, v), and the graphs without a model."""

    derived: list[frozenset[int]]
    unsat: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Scores:
    """Exact: derived set == {target}. Resolved: target derived. Ambiguous: more than one derived."""

    exact: float
    resolved: float
    ambiguous: float
    n: int


def program_text(rules: str | Iterable[Rule]) -> str:
    """Clause text as given, or a rule set as its clingo clauses (``rK(X, Y) :- ri(X, Z), rj(Z, Y).``)."""
    return rules if isinstance(rules, str) else "\n".join(r.clingo() for r in rules) + "\n"


def _check(text: str) -> None:
    """Parse and ground the original text without facts: clingo reports syntax and unsafe variables."""
    detail = rejection(text)
    if detail is not None:
        raise ClosureError(f"clingo rejects the clauses: {detail}")


class _AddGraph(ast.Transformer):
    """Prefixes every atom with the graph variable; records each atom's name, arity and arguments."""

    def __init__(self) -> None:
        self.atoms: list[tuple[str, int, list[ast.AST]]] = []

    def visit_SymbolicAtom(self, node: ast.AST) -> ast.AST:  # noqa: N802 (clingo's visitor naming)
        t = node.symbol
        loc = t.location
        if t.ast_type == ast.ASTType.Function and t.name:
            name, args = t.name, list(t.arguments)
        elif t.ast_type == ast.ASTType.SymbolicTerm and t.symbol.type == clingo.SymbolType.Function:
            if not t.symbol.positive:
                raise ClosureError(f"classical negation is not supported: {t}")
            name, args = t.symbol.name, [ast.SymbolicTerm(loc, a) for a in t.symbol.arguments]
        else:
            raise ClosureError(f"unsupported atom {t} (a predicate applied to terms is expected)")
        self.atoms.append((name, len(args), args))
        return node.update(symbol=ast.Function(loc, name, [ast.Variable(loc, GRAPH_VAR), *args], 0))


def _literal(loc: ast.Location, name: str, args: list[ast.AST]) -> ast.AST:
    return ast.Literal(loc, ast.Sign.NoSign, ast.SymbolicAtom(ast.Function(loc, name, args, 0)))


def compile_program(rules: str | Iterable[Rule]) -> tuple[str, set[int]]:
    """The graph-indexed program (with bridges) and the relations its rules can derive.

    Accepted: normal rules ``head :- body.`` with an atom head (bodies may use negation,
    comparisons, ``query(X, Y)``, constants) and integrity constraints; ``#show`` is ignored.
    Predicates ending in ``__`` (``graph__``, ``node__``, ``out__``) are the closure's own.
    Anything else (choice or disjunctive heads, ``#const``, ...) raises :class:`ClosureError`.
    """
    text = program_text(rules)
    if GRAPH_VAR in text:
        raise ClosureError(f"the clauses use the reserved name {GRAPH_VAR}")
    _check(text)
    statements: list[ast.AST] = []
    ast.parse_string(text, statements.append)
    out: list[str] = []
    heads: set[tuple[str, int]] = set()
    for s in statements:
        if s.ast_type in _SKIPPED:
            continue
        if s.ast_type != ast.ASTType.Rule:
            raise ClosureError(f"only normal rules are supported, got: {s}")
        loc = s.location
        g = ast.Variable(loc, GRAPH_VAR)
        body = [_literal(loc, "graph__", [g])]
        head = s.head
        if head.ast_type == ast.ASTType.Literal and head.atom.ast_type == ast.ASTType.SymbolicAtom:
            if head.sign != ast.Sign.NoSign:
                raise ClosureError(f"a negated head is not supported: {s}")
            add = _AddGraph()
            head = add(head)
            name, arity, args = add.atoms[0]
            heads.add((name, arity))
            body += [_literal(loc, "node__", [g, a]) for a in args]  # derived atoms stay on the nodes
        elif not (head.ast_type == ast.ASTType.Literal and head.atom.ast_type == ast.ASTType.BooleanConstant):
            raise ClosureError(f"only rules with an atom head (or constraints) are supported, got: {s}")
        add = _AddGraph()
        body += [add(lit) for lit in s.body]
        out.append(str(s.update(head=head, body=body)))
    derivable: set[int] = set()
    for name, arity in sorted(heads):
        m = _RELATION.match(name)
        if arity != 2 or not m:
            continue
        k = int(m.group(1))
        derivable.add(k)
        if name.startswith("rel_"):  # the bridge: a derived rel_rK is an rK edge for every body
            out.append(f"r{k}({GRAPH_VAR}, X, Y) :- {name}({GRAPH_VAR}, X, Y).")
    for k in sorted(derivable):
        out.append(f"out__({GRAPH_VAR}, {k}) :- r{k}({GRAPH_VAR}, u, v).")
    out.append("#show out__/2.")
    return "\n".join(out) + "\n", derivable


def graph_facts(graphs: GraphSet, i: int, gid: int | None = None) -> str:
    """Graph ``i`` as facts under id ``gid`` (default ``i``): its Task-encoding atoms (edges and
    ``query(u, v)``, :func:`tasks.graphlog.as_task.graph_atoms`) with the id first, and its nodes."""
    gid = i if gid is None else gid
    u, v = int(graphs.query_u[i]), int(graphs.query_v[i])
    parts = [f"graph__({gid})."]
    parts += [f"node__({gid},{node_name(n, u, v)})." for n in range(int(graphs.n_nodes[i]))]
    parts += [atom.replace("(", f"({gid},", 1) + "." for atom in graph_atoms(graphs, i)]
    return " ".join(parts)


def _solve(program: str, facts: str) -> dict[int, set[int]] | None:
    """One ground + solve; graph id -> derived relations (cautious over stable models), None if unsat."""
    ctl = clingo.Control(["--warn=none", "--models=0", "--enum-mode=cautious"])
    ctl.add("base", [], program + facts)
    ctl.ground([("base", [])])
    last: list[clingo.Symbol] | None = None
    with ctl.solve(yield_=True) as handle:
        for model in handle:
            last = model.symbols(shown=True)
    if last is None:
        return None
    out: dict[int, set[int]] = {}
    for sym in last:
        out.setdefault(sym.arguments[0].number, set()).add(sym.arguments[1].number)
    return out


def closure(rules: str | Iterable[Rule], graphs: GraphSet, chunk: int = DEFAULT_CHUNK) -> Closure:
    """The relations the rules derive for each graph's query (u, v), composing along paths.

    ``rules`` is clause text (e.g. a learned model's ``rules()``) or a list of :class:`Rule`. An
    edge u -> v given in the graph is not "derived" (generated graphs never contain one).
    """
    program, _ = compile_program(rules)
    derived: list[frozenset[int]] = []
    unsat: list[int] = []
    for start in range(0, len(graphs), max(1, chunk)):
        ids = range(start, min(len(graphs), start + max(1, chunk)))
        found = _solve(program, "\n".join(graph_facts(graphs, i) for i in ids))
        if found is None:  # some graph has no model: find it, keep the others
            found = {}
            for i in ids:
                one = _solve(program, graph_facts(graphs, i))
                if one is None:
                    unsat.append(i)
                else:
                    found.update(one)
        for i in ids:
            derived.append(frozenset(found.get(i, set()) - _given(graphs, i)))
    return Closure(derived, unsat)


def _given(graphs: GraphSet, i: int) -> set[int]:
    """Relations of edges u -> v present in graph ``i`` itself (facts, not derivations)."""
    a, b = graphs.edge_ptr[i], graphs.edge_ptr[i + 1]
    hit = (graphs.src[a:b] == graphs.query_u[i]) & (graphs.dst[a:b] == graphs.query_v[i])
    return set(graphs.rel[a:b][hit].tolist())


def prediction(derived: frozenset[int]) -> int:
    """The predicted relation: the derived one when exactly one is derived, else -1 (no answer)."""
    return next(iter(derived)) if len(derived) == 1 else -1


def score(derived: Sequence[frozenset[int]], targets: Sequence[int] | np.ndarray) -> Scores:
    """Exact-match, resolved and ambiguous rates of derived sets against the targets."""
    targets = [int(t) for t in targets]
    if len(derived) != len(targets):
        raise ValueError(f"{len(derived)} derived sets for {len(targets)} targets")
    n = len(targets)
    if n == 0:
        return Scores(float("nan"), float("nan"), float("nan"), 0)
    exact = sum(d == {t} for d, t in zip(derived, targets, strict=True))
    resolved = sum(t in d for d, t in zip(derived, targets, strict=True))
    ambiguous = sum(len(d) > 1 for d in derived)
    return Scores(exact / n, resolved / n, ambiguous / n, n)
