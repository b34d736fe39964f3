"""Bench: how long ``gnn-iggp`` takes to build one batch's fact-atom edges, beside a per-fact loop.

``learners.gnn.iggp._graph_batch`` turns each example's background into a relational graph; a
fact atom (arity 0 or 3+) becomes a node linked to each of its arguments. Built by a Python loop
per fact (the reference below, as the builder was until f50a4bb), one batch of a big GGP game took
15-18 s, so ``gnn-iggp`` spent minutes validating its first checkpoint and every job on the GGP
sample ran out of its 30 s budget without a model. For each task this prints the time of both
(``learners.gnn.iggp._fact_edges`` and the loop) on the fact atoms of the same batch of validate
examples, numbered as ``_graph_batch`` numbers them, and checks that they give the same edges in
the same order (the rest of the graph is built as before; tests/learners/gnn pins the whole).
Static fact atoms are not in an example's graph since the commit after 42d913c (one static graph
per batch), so the figures in docs/benchmarks.md from before it count more fact edges.

    python bench/bench_gnn_graph.py                                  # 4 published IGGP games
    python bench/bench_gnn_graph.py --dataset OUT --tasks colonelBlottoVariant:next pacman2p:goal
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import best_of, gnn_task_args, iggp_dir, print_table  # noqa: E402
from learners.gnn.iggp import Encoding, _fact_edges  # noqa: E402
from tasks.iggp import Dataset  # noqa: E402
from tasks.task import Split, Task  # noqa: E402


def per_fact_loop(enc: Encoding, facts: np.ndarray, nodes: np.ndarray, base: int) -> tuple:
    """The reference, as ``_graph_batch`` did it before f50a4bb: the fact atoms' edges appended one
    fact and one argument at a time, as one-element arrays concatenated at the end."""
    E = enc.n_edge_types
    srcs, dsts, types = [], [], []
    for f, node in zip(facts, nodes, strict=True):
        for j in range(enc.fact_ptr[f], enc.fact_ptr[f + 1]):
            t, c = enc.fact_etype[j], enc.fact_const[j]
            srcs += [np.array([base + c]), np.array([node])]
            dsts += [np.array([node]), np.array([base + c])]
            types += [np.array([t]), np.array([t + E])]
    return tuple(
        np.concatenate(x).astype(np.int64) if x else np.zeros(0, dtype=np.int64) for x in (srcs, dsts, types)
    )


def batch_facts(enc: Encoding, task: Task, split: Split, idx: np.ndarray) -> list[tuple]:
    """(facts, nodes, base) of each example of a batch, numbered as ``_graph_batch`` numbers them."""
    out, n = [], 0
    for i in idx:
        base = n
        atoms = np.union1d(split.background_of(int(i)), task.statics)
        facts = atoms[(enc.kind[atoms] == 2) & ~enc.static_fact[atoms]]
        nodes = base + len(enc.constants) + np.arange(len(facts))
        out.append((facts, nodes, base))
        n = base + len(enc.constants) + len(facts)
    return out


def build_all(build, enc: Encoding, batch: list[tuple]) -> list:
    return [build(enc, *example) for example in batch]


def main() -> None:
    args = gnn_task_args(__doc__)
    data = Dataset(args.dataset or iggp_dir())
    rows = []
    for spec in args.tasks:
        game, target = spec.split(":")
        task = data.load_task(game, target)
        split = task.split("validate") if "validate" in task.splits else task.split("test")
        idx = np.arange(min(args.batch, split.n_examples))
        enc = Encoding.of(task)
        batch = batch_facts(enc, task, split, idx)
        loop_s, ref = best_of(args.reps, build_all, per_fact_loop, enc, batch)
        vectorised_s, new = best_of(args.reps, build_all, _fact_edges, enc, batch)
        same = all(
            np.array_equal(x, y) for r, v in zip(ref, new, strict=True) for x, y in zip(r, v, strict=True)
        )
        rows.append({
            "task": spec, "examples": len(idx), "fact edges": sum(len(r[0]) for r in ref),
            "loop_s": loop_s, "vectorised_s": vectorised_s, "speed-up": f"{loop_s / max(vectorised_s, 1e-9):.0f}x",
            "same edges": same,
        })  # fmt: skip
    print_table(
        rows,
        args.json,
        title=f"gnn-iggp: one batch's fact-atom edges, per-fact loop vs vectorised ({args.batch} examples)",
    )
    if not all(r["same edges"] for r in rows):
        sys.exit("the two builders disagree")


if __name__ == "__main__":
    main()
