"""A checked GDL game: parse, validate, translate to ASP, and build engines."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

from tasks.gdl.asp import program_to_asp
from tasks.gdl.ast import Const, Func, Program, Rule, relation, variables
from tasks.gdl.checks import (
    UNIVERSE,
    bind_query_variables,
    check,
    check_arity,
    dependency_graph,
    unrestricted_recursion,
)
from tasks.gdl.clingo_engine import ClingoEngine
from tasks.gdl.demand import DemandProgram, demand_rewrite
from tasks.gdl.engine import Engine
from tasks.gdl.engine_cache import cached_engine
from tasks.gdl.errors import GDLError, GroundingLimit
from tasks.gdl.exact import evaluate_by_solving
from tasks.gdl.ground import GROUND_SECONDS
from tasks.gdl.kif import parse_file, parse_text
from tasks.gdl.perstate import STATE_SECONDS, PerStateEngine
from tasks.gdl.terms import canonical
from tasks.gdl.unfold import unfold


class Game:
    """A GDL game that passed the static checks (safety, stratification, distinguished relations)."""

    def __init__(self, program: Program, name: str | None = None, lenient: bool = False):
        self.program = program
        self.name = name or Path(program.file).stem
        self.lenient = lenient
        self.leniencies: list[str] = []
        """What ``lenient`` changed to play the game anyway (empty for a game within the spec)."""
        if lenient:
            program.rules, self.leniencies = bind_query_variables(program.rules)
            try:
                check_arity(program.rules)
            except GDLError as e:
                self.leniencies.append(f"{e.msg.split(' [breaks')[0]} (kept apart by arity)")
        check(program.rules, lenient)
        self._engines: dict[tuple[str, ...], Engine] = {}
        self._per_state: PerStateEngine | None = None

    @classmethod
    def from_file(cls, path: str | Path, lenient: bool = False) -> Game:
        return cls(parse_file(path), lenient=lenient)

    @classmethod
    def from_text(
        cls, text: str, name: str = "<text>", base_dir: str | Path | None = None, lenient: bool = False
    ) -> Game:
        return cls(parse_text(text, name, base_dir), name, lenient=lenient)

    @property
    def rules(self) -> list[Rule]:
        return self.program.rules

    @cached_property
    def relations(self) -> set[str]:
        """Names of the relations the game defines or uses."""
        g = dependency_graph(self.rules)
        names = {r[0] for r in g} | {b[0] for edges in g.values() for b, _, _ in edges}
        return names - {UNIVERSE}  # the lenient domain (tasks.gdl.checks) is not the game's

    @cached_property
    def static_relations(self) -> set[str]:
        """Relations that depend on neither ``true`` nor ``does`` (their atoms are fixed).

        ``init``, ``base`` and the four targets (``legal``, ``goal``, ``terminal``, ``next``)
        are left out even when static, as in the published data's ``statics:`` sections.
        """
        return self.relations - self.dynamic_relations - {"init", "base", "legal", "goal", "terminal", "next"}

    @cached_property
    def dynamic_relations(self) -> set[str]:
        """Relations that depend on ``true`` or ``does`` (these two included)."""
        g = dependency_graph(self.rules)
        dynamic = {"true", "does"}
        changed = True
        while changed:
            changed = False
            for h, edges in g.items():
                if h[0] not in dynamic and any(b[0] in dynamic for b, _, _ in edges):
                    dynamic.add(h[0])
                    changed = True
        return dynamic

    @cached_property
    def role_order(self) -> list[str]:
        """Roles as declared by ``(role r)`` facts, in source order."""
        out = []
        for r in self.rules:
            if not r.body and isinstance(r.head, Func) and relation(r.head) == ("role", 1):
                arg = r.head.args[0]
                if isinstance(arg, Const) and arg.name not in out:
                    out.append(arg.name)
        return out

    @cached_property
    def grounding_bounded(self) -> bool:
        """Whether GDL's recursion restriction holds, so that grounding provably terminates."""
        return not unrestricted_recursion(self.rules)

    @cached_property
    def grounding_suspect(self) -> str:
        """The relation most likely to blow up a grounding, for the timeout error (a heuristic).

        A rule breaking the recursion restriction can build ever larger terms; otherwise the
        rule with the most distinct body variables has the most instances to enumerate.
        """
        bad = unrestricted_recursion(self.rules)
        if bad:
            r = bad[0]
            return (
                f"most likely {relation(r.head)[0]}, whose rule at {r.pos} breaks the recursion restriction"
            )
        rules = [r for r in self.rules if r.body]
        if not rules:
            return ""
        r = max(rules, key=lambda r: len({v.name for lit in r.body for v in variables(lit)}))
        n = len({v.name for lit in r.body for v in variables(lit)})
        return f"most likely {relation(r.head)[0]}, whose rule at {r.pos} joins {n} variables"

    def to_asp(self) -> str:
        """The rules as a clingo program (conventions in `tasks.gdl.asp`); no state, no moves."""
        return self._asp

    @cached_property
    def _asp(self) -> str:
        return program_to_asp(self.rules)

    @cached_property
    def asp_for_grounding(self) -> str:
        """`to_asp` plus what shrinks the grounding: query-bound helper relations unfolded
        (`tasks.gdl.unfold`) and body projections (`tasks.gdl.asp.rule_to_asp`)."""
        return program_to_asp(unfold(self.rules, self.dynamic_relations), project=True)

    @cached_property
    def asp_projected(self) -> str:
        """`to_asp` with body projections only: what the clingo reference engine grounds, so
        that the differential test also covers `tasks.gdl.unfold`."""
        return program_to_asp(self.rules, project=True)

    @cached_property
    def demand(self) -> DemandProgram:
        """The magic-sets rewrite (`tasks.gdl.demand`) of the unfolded rules: static relations
        derived only for the bindings play asks about. Its ``demanded`` relations are the ones
        no longer derived in full."""
        return demand_rewrite(unfold(self.rules, self.dynamic_relations), self.static_relations)

    @cached_property
    def asp_demand(self) -> str:
        """`asp_for_grounding` with demand-driven grounding of static relations (`demand`): what
        the per-state engine grounds when the plain program does not ground without a state."""
        return program_to_asp(self.demand.rules, project=True)

    @cached_property
    def asp_demand_plain(self) -> str:
        """The plain rules (no unfolding, no projections) with the demand rewrite only: the
        per-state reference for a game whose plain rules do not ground (the rewrite itself is
        checked against the plain rules by tests on small games)."""
        return program_to_asp(demand_rewrite(self.rules, self.static_relations).rules)

    def evaluate(self, true_fluents: list[str], does: dict[str, str] | None = None) -> dict[str, list[str]]:
        """Like `Engine.evaluate`, by clingo on this one state, without grounding the whole game.

        Slow per call (a grounding and two solves) but needs no `engine()`: the way to query
        games whose full grounding exceeds the bound (e.g. asylum).
        """
        fluents = [canonical(f) for f in true_fluents]
        moves = {r: canonical(m) for r, m in (does or {}).items()}
        return evaluate_by_solving(self.to_asp(), fluents, moves)

    def engine(self, ground_seconds: float | None = None, extra_fluents: Iterable[str] = ()) -> Engine:
        """The compiled engine (grounds once on first call, then cached).

        ``ground_seconds`` bounds grounding (default `tasks.gdl.ground.GROUND_SECONDS`);
        exceeding it raises `GDLError`. ``extra_fluents`` widens the compiled fluents beyond the
        reachable ones (e.g. all fluents of published states), so `Engine.evaluate` needs no
        clingo fallback for them; the initial state is unchanged. One engine per extra set.
        """
        key = tuple(sorted({canonical(f) for f in extra_fluents}))
        if key not in self._engines:
            self._engines[key] = cached_engine(self, ground_seconds, key)  # slow builds are kept on disk
        return self._engines[key]

    def play_engine(
        self, ground_seconds: float | None = None, state_seconds: float | None = None
    ) -> Engine | PerStateEngine:
        """The compiled engine, or the per-state engine where the whole grounding is too big.

        Games whose whole grounding fits ``ground_seconds`` get `engine()` (so their generated
        tasks are unchanged); one that exceeds it (`tasks.gdl.errors.GroundingLimit`) is played by
        `tasks.gdl.perstate.PerStateEngine`, one grounding per state, each under
        ``state_seconds`` (default `tasks.gdl.perstate.STATE_SECONDS`). Cached.
        """
        if self._per_state is not None:
            return self._per_state
        try:
            return self.engine(ground_seconds)
        except GroundingLimit as e:
            if self._per_state is None:
                bound = STATE_SECONDS if state_seconds is None else state_seconds
                self._per_state = PerStateEngine(self, bound, why=e.msg)
            return self._per_state

    def clingo_engine(self, ground_seconds: float | None = None) -> ClingoEngine:
        """The reference engine: one clingo grounding, one solve per query (slow, simple)."""
        return ClingoEngine(self, GROUND_SECONDS if ground_seconds is None else ground_seconds)

    def __repr__(self) -> str:
        return f"Game({self.name!r}, {len(self.rules)} rules)"
