"""GDL: KIF parser, semantics checks, clingo grounding, the compiled engine, random playouts.

Stable API (others build on these names and signatures):
    parse_file, parse_text, GDLError, GDLWarning, Game (from_file, from_text, to_asp, engine),
    Engine (roles, fluents, moves, static_atoms, initial, legal, next, goals, terminal,
    playouts, evaluate, and the *_batch variants), Trace, flatten, unflatten.
Internal (may change): the modules' private helpers, the compiled circuit layout.
"""

from tasks.gdl.engine import Engine, State, Trace
from tasks.gdl.errors import GDLError, GDLWarning, Pos
from tasks.gdl.game import Game
from tasks.gdl.kif import parse_file, parse_text
from tasks.gdl.terms import canonical, flatten, unflatten

__all__ = [
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
