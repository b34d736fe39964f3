"""GraphLog GNNs on this machine: throughput (graphs/s, train and inference) and reduced-scale accuracy.

    python bench/bench_gnn.py                       # throughput of the six models, one small world
    python bench/bench_gnn.py --accuracy            # + supervised accuracy on a reduced suite
    python bench/bench_gnn.py --accuracy --worlds 3 --train 1000 --epochs 20 --json

Throughput: graphs per second of one training pass (forward, backward, Adam step) and of
inference, batch size 32 / 256, one torch thread (what a ``num_cpus: 1`` job gets), best of
``--repeats``. Accuracy: each of the six models trained single-world supervised on the first
``--worlds`` worlds of a reduced suite (sizes and epochs printed with the table); chance is the
majority class rate of the test split, printed beside it. With ``--knn`` the ``knn5`` learner
runs on the same worlds through the common Task encoding, for reference. With ``--ilp`` the
``ilasp`` learner runs per predicate on each world and on its 2-hop-only twin; its clauses are
scored applied once and applied recursively (:mod:`tasks.graphlog.closure`), beside the world's
own rules through the same closure.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import print_table  # noqa: E402

MODELS = [
    ("param", "rgcn"),
    ("gcn", "rgcn"),
    ("gat", "rgcn"),
    ("param", "egat"),
    ("gcn", "egat"),
    ("gat", "egat"),
]


def suite(args: argparse.Namespace):
    from learners.gnn.data import WorldData
    from tasks.graphlog.generator import GeneratorConfig, generate_suite

    cfg = GeneratorConfig(n_train=args.train, n_valid=args.test, n_test=args.test, seed=args.seed)
    return [WorldData.of_world(w) for w in generate_suite(cfg, world_ids(args))], cfg


def world_ids(args: argparse.Namespace) -> list[int]:
    if args.world_ids:
        return [int(x) for x in args.world_ids.split(",")]
    return list(range(args.worlds))


def model_config(rep: str, comp: str, args: argparse.Namespace, seed: int = 0):
    """The NetConfig of ``<rep>-<comp>`` with the variants and dropout the command line asks for."""
    from learners.gnn.modules import net_config

    name = f"{rep}-{comp}" + ("-bi" if args.bidirectional else "") + ("-rand" if args.random_nodes else "")
    return net_config(name, dim=args.dim, seed=seed, dropout=0.4 if args.dropout is None else args.dropout)


def variants(args: argparse.Namespace) -> str:
    """How the models were built, for table titles."""
    return ("messages both ways (-bi)" if args.bidirectional else "messages along edges") + (
        ", random node features (-rand)" if args.random_nodes else ""
    )


def throughput(world, args: argparse.Namespace) -> list[dict]:
    import torch

    from learners.base import Budget
    from learners.gnn.modules import GraphLogNet
    from learners.gnn.train import TrainConfig, make_optimizer, pick_device, predict_classes, train_steps

    device = pick_device()
    rows = []
    n_train = len(world.splits["train"])
    n_test = len(world.splits["test"])
    for rep, comp in MODELS:
        torch.manual_seed(0)
        net = GraphLogNet(model_config(rep, comp, args)).to(device)
        opt = make_optimizer(net, TrainConfig())
        train_s, infer_s = [], []
        for r in range(args.repeats):
            t = time.perf_counter()
            list(train_steps(net, opt, world, "train", TrainConfig(), np.random.default_rng(r), Budget()))
            train_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            predict_classes(net, world, "test")
            infer_s.append(time.perf_counter() - t)
        rows.append(
            {
                "model": f"{rep}-{comp}",
                "dim": args.dim,
                "device": device.type,
                "train_graphs_per_s": n_train / min(train_s),
                "infer_graphs_per_s": n_test / min(infer_s),
                "params": sum(p.numel() for p in net.parameters()),
            }
        )
    return rows


def accuracy(worlds, args: argparse.Namespace) -> list[dict]:
    from learners.gnn import setups
    from learners.gnn.train import TrainConfig

    rows = []
    for rep, comp in MODELS:
        for seed in args.model_seeds:
            cfg = model_config(rep, comp, args, seed)
            res = setups.supervised(worlds, cfg, TrainConfig(epochs=args.epochs, seed=seed))
            for r in res:
                w = next(x for x in worlds if x.name == r["world"])
                t = w.splits["test"].target
                rows.append(
                    {
                        "model": f"{rep}-{comp}",  # the title says which message directions
                        "world": r["world"],
                        "seed": seed,
                        "test_acc": r["test_acc"],
                        "valid_acc": r["valid_acc"],
                        "train_acc": r["train_acc"],
                        "majority": float(np.bincount(t).max() / len(t)),
                        "train_s": r["train_s"],
                    }
                )
    return rows


def knn(args: argparse.Namespace) -> list[dict]:
    from learners import Budget, make_learner
    from tasks.graphlog.as_task import world_task
    from tasks.graphlog.generator import GeneratorConfig, generate_suite

    cfg = GeneratorConfig(n_train=args.train, n_valid=args.test, n_test=args.test, seed=args.seed)
    rows = []
    for w in generate_suite(cfg, world_ids(args)):
        task = world_task(w)
        model = make_learner("knn5").fit(task.learning_view(), Budget(60))
        acc, bacc = _query_scores(task, model, "test")
        rows.append({"model": "knn5", "world": w.name, "test_exact_acc": acc, "test_balanced_acc": bacc})
    return rows


def _query_scores(task, model, split_name: str) -> tuple[float, float]:
    """Exact-match query accuracy (only the true relation predicted) and pooled balanced accuracy."""
    from learners.metrics import count, pool

    split = task.splits[split_name]
    pred = model.predict(task, split)
    pred = np.asarray(pred.todense() if hasattr(pred, "todense") else pred, dtype=bool)
    pos = split.positives.toarray()
    exact = float(np.mean((pred == pos).all(axis=1))) if len(pos) else float("nan")
    return exact, pool(count(task, split, pred).values()).balanced_accuracy


class _PerPredicate:
    """One ILP model per target predicate, combined into a model over the whole task."""

    def __init__(self, models: dict):
        self.models = models

    def predict(self, task, split):
        out = np.zeros((split.n_examples, len(task.target_atoms)), dtype=bool)
        for p, m in self.models.items():
            cols = task.predicate_columns(p)
            sub = task.for_predicate(p)
            pred = m.predict(sub, sub.splits[split.name])
            out[:, cols] = np.asarray(pred.todense() if hasattr(pred, "todense") else pred, dtype=bool)
        return out


_CHAIN = re.compile(r"^rel_r(\d+)\((\w+),(\w+)\):-r(\d+)\((\w+),(\w+)\),r(\d+)\((\w+),(\w+)\)\.$")


def _chain_rule(clause: str):
    """The Rule a learned clause states, if it is exactly a chain ``rk(X,Y) :- ri(X,Z), rj(Z,Y)``."""
    from tasks.graphlog.rules import Rule

    m = _CHAIN.match(clause.replace(" ", ""))
    if not m:
        return None
    k, x, y, i, a, b, j, c, d = m.groups()
    for (p, q, r, s_), (bi, bj) in (((a, b, c, d), (i, j)), ((c, d, a, b), (j, i))):
        if p == x and q == r and s_ == y and len({x, y, q}) == 3:
            return Rule(int(bi), int(bj), int(k))
    return None


def _learn_ilasp(task, budget: float) -> tuple[_PerPredicate, list[str]]:
    """``ilasp`` on each target predicate of ``task``; the combined model and its clauses."""
    from learners import Budget, make_learner

    models = {
        p: make_learner("ilasp").fit(task.for_predicate(p).learning_view(), Budget(budget))
        for p in task.predicates
    }
    clauses = [c.strip() for m in models.values() for c in (m.rules() or "").split("\n") if c.strip()]
    return _PerPredicate(models), clauses


def ilp(args: argparse.Namespace) -> list[dict]:
    """``ilasp`` per predicate, applied once and recursively, on each world and its 2-hop-only twin.

    Per world index, four programs, all scored through :func:`tasks.graphlog.closure.closure`
    (learned heads feed bodies) on the *same* graphs, the ordinary world's test split:

    * ``world rules (ref)``: the world's 20 rules (1.0 by construction of the generator);
    * ``ilasp, all paths``: learned on the train split of the ordinary world (paths up to 10);
    * ``ilasp, 2-hop only``: learned on the train split of the 2-hop-only world
      (``max_path_length=2``: same seed and index, so the same 20 rules and world graph; only the
      sampled paths differ). Its descriptor split keeps about half of the rule bodies out of train;
    * ``ilasp, 2-hop all splits``: learned on all of the 2-hop world's graphs (train, valid and
      test merged), so every rule body the world graph uses is seen once: can the rules be learned
      exactly when each one is shown? (Its ``test_exact_1step`` would be on training data: blank.)

    ``1step`` columns apply the learned clauses once (the common RuleModel path) to the train/test
    split of the world they were learned on. ``test_exact_rec_chains`` keeps only the learned
    clauses of chain shape ``rk(X,Y) :- ri(X,Z), rj(Z,Y)`` (a syntactic filter, no use of the world's
    rules). ``test_exact_rec_seen_rules`` is a bound: the world rules whose body is a 2-hop
    descriptor of that training data (``train_2hop_desc`` of them), through the closure.
    ``world_rules_recovered`` counts the world's 20 rules among the learned clauses.
    """
    from tasks.graphlog.as_task import world_task
    from tasks.graphlog.closure import closure, score
    from tasks.graphlog.generator import GeneratorConfig, generate_suite
    from tasks.graphlog.graphs import GraphSet

    def config(max_len: int) -> GeneratorConfig:
        return GeneratorConfig(
            n_train=args.ilp_train, n_valid=args.test // 2, n_test=args.test, seed=args.seed,
            max_path_length=max_len,
        )  # fmt: skip

    def recursive(program, test) -> dict:
        sc = score(closure(program, test).derived, test.target)
        return {
            "test_exact_recursive": sc.exact,
            "test_resolved_rec": sc.resolved,
            "test_ambiguous_rec": sc.ambiguous,
        }

    rows = []
    for index in world_ids(args):
        ordinary = generate_suite(config(10), [index])[0]
        two_hop = generate_suite(config(2), [index])[0]
        if two_hop.rules != ordinary.rules:
            raise AssertionError(f"world {index}: the 2-hop world has other rules than the ordinary one")
        every = [g.graph(i) for g in two_hop.splits.values() for i in range(len(g))]
        merged = replace(two_hop, splits={**two_hop.splits, "train": GraphSet.from_graphs(every)})
        rules = set(ordinary.rules)
        test = ordinary.splits["test"]
        ref = recursive(ordinary.rules, test)
        rows.append(
            {
                "world": ordinary.name,
                "program": "world rules (ref)",
                "clauses_total": len(rules),
                "world_rules_recovered": len(rules),
                "train_exact_1step": "",
                "test_exact_1step": "",
                **ref,
                "test_exact_rec_chains": ref["test_exact_recursive"],
                "test_exact_rec_seen_rules": ref["test_exact_recursive"],
                "train_2hop_desc": "",
                "learn_s": "",
            }
        )
        trainings = (
            ("ilasp, all paths", ordinary),
            ("ilasp, 2-hop only", two_hop),
            ("ilasp, 2-hop all splits", merged),
        )
        for label, w in trainings:
            task = world_task(w)
            t = time.perf_counter()
            model, learned = _learn_ilasp(task, args.ilp_budget)
            learn_s = time.perf_counter() - t
            chains = [c for c in learned if _chain_rule(c) is not None]
            seen = {d for d in w.splits["train"].descriptors() if len(d) == 2}
            rows.append(
                {
                    "world": w.name,
                    "program": label,
                    "clauses_total": len(learned),
                    "world_rules_recovered": len({_chain_rule(c) for c in chains} & rules),
                    "train_exact_1step": _query_scores(task, model, "train")[0],
                    "test_exact_1step": "" if w is merged else _query_scores(task, model, "test")[0],
                    **recursive("\n".join(learned), test),
                    "test_exact_rec_chains": recursive("\n".join(chains), test)["test_exact_recursive"],
                    "test_exact_rec_seen_rules": recursive([r for r in w.rules if r.body in seen], test)[
                        "test_exact_recursive"
                    ],
                    "train_2hop_desc": len(seen),
                    "learn_s": learn_s,
                }
            )
            if args.ilp_rules:
                other = [c for c in learned if _chain_rule(c) not in rules]
                print(f"{w.name} / {label}: {len(other)} learned clauses are not world rules", flush=True)
                for c in other:
                    print(f"    {c}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worlds", type=int, default=1)
    ap.add_argument("--train", type=int, default=500)
    ap.add_argument("--test", type=int, default=200)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument(
        "--dropout", type=float, default=None, help="GAT/E-GAT dropout (default: the paper's 0.4)"
    )
    ap.add_argument(
        "--random-nodes",
        action="store_true",
        help="the paper's node initialisation (random features, no learned u/v markers)",
    )
    ap.add_argument(
        "--bidirectional",
        action="store_true",
        help="messages also against edges (the -bi models); default: along edges only, as the paper",
    )
    ap.add_argument("--seed", type=int, default=0, help="generator seed")
    ap.add_argument(
        "--model-seeds",
        type=lambda text: [int(x) for x in text.split(",")],
        default=[0],
        help="initialisation/batching seeds for --accuracy, e.g. 0,1 (each model x world x seed)",
    )
    ap.add_argument(
        "--world-ids", default="", help="these world indices instead of the first --worlds, e.g. 2,3"
    )
    ap.add_argument("--accuracy", action="store_true", help="also train the six models (supervised)")
    ap.add_argument("--knn", action="store_true", help="also run knn5 on the same worlds")
    ap.add_argument("--ilp", action="store_true", help="also run ilasp per predicate on the same worlds")
    ap.add_argument("--ilp-train", type=int, default=300, help="training graphs per world for ilasp")
    ap.add_argument("--ilp-budget", type=float, default=20.0, help="seconds per predicate for ilasp")
    ap.add_argument(
        "--ilp-rules", action="store_true", help="print the learned clauses that are not world rules"
    )
    ap.add_argument("--throughput", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    worlds, cfg = suite(args)
    sizes = f"train={args.train} valid={args.test} test={args.test}"
    if args.throughput:
        print_table(
            throughput(worlds[0], args),
            args.json,
            f"GNN throughput on {worlds[0].name} ({sizes}), 1 thread, {variants(args)}",
        )
    if args.accuracy:
        rows = accuracy(worlds, args)
        print_table(
            rows,
            args.json,
            f"supervised accuracy, worlds {world_ids(args)}, seeds {args.model_seeds}, {sizes}, "
            f"{args.epochs} epochs, dim {args.dim}, "
            f"dropout {'paper (0.4)' if args.dropout is None else args.dropout}, {variants(args)}",
        )
        summary = []
        for rep, comp in MODELS:
            accs = [r["test_acc"] for r in rows if r["model"] == f"{rep}-{comp}"]
            summary.append({"model": f"{rep}-{comp}", "mean_test_acc": float(np.mean(accs))})
        summary.append(
            {
                "model": "majority class",
                "mean_test_acc": float(
                    np.mean([r["majority"] for r in rows if r["model"] == rows[0]["model"]])
                ),
            }
        )
        means = {r["model"]: r["mean_test_acc"] for r in summary}
        for rep in ("param", "gcn", "gat"):  # the paper's ordering: E-GAT composition >= RGCN
            summary.append(
                {"model": f"{rep}: egat - rgcn", "mean_test_acc": means[f"{rep}-egat"] - means[f"{rep}-rgcn"]}
            )
        print_table(summary, args.json, "mean test accuracy over worlds")
    if args.knn:
        print_table(knn(args), args.json, "knn5 through the common Task encoding")
    if args.ilp:
        print_table(
            ilp(args),
            args.json,
            f"ilasp per predicate ({args.ilp_budget:.0f} s each), {args.ilp_train} train graphs; "
            f"*_rec*: closure on the all-paths world's {args.test} test graphs",
        )


if __name__ == "__main__":
    main()
