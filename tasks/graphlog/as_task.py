"""A GraphLog world as a common :class:`tasks.task.Task`, so every learner (KNN, ILP, GNN) runs on it.

The encoding (one example per query graph):

* background B: every edge as a binary atom ``r3(n4, u)`` plus the marker ``query(u, v)``. The two
  query nodes are always the constants ``u`` and ``v``; the other nodes are ``n0, n1, ...`` in the
  graph's (randomly permuted) local numbering.
* target atoms: ``rel_r5(u, v)``, one candidate per relation that heads a rule of the world (its
  classes). Each example has exactly one positive, the hidden edge's relation; E- is the rest.

Why this shape: each flattened predicate ``rel_rK`` is one orchestrator job, and a chain rule
``[ri, rj] => rk`` is literally the clause ``rel_rk(X, Y) :- ri(X, Z), rj(Z, Y).`` -- the kind of
definition ``ilasp`` searches for, with no constants in the rule. The resolution path is the
unique shortest u-v path (the sampler guarantees it), so on 2-hop queries that clause is exact;
longer paths need the rules applied recursively (composing derived relations), which
:mod:`tasks.graphlog.closure` does for any learned program.
"""

from __future__ import annotations

import re

import numpy as np

from tasks.graphlog.generator import World
from tasks.graphlog.graphs import GraphSet, QueryGraph
from tasks.signature import Signature, parse_typ
from tasks.task import Split, Task, Vocabulary, bool_csr, format_atom, parse_atom

TARGET = "relation"
SPLIT_ALIASES = {"train": "train", "valid": "validate", "test": "test"}
_REL = re.compile(r"^r(\d+)$")
_TARGET = re.compile(r"^rel_r(\d+)$")


def relation_name(r: int) -> str:
    return f"r{r}"


def target_predicate(r: int) -> str:
    return f"rel_r{r}"


def node_name(i: int, u: int, v: int) -> str:
    return "u" if i == u else "v" if i == v else f"n{i}"


def world_classes(world: World) -> list[int]:
    """The relations a query can resolve to: the heads of the world's rules (and any seen target)."""
    heads = {r.head for r in world.rules}
    for g in world.splits.values():
        heads.update(g.target.tolist())
    return sorted(heads)


def graph_atoms(g: GraphSet, i: int) -> list[str]:
    u, v = int(g.query_u[i]), int(g.query_v[i])
    a, b = g.edge_ptr[i], g.edge_ptr[i + 1]
    atoms = [
        format_atom(relation_name(int(r)), (node_name(int(s), u, v), node_name(int(d), u, v)))
        for s, r, d in zip(g.src[a:b], g.rel[a:b], g.dst[a:b], strict=True)
    ]
    return atoms + ["query(u, v)"]


def world_signature(n_relations: int, classes: list[int]) -> Signature:
    """A type signature for the encoding: one type ``node`` that declares no constants.

    Why: node names are labels of one query graph (``n4`` here is unrelated to ``n4`` there), and
    even ``u`` and ``v`` only mark the query: a rule that names them (``rel_r7(u, Y) :- ...``)
    fits the examples but cannot be applied to a derived edge, so rules learned from this
    encoding would not compose. A learner that takes its constants from the signature (the ILP
    bias) therefore writes all-variable rules, the shape of the world's own rules.
    """
    edges = ", ".join(relation_name(r) for r in range(n_relations))
    targets = ", ".join(target_predicate(r) for r in classes)
    text = f"{edges}, query, {targets} :: node -> node -> bool.\n"
    return parse_typ(text, name="graphlog")


def world_task(world: World, source: str = "") -> Task:
    """The world's query graphs as (B, E+, E-) examples over ``rel_rK(u, v)`` target atoms."""
    classes = world_classes(world)
    targets = Vocabulary.of(format_atom(target_predicate(r), ("u", "v")) for r in classes)
    column = {r: i for i, r in enumerate(classes)}
    background = Vocabulary()
    splits = {}
    rows_by_split = {}
    for name, g in world.splits.items():
        rows = [
            np.array([background.add(a) for a in graph_atoms(g, i)], dtype=np.int64) for i in range(len(g))
        ]
        rows_by_split[SPLIT_ALIASES.get(name, name)] = (rows, [[column[int(t)]] for t in g.target])
    # Backgrounds become CSR only now, when the vocabulary has every split's atoms.
    for alias, (rows, pos) in rows_by_split.items():
        splits[alias] = Split(
            alias, bool_csr(rows, len(background)), bool_csr(pos, len(targets)), np.arange(len(targets))
        )
    return Task(
        game=world.name, target=TARGET, background_atoms=background, target_atoms=targets,
        statics=np.zeros(0, dtype=np.int64), splits=splits, source=source,
        signature=world_signature(max(world.n_relations, max(classes, default=0) + 1), classes),
    )  # fmt: skip


def decode_split(task: Task, split: Split) -> tuple[GraphSet, list[int]]:
    """Invert :func:`world_task`: the split's graphs (targets from positives, -1 if none) and classes.

    Raises a ValueError naming the atom when the task is not a GraphLog encoding.
    """
    classes = []
    for atom in task.target_atoms.names:
        name, args = parse_atom(atom)
        m = _TARGET.match(name)
        if not m or args != ("u", "v"):
            raise ValueError(f"task {task.name}: target atom {atom!r} is not a GraphLog rel_rK(u, v) atom")
        classes.append(int(m.group(1)))
    parsed = [parse_atom(a) for a in task.background_atoms.names]
    graphs = []
    for i in range(split.n_examples):
        local: dict[str, int] = {"u": 0, "v": 1}
        edges = []
        for aid in split.background_of(i):
            name, args = parsed[aid]
            if name == "query":
                continue
            m = _REL.match(name)
            if not m or len(args) != 2:
                raise ValueError(
                    f"task {task.name}: background atom {task.background_atoms[aid]!r} is not rK(a, b)"
                )
            s, d = (local.setdefault(x, len(local)) for x in args)
            edges.append((s, int(m.group(1)), d))
        pos = split.positives_of(i)
        graphs.append(QueryGraph(len(local), edges, (0, 1), classes[pos[0]] if len(pos) else -1))
    return GraphSet.from_graphs(graphs), classes
