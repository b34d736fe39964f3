"""Bench: ``gnn-iggp``'s target-atom scorer, the MLP on concatenated features beside ``scores``.

``gnn-iggp`` scores every target atom ``q(c1 .. cA)`` of every example with an MLP on
``[h_c1 .. h_cA (zero-padded); embedding(q); graph mean]``. Built as one concatenated input, that
is ``B x T x (A + 2) d`` floats a batch: 1.7 GB for 64 examples of blobwars' ``next_cell`` (41,616
target atoms). ``IGGPNet.scores`` applies the first layer block by block, once per constant,
predicate and example, and gathers the products: the same function. For each task this prints both
times (best of ``--reps``, random node states, dim 32, one thread) and checks that they agree.

    python bench/bench_gnn_score.py                                   # 4 published IGGP games
    python bench/bench_gnn_score.py --dataset OUT --tasks blobwars:next quad:next
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import best_of, gnn_task_args, iggp_dir, print_table  # noqa: E402
from learners.gnn.iggp import Encoding, _net  # noqa: E402
from tasks.iggp import Dataset  # noqa: E402


def concatenated(net, hc, graph):
    """The reference: the MLP on the concatenated features, as ``IGGPNet.forward`` did before."""
    import torch

    B, _, d = hc.shape
    args = net.t_args.clamp(min=0)
    feat = hc[:, args] * (net.t_args >= 0)[None, :, :, None]
    T = args.shape[0]
    x = torch.cat(
        [feat.reshape(B, T, -1), net.tpred(net.t_pred).expand(B, T, d), graph[:, None].expand(B, T, d)], -1
    )
    return net.score(x).squeeze(-1)


def main() -> None:
    import torch

    args = gnn_task_args(__doc__)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = Dataset(args.dataset or iggp_dir())
    rows = []
    for spec in args.tasks:
        game, target = spec.split(":")
        enc = Encoding.of(data.load_task(game, target))
        net = _net(enc, 32, 1).eval()
        hc, graph = torch.randn(args.batch, len(enc.constants), 32), torch.randn(args.batch, 32)
        with torch.no_grad():
            ref_s, ref = best_of(args.reps, concatenated, net, hc, graph)
            new_s, new = best_of(args.reps, net.scores, hc, graph)
        rows.append({
            "task": spec, "target atoms": len(enc.target_pred), "arity": enc.target_args.shape[1],
            "concatenated_s": ref_s, "blockwise_s": new_s, "speed-up": f"{ref_s / max(new_s, 1e-9):.1f}x",
            "agree": bool(torch.allclose(ref, new, atol=1e-4)),
        })  # fmt: skip
    print_table(rows, args.json, title=f"gnn-iggp: scoring every target atom of {args.batch} examples")
    if not all(r["agree"] for r in rows):
        sys.exit("the two scorers disagree")


if __name__ == "__main__":
    main()
