"""The k-shot setup's split of a suite's worlds: which are held out to adapt to, which pre-train.

One definition for ``orch graphlog train`` and ``orch graphlog sweep``, so both commands split a
suite the same way and say the same thing when they cannot.
"""

from __future__ import annotations

from collections.abc import Sequence


class KShotError(ValueError):
    """The worlds cannot make a k-shot run (nothing held out, or nothing left to pre-train on)."""


def kshot_worlds(
    worlds: Sequence[str], heldout: Sequence[str], test_worlds: Sequence[str]
) -> tuple[list[str], list[str]]:
    """``(pretraining, heldout)``: ``heldout`` defaults to the suite's test worlds, and the
    pre-training worlds are ``worlds`` without the held-out ones (in their given order)."""
    held = list(heldout) or list(test_worlds)
    if not held:
        raise KShotError("kshot needs --heldout worlds (this suite marks no test worlds)")
    pretrain = [w for w in worlds if w not in held]
    if not pretrain:
        raise KShotError("kshot: every pre-training world is also held out; pass --worlds and --heldout")
    return pretrain, held
