"""GraphLog setups as resumable Ray sweeps (``orch graphlog sweep`` / ``orch graphlog results``).

Why this shape:

* ``orch graphlog train`` runs one setup in one process (the quick path). A sweep runs the same
  setups (:mod:`learners.gnn.setups`) over models x seeds (x worlds) as Ray tasks, so they spread
  over a cluster and use a GPU where the cluster has one (the learner code picks CUDA when the
  task sees a GPU; the seeds make a run repeatable either way).
* Jobs: supervised is one job per (model, seed, world); multitask, kshot and continual are one
  job per (model, seed) over the world list. A job id hashes what determines the job's result:
  the content fingerprints of the worlds it reads (a regenerated suite gets new ids, a moved one
  keeps them) and the settings its setup uses (held-out worlds and shots only for kshot, so a new
  ``--shots`` does not rerun supervised jobs).
* Resume: the driver stores a job's rows as soon as the job finishes, one atomic Parquet file per
  job under ``graphlog/`` in the results store (the mechanism ``predictive/`` uses). Stored jobs
  are skipped. ``--rerun`` runs them again and *appends* a newer file; every read keeps only each
  job's latest file, so no job is ever counted twice.
* Failures stay per job: an exception is status "error" (the message names the job), a worker
  that dies beyond Ray's retries is "killed", a spent budget is "timeout" (the setups check the
  budget every batch and score the best-validation weights, so the metrics are real, not zeros).
* One row schema for every setup (metrics a setup lacks are null, curves JSON text), so files of
  all setups and runs read as one table.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import time
import traceback
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.raysession import ray_session
from orchestrator.scheduler import SilentProgress, SweepResult, notify, stop_on_signals
from orchestrator.schema import FINAL_STATUSES
from orchestrator.store import ResultStore, StoreError, scrub
from orchestrator.sweep import SweepError

SETUPS = ("supervised", "multitask", "kshot", "continual")  # = learners.gnn.setups.SETUPS (no torch here)
GRAPHLOG_DIR = "graphlog"

SCHEMA = pa.schema(
    [
        ("job_id", pa.string()),
        ("setup", pa.string()),
        ("model", pa.string()),
        ("seed", pa.int64()),
        ("worlds", pa.string()),  # the job's world list, comma-separated (kshot: the pre-training worlds)
        ("heldout", pa.string()),  # kshot: the held-out worlds, comma-separated
        ("world", pa.string()),  # the world this row scores
        ("k", pa.int64()),  # kshot: adaptation steps
        ("step", pa.int64()),  # continual: index of the world just trained
        ("trained_world", pa.string()),  # continual: that world
        ("current", pa.bool_()),  # continual: world == trained_world
        ("train_acc", pa.float64()),
        ("valid_acc", pa.float64()),
        ("test_acc", pa.float64()),
        ("best_epoch", pa.int64()),
        ("epochs_run", pa.int64()),
        ("train_s", pa.float64()),  # training seconds (kshot: adaptation seconds up to k)
        ("status", pa.string()),
        ("error", pa.string()),
        ("seconds", pa.float64()),  # the job's wall time on its worker, loading included
        ("device", pa.string()),
        ("loss_curve", pa.string()),  # JSON list, per epoch (supervised)
        ("forgetting_curve", pa.string()),  # JSON list, per step (continual)
        ("epochs", pa.int64()),
        ("dim", pa.int64()),
        ("dropout", pa.float64()),
        ("batch_size", pa.int64()),
        ("budget_s", pa.float64()),
        ("suite", pa.string()),
        ("finished", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass(frozen=True)
class SweepSpec:
    """What ``orch graphlog sweep`` was asked for; empty ``worlds`` / ``heldout`` mean the defaults."""

    directory: str
    setups: tuple[str, ...]
    models: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    worlds: tuple[str, ...] = ()  # default: every world of the suite
    heldout: tuple[str, ...] = ()  # kshot; default: the suite's test worlds
    shots: tuple[int, ...] = (0, 5, 10, 20, 40)
    epochs: int = 50
    dim: int = 64
    dropout: float = 0.4
    batch_size: int = 32
    budget_s: float = 0.0  # per job; 0: unlimited


@dataclass(frozen=True)
class GraphLogJob:
    """One Ray task: one setup, model and seed over ``worlds`` (one world for supervised)."""

    job_id: str
    setup: str
    model: str
    seed: int
    worlds: tuple[str, ...]
    heldout: tuple[str, ...]
    shots: tuple[int, ...]
    epochs: int
    dim: int
    dropout: float
    batch_size: int
    budget_s: float

    def label(self) -> str:
        where = self.worlds[0] if len(self.worlds) == 1 else f"{len(self.worlds)} worlds"
        if self.heldout:
            where += f" -> {','.join(self.heldout)}"
        return f"{self.setup} {self.model} seed {self.seed} {where}"


# --- planning (on the driver, before Ray starts) ----------------------------------------------------


def _known(names: Sequence[str], suite_worlds: list[str], option: str) -> None:
    unknown = [w for w in names if w not in suite_worlds]
    if unknown:
        some = ", ".join(suite_worlds[:4]) + (", ..." if len(suite_worlds) > 4 else "")
        raise SweepError(
            f"{option}: unknown world(s) {', '.join(unknown)}; the suite has {len(suite_worlds)} ({some})"
        )


def _job_id(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def plan_jobs(spec: SweepSpec) -> list[GraphLogJob]:
    """Validate ``spec`` against the suite and expand it into jobs (names checked before Ray starts)."""
    from tasks.graphlog import GraphLogSource

    if not spec.setups:
        raise SweepError(f"no setup given; expected some of {', '.join(SETUPS)}")
    for s in spec.setups:
        if s not in SETUPS:
            raise SweepError(f"unknown setup {s!r}: expected one of {', '.join(SETUPS)}")
    if not spec.models:
        raise SweepError("no model given (e.g. --models gat-egat,param-rgcn)")
    from learners.gnn.modules import parse_model

    for m in spec.models:
        try:
            parse_model(m)
        except ValueError as e:
            raise SweepError(str(e)) from None
    if not spec.seeds:
        raise SweepError("no seed given (e.g. --seeds 0,1,2)")
    if spec.epochs < 1 or spec.dim < 1 or spec.batch_size < 1 or spec.budget_s < 0:
        raise SweepError("--epochs, --dim and --batch-size must be >= 1 and --budget >= 0")
    if not 0 <= spec.dropout < 1:
        raise SweepError(f"--dropout must be in [0, 1), got {spec.dropout}")
    try:
        suite = GraphLogSource(spec.directory).suite
    except (FileNotFoundError, ValueError) as e:
        raise SweepError(str(e)) from None
    every = suite.worlds()
    _known(spec.worlds, every, "--worlds")
    _known(spec.heldout, every, "--heldout")
    worlds = list(spec.worlds) or every
    if not worlds:
        raise SweepError(f"{spec.directory}: the world list is empty")
    prints: dict[str, str] = {}

    def ident(names: Sequence[str]) -> list[list[str]]:
        """Names with content fingerprints: the suite's identity as far as these jobs read it."""
        for w in names:
            if w not in prints:
                try:
                    prints[w] = suite.fingerprint(w)
                except OSError as e:
                    raise SweepError(f"world {w}: cannot read its graphs: {e}") from None
        return [[w, prints[w]] for w in names]

    # v2: model names without -bi pass messages along edges only (v1 passed them both ways)
    common = {"v": 2, "epochs": int(spec.epochs), "dim": int(spec.dim), "dropout": float(spec.dropout),
              "batch_size": int(spec.batch_size), "budget_s": float(spec.budget_s)}  # fmt: skip
    jobs: dict[str, GraphLogJob] = {}
    for setup in spec.setups:
        held: list[str] = []
        groups = [[w] for w in worlds] if setup == "supervised" else [worlds]
        if setup == "kshot":
            held = list(spec.heldout) or suite.with_role("test")
            if not held:
                raise SweepError("kshot needs --heldout worlds (this suite marks no test worlds)")
            if any(k < 0 for k in spec.shots) or not spec.shots:
                raise SweepError(f"--shots must be non-negative step counts, got {list(spec.shots)}")
            groups = [[w for w in worlds if w not in held]]
            if not groups[0]:
                raise SweepError(
                    "kshot: every pre-training world is also held out; pass --worlds and --heldout"
                )
        for model in spec.models:
            for seed in spec.seeds:
                for group in groups:
                    key = {**common, "setup": setup, "model": model, "seed": seed, "worlds": ident(group)}
                    if setup == "kshot":
                        key |= {"heldout": ident(held), "shots": sorted(set(spec.shots))}
                    job = GraphLogJob(
                        _job_id(key), setup, model, seed, tuple(group), tuple(held),
                        tuple(sorted(set(spec.shots))) if setup == "kshot" else (),
                        spec.epochs, spec.dim, spec.dropout, spec.batch_size, spec.budget_s,
                    )  # fmt: skip
                    jobs.setdefault(job.job_id, job)
    return list(jobs.values())


# --- one job (in a Ray worker) ----------------------------------------------------------------------


def _clean(x: object) -> object:
    """NaN as None, so Parquet and strict JSON agree."""
    return None if isinstance(x, float) and math.isnan(x) else x


def _base_row(job: GraphLogJob, suite: str) -> dict:
    return {
        "job_id": job.job_id, "setup": job.setup, "model": job.model, "seed": job.seed,
        "worlds": ",".join(job.worlds), "heldout": ",".join(job.heldout) or None,
        "world": job.worlds[0] if job.setup == "supervised" else None,
        "epochs": job.epochs, "dim": job.dim, "dropout": job.dropout, "batch_size": job.batch_size,
        "budget_s": job.budget_s, "suite": suite,
    }  # fmt: skip


def failed_rows(
    job: GraphLogJob, suite: str, status: str, error: str, seconds: float | None = None
) -> list[dict]:
    """The single row that records a job without results (error, killed)."""
    return [{**_base_row(job, suite), "status": status, "error": error, "seconds": seconds}]


def _setup_rows(directory: str, job: GraphLogJob) -> list[dict]:
    from learners.gnn import setups
    from learners.gnn.data import WorldData
    from learners.gnn.modules import net_config
    from learners.gnn.train import TrainConfig
    from tasks.graphlog import GraphLogSource

    suite = GraphLogSource(directory).suite

    def load(names: Sequence[str]) -> list:
        return [WorldData.of_world(suite.load(n)) for n in names]

    cfg = net_config(job.model, dim=job.dim, seed=job.seed, dropout=job.dropout)
    tcfg = TrainConfig(epochs=job.epochs, batch_size=job.batch_size, seed=job.seed)
    return setups.run(
        job.setup, load(job.worlds), cfg, tcfg, job.budget_s or None, load(job.heldout), job.shots
    )


def run_job(directory: str, job: GraphLogJob) -> list[dict]:
    """Run one job where Ray placed it and return its rows; never raises (an error is a row)."""
    t0 = time.perf_counter()
    device = None
    try:
        import torch

        from learners.gnn.train import pick_device

        dev = pick_device()  # the GPU when Ray gave this task one (num_gpus), else the CPU
        device = f"cuda ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else "cpu"
        got = _setup_rows(directory, job)
    except Exception as e:  # noqa: BLE001 (any failure is this job's, recorded with its traceback)
        tail = "".join(traceback.format_exc().splitlines(keepends=True)[-12:])
        message = f"job {job.job_id} ({job.label()}) failed: {type(e).__name__}: {e}\n{tail}"
        return [
            {**failed_rows(job, directory, "error", message, time.perf_counter() - t0)[0], "device": device}
        ]
    return _result_rows(job, directory, got, device, time.perf_counter() - t0)


def _result_rows(
    job: GraphLogJob, directory: str, got: list[dict], device: str, seconds: float
) -> list[dict]:
    """The setup's rows in the stored schema; the job's status is "timeout" if any part ran out."""
    from learners.gnn.setups import forgetting_curve

    timeout = any(r.get("timeout") for r in got)
    error = None
    if timeout:
        error = (
            f"budget of {job.budget_s:g}s ran out; scores are of the best-validation model so far "
            "(the initial model if no epoch finished)"
        )
    forgetting = None
    if job.setup == "continual":
        forgetting = json.dumps([{k: _clean(v) for k, v in s.items()} for s in forgetting_curve(got)])
    rows = []
    for r in got:
        valid, best = r.get("valid_acc"), r.get("best_epoch")
        rows.append(
            {
                **_base_row(job, directory),
                "world": r["world"],
                "k": r.get("shots"),
                "step": r.get("after"),
                "trained_world": r.get("trained_world"),
                "current": r.get("current"),
                "train_acc": _clean(r.get("train_acc")),
                "valid_acc": None if valid is None or valid < 0 else _clean(valid),  # -1: no epoch ended
                "test_acc": _clean(r.get("test_acc")),
                "best_epoch": None if best is None or best < 0 else best,
                "epochs_run": r.get("epochs_run"),
                "train_s": r.get("train_s", r.get("adapt_s")),
                "status": "timeout" if timeout else "ok",
                "error": error,
                "seconds": seconds,
                "device": device,
                "loss_curve": json.dumps([_clean(x) for x in r["loss_curve"]]) if "loss_curve" in r else None,
                "forgetting_curve": forgetting,
            }
        )
    return rows


# --- the store ----------------------------------------------------------------------------------------


def write_rows(store: ResultStore, rows: list[dict]) -> str:
    """One job's rows as one atomic Parquet file under ``graphlog/``, stamped ``finished`` now."""
    now = dt.datetime.now(dt.UTC)
    clean = [{**r, "finished": now, "error": scrub(r.get("error"))} for r in rows]
    try:
        table = pa.Table.from_pylist(clean, schema=SCHEMA)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise StoreError(f"graphlog rows of job {rows[0].get('job_id')!r} do not fit the schema: {e}") from e
    return store._put(table, GRAPHLOG_DIR, "graphlog")


def _read(store: ResultStore, path: str, columns: list[str] | None = None) -> pa.Table:
    try:
        return pq.read_table(path, filesystem=store.fs, columns=columns)
    except (OSError, pa.ArrowException, KeyError) as e:
        raise StoreError(f"{path}: not a readable graphlog result file: {scrub(str(e))}") from e


def stored_job_ids(store: ResultStore) -> set[str]:
    """Ids of every job with stored rows (reads one column)."""
    return {
        j for path in store.files(GRAPHLOG_DIR) for j in _read(store, path, ["job_id"])["job_id"].to_pylist()
    }


def stored_rows(store: ResultStore, job_ids: set[str] | None = None) -> list[dict]:
    """Every job's rows from its latest file (files are named by write time); ``job_ids``: only those."""
    latest: dict[str, list[dict]] = {}
    for path in store.files(GRAPHLOG_DIR):
        by_job: dict[str, list[dict]] = defaultdict(list)
        for r in _read(store, path).select(SCHEMA.names).to_pylist():
            if job_ids is None or r["job_id"] in job_ids:
                by_job[r["job_id"]].append(r)
        latest.update(by_job)
    return [r for rows in latest.values() for r in rows]


# --- the sweep ------------------------------------------------------------------------------------------


def run_graphlog_sweep(
    spec: SweepSpec,
    store: ResultStore,
    *,
    rerun: bool = False,
    address: str | None = None,
    num_cpus: int | None = None,
    max_retries: int = 2,
    progress=None,
) -> tuple[list[GraphLogJob], SweepResult]:
    """Plan ``spec``, run the jobs the store lacks (all with ``rerun``) on Ray, store rows as jobs end.

    At most as many jobs are in flight as the cluster has slots (CPUs, or GPUs when it has any), so
    the progress display's "running" is true and Ctrl-C cancels little. Ctrl-C (or SIGTERM) stops
    cleanly: finished jobs are stored, the others are cancelled, and the same command resumes.
    """
    progress = progress or SilentProgress()
    t0 = time.monotonic()
    jobs = plan_jobs(spec)
    directory = str(Path(spec.directory).resolve())
    done = set() if rerun else stored_job_ids(store)
    todo = [j for j in jobs if j.job_id not in done]
    result = SweepResult(len(jobs), len(jobs) - len(todo), {}, 0.0, 0.0)
    progress.begin(len(todo), result.skipped)
    if todo:
        with ray_session(address, num_cpus) as ray:
            try:
                with stop_on_signals() as stop:
                    _run_on_ray(ray, todo, directory, store, max_retries, progress, result, stop)
            except KeyboardInterrupt:
                result.interrupted = True
    result.wall_s = time.monotonic() - t0
    progress.end(result)
    return jobs, result


def _run_on_ray(ray, todo, directory, store, max_retries, progress, result, stop) -> None:
    """Keep the cluster's slots busy; store each job's rows the moment it ends (so a crash loses none)."""
    resources = ray.cluster_resources()
    gpus = resources.get("GPU", 0) > 0
    remote = ray.remote(run_job).options(num_cpus=1, num_gpus=1 if gpus else 0, max_retries=max_retries)
    slots = max(1, int(resources.get("GPU" if gpus else "CPU", 1)))
    queue, pending = list(todo), {}
    try:
        while queue or pending:
            if stop.is_set():
                raise KeyboardInterrupt
            while queue and len(pending) < slots:
                job = queue.pop(0)
                pending[remote.remote(directory, job)] = job
                progress.running([job])
                notify(progress, "started", job, time.time())  # no more in flight than slots: it runs
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.25)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    rows = ray.get(ref)
                except ray.exceptions.RayError as e:  # the worker died, and so did every retry
                    why = f"job {job.job_id} ({job.label()}): worker lost beyond {max_retries} retries: {type(e).__name__}: {e}"  # fmt: skip
                    rows = failed_rows(job, directory, "killed", why)
                write_rows(store, rows)
                status = rows[0]["status"]
                result.statuses[status] = result.statuses.get(status, 0) + 1
                result.job_seconds += rows[0].get("seconds") or 0.0
                progress.finished(job, {"status": status, "learn_s": rows[0].get("seconds")})
            progress.tick()
    finally:
        for ref in pending:  # interrupted or failed: what still runs is dropped, not stored
            ray.cancel(ref, force=True)


# --- summaries ------------------------------------------------------------------------------------------


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else None


def display_rows(summary: dict) -> list[dict]:
    """:func:`summarize`'s table as people read it (the CLI's table, the HTML report): test accuracy
    as "mean ± std" (no ± with one seed, "—" with none), job counts by status."""
    out = []
    for t in summary["table"]:
        mean, std = t["test_acc_mean"], t["test_acc_std"]
        acc = "—" if mean is None else f"{mean:.3f}" + ("" if std is None else f" ± {std:.3f}")
        out.append({"setup": t["setup"], "model": t["model"], "k": "" if t["k"] is None else str(t["k"]),
                    "seeds": str(t["seeds"]), "test acc": acc,
                    "jobs": ", ".join(f"{s} {n}" for s, n in t["jobs"].items()), "settings": t["settings"]})  # fmt: skip
    return out


def _world_list(text: str) -> str:
    names = text.split(",")
    if len(names) <= 4:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:6]  # two long lists never share a group
    return f"{len(names)} worlds {names[0]}..{names[-1]} #{digest}"


def settings(row: dict) -> str:
    """What besides setup, model and seed determines a row's scores: groups never mix these."""
    text = f"epochs {row['epochs']}, dim {row['dim']}, dropout {row['dropout']:g}, batch {row['batch_size']}"
    if row["budget_s"]:
        text += f", budget {row['budget_s']:g}s"
    if row["setup"] != "supervised":
        text += f", worlds {_world_list(row['worlds'])}"
    if row["heldout"]:
        text += f", heldout {_world_list(row['heldout'])}"
    return text


def summarize(rows: list[dict]) -> dict:
    """Mean ± std over seeds of test accuracy per setup x model (x k for kshot), and forgetting curves.

    A seed's score is its mean test accuracy over the job's scored worlds (supervised: over the
    seed's world jobs; continual: over all worlds after the last one is learned). Only "ok" and
    "timeout" jobs are scored; ``jobs`` counts every job by status. Rows of different settings
    (epochs, dim, world list, ...; see :func:`settings`) are never averaged together.
    """
    by_job: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_job[r["job_id"]].append(r)
    jobs: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    scores: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    curves: dict[tuple, list[list[dict]]] = defaultdict(list)  # (model, settings, worlds) -> runs
    for job_rows in by_job.values():
        first = job_rows[0]
        group = (first["setup"], first["model"], settings(first))
        jobs[group][first["status"]] += 1
        if first["status"] not in FINAL_STATUSES:
            continue
        if first["setup"] == "continual":
            last = max(r["step"] for r in job_rows)
            job_rows = [r for r in job_rows if r["step"] == last]
            curve = json.loads(first["forgetting_curve"] or "[]")
            curves[(first["model"], group[2], first["worlds"])].append(curve)
        for r in job_rows:
            if r["test_acc"] is not None:
                scores[(*group, r["k"])][first["seed"]].append(r["test_acc"])
    keys = {(*g, None) for g in jobs} - {(*key[:3], None) for key in scores if key[3] is not None}
    order = {s: i for i, s in enumerate(SETUPS)}
    table = []
    for key in sorted(
        keys | set(scores), key=lambda x: (order[x[0]], x[1], x[2], -1 if x[3] is None else x[3])
    ):
        per_seed = [float(np.mean(v)) for _, v in sorted(scores.get(key, {}).items())]
        mean, std = _mean_std(per_seed)
        table.append({"setup": key[0], "model": key[1], "k": key[3], "settings": key[2],
                      "seeds": len(per_seed), "test_acc_mean": mean, "test_acc_std": std,
                      "jobs": dict(sorted(jobs[key[:3]].items()))})  # fmt: skip
    forgetting = []
    for (model, where, worlds), runs in sorted(curves.items()):
        names = worlds.split(",")
        steps = []
        for i in range(max(len(c) for c in runs)):
            at = [c[i] for c in runs if len(c) > i]
            cur = [s["current_acc"] for s in at if s.get("current_acc") is not None]
            past = [s["past_mean_acc"] for s in at if s.get("past_mean_acc") is not None]
            steps.append({"after": i, "world": names[i] if i < len(names) else None, "seeds": len(at),
                          "current_acc": _mean_std(cur)[0], "past_mean_acc": _mean_std(past)[0]})  # fmt: skip
        forgetting.append({"model": model, "settings": where, "steps": steps})
    failures = [
        {"job_id": j, "status": rs[0]["status"], "error": rs[0]["error"]}
        for j, rs in by_job.items()
        if rs[0]["status"] not in FINAL_STATUSES
    ]
    return {"table": table, "forgetting": forgetting, "failures": failures}
