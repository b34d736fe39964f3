"""The paper's four GraphLog setups as functions returning result rows (JSON/Parquet-ready dicts).

* supervised: one model per world, trained on its train graphs, scored on its test graphs.
* multitask: one model over many worlds, one world drawn per epoch (the paper's schedule).
* kshot: multitask pre-training, then for each held-out world: adapt a copy for k gradient steps
  (batches) on its train graphs and score its test graphs after each k in ``shots``.
* continual: one model trained on worlds in sequence (``epochs`` each, no schedule); after each
  world, accuracy on every world seen so far -- the forgetting curve.

Every row names the setup, model, world(s) and seed, so rows from many runs share one table.
Each setup hands every row to ``report`` as soon as it is made, so a run stopped from outside (the
orchestrator's hard deadline) still has the rows of the worlds it finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace

import numpy as np

from learners.base import Budget
from learners.gnn.data import WorldData
from learners.gnn.modules import GraphLogNet, NetConfig, model_name
from learners.gnn.train import (
    TrainConfig,
    accuracy,
    build_net,
    clone,
    fit,
    make_optimizer,
    pick_device,
    train_steps,
    use_deterministic,
)
from learners.seeding import seed_everything

SETUPS = ("supervised", "multitask", "kshot", "continual")


def _net(cfg: NetConfig) -> GraphLogNet:
    """A fresh network from ``cfg.seed`` (which also seeds dropout and the -rand node noise), with
    deterministic algorithms on before the first CUDA call (see train.use_deterministic)."""
    use_deterministic()
    seed_everything(cfg.seed)
    return build_net(lambda: GraphLogNet(cfg), cfg.seed, pick_device())


def _base(setup: str, cfg: NetConfig, tcfg: TrainConfig) -> dict:
    return {
        "setup": setup,
        "model": model_name(cfg),
        "dim": cfg.dim,
        "seed": cfg.seed,
        "epochs": tcfg.epochs,
    }


Report = Callable[[dict], None]


class _Rows(list):
    """The rows of a run; each appended row is also reported at once."""

    def __init__(self, report: Report | None) -> None:
        super().__init__()
        self.report = report

    def append(self, row: dict) -> None:
        super().append(row)
        if self.report is not None:
            self.report(row)


def supervised(
    worlds: list[WorldData], cfg: NetConfig, tcfg: TrainConfig, budget_s: float | None = None,
    report: Report | None = None,
) -> list[dict]:  # fmt: skip
    rows = _Rows(report)
    for w in worlds:
        net = _net(cfg)
        hist = fit(net, [w], tcfg, Budget(budget_s))
        rows.append(
            {
                **_base("supervised", cfg, tcfg),
                "world": w.name,
                "train_acc": accuracy(net, w, "train"),
                "valid_acc": hist.best_valid,
                "test_acc": accuracy(net, w, "test"),
                "best_epoch": hist.best_epoch,
                "epochs_run": len(hist.epochs),
                "train_s": hist.seconds,
                "timeout": hist.stopped_by_budget,
                "loss_curve": [e["loss"] for e in hist.epochs],
            }
        )
    return rows


def multitask(
    worlds: list[WorldData], cfg: NetConfig, tcfg: TrainConfig, budget_s: float | None = None,
    report: Report | None = None,
) -> list[dict]:  # fmt: skip
    net = _net(cfg)
    hist = fit(net, worlds, replace(tcfg, schedule=False), Budget(budget_s), sample_world_per_epoch=True)
    rows = _Rows(report)
    for row in [
        {
            **_base("multitask", cfg, tcfg),
            "world": w.name,
            "train_worlds": len(worlds),
            "test_acc": accuracy(net, w, "test"),
            "valid_acc": accuracy(net, w, "valid"),
            "train_s": hist.seconds,
            "timeout": hist.stopped_by_budget,
        }
        for w in worlds
    ]:
        rows.append(row)
    return rows


def kshot(
    pretrain: list[WorldData], heldout: list[WorldData], cfg: NetConfig, tcfg: TrainConfig,
    shots: Sequence[int] = (0, 5, 10, 20, 40), budget_s: float | None = None, report: Report | None = None,
) -> list[dict]:  # fmt: skip
    budget = Budget(budget_s)
    net = _net(cfg)
    hist = fit(net, pretrain, replace(tcfg, schedule=False), budget, sample_world_per_epoch=True)
    rows = _Rows(report)
    for w in heldout:
        adapted = clone(net)
        opt = make_optimizer(adapted, tcfg)
        rng = np.random.default_rng(cfg.seed)
        done = 0
        started = time.perf_counter()
        for k in sorted(shots):
            while done < k:
                steps = list(train_steps(adapted, opt, w, "train", tcfg, rng, Budget(), max_steps=k - done))
                if not steps:
                    break
                done += len(steps)
            rows.append(
                {
                    **_base("kshot", cfg, tcfg),
                    "world": w.name,
                    "pretrain_worlds": len(pretrain),
                    "shots": k,
                    "test_acc": accuracy(adapted, w, "test"),
                    "adapt_s": time.perf_counter() - started,
                    "timeout": hist.stopped_by_budget,  # of the pre-training (adaptation is unbudgeted)
                }
            )
    return rows


def continual(
    worlds: list[WorldData], cfg: NetConfig, tcfg: TrainConfig, budget_s: float | None = None,
    report: Report | None = None,
) -> list[dict]:  # fmt: skip
    net = _net(cfg)
    budget = Budget(budget_s)
    rows = _Rows(report)
    for i, w in enumerate(worlds):
        # One optimizer per world, as when a new task arrives; no learning-rate schedule (E.2).
        hist = fit(net, [w], replace(tcfg, schedule=False), budget)
        for j, past in enumerate(worlds[: i + 1]):
            rows.append(
                {
                    **_base("continual", cfg, tcfg),
                    "after": i,
                    "trained_world": w.name,
                    "world": past.name,
                    "world_position": j,
                    "current": i == j,
                    "test_acc": accuracy(net, past, "test"),
                    "timeout": hist.stopped_by_budget,
                }
            )
    return rows


def run(
    setup: str, worlds: list[WorldData], cfg: NetConfig, tcfg: TrainConfig, budget_s: float | None = None,
    heldout: Sequence[WorldData] = (), shots: Sequence[int] = (0, 5, 10, 20, 40), report: Report | None = None,
) -> list[dict]:  # fmt: skip
    """One setup by name; ``kshot`` pre-trains on ``worlds`` and adapts to ``heldout`` at ``shots``.

    ``report(row)`` sees each row as soon as it is made (the returned list has them all).
    """
    if setup == "kshot":
        return list(kshot(worlds, list(heldout), cfg, tcfg, list(shots), budget_s, report))
    by_name = {"supervised": supervised, "multitask": multitask, "continual": continual}
    if setup not in by_name:
        raise ValueError(f"unknown setup {setup!r}: expected one of {', '.join(SETUPS)}")
    return list(by_name[setup](worlds, cfg, tcfg, budget_s, report))


def forgetting_curve(rows: list[dict]) -> list[dict]:
    """Per step of a continual run: current-world accuracy and mean accuracy on the past worlds."""
    out = []
    for i in sorted({r["after"] for r in rows}):
        step = [r for r in rows if r["after"] == i]
        past = [r["test_acc"] for r in step if not r["current"]]
        cur = [r["test_acc"] for r in step if r["current"]]
        out.append(
            {
                "after": i,
                "current_acc": cur[0] if cur else float("nan"),
                "past_mean_acc": float(np.mean(past)) if past else float("nan"),
            }
        )
    return out


def net_config_dict(cfg: NetConfig) -> dict:
    return asdict(cfg)
