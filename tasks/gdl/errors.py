"""Errors and warnings of the GDL layer, each carrying the source position it is about.

A researcher who feeds a broken game file must be told *where* it is broken, so every error
names the file, line and column (or the rule) that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Pos:
    """A source position: file name (or ``<text>``), 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class GDLError(Exception):
    """Bad GDL input (syntax, safety, stratification, grounding bound), located in the source."""

    def __init__(self, file: str, line: int, col: int, msg: str):
        self.file, self.line, self.col, self.msg = file, line, col, msg
        super().__init__(f"{file}:{line}:{col}: {msg}")

    @classmethod
    def at(cls, pos: Pos | None, msg: str) -> GDLError:
        if pos is None:
            return cls("<unknown>", 0, 0, msg)
        return cls(pos.file, pos.line, pos.col, msg)


TIMED_OUT = "grounding did not finish within"
"""How a grounding past its time bound begins its message (`GroundingLimit.timed_out`)."""


class GroundingLimit(GDLError):
    """The whole-game grounding exceeded its time bound or memory: a size problem, not a spec one.

    `Game.play_engine` catches exactly this to fall back to the per-state engine
    (`tasks.gdl.perstate`); every other `GDLError` is a property of the game text.
    """

    @property
    def timed_out(self) -> bool:
        """The bound on time ran out (not memory, not a crash): what the engine cache remembers
        and what the per-state engine gets around (`tasks.oracle`)."""
        return self.msg.startswith(TIMED_OUT)


class GDLWarning(UserWarning):
    """Input that was tolerated but not used, e.g. stray Prolog lines in a published game file."""
