"""Where a GNN training step's time goes, on this machine's device (issue 26, item 4).

    python bench/profile_gnn_step.py --models gat-egat,param-rgcn --train 2000

For each model, at batch 32 and dim 64 on one generated world:
1. a torch.profiler trace of ``--steps`` training steps (the device pipeline, eager and, on CUDA,
   replayed from CUDA graphs as a job runs them): wall ms per step, CUDA kernels launched per
   step, host syncs per step, the ops that take the most CPU time and the kernels that take the
   most device time;
2. steps per second with deterministic algorithms on and off, and bfloat16 autocast on and off
   (eager, and on CUDA replayed);
3. on CUDA, the same step on one fixed batch, eager and captured as a CUDA graph and replayed: the
   ceiling that per-launch overhead leaves (or the error that stops the capture).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from learners.base import Budget  # noqa: E402
from learners.gnn.data import WorldData  # noqa: E402
from learners.gnn.modules import GraphLogNet, net_config  # noqa: E402
from learners.gnn.train import (  # noqa: E402
    TrainConfig,
    autocast,
    build_net,
    cross_entropy,
    device_batches,
    make_optimizer,
    train_steps,
    use_deterministic,
)
from tasks.graphlog.generator import GeneratorConfig, generate_suite  # noqa: E402


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def steps_per_s(net, world, cfg, device, steps: int) -> float:
    opt = make_optimizer(net, cfg)
    list(train_steps(net, opt, world, "train", cfg, np.random.default_rng(1), Budget(), max_steps=5))
    sync(device)
    t = time.perf_counter()
    losses = list(
        train_steps(net, opt, world, "train", cfg, np.random.default_rng(2), Budget(), max_steps=steps)
    )
    torch.stack(losses).sum().item()
    return len(losses) / (time.perf_counter() - t)


def profile(net, world, cfg, device, steps: int) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    opt = make_optimizer(net, cfg)
    list(train_steps(net, opt, world, "train", cfg, np.random.default_rng(1), Budget(), max_steps=5))
    sync(device)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    t = time.perf_counter()
    with torch_profile(activities=acts) as prof:
        losses = list(
            train_steps(net, opt, world, "train", cfg, np.random.default_rng(3), Budget(), max_steps=steps)
        )
        torch.stack(losses).sum().item()
    wall = (time.perf_counter() - t) / len(losses)
    events = prof.key_averages()
    launches = sum(
        e.count for e in events if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC")
    )
    syncs = {
        e.key: e.count
        for e in events
        if "Synchronize" in e.key or "MemcpyAsync" in e.key or e.key == "aten::item"
    }
    print(
        f"  profiled: {wall * 1e3:.2f} ms per step (under the profiler), {launches / len(losses):.0f} kernel "
        f"launches per step; sync-like calls in {len(losses)} steps: {syncs}"
    )
    print("  top ops by self CPU time:")
    print(events.table(sort_by="self_cpu_time_total", row_limit=14, max_name_column_width=60))
    if device.type == "cuda":
        print("  top by device time:")
        print(events.table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=60))


def graph_replay(net, world, cfg, device, steps: int) -> None:
    """One fixed batch: eager steps/s, then the whole step captured as a CUDA graph and replayed."""
    b = device_batches(world, "train", cfg.batch_size, device, np.random.default_rng(0))[0]
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, capturable=True)
    net.train()

    def step():
        with autocast(device, cfg.autocast):
            loss = cross_entropy(net(world, b).float(), b.target)
        loss.backward()
        opt.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            step()
    torch.cuda.current_stream().wait_stream(side)
    sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        step()
    sync(device)
    eager = steps / (time.perf_counter() - t)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        step()
    sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        graph.replay()
    sync(device)
    replay = steps / (time.perf_counter() - t)
    print(
        f"  fixed batch ({b.n_nodes} nodes, {len(b.src)} edges): eager {eager * cfg.batch_size:,.0f} graphs/s, "
        f"CUDA graph replay {replay * cfg.batch_size:,.0f} graphs/s ({replay / eager:.1f}x)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="gat-egat,param-rgcn")
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    use_deterministic(True)
    device = torch.device(args.device)
    if device.type == "cuda":
        out = subprocess.run(
            [sys.executable, "-c", "import time, torch; t = time.perf_counter(); torch.zeros(1, device='cuda'); "
             "a = time.perf_counter(); torch.ones(8, 8, device='cuda') @ torch.ones(8, 8, device='cuda'); "
             "torch.cuda.synchronize(); print(f'{a - t:.2f} s to a CUDA context, {time.perf_counter() - a:.2f} s "
             "more to a first matmul')"], capture_output=True, text=True)  # fmt: skip
        print("fresh process:", out.stdout.strip() or out.stderr.strip()[-300:])
    else:
        torch.set_num_threads(1)
    gen = GeneratorConfig(n_train=args.train, n_valid=200, n_test=200)
    world = WorldData.of_world(generate_suite(gen, [0])[0])
    for model in args.models.split(","):
        print(f"\n=== {model} on {torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'} ===")

        def fresh(model: str = model) -> GraphLogNet:
            return build_net(lambda: GraphLogNet(net_config(model, dim=64, seed=0, dropout=0.4)), 0, device)

        for graphs in (False, True) if device.type == "cuda" else (False,):
            print(f"  -- {'replayed from CUDA graphs' if graphs else 'eager steps'}")
            try:
                profile(fresh(), world, TrainConfig(batch_size=32, cuda_graphs=graphs), device, args.steps)
            except Exception as exc:  # noqa: BLE001 (a probe: print and go on)
                print("  profile failed:", repr(exc)[:300])
            for det in (True, False):
                for amp in (True, False):
                    use_deterministic(det)
                    cfg = TrainConfig(batch_size=32, deterministic=det, autocast=amp, cuda_graphs=graphs)
                    rate = steps_per_s(fresh(), world, cfg, device, 60)
                    print(
                        f"  deterministic {'on ' if det else 'off'}, autocast {'on ' if amp else 'off'}: "
                        f"{rate * 32:,.0f} graphs/s"
                    )
        use_deterministic(True)
        if device.type == "cuda":
            for det in (True, False):
                use_deterministic(det)
                try:
                    print(f"  deterministic {'on' if det else 'off'}:", end="")
                    graph_replay(fresh(), world, TrainConfig(batch_size=32, deterministic=det), device, 100)
                except Exception as exc:  # noqa: BLE001
                    print("  CUDA graph capture failed:", repr(exc)[:400])
            use_deterministic(True)


if __name__ == "__main__":
    main()
