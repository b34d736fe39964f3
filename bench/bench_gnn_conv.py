"""Bench: ``gnn-iggp``'s R-GCN layer on one batch graph, PyG's ``RGCNConv`` beside ``EdgeRGCNConv``.

PyG's ``RGCNConv`` aggregates every relation over the whole node set (``O(R * N * d^2)`` a layer);
on the state graphs of a big generated game (pacman2p: 4,500 nodes and 36,000 edges per example,
50 relation types) a ``gnn-iggp`` job could not score its model on the test split within 10
minutes. ``learners.gnn.rgcn.EdgeRGCNConv`` is the same layer with the same parameters, evaluated
over each relation's edges only. For each task this prints the time of one layer's forward pass
both ways (the best of ``--reps``; ``EdgePlan.of``, shared by a graph's layers, timed apart) on the
graph of one batch of validate examples, and checks that they agree.

    python bench/bench_gnn_conv.py                                   # 4 published IGGP games
    python bench/bench_gnn_conv.py --dataset OUT --tasks pacman2p:next colonelBlottoVariant:next
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import best_of, gnn_task_args, iggp_dir, print_table  # noqa: E402
from learners.gnn.iggp import Encoding, _graph_batch, _net  # noqa: E402
from tasks.iggp import Dataset  # noqa: E402


def main() -> None:
    import torch
    from torch_geometric.nn import RGCNConv

    from learners.gnn.rgcn import EdgePlan

    args = gnn_task_args(__doc__)
    data = Dataset(args.dataset or iggp_dir())
    rows = []
    torch.manual_seed(0)
    for spec in args.tasks:
        game, target = spec.split(":")
        task = data.load_task(game, target)
        split = task.split("validate") if "validate" in task.splits else task.split("test")
        enc = Encoding.of(task)
        g = _graph_batch(enc, task, split, np.arange(min(args.batch, split.n_examples)), torch.device("cpu"))
        conv = _net(enc, 32, 1).convs[0]
        x, ei, et = torch.randn(g["n"], 32), g["edge_index"], g["edge_type"]
        with torch.no_grad():
            pyg_s, ref = best_of(args.reps, RGCNConv.forward, conv, x, ei, et)
            plan_s, plan = best_of(args.reps, EdgePlan.of, ei, et, conv.num_relations)
            edge_s, new = best_of(args.reps, conv, x, ei, et, plan)
        rows.append({
            "task": spec, "nodes": g["n"], "edges": ei.shape[1], "relations": conv.num_relations,
            "pyg_s": pyg_s, "edge_s": edge_s, "plan_s": plan_s,
            "speed-up": f"{pyg_s / max(edge_s, 1e-9):.1f}x",
            "agree": bool(torch.allclose(ref, new, atol=1e-4)),
        })  # fmt: skip
    print_table(
        rows,
        args.json,
        title=f"gnn-iggp: one R-GCN layer (dim 32), PyG RGCNConv vs EdgeRGCNConv ({args.batch} examples, "
        f"{torch.get_num_threads()} threads)",
    )
    if not all(r["agree"] for r in rows):
        sys.exit("the two layers disagree")


if __name__ == "__main__":
    main()
