"""GDL: KIF parser, semantics checks, clingo grounding, the compiled engine, random playouts.

STABLE (others build on these names and signatures; changes will be announced):
    parse_file(path) / parse_text(text, name=, base_dir=) -> Program (rules with file:line:col)
    Game.from_file(path) / Game.from_text(text, name=)     parse + checks (GDLError / GDLWarning)
    game.to_asp() -> str            clingo program of the rules (conventions: tasks.gdl.asp)
    game.relations, game.static_relations, game.role_order, game.asp_for_grounding,
    game.program.skipped / .asserted_distinct
    game.evaluate(fluents, does)    exact, by clingo on that one state (no engine needed)
    game.engine(ground_seconds=None, extra_fluents=()) -> Engine
                                    ground once (bounded: GROUND_SECONDS), compile; cached
    game.play_engine(ground_seconds=None, state_seconds=None) -> Engine | PerStateEngine
                                    the compiled engine, or where the whole grounding exceeds
                                    its bound (GroundingLimit) tasks.gdl.perstate.PerStateEngine:
                                    same interface, one clingo grounding per state
    Engine: roles, fluents, moves, static_atoms, initial(), legal(s), next(s, joint), goals(s),
            terminal(s), evaluate(fluents, does), playouts(n, max_steps, seed, batch) -> [Trace],
            legal_batch / terminal_batch / next_batch, state_fluents(s), state_of(fluents),
            move_id(role, move), fallbacks, ground_seconds
    Trace: states (k+1, |fluents|) bool, moves (k, |roles|) move ids, terminal, stuck
    flatten(gdl_text) / unflatten(flat_text, relations=) / canonical(text)
    GDLError(file, line, col, msg), GDLWarning
    Game.from_file(path, lenient=True)  play a harmless spec violation anyway (docs/gdl.md)
    tasks.gdl.probe: probe_game / probe_isolated / summary   (`orch games probe`)
    tasks.gdl.types: infer_signature(rules, ground_atoms) / signature_text   (no .typ needed)
INTERNAL (may change): tasks.gdl.compiled (circuit layout), tasks.gdl.ground internals,
tasks.gdl.unfold and tasks.gdl.demand (grounding-size rewrites; demand: magic sets for static
relations, used by the per-state engine only when the rules without a state do not ground), tasks.gdl.exact / tasks.gdl.trace (below engine and
reference, so neither imports the other). Grounding children are started by procs.child (they die with their parent).

Ground terms are written as canonical text without spaces: ``cell(1,2,x)``, ``mark(1,2)``,
``legal(white,mark(1,2))``. States are boolean vectors over ``Engine.fluents``.
Conventions worth knowing:
* legal/goal/terminal are evaluated in a state with no moves; next with the given joint move.
* The fluents/moves are an over-approximation of the reachable ones, computed by clingo
  (`tasks.gdl.ground`); `Engine.evaluate` of fluents outside it falls back to clingo (exact).
* Stray non-GDL text and redundant ``(distinct a b)`` facts are skipped with a GDLWarning
  naming file:line (`tasks.gdl.kif`); ``;`` and ``%``-line comments, CRLF and a BOM are read;
  ``import NAME`` includes NAME.txt. Any KIF symbol is accepted (`tasks.gdl.terms`).
* `tasks.gdl.clingo_engine.ClingoEngine` answers the same queries by one clingo solve per query:
  the reference the compiled engine is tested and benchmarked against.
"""

from tasks.gdl.engine import Engine, State, Trace
from tasks.gdl.errors import GDLError, GDLWarning, Pos
from tasks.gdl.game import Game
from tasks.gdl.ground import GROUND_SECONDS
from tasks.gdl.kif import parse_file, parse_text
from tasks.gdl.terms import canonical, flatten, unflatten

__all__ = [
    "GROUND_SECONDS",
    "Engine",
    "GDLError",
    "GDLWarning",
    "Game",
    "Pos",
    "State",
    "Trace",
    "canonical",
    "flatten",
    "parse_file",
    "parse_text",
    "unflatten",
]
