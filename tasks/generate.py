"""Algorithm 1 of the IGGP paper: random playouts of a GDL game into (B, E+, E-) examples.

``generate_game(game.txt, game.typ, out, episodes, steps, seed)`` plays ``episodes`` random
episodes of at most ``steps`` joint moves (each role picks a legal move uniformly at random) and
*extracts* examples for the four targets:

* legal, goal, terminal, one per state s:   B = s (its ``true_*`` atoms), E+ = s_p (derived by the
  GDL rules), E- = ground(Σ, p) - E+;
* next, one per transition (s, a, s'):       B = s + ``does*`` atoms of the joint move a,
  E+ = s'[true/next], E- = ground(Σ, next) - E+.

Only the dynamic atoms go into an example's background; the static relations of the GDL
(``succ``, ``role``, derived ones such as ``adjacent``) are written once, under ``statics:``.
Negatives are implicit (closed world): the ``atoms:`` section is ground(Σ, target) from the
``.typ`` file, and a positive or background atom that the signature cannot produce is an error
naming the ``.typ`` file, so a signature that misses a symbol is caught at generation time.

Deduplication and the split (why it is done this way): random play revisits states constantly
(every tic-tac-toe episode starts from the same board), and the published dataset keeps each
distinct background once. We do the same, and we split by *distinct state*: the distinct states
are shuffled with ``seed`` and cut 4:1:1 into train/validate/test, and every target follows that
one partition (a next example (s, a) goes where s goes). So a held-out state never occurs as a
training background of any target, and no background occurs in two splits. The result is a
deterministic function of (GDL, .typ, episodes, steps, seed).
"""

from __future__ import annotations

import random
import re
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tasks.gdl import Engine, Game, GDLError, flatten
from tasks.gdl.groundable import Groundable
from tasks.gdl.perstate import PerStateEngine
from tasks.gdl.types import infer_signature, signature_text
from tasks.iggp import DatFile, write_dat
from tasks.quality import target_verdict, too_many_atoms
from tasks.signature import Signature, parse_typ, with_nullary_compounds
from tasks.task import SPLITS, TARGETS, format_atom

#: Split proportions, train : validate : test.
RATIOS = (4, 1, 1)


class GenerationError(ValueError):
    """The GDL and the type signature disagree, or the game cannot be played."""


#: Episodes per call of the engine's batched playouts (fixed, so results do not depend on progress).
CHUNK = 100


@dataclass
class Playouts:
    """The distinct states and transitions seen over all episodes, in first-seen order.

    States are keyed by their packed fluent vector; a transition by (state key, joint move ids).
    """

    states: dict[bytes, np.ndarray] = field(default_factory=dict)
    transitions: dict[tuple[bytes, tuple[int, ...]], bytes] = field(default_factory=dict)
    episodes: int = 0
    steps: int = 0
    terminal_episodes: int = 0  # episodes that reached a terminal state (quality rule never-ends)


def play(
    engine: Engine | PerStateEngine,
    episodes: int,
    steps: int,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> Playouts:
    """Random playouts (Algorithm 1's outer loops): every role draws a legal move uniformly.

    An episode stops at a terminal state or after ``steps`` joint moves. Episodes run in chunks
    of :data:`CHUNK` through the engine's batched playouts, chunk i seeded by (seed, i). A
    non-terminal state where some role has no legal move is an error in the game.
    """
    out = Playouts()
    for i, start in enumerate(range(0, episodes, CHUNK)):
        n = min(CHUNK, episodes - start)
        chunk_seed = int(np.random.SeedSequence([seed % 2**32, i]).generate_state(1)[0])
        for trace in engine.playouts(n, steps, seed=chunk_seed):
            if trace.stuck:
                stuck = engine.state_fluents(trace.states[-1])
                raise GenerationError(
                    f"{engine.game.name}: some role has no legal move in the non-terminal state {stuck}"
                )
            keys = [state_key(s) for s in trace.states]
            for key, s in zip(keys, trace.states, strict=True):
                out.states.setdefault(key, s)
            for t, joint in enumerate(trace.moves):
                out.transitions.setdefault((keys[t], tuple(int(m) for m in joint)), keys[t + 1])
            out.steps += len(trace)
            out.terminal_episodes += bool(trace.terminal)
        out.episodes += n
        if progress is not None:
            progress(n)
    return out


def state_key(state: np.ndarray) -> bytes:
    """A state's key: its packed fluent vector without trailing zero bytes.

    The per-state engine (`tasks.gdl.perstate`) numbers fluents as play meets them, so one state
    can come as vectors of different lengths; dropping the zero tail keys them alike. For vectors of
    one length (the compiled engine) the key is as injective as the packed vector itself.
    """
    return np.packbits(state).tobytes().rstrip(b"\0")


def split_states(states: list[bytes], seed: int) -> dict[bytes, str]:
    """Assign each distinct state to a split, 4:1:1, reproducibly from ``seed``."""
    order = list(range(len(states)))
    random.Random(f"split:{seed}").shuffle(order)
    n = len(states)
    total = sum(RATIOS)
    n_train = round(n * RATIOS[0] / total)
    n_validate = round(n * RATIOS[1] / total)
    assignment: dict[bytes, str] = {}
    for rank, i in enumerate(order):
        assignment[states[i]] = (
            "train" if rank < n_train else "validate" if rank < n_train + n_validate else "test"
        )
    return assignment


@dataclass
class GeneratedGame:
    """What :func:`generate_game` wrote: example counts per (target, split), and timings."""

    game: str
    out: Path
    episodes: int
    steps: int
    distinct_states: int
    distinct_transitions: int
    counts: dict[str, dict[str, int]]
    seconds: float
    engine: str = ""  # compiled or per-state
    roles: list[str] = field(default_factory=list)
    fluents: int = 0
    terminal_episodes: int = 0
    targets: dict[str, dict] = field(default_factory=dict)  # per target: splits' counts, excluded reasons
    leniencies: list[str] = field(default_factory=list)  # spec violations played anyway (docs/gdl.md)

    def as_dict(self) -> dict:
        return {
            "game": self.game,
            "out": str(self.out),
            "episodes": self.episodes,
            "steps": self.steps,
            "distinct_states": self.distinct_states,
            "distinct_transitions": self.distinct_transitions,
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
            "engine": self.engine,
            "roles": self.roles,
            "fluents": self.fluents,
            "terminal_episodes": self.terminal_episodes,
            "targets": self.targets,
            "leniencies": self.leniencies,
        }


def _read_game(game_file: Path) -> tuple[Game, list[str]]:
    """The game, read strictly, or else with the documented leniencies, as `orch games probe` plays it.

    Why: a corpus must not lose a game to a harmless spec violation (an arity clash, a query-bound
    head variable) that the probe plays anyway; what was forgiven is returned (for the manifest).
    A violation that is not harmless raises the strict error.
    """
    try:
        return Game.from_file(game_file), []
    except GDLError as strict:
        game = Game.from_file(game_file, lenient=True)
        found = game.leniencies or [str(strict).strip().splitlines()[0]]
        return game, [m.replace(f"{game_file.parent}/", "") for m in found]  # the same wherever the file is


def _quality(
    files: dict[str, dict[str, DatFile]], playouts: Playouts, unwritten: dict[str, str]
) -> dict[str, dict]:
    """Per target: each split's counts and the quality rules it breaks (`tasks.quality`);
    ``unwritten`` targets (too many candidate atoms) have no splits, only their reason."""
    out: dict[str, dict] = {t: {"splits": {}, "excluded": [why]} for t, why in unwritten.items()}
    for target, by_split in files.items():
        stats, reasons = target_verdict(by_split, len(playouts.states), playouts.terminal_episodes)
        out[target] = {"splits": {s: st.as_dict() for s, st in stats.items()}, "excluded": reasons}
    return out


#: Relations the dataset leaves out of ``statics:``: GDL bookkeeping (init is the first state,
#: base only enumerates fluents) and the targets themselves (a game may state ``(legal robot a)``
#: as a fact; it is still a target). ``role`` and ``input`` stay, as in the published data.
NOT_STATICS = frozenset({"init", "base", "legal", "goal", "terminal", "next"})

# How the GDL parser reports a ground (distinct a b) *fact* it skipped (tasks.gdl.kif).
_SKIPPED_DISTINCT = re.compile(r"skipped the fact \(distinct ([^\s()]+) ([^\s()]+)\)")


def dataset_statics(static_atoms: Iterable[str], game: Groundable) -> list[str]:
    """The ``statics:`` section from the game's static atoms (GDL text): flattened and sorted.

    Quirk kept for fidelity with the published data: a few games (tron, walkabout) state
    ``(distinct black white)`` as a fact. GDL makes ``distinct`` built in, so the parser skips
    such facts, but the authors' generator listed them as statics, and so do we.
    """
    atoms = {flatten(a) for a in static_atoms if a.partition("(")[0] not in NOT_STATICS}
    for _, message in game.program.skipped:
        m = _SKIPPED_DISTINCT.search(message)
        if m:
            atoms.add(format_atom("distinct", m.groups()))
    return sorted(atoms)


def unwritten_targets(signature: Signature) -> dict[str, str]:
    """Targets whose candidate atoms are too many to write, with the reason (`tasks.quality`)."""
    reasons = {t: too_many_atoms(signature.ground_size(t)) for t in TARGETS}
    return {t: why for t, why in reasons.items() if why is not None}


STATE_BATCH = 1024
"""States whose legal, goal and terminal atoms are derived in one engine call (`Engine.state_atoms`)."""


def extract(
    engine: Engine | PerStateEngine, signature: Signature, playouts: Playouts, seed: int
) -> dict[str, dict[str, DatFile]]:
    """The ``extract`` function: per target and split, the :class:`DatFile` to write.

    A target with too many candidate atoms (`tasks.quality.too_many_atoms`) is left out, never
    materialised: the caller reports it from :func:`unwritten_targets`."""
    where = signature.source
    targets = [t for t in TARGETS if t not in unwritten_targets(signature)]
    atoms = {t: signature.ground(t) for t in targets}
    known = {t: set(a) for t, a in atoms.items()}
    fluent_ok, does_ok = signature.produces("true"), signature.produces("does")
    statics = dataset_statics(engine.static_atoms, engine.game)
    nullary = signature.nullary  # zero-arity compounds, flattened into the predicate as IGGP did
    flat_true = [flatten(f"true({f})", nullary) for f in engine.fluents]
    flat_next = [flatten(f"next({f})", nullary) for f in engine.fluents]
    flat_does = [
        [flatten(f"does({r},{m})", nullary) for m in ms]
        for r, ms in zip(engine.roles, engine.moves, strict=True)
    ]

    def check(flat: list[str], allowed: Callable[[str], bool], what: str) -> list[str]:
        bad = [a for a in flat if not allowed(a)]
        if bad:
            raise GenerationError(
                f"{where}: the signature cannot produce the {what} atom {bad[0]!r}; declare its symbols in the .typ file"
            )
        return flat

    split_of = split_states(list(playouts.states), seed)
    files = {t: {s: DatFile(atoms[t], statics, []) for s in SPLITS} for t in targets}
    backgrounds: dict[bytes, list[str]] = {}
    keys = list(playouts.states)
    for start in range(0, len(keys), STATE_BATCH):
        chunk = keys[start : start + STATE_BATCH]
        for key, derived in zip(chunk, engine.state_atoms([playouts.states[k] for k in chunk]), strict=True):
            ids = np.flatnonzero(playouts.states[key])
            b = backgrounds[key] = sorted(check([flat_true[i] for i in ids], fluent_ok, "fluent"))
            for target in ("goal", "legal", "terminal"):
                if target in files:
                    pos = sorted(
                        check(
                            [flatten(a, nullary) for a in derived[target]], known[target].__contains__, target
                        )
                    )
                    files[target][split_of[key]].examples.append((b, pos))
    for (key, joint), nxt in playouts.transitions.items():
        if "next" not in files:
            break
        moves = check([flat_does[r][m] for r, m in enumerate(joint)], does_ok, "move")
        pos = sorted(
            check(
                [flat_next[i] for i in np.flatnonzero(playouts.states[nxt])],
                known["next"].__contains__,
                "next",
            )
        )
        files["next"][split_of[key]].examples.append((sorted(backgrounds[key] + moves), pos))
    return files


def generate_game(
    game_file: str | Path,
    types_file: str | Path | None,
    out: str | Path,
    episodes: int = 1000,
    steps: int = 100,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    ground_seconds: float | None = None,
) -> GeneratedGame:
    """Generate one game's tasks into ``out`` in the published layout; return what was written.

    Writes ``out/data/{train,validate,test}/GAME_TARGET_SPLIT.dat`` (GAME is the stem of
    ``game_file``) and copies the GDL and ``.typ`` to ``out/games/GAME.txt`` and
    ``out/types/GAME.typ``. Safe to call per game from separate processes (one game's files only).
    ``progress(k)`` is called as episodes complete. With ``types_file=None`` the signature is
    inferred from the grounded game (`tasks.gdl.types`) and written as ``out/types/GAME.typ``.
    A game whose whole grounding exceeds ``ground_seconds`` (default
    `tasks.gdl.ground.GROUND_SECONDS`) is played by the per-state engine (`Game.play_engine`);
    its signature is inferred from the atoms that play met.
    """
    start = time.perf_counter()
    game_file, out = Path(game_file), Path(out)
    types_file = None if types_file is None else Path(types_file)
    for p, what in ((game_file, "GDL game file"), (types_file, "type signature")):
        if p is not None and not p.is_file():
            raise FileNotFoundError(f"{p}: {what} not found")
    name = game_file.stem
    game, leniencies = _read_game(game_file)
    engine = game.play_engine(ground_seconds)
    playouts = play(engine, episodes, steps, seed, progress)
    if types_file is None:
        # the per-state engine has no whole grounding: the atoms play met stand in (docs/gdl.md)
        atoms = engine.ground.atoms if engine.ground is not None else engine.atom_texts()
        signature = infer_signature(engine.game.rules, atoms, str(game_file))
    else:
        signature = parse_typ(types_file)
    # (next (gameOver)) is written next_gameOver(), as IGGP's generator did (tasks.gdl.terms.flatten)
    signature = with_nullary_compounds(signature, game_file)
    files = extract(engine, signature, playouts, seed)
    counts: dict[str, dict[str, int]] = {}
    for target, by_split in files.items():
        for split, dat in by_split.items():
            d = out / "data" / split
            d.mkdir(parents=True, exist_ok=True)
            write_dat(d / f"{name}_{target}_{split}.dat", dat)
            counts.setdefault(target, {})[split] = len(dat.examples)
    for src, sub, suffix in ((game_file, "games", ".txt"), (types_file, "types", ".typ")):
        (out / sub).mkdir(parents=True, exist_ok=True)
        if src is None:
            (out / sub / f"{name}{suffix}").write_text(signature_text(signature))
        else:
            shutil.copyfile(src, out / sub / f"{name}{suffix}")
    return GeneratedGame(
        name,
        out,
        playouts.episodes,
        playouts.steps,
        len(playouts.states),
        len(playouts.transitions),
        counts,
        time.perf_counter() - start,
        engine="per-state" if isinstance(engine, PerStateEngine) else "compiled",
        roles=list(engine.roles),
        fluents=len(engine.fluents),
        terminal_episodes=playouts.terminal_episodes,
        targets=_quality(files, playouts, unwritten_targets(signature)),
        leniencies=leniencies,
    )
