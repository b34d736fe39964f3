"""One way to seed a run: Python's, numpy's and (when loaded) torch's global generators at once.

The orchestrator's worker seeds each job from its (seed, repeat) and the GNN training seeds each
fit; both go through :func:`seed_everything`, so "seeded" means the same three generators
everywhere. torch is seeded only when something has already imported it, so seeding never pulls
torch into a job that does not use it.
"""

from __future__ import annotations

import random
import sys

import numpy as np


def seed_everything(value: int) -> None:
    """Seed ``random``, ``numpy.random`` (``value`` mod 2**32, its range) and torch if it is loaded."""
    random.seed(value)
    np.random.seed(value % 2**32)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(value)
