"""Ground a GDL game once with clingo, over-approximating the fluents and moves it can reach.

Many game files declare no ``base``/``input``, so the possible fluents and moves are computed:
the game's rules are grounded together with

    { true(F) } :- init(F).      { true(F) } :- next(F).      { does(R,M) } :- legal(R,M).

clingo's grounder instantiates rules for every atom that *may* become true, so the ground
``true(F)`` atoms are a superset of the fluents reachable from the initial state (an
over-approximation: negation is ignored when deciding what may hold), and likewise for moves.
The same grounding is the program the engines evaluate: a rule instance exists for every
combination of possible fluents and moves, with facts and static relations already simplified
away by the grounder. The ground rules are read through `clingo.Control.register_observer`.
The text grounded is `Game.asp_for_grounding` (the rules with body projections, which keep the
grounding small: firesheep goes from >120 s to 7 s).

Grounding a program that violates GDL's recursion restriction may not terminate, and grounding
a big game (chess-like boards, where the over-approximation is large) may take very long; so
grounding runs in a forked child under a time bound (`GROUND_SECONDS`) and a game that exceeds
it is refused with a clear error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import cast

import clingo

from procs.child import can_fork, start_child
from tasks.gdl.errors import TIMED_OUT, GDLError, GroundingLimit
from tasks.gdl.terms import function_name_from_asp, parse_ground, symbol_text, to_symbol

GROUND_SECONDS = 300.0
"""Default time bound for grounding one game (seconds)."""

SCAFFOLD = """
% tasks.gdl.ground: every fluent that may hold and every move that may be legal.
{ true(F) } :- init(F).
{ true(F) } :- next(F).
{ does(R,M) } :- legal(R,M).
"""


GroundRule = tuple[int, tuple[int, ...], tuple[int, ...]]
"""(head atom, positive body atoms, negative body atoms); plain tuples pickle fast."""


@dataclass
class GroundGame:
    """A game's ground program, with the atoms that matter to the engines named.

    Atom ids are clingo's program atoms; ``atoms`` maps canonical GDL text (``true(cell(1,1,b))``)
    to ids. ``rules`` are the normal rules (choice rules for true/does are left out: those atoms
    are the inputs). ``facts`` are atoms clingo decided are always true.
    """

    roles: list[str]
    atoms: dict[str, int]
    facts: set[int]
    rules: list[GroundRule]
    fluents: list[str]
    moves: list[list[str]]
    initial: list[str]
    seconds: float
    n_atoms: int = 0
    static_atoms: list[str] = field(default_factory=list)
    roles_inferred: bool = False
    """No ``role`` facts: the roles are the first arguments of the possible ``legal`` atoms."""


PROGRESS_EVERY = 50_000
"""The grounding child reports its count of ground rules this often (named in a timeout error)."""


class _Collect:
    def __init__(self, report=None) -> None:
        self.rules: list[tuple[bool, list[int], list[int]]] = []
        self.weight = 0
        self.report = report

    def rule(self, choice: bool, head: list[int], body: list[int]) -> None:
        self.rules.append((choice, head, body))  # clingo passes fresh lists: no copies needed
        if self.report is not None and len(self.rules) % PROGRESS_EVERY == 0:
            self.report(len(self.rules))

    def weight_rule(self, choice: bool, head: list[int], lower: int, body: list) -> None:
        self.weight += 1


def _child(conn, args: tuple[str, str, set[str], list[str]]) -> None:  # pragma: no cover - runs in the child
    """The grounding child (started by `procs.child`, so it dies with its parent)."""
    try:
        conn.send(("ok", _ground(*args, report=lambda n: conn.send(("progress", n)))))
    except GDLError as e:
        conn.send(("gdl", (e.file, e.line, e.col, e.msg)))
    except BaseException as e:  # noqa: BLE001 - MemoryError, clingo errors: report them all
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def ground_game(
    asp: str,
    name: str,
    static_relations: set[str],
    bounded: bool,
    role_order: list[str],
    seconds: float = GROUND_SECONDS,
    extra_fluents: tuple[str, ...] = (),
    suspect: str = "",
) -> GroundGame:
    """Ground ``asp`` (the game's rules) once, within ``seconds``; see the module docstring.

    Grounding runs in a forked child process that ships the ground program back, so a grounding
    that does not terminate (or blows up) is stopped at the bound with a `GDLError` naming the
    game; ``bounded`` (the recursion restriction holds) only changes the wording. Without
    ``fork`` (not Linux/macOS) it runs in-process, unbounded.
    The timeout error gives the count of ground rules made so far and ``suspect`` (the caller's
    guess at the relation that blows up, `tasks.gdl.game.Game.grounding_suspect`). ``extra_fluents`` (canonical
    text) are made possible too, e.g. fluents of given states that the game cannot reach.
    """
    if extra_fluents:
        terms = [str(to_symbol(parse_ground(f))) for f in extra_fluents]
        asp += "% extra fluents\n" + "".join(f"{{ true({t}) }}.\n" for t in terms)
    args = (asp, name, static_relations, role_order)
    if not can_fork():
        return _ground(*args)
    deadline = time.monotonic() + seconds  # the bound covers the child's start too
    child = start_child(_child, (args,))
    so_far = 0
    try:
        while True:
            if not child.channel.poll(max(0.0, deadline - time.monotonic())):
                why = "" if bounded else " (its recursion is not provably bounded)"
                size = f"; {so_far:,} ground rules so far" if so_far else ""
                hint = f"; {suspect}" if suspect else ""
                raise GroundingLimit(name, 0, 0, f"{TIMED_OUT} {seconds:.0f} s{why}{size}{hint}")
            try:
                kind, payload = child.channel.recv()
            except EOFError:
                child.wait(1.0)
                raise GroundingLimit(name, 0, 0, f"grounding crashed (exit code {child.exitcode})") from None
            if kind != "progress":
                break
            so_far = payload
    finally:
        child.close()
    if kind == "ok":
        return payload
    if kind == "gdl":
        raise GDLError(*payload)
    if payload.startswith("MemoryError"):
        raise GroundingLimit(name, 0, 0, f"grounding ran out of memory: {payload}")
    raise GDLError(name, 0, 0, f"grounding failed: {payload}")


def _ground(
    asp: str, name: str, static_relations: set[str], role_order: list[str], report=None
) -> GroundGame:
    t0 = time.perf_counter()
    ctl = clingo.Control(["--warn=none"])
    obs = _Collect(report)
    # _Collect implements only the callbacks it needs (clingo calls only those): an Observer by duck typing.
    ctl.register_observer(cast(clingo.Observer, obs))
    try:
        ctl.add("base", [], asp + SCAFFOLD)
        ctl.ground([("base", [])])
    except RuntimeError as e:
        raise GDLError(name, 0, 0, f"clingo could not ground the game: {e}") from e
    if obs.weight:
        raise GDLError(name, 0, 0, "unexpected weight rules in the ground GDL program")

    atoms: dict[str, int] = {}
    facts: set[int] = set()
    roles: list[str] = []
    fluents: list[str] = []
    initial: list[str] = []
    moves_of: dict[str, list[str]] = {}
    static_atoms: list[str] = []
    # The possible fluents/moves are the heads of the scaffold's choice rules. The grounder also
    # keeps true/does atoms that occur only in negative literals of recursive rules; no rule
    # derives them, so they are always false and must not count as possible.
    chosen = {a for choice, head, _ in obs.rules if choice for a in head}
    inputs: set[int] = set()
    # each property read below is a call into clingo: read each once per atom (a million atoms in amazons)
    for sa in ctl.symbolic_atoms:
        sym = sa.symbol
        text = symbol_text(sym)
        literal, is_fact, sym_name = sa.literal, sa.is_fact, sym.name
        atoms[text] = literal
        if is_fact:
            facts.add(literal)
        if sym_name in ("true", "does", "init"):
            args = sym.arguments
            if sym_name != "init":
                inputs.add(literal)
            if sym_name == "true" and len(args) == 1 and literal in chosen:
                fluents.append(symbol_text(args[0]))
            elif sym_name == "does" and len(args) == 2 and literal in chosen:
                moves_of.setdefault(symbol_text(args[0]), []).append(symbol_text(args[1]))
            elif sym_name == "init" and len(args) == 1:
                if not is_fact:
                    raise GDLError(name, 0, 0, f"init atom {text} is not a fact: init must be static")
                initial.append(symbol_text(args[0]))
        if is_fact and function_name_from_asp(sym_name) in static_relations:
            static_atoms.append(text)
    for sa in ctl.symbolic_atoms.by_signature("role", 1):
        roles.append(symbol_text(sa.symbol.arguments[0]))
    roles_inferred = not roles and bool(moves_of)
    if roles_inferred:  # scissors_paper_stone says (player p1): take the roles that have moves
        roles = sorted(moves_of)
    if not roles:
        raise GDLError(name, 0, 0, "the game declares no role (and no legal moves to infer them from)")
    roles = sorted(roles, key=lambda r: (role_order.index(r) if r in role_order else len(role_order), r))

    rules: list[GroundRule] = []
    for choice, head, body in obs.rules:
        if choice:
            if not set(head) <= inputs:
                raise GDLError(name, 0, 0, "unexpected choice rule in the ground GDL program")
            continue
        if len(head) != 1:
            raise GDLError(name, 0, 0, "unexpected disjunctive/integrity rule in the ground program")
        if head[0] in facts or head[0] in inputs:
            continue
        rules.append((head[0], tuple(b for b in body if b > 0), tuple(-b for b in body if b < 0)))
    n_atoms = 1 + max([0, *atoms.values(), *(a for h, pos, neg in rules for a in (h, *pos, *neg))])
    return GroundGame(
        roles=roles,
        atoms=atoms,
        facts=facts,
        rules=rules,
        fluents=sorted(fluents),
        moves=[sorted(moves_of.get(r, [])) for r in roles],
        initial=sorted(initial),
        seconds=time.perf_counter() - t0,
        n_atoms=n_atoms,
        static_atoms=sorted(static_atoms),
        roles_inferred=roles_inferred,
    )
