"""Bench: how long ``gnn-iggp`` takes to build one batch's graph, beside a per-fact loop reference.

``learners.gnn.iggp._graph_batch`` turns each example's background into a relational graph; a
fact atom (arity 0 or 3+) becomes a node linked to each of its arguments. Built by a Python loop
per fact (the reference below, as the builder was until f50a4bb), one batch of a big GGP game took
15-18 s, so ``gnn-iggp`` spent minutes validating its first checkpoint and every job on the GGP
sample ran out of its 30 s budget without a model. For each task this prints the time of both
builders on the same batch of validate examples and checks that they give the same graph, bit for bit.

    python bench/bench_gnn_graph.py                                  # 4 published IGGP games
    python bench/bench_gnn_graph.py --dataset OUT --tasks colonelBlottoVariant:next pacman2p:goal
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import iggp_dir, print_table  # noqa: E402
from learners.gnn.iggp import Encoding, _graph_batch  # noqa: E402
from tasks.iggp import Dataset  # noqa: E402
from tasks.task import Split, Task  # noqa: E402

DEFAULT_TASKS = ["tiger_vs_dogs:legal", "rainbow:goal", "sokoban:next", "minimal_decay:next"]


def per_fact_loop(enc: Encoding, task: Task, split: Split, idx: np.ndarray) -> dict:
    """The reference: the fact atoms' edges appended one fact and one argument at a time."""
    C, E = len(enc.constants), enc.n_edge_types
    srcs, dsts, types, fact_node = [], [], [], []
    n_total = 0
    for i in idx:
        base = n_total
        n_total += C
        atoms = np.union1d(split.background_of(int(i)), task.statics)
        k = enc.kind[atoms]
        b = atoms[k == 0]
        srcs += [base + enc.a0[b], base + enc.a1[b]]
        dsts += [base + enc.a1[b], base + enc.a0[b]]
        types += [enc.rel[b], enc.rel[b] + E]
        for f in atoms[k == 2]:
            node = n_total
            n_total += 1
            fact_node.append(node)
            for j in range(enc.fact_ptr[f], enc.fact_ptr[f + 1]):
                t, c = enc.fact_etype[j], enc.fact_const[j]
                srcs += [np.array([base + c]), np.array([node])]
                dsts += [np.array([node]), np.array([base + c])]
                types += [np.array([t]), np.array([t + E])]
    cat = np.concatenate
    return {"n": n_total, "src": cat(srcs), "dst": cat(dsts), "type": cat(types), "fact_node": fact_node}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, help="IGGP layout (default: the published games, unpacked)")
    ap.add_argument("--tasks", nargs="+", default=DEFAULT_TASKS, help="GAME:TARGET ...")
    ap.add_argument("--batch", type=int, default=64, help="examples per batch (gnn-iggp predicts 64 at once)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    data = Dataset(args.dataset or iggp_dir())
    rows = []
    for spec in args.tasks:
        game, target = spec.split(":")
        task = data.load_task(game, target)
        split = task.split("validate") if "validate" in task.splits else task.split("test")
        idx = np.arange(min(args.batch, split.n_examples))
        enc = Encoding.of(task)
        t0 = time.perf_counter()
        ref = per_fact_loop(enc, task, split, idx)
        t1 = time.perf_counter()
        g = _graph_batch(enc, task, split, idx, "cpu")
        t2 = time.perf_counter()
        same = (
            g["n"] == ref["n"]
            and np.array_equal(g["edge_index"][0].numpy(), ref["src"])
            and np.array_equal(g["edge_index"][1].numpy(), ref["dst"])
            and np.array_equal(g["edge_type"].numpy(), ref["type"])
            and g["fact_node"].tolist() == ref["fact_node"]
        )
        rows.append({
            "task": spec, "examples": len(idx), "nodes": g["n"], "edges": int(g["edge_index"].shape[1]),
            "loop_s": t1 - t0, "vectorised_s": t2 - t1, "speed-up": f"{(t1 - t0) / max(t2 - t1, 1e-9):.0f}x",
            "same graph": same,
        })  # fmt: skip
    print_table(
        rows,
        args.json,
        title=f"gnn-iggp: one batch's graph, per-fact loop vs vectorised ({args.batch} examples)",
    )
    if not all(r["same graph"] for r in rows):
        sys.exit("the two builders disagree")


if __name__ == "__main__":
    main()
