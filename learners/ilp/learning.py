"""One learning of the ``ilasp`` learner: what its stages read (:class:`Learning`) and what it
returns (:class:`LearnedProgram`, with its :class:`learners.ilp.profile.Profile` as :class:`Learned`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from learners.base import Report
from learners.ilp.bias import Bias, Clause, Settings
from learners.ilp.cover import ScoredRule
from learners.ilp.coverage import Facts, Targets
from learners.ilp.evaluate import RuleModel
from learners.ilp.meter import Meter
from learners.ilp.mode import Mode
from learners.ilp.pool import Pool, balanced, union
from learners.ilp.profile import Profile
from learners.ilp.scoring import Scorer
from tasks.task import Split, Task


class LearnedProgram(RuleModel):
    """A RuleModel that also records how the ILASP* loop ended (shown by ``describe``).

    ``fallback`` is True when the loop ended without a hypothesis covering every training positive,
    so the program is whichever of the last hypothesis, the best partial cover and the empty
    program scored best on validate. ILASP* itself returns no program there; the results store
    keeps this flag (``extra.fallback``) so reports can also count such models as failures.
    """

    def __init__(
        self, rules: str, *, status: str, iterations: int, train_ba: float, fallback: bool = False,
        learned_rules: tuple[str, ...] = (),
    ):  # fmt: skip
        super().__init__(
            rules, name="ilasp", note=f"{status}, {iterations} iterations, train BA {train_ba:.3f}"
        )
        self.learned_rules = learned_rules
        """The learned rules the program is written from (as its mode writes them: `program_of`)."""
        self.status = status
        self.iterations = iterations
        self.train_ba = train_ba
        self.fallback = fallback
        self.cut_by = ""
        """Which budget stopped the loop when :attr:`budget_cut` (`learners.base.budget_cut`): set
        by the fit, which alone knows whether the wall clock had run out."""

    @property
    def budget_cut(self) -> bool:
        """Whether the budget (seconds or work) stopped the loop, whichever program was then chosen
        (``budget``, ``budget; best partial cover``, ...): `learners.base.budget_cut`, the row
        says ``timeout``."""
        return self.status.split(";")[0] == "budget"


def program_of(
    rules: list[ScoredRule], mode: Mode, head: str, n_pos: int, n_neg: int, status: str, iterations: int
) -> LearnedProgram:
    """The learned program of ``rules`` (as ``mode`` writes it), with its training balanced accuracy."""
    tp, fp = len(union([r.pos for r in rules])), len(union([r.neg for r in rules]))
    texts = tuple(r.text for r in rules)
    return LearnedProgram(
        mode.program(list(texts), head), status=status, iterations=iterations,
        train_ba=balanced(tp, fp, n_pos, n_neg), learned_rules=texts,
    )  # fmt: skip


class Learned(NamedTuple):
    """A learning's program, where its time went, and what scores its programs on validate."""

    program: LearnedProgram
    profile: Profile
    scorer: Scorer


@dataclass
class Learning:
    """The inputs of one learning, read by every stage."""

    task: Task
    settings: Settings
    mode: Mode
    meter: Meter
    profile: Profile
    report: Report
    train: Split
    facts: Facts
    targets: Targets
    bias: Bias
    pool: Pool
    scorer: Scorer

    @property
    def n_pos(self) -> int:
        return len(self.targets.positives)

    @property
    def n_neg(self) -> int:
        return self.facts.n * self.targets.table.n - self.n_pos

    def verify(self, clause: Clause) -> ScoredRule | None:
        """``clause`` scored on every training example (one unit of work; see Pool.verify)."""
        self.meter.spend()
        return self.pool.verify(clause, self.facts, self.targets, self.settings.max_rows)

    def verify_all(self, clauses: list[Clause]) -> list[ScoredRule]:
        """Verify ``clauses`` into the pool; the new consistent rules it kept."""
        new_rules = [r for c in clauses if (r := self.verify(c)) is not None and self.pool.add_verified(r)]
        return [r for r in new_rules if r in self.pool.consistent]

    def program(self, rules: list[ScoredRule], status: str) -> LearnedProgram:
        return program_of(
            rules, self.mode, self.task.predicates[0], self.n_pos, self.n_neg, status, self.profile.iterations
        )
