"""The ``reference`` learner: the game's own GDL rules, bridged to the flattened IGGP predicates.

It learns nothing. It is the upper bound every task must reach (balanced accuracy 1.0), and so an
end-to-end check of the data, the flattening and the symbolic evaluation path
(:mod:`learners.ilp.evaluate`): a task it does not solve points at a bug or at a GDL file that
differs from the one that generated the data.

The GDL program keeps its function terms (``legal(W, mark(X, Y)) :- true(cell(X, Y, b)), ...``,
from :mod:`tasks.gdl.asp`); the dataset's atoms are flattened (``true_cell(1, 2, b)``). Bridge
rules connect the two, one per flattened predicate of the task, derived with
:func:`tasks.gdl.terms.unflatten`:

* inputs:  ``true(cell(A0,A1,A2)) :- true_cell(A0,A1,A2).``, ``does(A0,mark(A1,A2)) :- does_mark(A0,A1,A2).``
* outputs: ``next_cell(A0,A1,A2) :- next(cell(A0,A1,A2)).``, ``legal_mark(A0,A1,A2) :- legal(A0,mark(A1,A2)).``

Predicates that flattening leaves alone (``legal(black, noop)``, ``goal(R, N)``, ``terminal()``,
statics such as ``index(1)``) need no bridge: GDL and dataset already share them.
"""

from __future__ import annotations

from pathlib import Path

from learners.base import Budget, Report, ignore_report, register
from learners.ilp.evaluate import RuleModel
from tasks.task import Task, parse_atom


class NoGDL(LookupError):
    """The task's game has no GDL file (only a Prolog version, or a source without games)."""

    def __str__(self) -> str:
        return str(self.args[0])


def game_file(task: Task) -> Path:
    """The GDL file of the task's game, found through the task's source."""
    from tasks.sources import open_source

    if not task.source:
        raise NoGDL(f"no GDL for game {task.game}: the task does not say which dataset it came from")
    source = open_source(task.source)
    find = getattr(source, "game_file", None)
    path = find(task.game) if find is not None else None
    if path is None:
        raise NoGDL(f"no GDL for game {task.game} in {task.source} (a .pl version alone cannot be used)")
    return Path(path)


def gdl_program(path: Path) -> tuple[str, set[str]]:
    """The game's rules as clingo text, and the names of its relations."""
    from tasks.gdl.asp import program_to_asp
    from tasks.gdl.ast import relation
    from tasks.gdl.kif import parse_file

    program = parse_file(path)
    relations = {relation(r.head)[0] for r in program.rules}
    relations |= {"true", "does"}
    return program_to_asp(program.rules), relations


def _shapes(atoms: list[str]) -> dict[str, int]:
    """Flattened predicate -> arity, in first-seen order."""
    out: dict[str, int] = {}
    for a in atoms:
        name, args = parse_atom(a)
        out.setdefault(name, len(args))
    return out


def _general(name: str, arity: int) -> str:
    """``p(A0, ..., An-1)`` in the dataset's spelling (``unflatten`` reads it as a flattened atom)."""
    return f"{name}({', '.join(f'A{i}' for i in range(arity))})"


def bridge_rules(task: Task, relations: set[str]) -> str:
    """Rules from the task's flattened background predicates into GDL, and from GDL to its targets."""
    from tasks.gdl.terms import canonical, unflatten

    lines = ["% bridges: flattened IGGP atoms -> GDL terms (inputs)"]
    for name, arity in _shapes(task.background_atoms.names).items():
        flat = _general(name, arity)
        gdl = unflatten(flat, relations)
        if gdl != canonical(flat):
            lines.append(f"{gdl} :- {canonical(flat)}.")
    lines.append("% bridges: GDL terms -> flattened IGGP atoms (targets)")
    for name, arity in _shapes(task.target_atoms.names).items():
        flat = _general(name, arity)
        gdl = unflatten(flat, relations)
        if gdl != canonical(flat):
            lines.append(f"{canonical(flat)} :- {gdl}.")
    return "\n".join(lines) + "\n"


def reference_model(task: Task, path: Path | None = None) -> RuleModel:
    """The GDL rules of ``task.game`` plus the bridges for this task's predicates, as a RuleModel."""
    path = path or game_file(task)
    gdl, relations = gdl_program(path)
    rules = gdl + bridge_rules(task, relations)
    return RuleModel(rules, name="reference", note=f"the GDL rules of {task.game} ({path.name}) with bridges")


@register(
    r"reference",
    description="Upper bound, not a learner: the game's own GDL rules bridged to the flattened predicates "
    "(must score balanced accuracy 1.0 on every task with GDL).",
    params="none",
    resources={"num_cpus": 1},
    example="reference",
)
class ReferenceLearner:
    name = "reference"

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> RuleModel:
        model = reference_model(task)
        report(model)
        return model
