"""The oracle check: does a game's GDL reproduce its published examples exactly?

For every (target, split) file of a game, and every example in it, the GDL rules are evaluated on
the example's background (its ``true_*`` fluents, plus the ``does*`` moves for next) and the
derived target atoms are compared with the published positives. The ``atoms:`` section must equal
ground(Σ, target) from the game's ``.typ``, and the ``statics:`` section the static relations of
the GDL. This is what makes the generator and the engine trustworthy: they must agree with the
authors' own generator on 100% of the examples of every game that has GDL.

Statuses: ``agree``; ``data-defect`` (every difference is a diagnosed defect of the published
data, see below); ``disagree`` (an example or a section differs, unexplained); ``partial`` (what
could be checked agrees, but a file is missing: the published ``ttcc4_legal_train.dat``) and
``unchecked`` (no GDL file, only the authors' Prolog ``.pl``; or a GDL the engine refuses). A game
that cannot be checked is never reported as agreeing.

Data defects are never assumed, always verified on the data:

* examples: a game with a known correction of its GDL (:mod:`tasks.data_defects`: firesheep, whose
  data never applies ``kill``; pilgrimage, whose legal atoms rename an action) is re-checked with
  the corrected GDL, and is a data defect only if that agrees with *every* example of the target;
* ``atoms:`` sections: a difference is a data defect only if the sections of one target differ
  between its split files or repeat atoms (ttcc4), or if they equal ground(Σ, p) minus every atom
  using constants that they never use (dont_touch: 5..8; hexforthree, knights_tour: 100), i.e.
  they were generated from a ``.typ`` lacking constants the published one declares. No rule
  regenerates those sections from GDL plus ``.typ``: restricting ground(Σ, p) to the atoms the GDL
  can derive fits dont_touch but not knights_tour (its GDL derives ``goal(robot, 100)``, missing
  from the section, and not 22 goal values the section keeps), and ttcc4's three split files of
  one target carry three different sections. So the rule stays plain ground(Σ, p), as the
  generator (:mod:`tasks.generate`) writes it, and every other game's sections equal it.

A GDL without ``role`` facts (minimal_decay, scissors_paper_stone) is played with the roles that
have legal moves (the engine infers them); the check says so in a note and compares them with the
``.typ``'s ``agent`` constants.

Dataset games map to ``games/GAME.txt``, except those in :data:`GDL_ALIASES` (sokoban). Files such
as ``sokoban_core.txt`` or ``minimal_sokoban_map1.txt`` belong to no dataset game.

What the published 40 games give (``orch games check --dataset DIR``; tests/tasks/test_oracle.py pins it):
27 agree, 5 are data defects (firesheep, pilgrimage: examples; dont_touch, hexforthree,
knights_tour: atoms sections), ttcc4 is partial (a missing file; its atoms sections are defective
too) and the 7 games with only a ``.pl`` are unchecked. Every example of every game with GDL agrees,
up to the two corrections.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tasks.data_defects import CorrectionError, correction_for
from tasks.gdl import Engine, Game, GDLError, GDLWarning, flatten, unflatten
from tasks.gdl.errors import GroundingLimit
from tasks.gdl.perstate import STATE_SECONDS, PerStateEngine
from tasks.gdl.terms import parse_ground
from tasks.generate import dataset_statics, unwritten_targets
from tasks.iggp import Dataset, DatError, DatFile, background_atoms, read_dat
from tasks.signature import Signature, SignatureError, parse_typ, with_nullary_compounds
from tasks.task import SPLITS, TARGETS, parse_atom, predicate_of

AGREE, DISAGREE, UNCHECKED, PARTIAL = "agree", "disagree", "unchecked", "partial"
DATA_DEFECT = "data-defect"
STATUSES = (AGREE, DATA_DEFECT, DISAGREE, PARTIAL, UNCHECKED)

#: At most this many atoms of a differing section are listed in ``--json`` (the counts are exact).
LISTED_ATOMS = 20


@dataclass
class Difference:
    """The first example where the GDL and the published file differ."""

    file: str
    example: int  # 0-based index of the (background, positives) pair in the file
    atom: str
    kind: str  # "missing": published positive not derived; "extra": derived, not published

    def __str__(self) -> str:
        what = (
            "published positive not derived by the GDL"
            if self.kind == "missing"
            else "derived by the GDL, not published"
        )
        return f"{self.file}: example {self.example}: {self.atom} ({what})"


@dataclass
class SplitResult:
    target: str
    split: str
    examples: int = 0
    agree: int = 0
    first: Difference | None = None
    missing_file: str | None = None
    corrected: int = 0  # examples that agree only under the game's known data-defect correction


@dataclass
class SectionResult:
    """A published ``atoms:``/``statics:`` section that differs from the regenerated one."""

    file: str
    section: str
    only_published: list[str]
    only_regenerated: list[str]
    diagnosis: str | None = None  # set when the difference is a diagnosed defect of the data

    def __str__(self) -> str:
        if self.diagnosis:
            return f"{self.file}: {self.section}: {self.diagnosis}"
        parts = []
        if self.only_published:
            parts.append(f"{len(self.only_published)} only in the file (e.g. {self.only_published[0]})")
        if self.only_regenerated:
            parts.append(f"{len(self.only_regenerated)} only regenerated (e.g. {self.only_regenerated[0]})")
        return f"{self.file}: {self.section}: section differs: " + "; ".join(parts)


@dataclass
class GameResult:
    game: str
    status: str = AGREE
    reason: str = ""
    gdl: str | None = None
    splits: list[SplitResult] = field(default_factory=list)
    sections: list[SectionResult] = field(default_factory=list)
    defects: list[str] = field(default_factory=list)  # diagnoses of known published-data defects
    notes: list[str] = field(default_factory=list)  # warnings that do not change the verdict

    @property
    def first_difference(self) -> Difference | None:
        return next((s.first for s in self.splits if s.first), None)

    def counts(self) -> dict[str, dict[str, int]]:
        """Per target: examples and agreeing examples over all splits that exist."""
        out: dict[str, dict[str, int]] = {}
        for s in self.splits:
            c = out.setdefault(s.target, {"examples": 0, "agree": 0})
            c["examples"] += s.examples
            c["agree"] += s.agree
        return out

    def summary(self) -> str:
        counts = self.counts().values()
        n, agree = sum(c["examples"] for c in counts), sum(c["agree"] for c in counts)
        notes = "; ".join(filter(None, [self.reason, *self.notes]))
        if self.status == AGREE:
            return f"agrees on all {n} examples" + (f" ({notes})" if notes else "")
        parts = [notes] if notes else []
        if n:
            parts.append(f"{agree} of {n} examples agree as published")
        parts += [f"known data defect: {d}" for d in self.defects]
        first = self.first_difference
        if first:
            parts.append(f"first difference: {first}")
        undiagnosed = [s for s in self.sections if not s.diagnosis]  # the diagnosed are in defects
        if undiagnosed:
            more = f" (and {len(undiagnosed) - 1} more files)" if len(undiagnosed) > 1 else ""
            parts.append(f"{undiagnosed[0]}{more}")
        return "; ".join(parts)

    def as_dict(self) -> dict:
        first = self.first_difference
        return {
            "game": self.game,
            "status": self.status,
            "reason": self.reason,
            "notes": self.notes,
            "data_defects": self.defects,
            "gdl": self.gdl,
            "examples": sum(c["examples"] for c in self.counts().values()),
            "agree": sum(c["agree"] for c in self.counts().values()),
            "targets": {
                t: {
                    s.split: {
                        "examples": s.examples,
                        "agree": s.agree,
                        "agree_corrected": s.corrected,
                        "missing_file": s.missing_file,
                    }
                    for s in self.splits
                    if s.target == t
                }
                for t in dict.fromkeys(s.target for s in self.splits)
            },
            "first_difference": None if first is None else vars(first),
            "sections": [
                {
                    "file": s.file,
                    "section": s.section,
                    "diagnosis": s.diagnosis,
                    "only_published_count": len(s.only_published),
                    "only_regenerated_count": len(s.only_regenerated),
                    "only_published": s.only_published[:LISTED_ATOMS],
                    "only_regenerated": s.only_regenerated[:LISTED_ATOMS],
                }
                for s in self.sections
            ],
        }


#: Dataset games whose data came from a GDL file of another name. The published sokoban data mixes
#: playouts of sokoban_map1..7 (each imports sokoban_core, whose ``is_*`` facts are in the statics);
#: games/sokoban.txt is a single-map copy without those facts. Any map gives the same rules and
#: statics (the maps differ only in init), so map1 stands for all of them.
GDL_ALIASES = {"sokoban": "sokoban_map1.txt"}


def gdl_file(dataset: Dataset, game: str) -> Path | None:
    """The GDL file the game's data was generated from, or None (see the module docstring)."""
    alias = GDL_ALIASES.get(game)
    if alias and (dataset.path / "games" / alias).exists():
        return dataset.path / "games" / alias
    return dataset.game_file(game)


def _no_gdl_reason(dataset: Dataset, game: str) -> str:
    games_dir = dataset.path / "games"
    others = sorted(p.name for p in games_dir.glob(f"{game}.*")) if games_dir.is_dir() else []
    have = f" (only {', '.join(others)})" if others else ""
    return f"no GDL file games/{game}.txt{have}"


def _kif(text: str) -> str:
    """Canonical ground-term text to KIF: ``cell(1,2,x)`` -> ``(cell 1 2 x)``."""
    name, args = parse_ground(text)

    def term(t) -> str:
        return t[0] if not t[1] else f"({t[0]} {' '.join(term(a) for a in t[1])})"

    return term((name, args))


def _engine_covering(game: Game, path: Path, fluents: set[str], text: str | None = None) -> Engine:
    """The game's compiled engine, its fluent universe widened to cover ``fluents``.

    The engine compiles the fluents reachable from ``init``; published data can hold others (the
    sokoban data mixes several maps). Those would each cost a fresh clingo solve, so the unknown
    ones are added as extra ``init`` facts, which changes nothing but the (unused) initial state.
    ``text`` is the game's GDL when it is not the file's (a corrected copy).
    """
    engine = game.engine()
    unknown = sorted(fluents - set(engine.fluents))
    if not unknown:
        return engine
    extra = "".join(f"(init {_kif(f)})\n" for f in unknown)
    with warnings.catch_warnings():  # the parser already warned about this file once
        warnings.simplefilter("ignore", GDLWarning)
        source = path.read_text() if text is None else text
        wider = Game.from_text(
            source + "\n" + extra, name=path.stem, base_dir=path.parent, lenient=game.lenient
        )
    return wider.engine()


def check_game(
    dataset: Dataset, game: str, on_file: Callable[[str], None] | None = None, solver_fallback: bool = True
) -> GameResult:
    """Evaluate ``game``'s GDL on every published example and compare (see the module docstring).

    ``solver_fallback``: when the compiled engine cannot ground the game within its bound
    (``tasks.gdl.GROUND_SECONDS``; asylum, the biggest, grounds in about a minute on 2 busy cores),
    check it anyway with the per-state engine (one clingo grounding per distinct state, as
    generation plays such games), and say so in a note; without it such a game is unchecked.

    The stages: load the GDL and the signature, collect the fluents the files' backgrounds use
    (streamed), build an evaluator over them, compare examples and sections one file at a time,
    try the known corrections, verdict.
    """
    dataset.check_game(game)
    result = GameResult(game)
    path = gdl_file(dataset, game)
    if path is None:
        result.status, result.reason = UNCHECKED, _no_gdl_reason(dataset, game)
        return result
    result.gdl = str(path)
    try:
        try:
            gdl = Game.from_file(path)
        except GDLError:  # a harmless spec violation: read as generation read it (tasks.generate)
            gdl = Game.from_file(path, lenient=True)
            result.notes.append(f"played anyway: {'; '.join(gdl.leniencies)}")
        relations = _own_relations(gdl.relations)
    except (GDLError, ValueError, RuntimeError) as e:
        result.status, result.reason = UNCHECKED, f"GDL cannot be used: {e}"
        return result
    signature = _signature(dataset, game, result)
    gdl_input = _input_reader(relations)
    files, unreadable = _split_files(dataset, game, result, unwritten_targets(signature) if signature else {})
    fluents = {
        text
        for file in files.values()
        for kind, text in map(gdl_input, background_atoms(file))
        if kind == "true"
    }
    evaluator = _evaluator(gdl, path, fluents, signature, result, solver_fallback)
    if evaluator is None:
        return result
    evaluate, static_atoms = evaluator
    try:
        sections = _compare_splits(result, files, unreadable, set(dataset_statics(static_atoms, gdl)),
                                   partial(_deriver, evaluate, gdl_input, forget=True),
                                   _proposition_normal(relations), on_file)  # fmt: skip
    except GDLError as e:  # a state the per-state engine cannot ground within its bound
        result.status, result.reason = UNCHECKED, f"GDL cannot be evaluated on the examples: {e}"
        return result
    if signature is not None:
        for target in TARGETS:
            published = {files[t, s].name: atoms for (t, s), atoms in sections.items() if t == target}
            if published:
                _check_atoms(result, target, published, signature.ground(target))
    _try_correction(result, game, path, files, gdl_input)
    _verdict(result, unreadable)
    return result


def _signature(dataset: Dataset, game: str, result: GameResult) -> Signature | None:
    """The game's type signature, or None (with the reason in ``result``) when there is none."""
    typ = dataset.types_file(game)
    if typ is None:
        result.reason = f"no types/{game}.typ: atoms sections not regenerated"
        return None
    try:
        return with_nullary_compounds(parse_typ(typ), gdl_file(dataset, game))  # (next (gameOver))
    except SignatureError as e:
        result.reason = f"bad type signature: {e}"
        return None


def _input_reader(relations: frozenset[str]) -> Callable[[str], tuple[str, str]]:
    """``gdl_input(atom)``: a background atom as ("true", fluent) or ("does", "role,move") in GDL
    text, memoised (the same atoms recur in most examples)."""
    inputs: dict[str, tuple[str, str]] = {}

    def gdl_input(atom: str) -> tuple[str, str]:
        if atom not in inputs:
            name = predicate_of(atom)
            kind = "true" if name == "true" or name.startswith("true_") else "does"
            inputs[atom] = (kind, _inner(unflatten(atom, relations), kind))
        return inputs[atom]

    return gdl_input


def _split_files(
    dataset: Dataset, game: str, result: GameResult, unwritten: dict[str, str]
) -> tuple[dict[tuple[str, str], Path], list[str]]:
    """Every split file of every target, and the ones missing; adds a `SplitResult` per split to
    ``result``. Files are read later, one at a time (`_compare_splits`): a generated game's
    ``.dat`` files can hold gigabytes of text, ten times that as Python strings.

    ``unwritten``: targets the generator leaves out by design (`tasks.generate.unwritten_targets`:
    too many candidate atoms to write), with why; such a target with no file is not missing, and
    a note says so."""
    unreadable: list[str] = []
    found: dict[tuple[str, str], Path] = {}
    for target in TARGETS:
        files = dataset.files(game, target)
        if target in unwritten and not files:
            result.notes.append(f"{target} not generated ({unwritten[target]})")
            continue
        for split in SPLITS:
            sr = SplitResult(target, split)
            result.splits.append(sr)
            if split in files:
                found[target, split] = files[split]
            else:
                sr.missing_file = str(Path("data") / split / f"{game}_{target}_{split}.dat")
                unreadable.append(sr.missing_file)
    return found, unreadable


_Evaluate = Callable[[list[str], dict[str, str]], dict[str, list[str]]]
_EvaluateMany = Callable[[list[tuple[list[str], dict[str, str]]]], list[dict[str, list[str]]]]
_Derive = Callable[[list[list[str]], str], list[set[str]]]


def _evaluator(
    gdl: Game, path: Path, fluents: set[str], signature: Signature | None, result: GameResult,
    solver_fallback: bool,
) -> tuple[_EvaluateMany, Any] | None:  # fmt: skip
    """(evaluate, static atoms): the compiled engine over ``fluents``, else (a grounding too big,
    with ``solver_fallback``) the per-state engine. None when the GDL cannot be used, with
    ``result`` marked unchecked."""
    try:
        engine = _engine_covering(gdl, path, fluents)
        evaluated = engine.evaluate_batch, engine.static_atoms
        if engine.ground.roles_inferred:
            result.notes.append(_inferred_roles_note(engine.roles, signature))
        return evaluated
    except (GDLError, ValueError, RuntimeError) as e:
        too_big = _too_big_to_compile(e)
        if not (solver_fallback and too_big):
            hint = " (leave out --no-solver-fallback)" if too_big else ""
            result.status, result.reason = UNCHECKED, f"GDL cannot be used: {e}{hint}"
            return None
        why = e
    per_state = _per_state_engine(gdl, why)
    result.notes.append(
        "compiled engine unavailable (grounding too big): checked by the per-state engine, one clingo "
        "grounding per state" + (" (demand-driven)" if per_state.demand_driven else "")
    )
    return _one_by_one(per_state.evaluate), per_state.static_atoms


def _per_state_engine(gdl: Game, error: Exception) -> PerStateEngine:
    """The engine generation plays a game with when its whole grounding is too big
    (`tasks.gdl.Game.play_engine`): one clingo grounding per state, demand-driven where even the
    statics do not ground (mummymaze1p). One clingo solve of the plain rules per example grounds
    every static relation in full each time: hours where this takes seconds."""
    return PerStateEngine(gdl, STATE_SECONDS, why=str(error))


def _compare_splits(
    result: GameResult, files: dict[tuple[str, str], Path], unreadable: list[str], statics: set[str],
    deriver: Callable[[], _Derive], normal: Callable[[str], str], on_file: Callable[[str], None] | None,
) -> dict[tuple[str, str], list[str]]:  # fmt: skip
    """Each split file's statics section and examples against what the GDL derives; the first
    disagreement of each split is kept. Returns each file's ``atoms:`` section.

    One file is held at a time, split by split (a fresh ``deriver()`` each): a split's legal, goal
    and terminal files share their states, which are evaluated once and forgotten target by
    target. A file that cannot be read is added to ``unreadable``.
    """
    sections: dict[tuple[str, str], list[str]] = {}
    by_key = {(sr.target, sr.split): sr for sr in result.splits}
    for split in SPLITS:
        derive = deriver()
        for target in TARGETS:
            file = files.get((target, split))
            if file is None:
                continue
            sr = by_key[target, split]
            if on_file is not None:
                on_file(file.name)
            try:
                dat = read_dat(file)
            except DatError as e:
                sr.missing_file = str(e)
                unreadable.append(str(e))
                continue
            sections[target, split] = dat.atoms
            _compare_section(result, file.name, "statics", dat.statics, statics)
            for i, ok, missing, extra in _compare_examples(dat, target, derive, normal):
                sr.examples += 1
                sr.agree += ok
                if not ok and sr.first is None:
                    atom, kind = (missing, "missing") if missing else (extra, "extra")
                    assert atom is not None, "a disagreeing example has a missing or an extra atom"
                    sr.first = Difference(file.name, i, atom, kind)
    return sections


def _verdict(result: GameResult, unreadable: list[str]) -> None:
    """The game's status: disagree unless every difference is explained, else partial (files
    that could not be read), data-defect, or the agree it started with."""
    if unreadable:
        result.reason = "; ".join(filter(None, [result.reason, "cannot check " + ", ".join(unreadable)]))
    explained = all(s.corrected == s.examples - s.agree for s in result.splits)
    if not explained or any(not s.diagnosis for s in result.sections):
        result.status = DISAGREE
    elif unreadable:
        result.status = PARTIAL
    elif result.defects:
        result.status = DATA_DEFECT


def _deriver(
    evaluate_many: _EvaluateMany, gdl_input: Callable[[str], tuple[str, str]], forget: bool = False
) -> _Derive:
    """``derive(backgrounds, target)``: per example, the flattened target atoms the GDL derives,
    the examples not met before evaluated together (`tasks.gdl.Engine.evaluate_batch`) and
    memoised: the same backgrounds recur, and legal/goal/terminal share theirs.

    ``forget``: a state's atoms of ``target`` are dropped once returned (a later call for the same
    target evaluates again), so the memo holds only what other targets have still to ask for: a
    split's legal atoms can run to millions.
    """
    flat: dict[str, str] = {}
    derived_cache: dict[tuple[str, ...], dict[str, list[str]]] = {}

    def derive(backgrounds: list[list[str]], target: str) -> list[set[str]]:
        keys = [tuple(sorted(b)) for b in backgrounds]
        todo = list(dict.fromkeys(k for k in keys if target not in derived_cache.get(k, {})))
        evaluated = evaluate_many([_state_and_moves(k, gdl_input) for k in todo])
        for key, atoms_of in zip(todo, evaluated, strict=True):
            derived_cache[key] = {t: atoms_of.get(t, []) for t in TARGETS} | atoms_of
        out = []
        for key in keys:
            atoms = derived_cache[key][target]
            for a in atoms:
                if a not in flat:
                    flat[a] = flatten(a)
            out.append({flat[a] for a in atoms})
        if forget:
            for key in dict.fromkeys(keys):
                del derived_cache[key][target]
        return out

    return derive


def _too_big_to_compile(error: Exception) -> bool:
    """The engine's whole grounding passed its time bound (`tasks.gdl.ground`): the one failure
    that one clingo solve per example gets around."""
    return isinstance(error, GroundingLimit) and error.timed_out


def _one_by_one(evaluate: _Evaluate) -> _EvaluateMany:
    """An evaluator of one example at a time (one clingo solve each) as one of many."""
    return lambda examples: [evaluate(fluents, does) for fluents, does in examples]


def _compare_examples(
    dat: DatFile,
    target: str,
    derive: _Derive,
    normal: Callable[[str], str] | None = None,
) -> Iterator[tuple[int, bool, str | None, str | None]]:
    """Per example: (index, agrees, first missing positive, first extra derived atom).

    ``normal`` (see `_proposition_normal`) respells a published positive the way `flatten`
    writes the same GDL atom, so that ``next_gameOver()`` (GDL ``(next (gameOver))``) and
    ``next(gameOver)`` (GDL ``(next gameOver)``), the same atom in GDL, compare equal.
    """
    derived = derive([background for background, _ in dat.examples], target)
    for i, ((_, positives), got) in enumerate(zip(dat.examples, derived, strict=True)):
        want = set(positives) if normal is None else {normal(p) for p in positives}
        if got == want:
            yield i, True, None, None
        else:
            yield i, False, min(want - got, default=None), min(got - want, default=None)


def _inferred_roles_note(roles: list[str], signature: Signature | None) -> str:
    """The warning for a GDL without ``role`` facts, checked against the ``.typ``'s agents."""
    note = f"the GDL declares no role: the roles are the players of its legal moves ({', '.join(roles)})"
    if signature is not None:
        agents = signature.constants("agent")
        if agents and sorted(agents) != sorted(roles):
            return note + f", but the .typ's agents are {', '.join(agents)}"
        if agents:
            return note + ", as the .typ's agents"
    return note


def _check_atoms(result: GameResult, target: str, published: dict[str, list[str]], ground: list[str]) -> None:
    """Compare a target's ``atoms:`` sections (file -> atoms) with ground(Σ, target); diagnose defects."""
    regenerated = set(ground)
    differing = {
        f: atoms
        for f, atoms in published.items()
        if set(atoms) != regenerated or len(set(atoms)) < len(atoms)
    }
    if not differing:
        return
    diagnosis = _diagnose_atoms(published, ground)
    for file, atoms in differing.items():
        have = set(atoms)
        result.sections.append(
            SectionResult(file, "atoms", sorted(have - regenerated), sorted(regenerated - have), diagnosis)
        )
    if diagnosis:
        result.defects.append(f"{target} atoms: sections of {len(differing)} split files: {diagnosis}")


def _diagnose_atoms(published: dict[str, list[str]], ground: list[str]) -> str | None:
    """Why a target's published ``atoms:`` sections differ from ground(Σ, p), when the data says so.

    Two defects of the published data are recognised (and nothing else is excused):

    * the sections of one target differ between its split files, or list an atom twice (ttcc4):
      no signature generated them, so no rule can regenerate them;
    * the sections equal ground(Σ, p) minus every atom that uses some constants that they never
      use (dont_touch: pos 5..8; knights_tour, hexforthree: 100): the ``.typ`` the data was
      generated with lacked those constants there, the published ``.typ`` declares them.
      (Restricting ground(Σ, p) to what the GDL can produce does not explain these: knights_tour's
      GDL reaches ``goal(robot, 100)``, and not 22 goal values its sections keep.)
    """
    sets = {f: set(a) for f, a in published.items()}
    if len({frozenset(s) for s in sets.values()}) > 1 or any(
        len(a) != len(set(a)) for a in published.values()
    ):
        sizes = ", ".join(f"{f}: {len(a)} lines, {len(sets[f])} distinct" for f, a in published.items())
        return (
            f"the split files' atoms: sections differ or repeat atoms ({sizes}): no signature generated them"
        )
    have = next(iter(sets.values()))
    if not have < set(ground):
        return None
    used = {c for a in have for c in parse_atom(a)[1]}
    lacking = {c for a in set(ground) - have for c in parse_atom(a)[1]} - used
    if lacking and {a for a in ground if not lacking & set(parse_atom(a)[1])} == have:
        return (
            f"equals ground(Σ, p) without the atoms that use {', '.join(sorted(lacking, key=_natural))}: "
            "generated from a .typ that lacked these constants here (the published .typ declares them)"
        )
    return None


def _natural(c: str) -> tuple[int, int | str]:
    return (0, int(c)) if c.lstrip("-").isdigit() else (1, c)


def _try_correction(
    result: GameResult,
    game: str,
    path: Path,
    files: dict[tuple[str, str], Path],
    gdl_input: Callable[[str], tuple[str, str]],
) -> None:
    """Re-check a target's examples under the game's known data-defect correction, if it has one.

    Only when some example of the corrected target disagrees. Every example of that target is
    re-evaluated with the corrected GDL (by its compiled engine); the defect is recorded only if
    the corrected GDL then agrees with all of them, and each split counts the examples that agree
    only under it (``corrected``). Otherwise the disagreement stands, with a note.
    """
    correction = correction_for(game)
    if correction is None:
        return
    splits = [s for s in result.splits if s.target == correction.target and (s.target, s.split) in files]
    if all(s.agree == s.examples for s in splits):
        result.notes.append(f"its known data-defect correction is not needed: {correction.diagnosis}")
        return
    try:
        with warnings.catch_warnings():  # the parser already warned about this file once
            warnings.simplefilter("ignore", GDLWarning)
            text = correction.apply(path.read_text())
            fixed = Game.from_text(text, name=path.stem, base_dir=path.parent)
        dats = {s.split: read_dat(files[s.target, s.split]) for s in splits}  # (small published games)
        fluents = {
            f for dat in dats.values() for b, _ in dat.examples for k, f in map(gdl_input, b) if k == "true"
        }
        derive = _deriver(_engine_covering(fixed, path, fluents, text).evaluate_batch, gdl_input)
    except (CorrectionError, GDLError, ValueError, RuntimeError) as e:  # DatError is a ValueError
        result.notes.append(f"the known data-defect correction cannot be applied: {e}")
        return
    outcome = {
        s.split: [ok for _, ok, _, _ in _compare_examples(dats[s.split], s.target, derive)] for s in splits
    }
    if not all(all(oks) for oks in outcome.values()):
        bad = sum(not ok for oks in outcome.values() for ok in oks)
        result.notes.append(
            f"the known correction ({correction.diagnosis}) leaves {bad} examples disagreeing"
        )
        return
    for s in splits:
        s.corrected = s.examples - s.agree
    n = sum(s.corrected for s in splits)
    total = sum(s.examples for s in splits)
    result.defects.append(
        f"{game} {correction.target}: {n} of {total} examples agree only under a correction: {correction.describe()}"
    )


def _inner(atom: str, relation: str) -> str:
    """``true(cell(1,2,x))`` -> ``cell(1,2,x)``; ``does(white,noop)`` -> ``white,noop``."""
    if not (atom.startswith(relation + "(") and atom.endswith(")")):
        raise ValueError(f"not a {relation}(...) atom: {atom!r}")
    return atom[len(relation) + 1 : -1]


def _proposition_normal(relations: frozenset[str]) -> Callable[[str], str]:
    """A published atom as `flatten` spells its GDL atom (memoised): a proposition written as a
    zero-arity compound, ``(gameOver)``, is the constant ``gameOver`` in GDL, but the dataset
    flattens it into the predicate (``next_gameOver()``); other atoms come back unchanged."""
    memo: dict[str, str] = {}

    def normal(atom: str) -> str:
        if atom not in memo:
            try:
                memo[atom] = flatten(unflatten(atom, relations))
            except ValueError:
                memo[atom] = atom
        return memo[atom]

    return normal


def _own_relations(relations: set[str]) -> frozenset[str]:
    """The game's own relation names (so a relation ``next_to`` is not read as ``next(to(...))``)."""
    keywords = {
        "true",
        "next",
        "legal",
        "does",
        "input",
        "init",
        "base",
        "goal",
        "terminal",
        "role",
        "distinct",
    }
    return frozenset(relations - keywords)


def _compare_section(
    result: GameResult, file: str, section: str, published: list[str], regenerated: set[str]
) -> None:
    have = set(published)
    if have != regenerated:
        result.sections.append(
            SectionResult(file, section, sorted(have - regenerated), sorted(regenerated - have))
        )


@dataclass
class GDLExamples:
    """A game's GDL as an example evaluator: what the oracle check compares, for other callers.

    ``derive(backgrounds, target)``: per example, the flattened ``target`` atoms (``legal``,
    ``next``, ...) the GDL derives from its background (dataset atoms; only ``true*``/``does*``
    are read); ``normal(atom)`` spells a dataset atom as ``derive`` does (see
    `_proposition_normal`); ``how`` says which evaluator: the compiled engine (in batches,
    `tasks.gdl.Engine.evaluate_batch`), or the per-state engine (one clingo grounding per state,
    `tasks.gdl.perstate`) where the whole game does not ground within the engine's bound.
    """

    derive: _Derive
    normal: Callable[[str], str]
    how: str


def gdl_examples(path: Path, atoms: Iterable[str], text: str | None = None) -> GDLExamples:
    """The GDL at ``path`` (or ``text``, a corrected copy of it) over the dataset atoms ``atoms``
    (every background atom the examples may hold: the engine must know each fluent; read as
    generation read the game, with its leniencies). Raises GDLError (or ValueError) when the GDL
    cannot be used at all."""
    with warnings.catch_warnings():  # the file was read (and warned about) before
        warnings.simplefilter("ignore", GDLWarning)
        source = path.read_text() if text is None else text
        try:
            gdl = Game.from_text(source, name=path.stem, base_dir=path.parent)
        except GDLError:
            gdl = Game.from_text(source, name=path.stem, base_dir=path.parent, lenient=True)
    relations = _own_relations(gdl.relations)
    gdl_input = _input_reader(relations)
    fluents = {text for kind, text in map(gdl_input, (a for a in atoms if _is_input(a))) if kind == "true"}
    try:
        evaluate_many: _EvaluateMany = _engine_covering(gdl, path, fluents, text).evaluate_batch
        how = "the compiled engine"
    except (GDLError, ValueError, RuntimeError) as e:
        if not _too_big_to_compile(e):
            raise
        evaluate_many = _one_by_one(_per_state_engine(gdl, e).evaluate)
        how = "the per-state engine (one clingo grounding per state)"
    derive_inputs = _deriver(evaluate_many, gdl_input)

    def derive(backgrounds: list[list[str]], target: str) -> list[set[str]]:
        return derive_inputs([[a for a in b if _is_input(a)] for b in backgrounds], target)

    return GDLExamples(derive, _proposition_normal(relations), how)


def _state_and_moves(
    background: Iterable[str], gdl_input: Callable[[str], tuple[str, str]]
) -> tuple[list[str], dict[str, str]]:
    """An example's fluents and joint move (role -> move), GDL text, from its dataset atoms."""
    fluents, does = [], {}
    for kind, text in map(gdl_input, background):
        if kind == "true":
            fluents.append(text)
        else:
            role, _, move = text.partition(",")
            does[role] = move
    return fluents, does


def _is_input(atom: str) -> bool:
    """A state or move atom of an example (``true_cell(..)``, ``does(..)``), not a static."""
    name = predicate_of(atom)
    return name in ("true", "does") or name.startswith(("true_", "does_"))


def check_dataset(
    root: str | Path,
    games: Iterable[str] | None = None,
    on_game: Callable[[str], None] | None = None,
    solver_fallback: bool = True,
) -> list[GameResult]:
    """Check the named games (default: all) of the dataset at ``root``; unknown names raise."""
    dataset = Dataset(root)
    names = list(games) if games is not None else dataset.games()
    for g in names:
        dataset.check_game(g)  # fail fast on a typo, with close matches
    results = []
    for g in names:
        if on_game is not None:
            on_game(g)
        results.append(check_game(dataset, g, solver_fallback=solver_fallback))
    return results


def exit_code(results: list[GameResult], strict: bool = False) -> int:
    """The exit status of a check: the worst of its games.

    1: some game disagrees; 2: none disagrees, but some could not be (fully) checked; 3 (only
    with ``strict``): all else agrees, but some game is a known data defect; 0: every game agrees,
    or is a diagnosed data defect (its diagnosis is printed and in ``--json``).
    """
    if any(r.status == DISAGREE for r in results):
        return 1
    if any(r.status in (UNCHECKED, PARTIAL) for r in results):
        return 2
    if strict and any(r.status == DATA_DEFECT for r in results):
        return 3
    return 0
