"""Training and evaluation loops shared by every GraphLog setup and the registered learners.

Why it looks like this:

* Device: the GPU when this process can see one (a Ray actor with ``num_gpus`` gets
  CUDA_VISIBLE_DEVICES set), else the CPU; the same code either way, with ``torch.autocast``
  (bfloat16) on the GPU only.
* Anytime: after every epoch the model is scored on the validation graphs; an improvement is
  checkpointed (a CPU copy of the weights) and handed to ``on_improve``; the budget is checked after
  every batch, and the best checkpoint is what is returned when it runs out.
"""

from __future__ import annotations

import contextlib
import copy
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from learners.base import Budget
from learners.gnn.data import WorldData, batches
from learners.gnn.modules import GraphLogNet
from learners.seeding import seed_everything


def pick_device() -> torch.device:
    """The GPU if this process sees one; else the CPU, with ORCH_TORCH_THREADS threads (default 1).

    One thread because a job is scheduled on one CPU (``num_cpus: 1``): more threads only fight the
    other jobs on the node (measured: 20x slower training on a loaded 2-core machine).
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    torch.set_num_threads(int(os.environ.get("ORCH_TORCH_THREADS", "1")))
    return torch.device("cpu")


def job_seed(fixed: int | None = None) -> int:
    """Seed Python, numpy and torch for one fit and return the seed: ``fixed`` if given, else one
    drawn from numpy's global RNG. The orchestrator's worker seeds that RNG per job from its
    (seed, repeat), so ``orch run --seed`` and repeats vary the initialisation and a job reruns
    identically. Outside a worker, seed numpy first (``np.random.seed``) to repeat a run."""
    seed = int(np.random.randint(2**31 - 1)) if fixed is None else fixed
    seed_everything(seed)
    return seed


def autocast(device: torch.device) -> contextlib.AbstractContextManager:
    """Mixed precision on the GPU; a no-op on the CPU."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@dataclass(frozen=True)
class TrainConfig:
    """Appendix E.2: Adam, lr 1e-3, weight decay 1e-4; plateau decay 0.8 after 10 stagnant epochs."""

    epochs: int = 500
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    plateau_patience: int = 10
    plateau_factor: float = 0.8
    schedule: bool = True
    seed: int = 0


@dataclass
class History:
    epochs: list[dict] = field(default_factory=list)
    best_valid: float = -1.0
    best_epoch: int = -1
    stopped_by_budget: bool = False
    seconds: float = 0.0
    graphs_trained: int = 0


@torch.no_grad()
def predict_classes(net: GraphLogNet, world: WorldData, split: str, batch_size: int = 256) -> np.ndarray:
    device = next(net.parameters()).device
    net.eval()
    out = []
    with autocast(device):
        for b in batches(world.splits[split], batch_size, device):
            out.append(net(world, b).argmax(-1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def accuracy(net: GraphLogNet, world: WorldData, split: str) -> float:
    g = world.splits.get(split)
    if g is None or len(g) == 0:
        return float("nan")
    return float((predict_classes(net, world, split) == g.target).mean())


def train_steps(
    net: GraphLogNet,
    opt: torch.optim.Optimizer,
    world: WorldData,
    split: str,
    cfg: TrainConfig,
    rng: np.random.Generator,
    budget: Budget,
    max_steps: int | None = None,
) -> Iterator[float]:
    """One pass over a split (or ``max_steps`` batches), yielding each batch's loss."""
    device = next(net.parameters()).device
    net.train()
    for step, b in enumerate(batches(world.splits[split], cfg.batch_size, device, rng)):
        if (max_steps is not None and step >= max_steps) or budget.expired():
            return
        with autocast(device):
            loss = F.cross_entropy(net(world, b).float(), b.target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        yield float(loss.detach())


def make_optimizer(net: GraphLogNet, cfg: TrainConfig) -> torch.optim.Optimizer:
    return torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)


def fit(
    net: GraphLogNet,
    train_worlds: list[WorldData],
    cfg: TrainConfig,
    budget: Budget = Budget(),
    valid_worlds: list[WorldData] | None = None,
    on_improve: Callable[[dict, float], None] | None = None,
    sample_world_per_epoch: bool = False,
) -> History:
    """Train; keep the best-validation weights in ``net`` at the end (anytime checkpointing).

    ``sample_world_per_epoch`` is the paper's multi-task schedule: each epoch trains on one world
    drawn at random; otherwise every epoch visits every training world.
    """
    rng = np.random.default_rng(cfg.seed)
    opt = make_optimizer(net, cfg)
    sched = (
        torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, factor=cfg.plateau_factor, patience=cfg.plateau_patience
        )
        if cfg.schedule
        else None
    )
    valid_worlds = valid_worlds if valid_worlds is not None else train_worlds
    hist, best_state = History(), None
    started = time.perf_counter()
    for epoch in range(cfg.epochs):
        order = (
            [train_worlds[int(rng.integers(len(train_worlds)))]] if sample_world_per_epoch else train_worlds
        )
        losses = []
        for w in order:
            losses += list(train_steps(net, opt, w, "train", cfg, rng, budget))
            hist.graphs_trained += min(len(w.splits["train"]), len(losses) * cfg.batch_size)
        if not losses:
            hist.stopped_by_budget = True
            break
        valid = float(np.nanmean([accuracy(net, w, _valid_split(w)) for w in valid_worlds]))
        loss = float(np.mean(losses))
        hist.epochs.append({"epoch": epoch, "loss": loss, "valid_acc": valid})
        if sched is not None:
            sched.step(-valid)
        if valid > hist.best_valid:
            hist.best_valid, hist.best_epoch = valid, epoch
            best_state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
            if on_improve is not None:
                on_improve(best_state, valid)
        if budget.expired():
            hist.stopped_by_budget = True
            break
    if best_state is not None:
        net.load_state_dict(best_state)
    hist.seconds = time.perf_counter() - started
    return hist


def _valid_split(w: WorldData) -> str:
    for name in ("valid", "validate"):
        if name in w.splits and len(w.splits[name]):
            return name
    return "train"


def clone(net: GraphLogNet) -> GraphLogNet:
    return copy.deepcopy(net)
