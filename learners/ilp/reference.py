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

A GDL relation whose *name* is a flattened predicate (firesheep's helper ``next_at/3``, "where a
sheep would move") is renamed ``next_at__gdl``, because the dataset kept the two apart: its
``next_at`` atoms are exactly ``next(at(..))``. Conflating them (the helper's atoms counted as
positives, or the helper merged into ``next(at(..))``) contradicts 790 of firesheep's 2792 next
examples; keeping them apart contradicts none (up to the defect below).

Two published games contradict their own GDL file in one diagnosed way each (the known data
defects of :mod:`tasks.data_defects`, verified by ``orch games check``): firesheep ``next`` (the
data never applies ``kill`` to the sheep) and pilgrimage ``legal`` (the data's legal atoms name the
action ``place_pilgrim``, the GDL ``place_pilgrim_action``). For those games the learner builds
both the published and the corrected program and keeps the one that fits the *training* examples
better (the published one on a tie), so it follows the data it is given: 1.0 on every split of
all 132 published tasks with GDL, and still exact on data regenerated from the published GDL.
Seven games (coins, fizzbuzz, gt_centipede, horseshoe, hunter, lightboard, untwisty_corridor)
have only a Prolog version: :class:`NoGDL`.

Where clingo example by example would ground too much (one example's ground atoms times the
examples to score, past :data:`SYMBOLIC_ATOMS`: no published game, but the large games of the GGP
corpus, up to 180 hours of one core for its reference run), the same rules are predicted by the
compiled engine (:class:`EngineModel`); the program stored is the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from learners.base import Budget, Report, ignore_report, register
from learners.ilp.evaluate import RuleModel
from learners.metrics import evaluate, pool
from tasks.task import Split, Task, parse_atom

if TYPE_CHECKING:
    from tasks.data_defects import Correction
    from tasks.oracle import GDLExamples


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


def gdl_program(path: Path, text: str | None = None) -> tuple[str, set[str]]:
    """The game's rules as clingo text, and the names of the relations its rules define.

    ``text`` replaces the file's content (a corrected copy); ``import`` lines resolve beside ``path``.
    A rulesheet that leaves a head variable to the query (``(<= (legal ?p noop))``) is read with the
    leniency the generator played it with (:func:`tasks.gdl.checks.bind_query_variables`, docs/gdl.md
    "play anyway"); a rulesheet within the GDL spec is unchanged by it.
    """
    from tasks.gdl.asp import program_to_asp
    from tasks.gdl.ast import relation
    from tasks.gdl.checks import bind_query_variables
    from tasks.gdl.kif import parse_file, parse_text

    program = parse_file(path) if text is None else parse_text(text, str(path), path.parent)
    rules, _ = bind_query_variables(program.rules)
    return program_to_asp(rules), {relation(r.head)[0] for r in program.rules}


INPUT_RELATIONS = ("true", "does", "input", "base", "init")
"""GDL relations whose flattened forms can be background atoms (state, moves, statics)."""

RENAMED = "__gdl"
"""Suffix for a GDL relation whose name a flattened dataset predicate also uses (see below)."""


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


def _bridged(task: Task) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]:
    """The flattened predicates that need a bridge: name -> (flattened atom, GDL atom), as ASP text.

    A predicate needs one when flattening changed it (``true_cell`` from ``true(cell(..))``);
    inputs must come from ``true``/``does``/``input``/``base``/``init``, outputs are the targets.
    """
    from tasks.gdl.terms import canonical, unflatten

    def bridges(atoms: list[str], relations: tuple[str, ...] | None) -> dict[str, tuple[str, str]]:
        out = {}
        for name, arity in _shapes(atoms).items():
            flat = _general(name, arity)
            gdl = unflatten(flat)
            if gdl != canonical(flat) and (relations is None or gdl.split("(")[0] in relations):
                out[name] = (canonical(flat), gdl)
        return out

    return bridges(task.background_atoms.names, INPUT_RELATIONS), bridges(task.target_atoms.names, None)


def _rename_relations(rules: str, renamed: set[str]) -> str:
    """``rules`` with every atom of a relation in ``renamed`` renamed to ``NAME__gdl``."""
    import clingo.ast as ast

    from learners.ilp.program import parse_statements

    class Rename(ast.Transformer):
        def visit_SymbolicAtom(self, node):  # noqa: N802 (clingo's visitor naming)
            t = node.symbol
            if t.ast_type == ast.ASTType.Function and t.name in renamed:
                return node.update(symbol=t.update(name=t.name + RENAMED))
            return node

    rename = Rename()
    return "\n".join(str(rename(s)) for s in parse_statements(rules)) + "\n"


def bridge_rules(task: Task, gdl_relations: set[str]) -> tuple[str, set[str]]:
    """Bridges from the task's flattened inputs into GDL and from GDL to its flattened targets.

    Returns the rules and the GDL relations that must be renamed: a game may define a relation
    whose name is also a flattened predicate (firesheep defines its own ``next_at/3``, while the
    dataset's ``next_at`` is ``next(at(..))``); the GDL's relation is renamed ``next_at__gdl``.
    """
    inputs, outputs = _bridged(task)
    lines = ["% bridges: flattened IGGP atoms -> GDL terms (inputs)"]
    lines += [f"{gdl} :- {flat}." for flat, gdl in inputs.values()]
    lines.append("% bridges: GDL terms -> flattened IGGP atoms (targets)")
    lines += [f"{flat} :- {gdl}." for flat, gdl in outputs.values()]
    return "\n".join(lines) + "\n", (set(inputs) | set(outputs)) & gdl_relations


def reference_model(task: Task, path: Path | None = None, corrected: bool = False) -> RuleModel:
    """The GDL rules of ``task.game`` plus the bridges for this task's predicates, as a RuleModel.

    ``corrected``: apply the game's known data-defect correction (:mod:`tasks.data_defects`);
    `correction_of` says whether there is one for the task.
    """
    path = path or game_file(task)
    text, correction = None, None
    if corrected:
        correction = correction_of(task, path)
        if correction is None:
            raise ValueError(f"{task.game} {task.target}: no known data-defect correction applies to {path}")
        text = correction.apply(path.read_text())
    gdl, relations = gdl_program(path, text)
    bridges, clashes = bridge_rules(task, relations)
    if clashes:
        gdl = _rename_relations(gdl, clashes)
    note = f"the GDL rules of {task.game} ({path.name}) with bridges"
    if clashes:
        note += f"; GDL relations renamed to avoid flattened names: {', '.join(sorted(clashes))}"
    if correction is not None:
        note += f"; corrected for a known defect of the published data: {correction.describe()}"
    return RuleModel(gdl + bridges, name="reference", note=note)


def correction_of(task: Task, path: Path) -> Correction | None:
    """The known data-defect correction for this task's target and GDL file, if one applies."""
    from tasks.data_defects import CorrectionError, correction_for

    correction = correction_for(task.game)
    if correction is None or correction.target != task.target:
        return None
    try:
        correction.apply(path.read_text())
    except CorrectionError:  # a different file under the same name: nothing to correct
        return None
    return correction


def _train_errors(model: RuleModel | EngineModel, task: Task) -> int:
    """False positives plus false negatives of ``model`` over the task's training examples."""
    counts = pool(evaluate(model, task, ("train",))["train"].values())
    return counts.fp + counts.fn


@register(
    r"reference",
    description="Upper bound, not a learner: the game's own GDL rules bridged to the flattened predicates "
    "(must score balanced accuracy 1.0 on every task with GDL).",
    params="none",
    resources={"num_cpus": 1},
    example="reference",
    symbolic=True,
    oracle=True,
)
class ReferenceLearner:
    name = "reference"

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> RuleModel | EngineModel:
        """The published GDL; for a known data defect, the corrected GDL if it fits train better.
        Predicted by clingo example by example, or by the compiled engine where that would
        ground too much (`_predicted_well`)."""
        path = game_file(task)
        symbolic = reference_model(task)
        report(symbolic)  # a model at once: compiling a big game's engine can take minutes
        model = _predicted_well(symbolic, task, path, None)
        if model is not symbolic:
            report(model)
        correction = correction_of(task, path)
        if correction is None or "train" not in task.splits or budget.expired():
            return model
        fixed = _predicted_well(reference_model(task, path, corrected=True), task, path, correction)
        if _train_errors(fixed, task) < _train_errors(model, task):
            report(fixed)
            return fixed
        return model


SYMBOLIC_ATOMS = 50_000_000
"""Ground atoms (one example's, times the examples to score) past which the reference predicts by
the compiled engine: clingo grounds about half a million a second, so this is about 100 s."""


def _predicted_well(
    model: RuleModel, task: Task, path: Path, correction: Correction | None
) -> RuleModel | EngineModel:
    """``model`` (clingo, example by example) where that is cheap; else its rules predicted by the
    compiled engine (`EngineModel`). The choice is by the size of one example's grounding, never
    by the clock, so a rerun chooses the same way."""
    from tasks.gdl import GDLError

    scored = sum(task.splits[s].n_examples for s in task.splits)
    if scored * _ground_atoms_of_one_example(model, task) <= SYMBOLIC_ATOMS:
        return model
    text = correction.apply(path.read_text()) if correction is not None else None
    try:
        return EngineModel(model, task, path, text)
    except (GDLError, ValueError, RuntimeError):
        return model


def _ground_atoms_of_one_example(model: RuleModel, task: Task) -> float:
    """Ground atoms of ``model``'s rules (those the targets need) on the first example of the
    largest split: what clingo grounds per example."""
    import clingo

    from learners.ilp.evaluate import task_atoms
    from learners.ilp.program import relevant_rules

    split = max(task.splits.values(), key=lambda s: s.n_examples, default=None)
    if split is None or split.n_examples == 0:
        return 0.0
    atoms = task_atoms(task)
    static = np.flatnonzero(atoms.static_mask).tolist()
    facts = [
        atoms.background[i].text() + "." for i in sorted(set(split.background_of(0).tolist()) | set(static))
    ]
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], relevant_rules(model.rules(), atoms.target_signatures) + "\n".join(facts))
    ctl.ground([("base", [])])
    ctl.solve()  # clingo counts the program's atoms when it prepares to solve
    return float(ctl.statistics["problem"]["lp"]["atoms"])


class EngineModel:
    """The reference's rules, predicted by the game's compiled engine instead of clingo per example.

    Why: the symbolic path grounds the whole rulesheet for every example. On the IGGP games that
    is cheap; on the GGP corpus it is not (crissrace: 341,000 ground atoms and 0.5 s per example,
    12 GiB for a chunk of 512; one clingo solve per example over the validate and test examples of
    the corpus's kept targets is about 180 hours of one core). The compiled engine
    (:mod:`tasks.gdl`, the one that generated the data and that ``orch games check`` compares
    with) grounds the game once and answers an example in about a millisecond. Its agreement with
    clingo is checked apart (docs/gdl.md; ``reference_model``'s clingo path stays the model's
    program and is what the tests compare on the published games). A game whose whole grounding
    is past the engine's bound is evaluated by the per-state engine that generated its data, one
    clingo grounding per state (:func:`tasks.oracle.gdl_examples`), so the reference never
    depends on the engine compiling.
    """

    name = "reference"

    def __init__(self, symbolic: RuleModel, task: Task, path: Path, text: str | None) -> None:
        self.symbolic = symbolic
        self.path = path
        self.text = text
        self._cache: tuple[Task, GDLExamples, list[str]] | None = None
        self.how = self._examples(task)[0].how  # fails here (not at predict) if the GDL cannot be evaluated

    def _examples(self, task: Task) -> tuple[GDLExamples, list[str]]:
        """The game's evaluator over ``task``'s background atoms, and those atoms in the GDL's
        spelling (unescaped), built once per task."""
        from tasks.escape import unescape_atom
        from tasks.oracle import gdl_examples

        if self._cache is None or self._cache[0] is not task:
            background = [unescape_atom(a) for a in task.background_atoms.names]
            self._cache = (task, gdl_examples(self.path, background, self.text), background)
        return self._cache[1], self._cache[2]

    def rules(self) -> str:
        return self.symbolic.rules()

    def describe(self) -> str:
        return f"{self.symbolic.describe()}; predicted by {self.how}"

    def predict(self, task: Task, split: Split) -> sp.csr_matrix:
        """Boolean (n_examples x |target_atoms|) predictions, the examples evaluated in batches."""
        from tasks.escape import unescape_atom

        examples, background = self._examples(task)
        column = {examples.normal(unescape_atom(a)): j for j, a in enumerate(task.target_atoms.names)}
        derived = examples.derive(
            [[background[i] for i in split.background_of(e)] for e in range(split.n_examples)], task.target
        )
        pairs = [(e, column[a]) for e, atoms in enumerate(derived) for a in atoms if a in column]
        rows = np.array([e for e, _ in pairs], dtype=np.int64)
        cols = np.array([j for _, j in pairs], dtype=np.int64)
        shape = (split.n_examples, len(task.target_atoms))
        return sp.csr_matrix((np.ones(len(rows), dtype=bool), (rows, cols)), shape=shape)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_cache"] = None  # the engine stays in the process that built it
        return state
