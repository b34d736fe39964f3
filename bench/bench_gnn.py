"""GraphLog GNNs on this machine: throughput (graphs/s, train and inference) and reduced-scale accuracy.

    python bench/bench_gnn.py                       # throughput of the six models, one small world
    python bench/bench_gnn.py --models param-rgcn,gat-egat --device cuda --concurrent 8
    python bench/bench_gnn.py --accuracy            # + supervised accuracy on a reduced suite
    python bench/bench_gnn.py --accuracy --worlds 3 --train 1000 --epochs 20 --json

Throughput: graphs per second of training passes (forward, backward, Adam step) over the train
split at ``--batch-size`` (default 32, the paper's), best of ``--repeats`` after one warm-up pass,
and of inference (batch 256). ``--collate`` picks the input pipeline: ``device`` (the split resident
on the device, batches gathered there, no host sync per step: what training uses), ``host`` (the
former loop: numpy collation and a host-to-device copy per batch, the loss read every step), or
``both`` (default: one table, old and new side by side). ``--device`` cpu|cuda|auto;
``--concurrent N`` runs N jobs side by side on that device (processes started with spawn, each
training its own copy; they start timing together) and reports graphs/s per job and in all.
On the CPU each job uses ``--threads`` torch threads (default 1, what a ``num_cpus: 1`` job gets);
``train_graphs_per_cpu_s`` divides by the job process's CPU time instead of wall time (on a shared
machine it moves far less with the load).
The table names the device (the GPU's name, or the CPU model and threads) and, on CUDA, the GPU
utilisation and memory sampled with nvidia-smi while the jobs ran ("n/a" on the CPU).
Deterministic algorithms are on, as in a job (``--no-deterministic`` to measure their cost).

Accuracy: each of the six models trained single-world supervised on the first
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


def resolve_device(name: str) -> str:
    """``auto``: cuda when this machine has a GPU torch can use, else cpu."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: torch sees no CUDA device here (use --device auto or cpu)")
    return name


def cpu_name() -> str:
    """The CPU model as /proc/cpuinfo names it (the platform's processor string elsewhere)."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def throughput_job(spec: dict, world, barrier=None, out=None, job: int | None = None) -> dict:
    """One job: build the model, one warm-up pass, then ``repeats`` timed training passes and one
    inference pass. With a ``barrier`` (``--concurrent``), every job starts timing together; the
    result goes to ``out`` (a queue) as well as being returned. Job ``job`` of several says on
    stderr when it reaches each phase (where the time goes when jobs start together)."""
    launched = spec.get("launched", time.time())  # when the parent started the jobs

    def phase(what: str) -> None:
        if job is not None:
            print(f"  [job {job} +{time.time() - launched:5.1f} s] {what}", file=sys.stderr, flush=True)

    phase("started")
    if isinstance(world, str):  # a spawned job reads the world from the parent's file
        import pickle

        world = pickle.loads(Path(world).read_bytes())
        phase("world read")

    import torch

    from learners.base import Budget
    from learners.gnn.modules import GraphLogNet
    from learners.gnn.train import (
        TrainConfig,
        build_net,
        make_optimizer,
        predict_classes,
        train_steps,
        use_deterministic,
    )

    use_deterministic(spec["deterministic"])  # before the first CUDA call, as in a job
    device = torch.device(spec["device"])
    torch.set_num_threads(spec["threads"])  # a GPU job too: its CPU threads compete with the other jobs
    cfg = TrainConfig(
        batch_size=spec["batch_size"], pipeline=spec["collate"], deterministic=spec["deterministic"],
        autocast=spec["autocast"], compile=spec["compile"], cuda_graphs=spec["cuda_graphs"],
    )  # fmt: skip
    phase("imported")
    net = build_net(lambda: GraphLogNet(spec["net"]), 0, device)
    opt = make_optimizer(net, cfg)
    phase(f"model on {device}")

    def one_pass(r: int) -> tuple[float, float]:
        """Wall and CPU seconds of one pass (CPU time: this process's, robust to a loaded machine)."""
        t, c = time.perf_counter(), time.process_time()
        losses = list(train_steps(net, opt, world, "train", cfg, np.random.default_rng(r), Budget()))
        torch.stack(losses).sum().item()  # wait for the device: the pass is done when its losses are
        return time.perf_counter() - t, time.process_time() - c

    one_pass(10**6)  # warm-up: kernels, allocator, the split's copy to the device
    phase("warmed up")
    if barrier is not None:
        barrier.wait()
    began = time.time()
    passes = []
    for r in range(spec["repeats"]):
        passes.append(one_pass(r))
        phase(f"pass {r + 1} of {spec['repeats']}: {passes[-1][0]:.2f} s")
    ended = time.time()
    train_s, cpu_s = min(w for w, _ in passes), min(c for _, c in passes)
    t = time.perf_counter()
    predict_classes(net, world, "test", pipeline=spec["collate"])
    infer_s = time.perf_counter() - t
    n_train = len(world.splits["train"])
    res = {
        "train_graphs_per_s": n_train / train_s,
        "train_graphs_per_cpu_s": n_train / cpu_s,
        "infer_graphs_per_s": len(world.splits["test"]) / infer_s,
        "graphs": n_train * spec["repeats"],
        "began": began,
        "ended": ended,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else
        f"{cpu_name()}, {torch.get_num_threads()} thread(s) per job",
        "params": sum(p.numel() for p in net.parameters()),
        # what the steps ran as: a failed capture falls back to eager steps (with a warning)
        "steps": ("compiled " if spec["compile"] and device.type == "cuda" else "")
        + ("graph" if getattr(getattr(opt, "_orch_step_runner", None), "graphs", False) else "eager"),
    }  # fmt: skip
    if out is not None:
        out.put(res)
    return res


class GpuSampler:
    """Samples GPU 0's utilisation and memory in a background thread while jobs run: through NVML
    in this process when ``pynvml`` is there (one handle, no process per sample), else with
    ``nvidia-smi`` once a second (each call initialises the driver: five a second beside eight
    starting CUDA contexts was one suspect when ``--concurrent 8`` stalled on an H200)."""

    QUERY = ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"]

    def __init__(self, enabled: bool, every_s: float = 0.5):
        import threading

        self.enabled, self.every_s = enabled, every_s
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:  # noqa: BLE001 (no NVML: nvidia-smi)
            return self._run_smi()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            while not self._stop.wait(self.every_s):
                util = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
                used = pynvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20
                self.samples.append((float(util), float(used)))
        except Exception:  # noqa: BLE001 (a sampler never stops the benchmark)
            pass
        finally:
            pynvml.nvmlShutdown()

    def _run_smi(self) -> None:
        import subprocess

        while not self._stop.wait(max(self.every_s, 1.0)):
            try:
                line = subprocess.run(self.QUERY, capture_output=True, text=True, timeout=5).stdout
                util, mem = (float(x) for x in line.splitlines()[0].split(","))
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                continue
            self.samples.append((util, mem))

    def __enter__(self) -> GpuSampler:
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self.enabled:
            self._thread.join()

    def summary(self) -> tuple[str, str]:
        """Mean utilisation (%) and peak memory (MiB) while sampled; "n/a" without samples."""
        if not self.samples:
            return "n/a", "n/a"
        return f"{np.mean([u for u, _ in self.samples]):.0f}", f"{max(m for _, m in self.samples):.0f}"


def run_jobs(spec: dict, world, concurrent: int) -> list[dict]:
    """``concurrent`` copies of one throughput job, side by side (spawned processes), or one here."""
    if concurrent <= 1:
        return [throughput_job(spec, world)]
    import multiprocessing as mp
    import pickle
    import queue
    import tempfile

    ctx = mp.get_context("spawn")  # never fork a process that may hold a CUDA context
    barrier, out = ctx.Barrier(concurrent), ctx.Queue()
    # The world goes by file, not in the process's arguments: a spawned child unpickles its
    # arguments while the parent's start() waits on the pipe, so a big world made the jobs start
    # one after another (about 11 s each on an H200 machine: 8 jobs never ran side by side).
    tmp = tempfile.NamedTemporaryFile(prefix="bench_gnn_world_", suffix=".pkl", delete=False)
    with tmp:
        tmp.write(pickle.dumps(world, protocol=pickle.HIGHEST_PROTOCOL))
    try:
        procs = [
            ctx.Process(target=throughput_job, args=(spec, tmp.name, barrier, out, i), daemon=True)
            for i in range(concurrent)
        ]
        spec["launched"] = time.time()  # pickled into each job at its start
        for p in procs:
            p.start()
        results: list[dict] = []
        while len(results) < concurrent:
            try:
                results.append(out.get(timeout=1.0))
            except queue.Empty:
                dead = [i for i, p in enumerate(procs) if p.exitcode not in (None, 0)]
                if dead:  # the others would wait at the barrier for ever
                    raise RuntimeError(
                        f"throughput job(s) {dead} exited with {[procs[i].exitcode for i in dead]}"
                    ) from None
        for p in procs:
            p.join()
    finally:  # also when a job died: no world file left behind
        Path(tmp.name).unlink(missing_ok=True)
    return results


def throughput(world, args: argparse.Namespace) -> list[dict]:
    """Per model and input pipeline: per-job and total training graphs/s, side by side."""
    device = resolve_device(args.device)
    rows = []
    for rep, comp in selected_models(args):
        reference = None
        for collate in ["host", "device"] if args.collate == "both" else [args.collate]:
            spec = {
                "device": device, "threads": args.threads, "batch_size": args.batch_size, "collate": collate,
                "deterministic": args.deterministic, "repeats": args.repeats, "net": model_config(rep, comp, args),
                "autocast": args.autocast, "compile": args.compile, "cuda_graphs": args.cuda_graphs,
            }  # fmt: skip
            with GpuSampler(device == "cuda") as gpu:
                jobs = run_jobs(spec, world, args.concurrent)
            wall = max(j["ended"] for j in jobs) - min(j["began"] for j in jobs)
            total = sum(j["graphs"] for j in jobs) / wall if len(jobs) > 1 else jobs[0]["train_graphs_per_s"]
            util, mem = gpu.summary()
            row = {
                "model": f"{rep}-{comp}",
                "collate": collate + (" (old)" if collate == "host" else ""),
                "steps": "/".join(sorted({j["steps"] for j in jobs})),
                "device": jobs[0]["device_name"],
                "batch": args.batch_size,
                "dim": args.dim,
                "jobs": len(jobs),
                "train_graphs_per_s_per_job": float(np.mean([j["train_graphs_per_s"] for j in jobs])),
                "train_graphs_per_s_all": total,
                "train_graphs_per_cpu_s": float(np.mean([j["train_graphs_per_cpu_s"] for j in jobs])),
                "infer_graphs_per_s_per_job": float(np.mean([j["infer_graphs_per_s"] for j in jobs])),
                "gpu_util_pct": util,
                "gpu_mem_mib": mem,
            }
            reference = reference or row
            row["x_vs_host"] = row["train_graphs_per_s_all"] / reference["train_graphs_per_s_all"]
            rows.append(row)
    return rows


def selected_models(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``--models`` (e.g. ``param-rgcn,gat-egat``), else the six."""
    if not args.models:
        return MODELS
    chosen = [tuple(m.split("-", 1)) for m in args.models.split(",")]
    unknown = [f"{r}-{c}" for r, c in chosen if (r, c) not in MODELS]
    if unknown:
        sys.exit(
            f"--models: unknown {', '.join(unknown)}; choose from {', '.join(f'{r}-{c}' for r, c in MODELS)}"
        )
    return [(r, c) for r, c in chosen]


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
    ap.add_argument("--device", choices=["cpu", "cuda", "auto"], default="auto", help="throughput device")
    ap.add_argument("--batch-size", type=int, default=32, help="training batch size (the paper's: 32)")
    ap.add_argument("--concurrent", type=int, default=1, help="throughput jobs side by side on the device")
    ap.add_argument(
        "--collate", choices=["host", "device", "both"], default="both",
        help="input pipeline: host (the former loop, as a reference), device, or both side by side",
    )  # fmt: skip
    ap.add_argument("--models", default="", help="throughput of these models only, e.g. param-rgcn,gat-egat")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads per job (its CPU ops; on the GPU, its host side)",
    )
    ap.add_argument(
        "--autocast", action=argparse.BooleanOptionalAction, default=True,
        help="bfloat16 autocast on the GPU, as in a job (--no-autocast: float32)",
    )  # fmt: skip
    ap.add_argument(
        "--compile", action="store_true",
        help="torch.compile the composition module (GPU only; off in jobs: compiling outlasts short budgets)",
    )  # fmt: skip
    ap.add_argument(
        "--cuda-graphs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="on the GPU, steps padded and replayed from CUDA graphs, as in a job (--no-cuda-graphs: eager)",
    )
    ap.add_argument(
        "--deterministic", action=argparse.BooleanOptionalAction, default=True,
        help="deterministic algorithms, as in a job (--no-deterministic: measure their cost)",
    )  # fmt: skip
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    worlds, cfg = suite(args)
    sizes = f"train={args.train} valid={args.test} test={args.test}"
    if args.throughput:
        print_table(
            throughput(worlds[0], args),
            args.json,
            f"GNN training throughput on {worlds[0].name} ({sizes}), batch {args.batch_size}, dim {args.dim}, "
            f"{args.concurrent} job(s), deterministic {'on' if args.deterministic else 'off'}, "
            f"autocast {'on' if args.autocast else 'off'} (GPU), "
            f"CUDA graphs {'on' if args.cuda_graphs else 'off'} (GPU), compile {'on (GPU only)' if args.compile else 'off'}, "
            f"{variants(args)}",
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
        summary: list[dict] = []
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
