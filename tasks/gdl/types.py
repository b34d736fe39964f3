"""Infer an IGGP type signature (``.typ``) from a GDL game alone, so any rulesheet can become tasks.

Method (docs/gdl.md, "Type signatures without a .typ"):

1. A *slot* is an argument position of a relation or function symbol: ``(cell, 3, 0)`` is the
   first argument of ``cell/3``. Every slot starts as its own type.
2. Slots are merged (union-find) where the rules say they hold the same things: a variable that
   occurs in two slots of one rule merges them; a function symbol used in two slots merges them
   (a function has one result type). The distinguished slots are joined into the dataset's
   names: the argument of ``true``/``next``/``init``/``base`` is ``prop``, the role positions of
   ``role``/``legal``/``does``/``goal``/``input`` are ``agent``, the move of ``legal``/``does``/
   ``input`` is ``action``, and the value of ``goal`` is ``int``.
3. The constants of a type are read off the grounded program (`tasks.gdl.ground`): every ground
   atom the engine can produce, walked slot by slot. The grounding over-approximates what play
   can reach, so every atom generation meets is well typed by construction. The ``agent`` type
   is the declared roles only (a variable that ranges over roles and board contents, as in
   ``(true (cell ?x ?y ?player))``, would otherwise make ``blank`` a player).
4. A type whose constants are exactly the roles is ``agent`` too: ``(control xplayer)`` set by
   rules that name the roles gives ``control :: agent -> prop``, as the published signatures write
   it (the same constants, so the same atoms: only the type's name changes).

Declarations keep the first-seen order of relations and symbols; other types are named after
their first slot (``cell_1`` for the first argument of ``cell``). Subtyping is never inferred:
a constant with two types is declared in both.
"""

from __future__ import annotations

from collections.abc import Iterable

from tasks.escape import escape_name
from tasks.gdl.ast import Const, Func, Rule, Term, Var, atoms_of
from tasks.gdl.terms import GTerm, parse_ground
from tasks.signature import Declaration, Signature, typ_name

Slot = tuple[str, int, int]
NAMED: dict[Slot, str] = {
    ("true", 1, 0): "prop", ("next", 1, 0): "prop", ("init", 1, 0): "prop", ("base", 1, 0): "prop",
    ("role", 1, 0): "agent", ("legal", 2, 0): "agent", ("does", 2, 0): "agent", ("goal", 2, 0): "agent",
    ("input", 2, 0): "agent",
    ("legal", 2, 1): "action", ("does", 2, 1): "action", ("input", 2, 1): "action",
    ("goal", 2, 1): "int",
}  # fmt: skip
_PRIORITY = ("agent", "prop", "action", "int")
_WRITTEN_LIKE = {"does": "legal", "true": "next"}
"""Relations generation writes whether or not a rule reads them (the joint move of a step, the
state), declared with the types of the relation they come from where no rule names them."""
KEYWORD_RELATIONS = ("role", "init", "true", "next", "legal", "does", "goal", "terminal", "base", "input")


class _Union:
    def __init__(self) -> None:
        self.parent: dict[Slot, Slot] = {}

    def find(self, x: Slot) -> Slot:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: Slot, b: Slot) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _walk_rule(r: Rule, uf: _Union, fn_slots: dict[tuple[str, int], list[Slot]], order: dict) -> None:
    var_slots: dict[str, list[Slot]] = {}

    def term(t: Term, slot: Slot) -> None:
        uf.find(slot)
        if isinstance(t, Var):
            var_slots.setdefault(t.name, []).append(slot)
        elif isinstance(t, Func):
            key = (t.name, len(t.args))
            order.setdefault(("fn", key), len(order))
            fn_slots.setdefault(key, []).append(slot)
            for i, a in enumerate(t.args):
                term(a, (t.name, len(t.args), i))

    def atom(a: Const | Func) -> None:
        order.setdefault(("rel", (a.name, len(a.args) if isinstance(a, Func) else 0)), len(order))
        if isinstance(a, Func):
            for i, x in enumerate(a.args):
                term(x, ("@" + a.name, len(a.args), i))

    if not isinstance(r.head, Var):
        atom(r.head)
    for lit in r.body:
        for a, _ in atoms_of(lit):
            if not isinstance(a, Var):  # the checks refuse a variable as a literal before this runs
                atom(a)
    for slots in var_slots.values():
        for s in slots[1:]:
            uf.union(slots[0], s)


def infer_signature(
    rules: Iterable[Rule], ground_atoms: Iterable[str], source: str = "<inferred>"
) -> Signature:
    """The type signature of a game from its rules and the ground atoms of its grounding."""
    rules = [r for r in rules if " " not in r.head.name]  # not the lenient universe (tasks.gdl.checks)
    uf = _Union()
    fn_slots: dict[tuple[str, int], list[Slot]] = {}
    order: dict = {}
    for r in rules:
        _walk_rule(r, uf, fn_slots, order)
    for slot in NAMED:
        uf.find(("@" + slot[0], slot[1], slot[2]))
    by_name: dict[str, list[Slot]] = {}
    for slot, name in NAMED.items():
        by_name.setdefault(name, []).append(("@" + slot[0], slot[1], slot[2]))
    for slots in by_name.values():
        for s in slots[1:]:
            uf.union(slots[0], s)
    for slots in fn_slots.values():
        for s in slots[1:]:
            uf.union(slots[0], s)

    constants: dict[Slot, dict[str, None]] = {}

    def walk(t: GTerm, slot: Slot) -> None:
        name, args = t
        if not args:
            constants.setdefault(uf.find(slot), {}).setdefault(name, None)
            return
        for i, a in enumerate(args):
            walk(a, (name, len(args), i))

    relations = {k[1] for k in order if k[0] == "rel"}
    for text in ground_atoms:
        name, args = parse_ground(text)
        if (name, len(args)) not in relations:
            continue
        for i, a in enumerate(args):
            walk(a, ("@" + name, len(args), i))

    type_name: dict[Slot, str] = {}
    for slot, name in sorted(NAMED.items(), key=lambda x: _PRIORITY.index(x[1])):
        type_name.setdefault(uf.find(("@" + slot[0], slot[1], slot[2])), name)

    agent = uf.find(("@role", 1, 0))
    roles = list(dict.fromkeys(_roles(rules)))
    extras = [c for c in constants.get(agent, {}) if c not in roles] if roles else []
    for root, consts in constants.items():  # a slot of exactly the roles is `agent` (see _the_roles)
        if root != agent and root not in type_name and _the_roles(consts, roles):
            type_name[root] = "agent"
    wide: list[str] = []  # see _widen

    def name_of(slot: Slot) -> str:
        root = uf.find(slot)
        if extras and root == agent and slot not in _AGENT_SLOTS:
            return _widen(wide, slot)
        if root not in type_name:
            base = root[0].lstrip("@")  # any KIF symbol: escaped, a type name is [A-Za-z0-9_]+ (tasks.escape)
            type_name[root] = f"{escape_name(base)}_{root[2] + 1}"
        return type_name[root]

    sig = Signature(source=source)
    line = 0
    for kind, (name, arity) in sorted(order, key=order.__getitem__):
        line += 1
        if kind == "rel":
            arg_types = tuple(name_of(("@" + name, arity, i)) for i in range(arity))
            sig.declarations.append(Declaration(name, arg_types, "bool", line))
        else:
            result = name_of(fn_slots[(name, arity)][0])
            arg_types = tuple(name_of((name, arity, i)) for i in range(arity))
            sig.declarations.append(Declaration(name, arg_types, result, line))
    declared = {d.name: d for d in sig.declarations if d.result == "bool"}
    for name, like in _WRITTEN_LIKE.items():
        if name not in declared and like in declared:
            line += 1
            sig.declarations.append(Declaration(name, declared[like].arg_types, "bool", line))
    if roles:  # the agents are the roles, even where a variable also ranges over other things
        constants[agent] = dict.fromkeys(roles)
    for root, consts in constants.items():
        t = type_name[root] if root in type_name else name_of(root)
        if t == "agent" and root != agent:
            continue  # roles, declared once
        for c in consts:
            line += 1
            sig.declarations.append(Declaration(c, (), t, line))
    if wide:  # the other things: their own type, with the agents as a subtype
        for c in extras:
            line += 1
            sig.declarations.append(Declaration(c, (), wide[0], line))
        sig.subtypes[wide[0]] = ["agent"]
    return sig


_AGENT_SLOTS = frozenset(("@" + s[0], s[1], s[2]) for s, n in NAMED.items() if n == "agent")


def _widen(wide: list[str], slot: Slot) -> str:
    """The type of a slot that shares a variable with the role positions but holds more than roles.

    Why: ``(true (num ?n ?p))`` with ``(does ?p (take ?n))`` (sum15) puts a role and ``available``
    in one slot; the agents stay the roles, so the slot gets a wider type, named after the first
    such slot, with ``agent`` as its subtype (``agent :> num_2``): roles and ``available`` both fit.
    """
    if not wide:
        wide.append(f"{escape_name(slot[0].lstrip('@'))}_{slot[2] + 1}")
    return wide[0]


def _the_roles(constants: Iterable[str], roles: list[str]) -> bool:
    """Whether a slot's constants are exactly the roles, so that it is typed ``agent``.

    Why: a fluent that says whose turn it is, set by rules that name the roles as constants
    (``(<= (next (control oplayer)) (true (control xplayer)))``), shares no variable with a role
    position, so union-find alone gives it a type of its own (``control_1``) holding the same
    constants as ``agent``. The published signatures write ``control :: agent -> prop``, and a
    learner joins variables of one type only: with ``control_1`` it cannot say "the player whose
    turn it is" (``legal_play(R, ...) :- true_control(R)``). Exactly the roles, not a part of them:
    then the type's atoms are the same and only its name changes, where a slot that holds one role
    (``(winner white)``) typed ``agent`` would add atoms no state has.
    """
    return bool(roles) and set(constants) == set(roles)


def _roles(rules: list[Rule]) -> Iterable[str]:
    for r in rules:
        h = r.head
        if not r.body and isinstance(h, Func) and h.name == "role" and isinstance(h.args[0], Const):
            yield h.args[0].name


def signature_text(sig: Signature) -> str:
    """The ``.typ`` text of a signature (one declaration per line, constants grouped by type)."""
    lines = [
        "% type signature inferred from the GDL rules by orch (see docs/gdl)"
    ]  # no '.': it ends statements
    consts: dict[str, list[str]] = {}
    for d in sig.declarations:
        if d.arg_types or d.result == "bool":
            lines.append(f"{typ_name(d.name)} :: {' -> '.join([*d.arg_types, d.result])}.")
        else:
            consts.setdefault(d.result, []).append(typ_name(d.name))
    for t, names in consts.items():
        lines.append(f"{', '.join(names)} :: {t}.")
    for sup, subs in sig.subtypes.items():
        lines.extend(f"{sub} :> {sup}." for sub in subs)
    return "\n".join(lines) + "\n"
