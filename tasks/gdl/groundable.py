"""What the engines read from a game: the `Groundable` protocol.

The engines (`tasks.gdl.engine`, `tasks.gdl.perstate`, `tasks.gdl.clingo_engine`) need a handful of a
game's derived views (its rules as ASP, its static relations, its role order), not the `Game`
class itself. Naming that handful here keeps the import graph one-way: `tasks.gdl.game` builds the
engines and imports them at the top, and no engine imports `game`, not even for a type hint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the protocol's attribute types only; demand and ast import nothing of the engines
    from tasks.gdl.ast import Program, Rule
    from tasks.gdl.demand import DemandProgram


class Groundable(Protocol):
    """A parsed game as the engines see it (`tasks.gdl.game.Game` is the one implementation)."""

    name: str
    program: Program

    @property
    def rules(self) -> list[Rule]:
        """The program's rules (facts included)."""
        ...

    @property
    def static_relations(self) -> set[str]:
        """Relations that do not depend on the state or the moves."""
        ...

    @property
    def role_order(self) -> list[str]:
        """The roles in the order the rulesheet declares them."""
        ...

    @property
    def grounding_bounded(self) -> bool:
        """Whether GDL's recursion restriction holds, so that grounding provably terminates."""
        ...

    @property
    def grounding_suspect(self) -> str:
        """A guess at the relation that blows the grounding up ('' when none stands out)."""
        ...

    @property
    def asp_for_grounding(self) -> str:
        """The unfolded, projected program the compiled engine grounds."""
        ...

    @property
    def asp_projected(self) -> str:
        """The rules with body projections only (what the clingo reference grounds)."""
        ...

    @property
    def demand(self) -> DemandProgram:
        """The magic-sets rewrite of the unfolded rules."""
        ...

    @property
    def asp_demand(self) -> str:
        """`asp_for_grounding` with demand-driven grounding of static relations."""
        ...

    def to_asp(self) -> str:
        """The plain rules as ASP."""
        ...
