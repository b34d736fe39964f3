"""The ``aspal`` learner: the plain meta-level encoding (ASPAL, IGGP paper sect. 5.2 and 6.2).

The whole hypothesis space goes into one clingo program, which is what ASPAL does and why it
fails on real tasks: every candidate rule is grounded against every training example.

* The space: every rule the language bias (:func:`learners.ilp.bias.bias_for`) allows with at most
  ``max_body`` body literals, enumerated here from the typed predicates and constants (heads with
  variables or constants; positive and negated body literals; ``X != Y``; safe by construction).
* Each candidate rule ``R`` carries a choice atom ``use__(R)`` in its body and costs its length
  (literals, head included) in a ``#minimize``.
* Every training example is encoded with example-indexed backgrounds (``true_cell(E, 1, 2, x)``,
  as :mod:`learners.ilp.evaluate` does); coverage constraints require every positive derived and no
  candidate negative derived (strict, the paper's ASPAL; ``aspal_soft`` makes both weak
  constraints that cost one each, at a higher priority than rule length).

Anytime: the empty program is reported first, then each better model clingo's optimisation finds.
Budget: the learner keeps its own (:meth:`AspalLearner._solve` grounds and solves in a child it kills
at the deadline), so it returns its best model within a second of the budget by itself.
The space is grown by body size (0, 1, ... ``max_body``), each level a complete ASPAL program, so
small hypotheses are found before the big space is built; the search stops early once the best
cost is provably optimal for the full space (a rule with ``L + 1`` body literals costs ``L + 2``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import clingo
import numpy as np

from learners.base import Budget, Report, ignore_report, register
from learners.ilp.bias import NEQ, Bias, Clause, Literal, Settings, Term, bias_for
from learners.ilp.evaluate import RuleModel, task_atoms
from learners.ilp.program import asp_constant
from procs.channel import Channel
from procs.child import start_child
from tasks.task import Task

MAX_RULES = 200_000
"""A space larger than this is not built (the job reports its best model so far): ASPAL's failure."""


# --- the hypothesis space ---------------------------------------------------------------------------


def _heads(bias: Bias, max_vars: int) -> Iterator[tuple[tuple[Term, ...], list[str]]]:
    """Head argument tuples: each argument a fresh variable or a constant of its type."""
    options = [[None, *bias.constants.get(t, [])] for t in bias.head_types]
    for combo in itertools.product(*options):
        types: list[str] = []
        args: list[Term] = []
        for t, c in zip(bias.head_types, combo, strict=True):
            if c is None:
                args.append(len(types))
                types.append(t)
            else:
                args.append(c)
        if len(types) <= max_vars:
            yield tuple(args), types


def _arguments(
    bias: Bias, ptypes: tuple[str, ...], types: list[str], i: int, max_vars: int
) -> Iterator[tuple[list[Term], list[str]]]:
    """Argument choices from position ``i`` on, with the types of the new variables they introduce."""
    if i == len(ptypes):
        yield [], []
        return
    t = ptypes[i]
    choices: list[tuple[Term, list[str]]] = [
        (v, []) for v in range(len(types)) if bias.compatible(types[v], t)
    ]
    choices += [(c, []) for c in bias.constants.get(t, [])]
    if len(types) < max_vars:
        choices.append((len(types), [t]))
    for term, new in choices:
        for rest, rest_new in _arguments(bias, ptypes, types + new, i + 1, max_vars):
            yield [term, *rest], new + rest_new


def _positive_literals(bias: Bias, types: list[str], max_vars: int) -> Iterator[tuple[Literal, list[str]]]:
    """Positive literals: each argument an existing variable of a compatible type, a constant, or a new variable."""
    for pred in sorted(bias.body_types):
        for args, new in _arguments(bias, bias.body_types[pred], types, 0, max_vars):
            yield Literal(pred, tuple(args)), types + new


def _negated_literals(bias: Bias, types: list[str], bound: set[int]) -> Iterator[Literal]:
    """``not p(..)`` over bound variables, constants and ``_`` (safe: no new named variables)."""
    for pred in sorted(bias.body_types):
        ptypes = bias.body_types[pred]
        per_arg = []
        for t in ptypes:
            per_arg.append(
                [v for v in sorted(bound) if bias.compatible(types[v], t)]
                + [*bias.constants.get(t, []), None]
            )
        for args in itertools.product(*per_arg):
            if any(a is not None for a in args) or not args:
                yield Literal(pred, tuple(args), negated=True)


def _inequalities(bias: Bias, types: list[str], bound: set[int]) -> Iterator[Literal]:
    for a, b in itertools.combinations(sorted(bound), 2):
        if bias.compatible(types[a], types[b]):
            yield Literal(NEQ, (a, b))


def _bound(body: tuple[Literal, ...]) -> set[int]:
    return {a for lit in body if not lit.negated and lit.pred != NEQ for a in lit.args if isinstance(a, int)}


def _canonical(head: tuple[Term, ...], body: tuple[Literal, ...]) -> tuple:
    """A key that identifies rules equal up to the order of body literals and variable names."""

    def shape(lit: Literal) -> tuple:
        return (
            lit.pred != NEQ,
            lit.negated,
            lit.pred,
            tuple("V" if isinstance(a, int) else str(a) for a in lit.args),
        )

    order = sorted(body, key=shape)
    names: dict[int, int] = {}
    for a in head + tuple(a for lit in order for a in lit.args):
        if isinstance(a, int) and a not in names:
            names[a] = len(names)

    def rename(args: tuple[Term, ...]) -> tuple:
        return tuple(("v", names[a]) if isinstance(a, int) else ("c", a or "_") for a in args)

    return rename(head), tuple(sorted((lit.pred, lit.negated, rename(lit.args)) for lit in order))


def _grow(
    bias: Bias,
    head: tuple[Term, ...],
    body: tuple[Literal, ...],
    types: list[str],
    phase: int,
    size: int,
    seen: set[tuple],
) -> Iterator[Clause]:
    """Extend ``body`` to ``size`` literals; ``phase`` 0/1/2 = adding positives/negations/inequalities."""
    settings = bias.settings
    if len(body) == size:
        if {a for a in head if isinstance(a, int)} <= _bound(body):
            key = _canonical(head, body)
            if key not in seen:
                seen.add(key)
                yield Clause(bias.head_pred, head, body, tuple(types))
        return
    last = body[-1] if body else None
    if phase == 0:
        for lit, new_types in _positive_literals(bias, types, settings.max_vars):
            if (last is None or lit.pred >= last.pred) and lit not in body:
                yield from _grow(bias, head, (*body, lit), new_types, 0, size, seen)
    bound = _bound(body)
    if settings.negation and phase <= 1:
        for lit in _negated_literals(bias, types, bound):
            if (phase == 0 or last is None or lit.pred >= last.pred) and lit not in body:
                yield from _grow(bias, head, (*body, lit), types, 1, size, seen)
    if settings.inequalities:
        for lit in _inequalities(bias, types, bound):
            if phase < 2 or last is None or lit.args > last.args:
                yield from _grow(bias, head, (*body, lit), types, 2, size, seen)


def hypothesis_space(bias: Bias, body_size: int) -> Iterator[Clause]:
    """Every safe rule of the bias with exactly ``body_size`` body literals (duplicates removed).

    Positive literals come first, then negated ones and inequalities over the variables they bind;
    literals of one kind are added in non-decreasing order, and a canonical key drops rules that
    differ only in literal order or variable names.
    """
    seen: set[tuple] = set()
    for head, head_types in _heads(bias, bias.settings.max_vars):
        yield from _grow(bias, head, (), head_types, 0, body_size, seen)


# --- the meta-level program ---------------------------------------------------------------------------


def _term(a: Term) -> str:
    if a is None:
        return "_"
    if isinstance(a, int):
        return f"V{a}"
    return str(asp_constant(a))


def _atom(pred: str, args: tuple[Term, ...], indexed: bool) -> str:
    terms = (["E"] if indexed else []) + [_term(a) for a in args]
    return f"{pred}({','.join(terms)})" if terms else pred


def indexed_rule(clause: Clause, rule_id: int, static_preds: set[str]) -> str:
    """A candidate rule guarded by ``use__(R)``, with example-indexed dynamic atoms."""
    body = [f"use__({rule_id})", "example__(E)"]
    for lit in clause.body:
        if lit.pred == NEQ:
            body.append(f"{_term(lit.args[0])}!={_term(lit.args[1])}")
        else:
            atom = _atom(lit.pred, lit.args, lit.pred not in static_preds)
            body.append(("not " if lit.negated else "") + atom)
    return f"{_atom(clause.head_pred, clause.head_args, True)} :- {', '.join(body)}."


def example_facts(task: Task, static_preds: set[str], used_preds: set[str]) -> str:
    """Training backgrounds (indexed), statics (once), positives and candidates as facts."""
    atoms = task_atoms(task)
    split = task.split("train")
    lines = [f"example__(0..{split.n_examples - 1})."] if split.n_examples else []
    static_ids = set(np.asarray(task.statics).tolist())
    always = []
    for i in sorted(static_ids):
        a = atoms.background[i]
        if a.name not in used_preds:
            continue
        if a.name in static_preds:
            lines.append(a.text() + ".")
        else:
            always.append(a)
    b, p = split.background, split.positives
    for e in range(split.n_examples):
        es = str(e)
        for i in b.indices[b.indptr[e] : b.indptr[e + 1]]:
            a = atoms.background[i]
            if a.name in used_preds:
                lines.append(a.indexed(es) + ".")
        lines += [a.indexed(es) + "." for a in always]
        lines += [f"pos__({es},{atoms.target[j].text()})." for j in p.indices[p.indptr[e] : p.indptr[e + 1]]]
    lines += [f"cand__({atoms.target[j].text()})." for j in split.candidates]
    return "\n".join(lines) + "\n"


def coverage_constraints(head_pred: str, head_arity: int, soft: bool) -> str:
    args = [f"A{i}" for i in range(head_arity)]
    term = f"{head_pred}({','.join(args)})" if args else head_pred
    lines = [f"derived__(E,{term}) :- {head_pred}({','.join(['E', *args])})."]
    uncovered = "pos__(E,T), not derived__(E,T)"
    wrong = "derived__(E,T), cand__(T), not pos__(E,T)"
    if soft:
        lines += [f":~ {uncovered}. [1@1,E,T,pos]", f":~ {wrong}. [1@1,E,T,neg]"]
    else:
        lines += [f":- {uncovered}.", f":- {wrong}."]
    lines.append("#minimize { L@0,R : use__(R), length__(R,L) }.")
    lines.append("{ use__(R) : length__(R,_) }.")
    lines.append("#show use__/1.")
    return "\n".join(lines) + "\n"


def _solve_child(send: Channel, task: Task, bias: Bias, space: list[Clause], soft: bool) -> None:
    """In the forked child (`procs.child`: its own process group, dies with its parent): build,
    ground and solve the ASPAL program, sending each better model.

    Messages: ``("model", cost, chosen_rule_ids)``, then ``("end", "optimal" | "unsatisfiable")``
    or ``("error", text)`` (text starting with the exception's class name).
    """
    try:
        static = bias.static_preds
        used = {lit.pred for c in space for lit in c.body if lit.pred != NEQ}
        parts = [indexed_rule(c, r, static) for r, c in enumerate(space)]
        parts += [f"length__({r},{c.length})." for r, c in enumerate(space)]
        program = "\n".join(parts) + "\n" + example_facts(task, static, used)
        program += coverage_constraints(bias.head_pred, len(bias.head_types), soft)
        ctl = clingo.Control(["--warn=none", "--opt-mode=opt"])
        ctl.add("base", [], program)
        ctl.ground([("base", [])])

        def on_model(model: clingo.Model) -> None:
            chosen = sorted(s.arguments[0].number for s in model.symbols(shown=True))
            send.send(("model", tuple(model.cost), chosen))

        result = ctl.solve(on_model=on_model)
        send.send(("end", "unsatisfiable" if result.unsatisfiable else "optimal"))
    except BaseException as exc:
        send.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        send.close()


# --- the learner --------------------------------------------------------------------------------------


@dataclass
class _Best:
    """The cost of the best hypothesis found so far for one predicate (clingo's cost vector)."""

    cost: tuple[int, ...] | None = None


Improved = Callable[[str, str], None]
"""Called with (rules text, note) for each better hypothesis of one predicate."""


def _hypothesis_text(clauses: list[Clause]) -> str:
    return "".join(c.text() + "\n" for c in clauses)


class AspalLearner:
    """ASPAL over the bias of each target predicate of the task (see the module docstring)."""

    name = "aspal"

    def __init__(self, max_body: int | None = None, soft: bool = False) -> None:
        self.settings = Settings(max_body=int(max_body)) if max_body is not None else Settings()
        self.soft = bool(soft)

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> RuleModel:
        learned: dict[str, str] = {p: "" for p in task.predicates}
        notes: dict[str, str] = {}

        def current() -> RuleModel:
            text = "".join(learned.values())
            note = "; ".join(f"{p}: {n}" for p, n in notes.items() if n)
            return RuleModel(text, name=self.name, note=note)

        report(current())
        for pred in task.predicates:
            if budget.expired():  # nothing after the deadline, not even building the next bias
                notes[pred] = "budget spent before this predicate"
                continue
            sub = task.for_predicate(pred) if len(task.predicates) > 1 else task

            def improved(text: str, note: str, pred: str = pred) -> None:
                learned[pred], notes[pred] = text, note
                report(current())

            best = _Best()
            status = self._fit_predicate(sub, budget, improved, best)
            notes[pred] = status if best.cost is None else f"{status}; cost {list(best.cost)}"
        return current()

    def _fit_predicate(self, task: Task, budget: Budget, improved: Improved, best: _Best) -> str:
        """Learn one predicate; returns how the search ended (for ``describe``)."""
        split = task.split("train")
        if split.positives.nnz == 0:
            return "no positive training example: the empty program"
        if budget.expired():
            return "budget spent before the bias was built"
        bias = bias_for(task, self.settings)
        space: list[Clause] = []
        for level in range(bias.settings.max_body + 1):
            if budget.expired():
                return f"budget spent at body size {level}"
            for n, clause in enumerate(hypothesis_space(bias, level)):
                if len(space) == MAX_RULES:
                    return f"space over {MAX_RULES} rules at body size {level}: not built"
                if n % 1000 == 999 and budget.expired():
                    return f"budget spent enumerating body size {level} ({len(space)} rules)"
                space.append(clause)
            status = self._solve(task, bias, space, budget, best, improved, level)
            if status != "optimal" and status != "unsatisfiable":
                return status
            if best.cost is not None and not any(best.cost[:-1]) and best.cost[-1] <= level + 2:
                return f"optimal for the whole space ({len(space)} rules up to body size {level})"
        if best.cost is None:
            return f"unsatisfiable: no consistent hypothesis up to body size {bias.settings.max_body}"
        return f"optimal over {len(space)} rules up to body size {bias.settings.max_body}"

    def _solve(
        self,
        task: Task,
        bias: Bias,
        space: list[Clause],
        budget: Budget,
        best: _Best,
        improved: Improved,
        level: int,
    ) -> str:
        """One complete ASPAL program over ``space``; returns optimal, unsatisfiable or why it stopped.

        Building, grounding and solving run in a forked child process that this learner kills at
        its own deadline: clingo's grounding cannot be interrupted, and an oversized ground used to
        overrun the budget by tens of seconds, waiting for the worker's kill. The child streams each
        better model (cost and chosen rule ids) back; the parent reports them and keeps its budget.
        """
        deadline = budget.deadline
        if deadline - time.monotonic() <= 0:
            return f"budget spent before grounding body size {level}"
        child = start_child(_solve_child, (task, bias, space, self.soft))
        recv = child.channel
        status: str | None = None
        try:
            while status is None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not recv.poll(min(wait, 3600.0)):
                    if deadline - time.monotonic() <= 0:
                        status = f"budget spent grounding or solving body size {level}"
                    continue
                try:
                    message = recv.recv()
                except EOFError:
                    status = f"the solver process ended without a result at body size {level}"
                    break
                if message[0] == "model":
                    cost, chosen = message[1], message[2]
                    if best.cost is None or cost < best.cost:
                        best.cost = cost
                        improved(
                            _hypothesis_text([space[r] for r in chosen]),
                            f"cost {list(cost)} at body size {level}",
                        )
                elif message[0] == "error":
                    raise (MemoryError if message[1].startswith("MemoryError") else RuntimeError)(message[1])
                else:
                    status = message[1]
        finally:
            child.close()  # SIGKILL its group if it still runs, and reap it (no zombie, no CPU left burning)
        return status


@register(
    r"aspal(?P<max_body>\d)?(?P<soft>_soft)?",
    description="ASPAL: the whole hypothesis space (bias up to max_body literals) in one clingo program "
    "with use(R) choices, #minimize length, every training example; times out on big tasks (the point).",
    params="max_body (digit, default 5); _soft: uncovered examples cost 1 instead of being forbidden",
    resources={"num_cpus": 1},
    example="aspal",
    symbolic=True,
)
def make_aspal(max_body: int | None = None, soft: bool = False) -> AspalLearner:
    return AspalLearner(max_body, soft)
