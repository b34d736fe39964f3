"""Playout traces and states, shared by the compiled and the reference engine."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

State = np.ndarray
"""A boolean vector over ``Engine.fluents``."""


@dataclass(slots=True)
class Trace:
    """One playout: states s_0..s_k (k+1, fluents) and the joint moves between them (k, roles).

    ``terminal`` says s_k is terminal; otherwise the playout stopped at the step limit, or
    (``stuck``) some role had no legal move in the non-terminal state s_k.
    """

    states: np.ndarray
    moves: np.ndarray
    terminal: bool
    stuck: bool = False

    def __len__(self) -> int:
        return len(self.moves)


def goal_key(value: str) -> tuple[int, int | str]:
    """How goal values sort: numbers numerically first, then any other value as text."""
    return (0, int(value)) if value.lstrip("-").isdigit() else (1, value)
