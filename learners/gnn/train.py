"""Training and evaluation loops shared by every GraphLog setup and the registered learners.

Why it looks like this:

* Device: the GPU when this process can see one (a Ray actor with ``num_gpus`` gets
  CUDA_VISIBLE_DEVICES set), else the CPU; the same code either way, with ``torch.autocast``
  (bfloat16) on the GPU only.
* Fast at small batches: a split is copied to the device once and each epoch's batches are
  collated there (``learners.gnn.data.DeviceSplit``); the step loop never waits for the device:
  losses are summed on the device and read once per epoch, and the budget is checked against the
  wall clock (no sync). ``TrainConfig(pipeline="host")`` is the former loop (numpy collation and a
  copy per batch, the loss read every step), kept as the benchmark's reference.
* Repeatable: deterministic algorithms are on while training (see :func:`use_deterministic`), the
  loss avoids ``nll_loss`` (no deterministic CUDA kernel), and the seed arrives explicitly.
* Anytime: after every epoch the model is scored on the validation graphs; an improvement is
  checkpointed (a CPU copy of the weights) and handed to ``on_improve``; the budget is checked
  before every step, and once it has run out the only work left is bounded (see :func:`fit`).
  The first epoch stops at half the budget if it has not ended by then, so a model is reported
  before the orchestrator's kill at the budget.
* Few launches on the GPU: each step is padded to a fixed shape and replayed from a CUDA graph
  (``learners.gnn.graphstep``; ``TrainConfig(cuda_graphs=False)`` for eager steps).
"""

from __future__ import annotations

import contextlib
import copy
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import torch

from learners.base import Budget
from learners.gnn.data import Batch, WorldData, batches, device_batches
from learners.gnn.graphstep import StepRunner
from learners.gnn.incidence import one_hot_rows
from learners.gnn.modules import GraphLogNet
from learners.seeding import seed_everything

NetT = TypeVar("NetT", bound=torch.nn.Module)

# Once the budget has run out, the validation pass of a partial epoch runs only when the previous
# one took at most this long (else the best checkpoint so far is returned as it is).
EVAL_AFTER_DEADLINE_S = 0.5
# Until a model has been checkpointed, an epoch stops at this fraction of the budget (then the
# partial epoch is validated and reported): the orchestrator kills a job at its budget.
FIRST_CHECKPOINT_AT = 0.5
# cuBLAS needs a fixed workspace to be deterministic; read when its handle is created (set early).
CUBLAS_DETERMINISTIC = ":4096:8"


def pick_device() -> torch.device:
    """The GPU if this process sees one; else the CPU. Either way ORCH_TORCH_THREADS CPU threads
    (default 1), because a job is scheduled on one CPU (``num_cpus: 1``): more threads only fight
    the other jobs on the node (measured: 20x slower training on a loaded 2-core machine; eight GPU
    jobs of 16 threads each on a 16-core node did not finish a benchmark in 120 s).
    """
    torch.set_num_threads(int(os.environ.get("ORCH_TORCH_THREADS", "1")))
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def use_deterministic(enabled: bool = True) -> None:
    """Deterministic algorithms for this process (a job's process is its own), so that a seeded
    job reruns to the same scores on the same GPU.

    Sets ``CUBLAS_WORKSPACE_CONFIG`` (unless already set) before any CUDA call of the job, and
    ``torch.use_deterministic_algorithms``: ``index_add``, ``scatter_add_`` and ``scatter_reduce``
    (sum, mean) then take their deterministic CUDA kernels; an op without one raises instead of
    varying silently. ``fill_uninitialized_memory`` stays off: nothing here reads uninitialised
    memory, and filling every new tensor would add a kernel per allocation.
    """
    if enabled:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_DETERMINISTIC)
    torch.use_deterministic_algorithms(enabled)
    torch.utils.deterministic.fill_uninitialized_memory = False  # type: ignore[attr-defined]


def job_seed(fixed: int | None = None) -> int:
    """Seed Python, numpy and torch for one fit and return the seed: ``fixed`` if given, else one
    drawn from numpy's global RNG. The orchestrator's worker seeds that RNG per job from its
    (seed, repeat), so ``orch run --seed`` and repeats vary the initialisation and a job reruns
    identically. Outside a worker, seed numpy first (``np.random.seed``) to repeat a run."""
    seed = int(np.random.randint(2**31 - 1)) if fixed is None else int(fixed)
    seed_everything(seed)
    return seed


def build_net(make: Callable[[], NetT], seed: int, device: torch.device) -> NetT:
    """The network initialised from ``seed`` alone (torch's generator is seeded right before, so
    nothing that ran earlier in the process changes it), then moved to ``device``.

    The generator is seeded rather than forked: dropout (which takes no generator) then continues
    from the state after initialisation, as before, so a seed gives the same run as at 46af487.
    """
    torch.manual_seed(seed)
    return make().to(device)


def autocast(
    device: torch.device, enabled: bool = True, cache: bool = True
) -> contextlib.AbstractContextManager:
    """Mixed precision on the GPU (unless ``enabled`` is False); a no-op on the CPU. ``cache``: keep
    the bfloat16 copies of the weights within the context (off inside a CUDA graph capture)."""
    if device.type == "cuda" and enabled:
        return torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=cache)
    return contextlib.nullcontext()


def compile_for(net: GraphLogNet, cfg: TrainConfig, device: torch.device) -> None:
    """``torch.compile`` the composition module in place when ``cfg.compile`` asks and the device is
    a GPU (never on the CPU: the CPU and CI paths stay eager). Off by default: it fuses the step's
    many small kernels, but compiling costs seconds to minutes, more than a short job's budget.
    In place (``Module.compile``), so the state dict keeps its keys. With CUDA graphs the compiled
    kernels are captured too, and every batch of a split has one padded shape (static shapes);
    without them each batch has its own node and edge counts (dynamic shapes)."""
    if cfg.compile and device.type == "cuda" and not getattr(net, "_orch_compiled", False):
        net.comp.compile(dynamic=not uses_cuda_graphs(cfg, device))
        net._orch_compiled = True  # type: ignore[assignment]


PIPELINES = ("device", "host")


@dataclass(frozen=True)
class TrainConfig:
    """Appendix E.2: Adam, lr 1e-3, weight decay 1e-4; plateau decay 0.8 after 10 stagnant epochs.

    ``pipeline``: "device" (batches collated on the device, no sync per step) or "host" (the former
    loop, kept as a reference for the benchmark). ``deterministic``: see :func:`use_deterministic`.
    ``autocast`` and ``compile`` matter on the GPU only; both are there to be measured
    (``bench/bench_gnn.py --no-autocast``, ``--compile``).
    """

    epochs: int = 500
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-4
    plateau_patience: int = 10
    plateau_factor: float = 0.8
    schedule: bool = True
    seed: int = 0
    pipeline: str = "device"
    deterministic: bool = True
    autocast: bool = True  # bfloat16 autocast on the GPU
    compile: bool = False  # torch.compile of the composition module, GPU only (see compile_for)
    # on the GPU, steps padded and replayed from CUDA graphs (learners.gnn.graphstep)
    cuda_graphs: bool = True


@dataclass
class History:
    epochs: list[dict] = field(default_factory=list)
    best_valid: float = -1.0
    best_epoch: int = -1
    stopped_by_budget: bool = False
    seconds: float = 0.0
    graphs_trained: int = 0


def split_batches(
    world: WorldData, split: str, size: int, device: torch.device, rng: np.random.Generator | None = None,
    pipeline: str = "device",
) -> list[Batch] | Iterator[Batch]:  # fmt: skip
    """A split's batches (shuffled when ``rng`` is given) through ``pipeline``; the same batches either way."""
    if pipeline not in PIPELINES:
        raise ValueError(f"unknown pipeline {pipeline!r}: expected one of {', '.join(PIPELINES)}")
    if pipeline == "host":
        return batches(world.splits[split], size, device, rng)
    return device_batches(world, split, size, device, rng)


@torch.no_grad()
def predict_classes(
    net: GraphLogNet, world: WorldData, split: str, batch_size: int = 256, deadline: float | None = None,
    pipeline: str = "device",
) -> np.ndarray:  # fmt: skip
    """The class each graph of ``split`` is ranked first, read from the device once at the end.

    With a ``deadline`` (time.monotonic), batches after it are left out: the result may be shorter.
    """
    device = next(net.parameters()).device
    net.eval()
    out: list[torch.Tensor] = []
    with autocast(device):
        for b in split_batches(world, split, batch_size, device, pipeline=pipeline):
            if deadline is not None and out and time.monotonic() > deadline:
                break
            out.append(net(world, b).argmax(-1))
    return torch.cat(out).cpu().numpy() if out else np.zeros(0, dtype=np.int64)


def accuracy(net: GraphLogNet, world: WorldData, split: str, deadline: float | None = None) -> float:
    """Accuracy on ``split`` (on the graphs scored before ``deadline``, when one is given)."""
    g = world.splits.get(split)
    if g is None or len(g) == 0:
        return float("nan")
    pred = predict_classes(net, world, split, deadline=deadline)
    return float((pred == g.target[: len(pred)]).mean())


def cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean cross-entropy, as ``F.cross_entropy``, through a one-hot mask: ``nll_loss`` has no
    deterministic CUDA kernel and raises under deterministic algorithms, and the gradient of
    ``gather`` is a scatter (sorted there). With ``weight`` (0 or 1 per query: a padded batch),
    the mean over the queries of weight 1."""
    hit = one_hot_rows(target, logits.shape[1], torch.bool)
    picked = torch.where(hit, logits.log_softmax(-1), torch.zeros_like(logits)).sum(1)
    if weight is None:
        return -picked.mean()
    return -torch.where(weight > 0, picked, torch.zeros_like(picked)).sum() / weight.sum()


def first_checkpoint_budget(budget: Budget) -> Budget:
    """The part of ``budget`` an epoch may train before the first checkpoint (FIRST_CHECKPOINT_AT
    of it; all of an unlimited budget)."""
    if budget.seconds is None:
        return budget
    return Budget(budget.seconds * FIRST_CHECKPOINT_AT, budget.started)


def uses_cuda_graphs(cfg: TrainConfig, device: torch.device) -> bool:
    """Whether training steps are replayed from CUDA graphs: on the GPU, with the device pipeline,
    unless ``cfg`` turns them off."""
    return device.type == "cuda" and cfg.cuda_graphs and cfg.pipeline == "device"


def step_runner(
    net: GraphLogNet, opt: torch.optim.Optimizer, cfg: TrainConfig, padded: bool = False
) -> StepRunner:
    """The optimizer's step runner (one per optimizer: its captured graphs live as long as it does;
    kept on the optimizer, so the two are freed together). ``padded`` runs padded steps even
    without CUDA graphs (the CPU tests of the padding)."""
    runner: StepRunner | None = getattr(opt, "_orch_step_runner", None)
    if runner is None:
        device = next(net.parameters()).device

        def loss_of(world: WorldData, b: Batch, cache: bool) -> torch.Tensor:
            with autocast(device, cfg.autocast, cache):
                return cross_entropy(net(world, b).float(), b.target, b.weight)

        runner = StepRunner(opt, loss_of, uses_cuda_graphs(cfg, device), padded)
        opt._orch_step_runner = runner  # type: ignore[attr-defined]
    return runner


def train_steps(
    net: GraphLogNet,
    opt: torch.optim.Optimizer,
    world: WorldData,
    split: str,
    cfg: TrainConfig,
    rng: np.random.Generator,
    budget: Budget,
    max_steps: int | None = None,
) -> Iterator[torch.Tensor]:
    """One pass over a split (or ``max_steps`` batches), yielding each batch's loss (a detached
    device tensor: reading it is the caller's sync, so the loop itself never waits for the device).

    The budget is checked before every step against the wall clock, which needs no sync.
    """
    device = next(net.parameters()).device
    compile_for(net, cfg, device)
    runner = step_runner(net, opt, cfg)
    net.train()
    for step, b in enumerate(split_batches(world, split, cfg.batch_size, device, rng, cfg.pipeline)):
        if (max_steps is not None and step >= max_steps) or budget.expired():
            return
        loss = runner.step(world, split, b, cfg.batch_size)
        if cfg.pipeline == "host":  # the former loop read every loss at once (a sync per step)
            yield torch.tensor(float(loss))
        else:
            yield loss


def make_optimizer(net: GraphLogNet, cfg: TrainConfig) -> torch.optim.Optimizer:
    """Adam; on the GPU capturable when steps are replayed from CUDA graphs, else its fused kernel
    (one launch per step instead of several per parameter)."""
    device = next(net.parameters()).device
    if uses_cuda_graphs(cfg, device):
        return torch.optim.Adam(
            net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, capturable=True, foreach=True
        )
    on_gpu = device.type == "cuda"
    return torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, fused=on_gpu or None)


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

    Budget: checked before every step. Once it has run out in an epoch, that epoch's validation pass
    runs only if nothing was checkpointed yet (then cut at the deadline plus
    ``EVAL_AFTER_DEADLINE_S``) or the previous pass took at most that long, so ``fit`` returns within
    about a step, a validation pass of at most ``EVAL_AFTER_DEADLINE_S`` and a checkpoint of the
    deadline.
    """
    use_deterministic(cfg.deterministic)
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
    hist, best_state, eval_s = History(), None, 0.0
    started = time.perf_counter()
    for epoch in range(cfg.epochs):
        order = (
            [train_worlds[int(rng.integers(len(train_worlds)))]] if sample_world_per_epoch else train_worlds
        )
        losses: list[torch.Tensor] = []
        # Before the first checkpoint the epoch stops at FIRST_CHECKPOINT_AT of the budget (unless
        # that point has passed already): the orchestrator kills a job at its budget, so a model
        # must be validated and reported before then, even when one epoch takes longer.
        step_budget = budget
        if best_state is None and not (first := first_checkpoint_budget(budget)).expired():
            step_budget = first
        for w in order:
            steps = list(train_steps(net, opt, w, "train", cfg, rng, step_budget))
            hist.graphs_trained += min(len(w.splits["train"]), len(steps) * cfg.batch_size)
            losses += steps
        if not losses:
            hist.stopped_by_budget = True
            break
        out_of_time = budget.expired()
        if out_of_time and best_state is not None and eval_s > EVAL_AFTER_DEADLINE_S:
            hist.stopped_by_budget = True  # a validation pass would overrun: keep the checkpoint
            break
        deadline = max(time.monotonic(), budget.deadline) + EVAL_AFTER_DEADLINE_S if out_of_time else None
        t = time.monotonic()
        valid = float(np.nanmean([accuracy(net, w, _valid_split(w), deadline) for w in valid_worlds]))
        eval_s = time.monotonic() - t
        loss = float(torch.stack(losses).double().mean())  # the epoch's one read of the losses
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
