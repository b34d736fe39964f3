"""Known defects of the published IGGP data: where the data is not what its own GDL file gives.

The oracle check (:mod:`tasks.oracle`) must not pass a game whose examples contradict its GDL, but
two published games contradict theirs in one precise, explainable way each. For those, this module
holds a *correction*: a textual edit of the published GDL file that makes it reproduce the data.
A correction is a claim, not a pass: the check applies it, re-evaluates every example of the
affected target with the corrected rules, and reports the game as ``data-defect`` only if the
corrected GDL agrees with *every* example (otherwise the game disagrees, as any other). The
``reference`` learner applies the same corrections, so that it models the data as published.

The two defects, and how they were found (every example of the target, all three splits):

* **firesheep, next** -- 182 of 2792 examples differ, exactly those whose joint move contains a
  ``kill``: the data keeps the killed sheep alive (it still moves, burns and ages; e.g.
  ``next_sheep(9, 9, up)`` after ``does_kill(blue, 9)``). The GDL is ill-formed there: ``terminal``
  depends on ``does`` (terminal -> sheep_moving -> moving_final -> moving -> not_moving -> alive ->
  killed -> does), which GDL forbids; the authors' generator evidently evaluated ``killed`` in the
  state without moves, where it never holds. With the rule ``(<= (killed ?e) (does ?p (kill ?e)))``
  removed, all 2792 examples agree; ``doing_kill`` (which only ``next`` uses) still sees the move,
  as the data's ``next_has_kill`` atoms require. Not the cause: the game's own relation ``next_at``
  flattens like ``next(at(..))``, but conflating the two (or adding its atoms to the positives)
  contradicts 790 examples, so the dataset did *not* conflate them.
* **pilgrimage, legal** -- 60 of 2421 examples differ: the published GDL names the action
  ``place_pilgrim_action``, while the data's ``legal`` atoms (and the ``.typ``) say ``place_pilgrim``;
  its ``does``/``input`` atoms keep the GDL's name. Renaming the action in the one ``legal`` rule
  makes every example agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


class CorrectionError(ValueError):
    """A correction no longer applies to the GDL file (the file changed)."""


@dataclass(frozen=True)
class Correction:
    """An edit of one rule of a published GDL file, and why the data needs it."""

    game: str
    target: str
    rule: str  # the KIF rule as published (any whitespace between tokens matches)
    replacement: str  # what replaces it ("" removes it)
    diagnosis: str

    def pattern(self) -> re.Pattern[str]:
        """``rule`` as a regex that tolerates any whitespace where the rule has a space."""
        return re.compile(r"\s+".join(re.escape(token) for token in self.rule.split()))

    def apply(self, gdl_text: str) -> str:
        """The corrected GDL text; CorrectionError if the rule is not there exactly once."""
        new, n = self.pattern().subn(lambda _: self.replacement, gdl_text)
        if n != 1:
            raise CorrectionError(
                f"{self.game}: the rule {self.rule!r} occurs {n} times in the GDL, expected 1"
            )
        return new

    def describe(self) -> str:
        edit = f"removed {self.rule}" if not self.replacement else f"{self.rule} -> {self.replacement}"
        return f"{self.diagnosis} (correction: {edit})"


CORRECTIONS: dict[str, Correction] = {
    c.game: c
    for c in (
        Correction(
            game="firesheep",
            target="next",
            rule="(<= (killed ?e) (does ?p (kill ?e)))",
            replacement="",
            diagnosis="the data never applies kill to the sheep (the GDL's terminal depends on does through "
            "killed; the authors evaluated killed without moves): a killed sheep still moves, burns and ages",
        ),
        Correction(
            game="pilgrimage",
            target="legal",
            rule="(<= (legal ?p (place_pilgrim_action ?i ?j)) (legal_pilgrim ?p ?i ?j))",
            replacement="(<= (legal ?p (place_pilgrim ?i ?j)) (legal_pilgrim ?p ?i ?j))",
            diagnosis="the data's legal atoms (and the .typ) name the action place_pilgrim, the GDL "
            "place_pilgrim_action (its does/input atoms keep the GDL's name)",
        ),
    )
}


def correction_for(game: str) -> Correction | None:
    """The known correction of ``game``'s published GDL, if any."""
    return CORRECTIONS.get(game)


def corrected_text(game: str, path: str | Path) -> tuple[str, Correction | None]:
    """The GDL text of ``path`` with ``game``'s correction applied (unchanged if it has none)."""
    text = Path(path).read_text()
    correction = correction_for(game)
    return (text, None) if correction is None else (correction.apply(text), correction)
