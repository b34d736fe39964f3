"""GraphLog setups as resumable sweeps (``orch graphlog sweep`` / ``orch graphlog results``).

Why this shape:

* ``orch graphlog train`` runs one setup in one process (the quick path). A sweep runs the same
  setups (:mod:`learners.gnn.setups`) over models x seeds (x worlds) as jobs of the one scheduler
  (:func:`orchestrator.scheduling.scheduler.run_sweep`): the same :class:`orchestrator.scheduling.sweep.Job`, id scheme,
  Ray actors, retries, resume, manifests and ``orch status`` as ``orch run``. Only the actor's body
  differs (:mod:`orchestrator.graphlog.runner`), and it runs each job under the same hard-budget
  supervisor as IGGP jobs (:func:`orchestrator.scheduling.worker.run_supervised`).
* Jobs: supervised is one job per (model, seed, world); multitask, kshot and continual are one
  job per (model, seed) over the world list. As a :class:`~orchestrator.scheduling.sweep.Job`: ``target`` is
  ``graphlog-<setup>`` (:data:`TARGET_PREFIX`; reports of IGGP-style tasks leave these out),
  ``predicate`` the setup, ``game`` a short label of the worlds, ``learner`` ``gnn-<model>``,
  ``params`` (JSON) everything else the setup reads (worlds, held-out worlds, shots, epochs, ...),
  ``dataset_fingerprint`` a hash of the content fingerprints of the worlds it reads (a regenerated
  suite gets new ids, a moved one keeps them). ``--shots`` is in the params of kshot jobs only,
  so a new ``--shots`` does not rerun supervised jobs.
* One row per job in the results table (store schema version 2); the per-world scores the setup
  produced are in that row's ``extra`` as ``{"graphlog": [rows]}`` (:data:`DETAIL_COLUMNS`), so
  :func:`stored_rows` gives the same per-world rows as before.
* Budgets are hard: the setup stops itself at the budget and scores its best-validation model
  (cooperative, so the scores are real); if it is not done by the budget plus the scoring
  allowance (``SweepOptions.eval_timeout_s``), its process is killed and the job is ``timeout``
  with the rows it had reported by then. An unlimited budget (``--budget 0``) is stored as inf.
* Stores written before version 2 kept GraphLog rows under ``graphlog/`` with other job ids; they
  are still read (:func:`stored_rows`), and a job stored there counts as done when resuming.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from orchestrator.graphlog.kshot import KShotError, kshot_worlds
from orchestrator.scheduling.sweep import Job, SweepError, job_id
from orchestrator.storage.schema import FINAL_STATUSES, GRAPHLOG_TARGET_PREFIX
from orchestrator.storage.store import ResultStore, StoreError, scrub

SETUPS = ("supervised", "multitask", "kshot", "continual")  # = learners.gnn.setups.SETUPS (no torch here)
TARGET_PREFIX = GRAPHLOG_TARGET_PREFIX
"""``Job.target`` of a GraphLog setup job: ``graphlog-<setup>``."""
LEGACY_DIR = "graphlog"
"""Where stores before schema version 2 kept GraphLog rows (unversioned, one file per job)."""

DETAIL_COLUMNS = (
    "job_id", "setup", "model", "seed",
    "worlds",  # the job's world list, comma-separated (kshot: the pre-training worlds)
    "heldout",  # kshot: the held-out worlds, comma-separated
    "world",  # the world this row scores
    "k",  # kshot: adaptation steps
    "step", "trained_world", "current",  # continual: index of the world just trained, it, world == it
    "train_acc", "valid_acc", "test_acc", "best_epoch", "epochs_run",
    "train_s",  # training seconds (kshot: adaptation seconds up to k)
    "status", "error",
    "seconds",  # the job's wall time on its worker, loading included
    "device",
    "loss_curve",  # JSON list, per epoch (supervised)
    "forgetting_curve",  # JSON list, per step (continual)
    "epochs", "dim", "dropout", "batch_size", "budget_s", "suite", "finished",
)  # fmt: skip
"""The keys of each per-world row (``stored_rows``), the same as the old ``graphlog/`` files'."""


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
    """What a GraphLog :class:`~orchestrator.scheduling.sweep.Job` asks for, decoded from its params."""

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
    budget_s: float  # inf: unlimited
    directory: str
    legacy_id: str = ""

    @classmethod
    def of(cls, job: Job) -> GraphLogJob:
        p = json.loads(job.params)
        return cls(
            job.job_id, p["setup"], p["model"], job.seed, tuple(p["worlds"]), tuple(p.get("heldout", ())),
            tuple(p.get("shots", ())), p["epochs"], p["dim"], p["dropout"], p["batch_size"], job.budget_s,
            job.dataset.removeprefix("graphlog:"), p.get("legacy_id", ""),
        )  # fmt: skip

    @property
    def cooperative_budget_s(self) -> float | None:
        """The budget the setup checks itself (None: unlimited)."""
        return None if math.isinf(self.budget_s) else self.budget_s

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


def legacy_job_id(key: dict) -> str:
    """The id the same job had before store schema version 2 (its rows under ``graphlog/``)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _world_list(text: str) -> str:
    names = text.split(",")
    if len(names) <= 4:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:6]  # two long lists never share a group
    return f"{len(names)} worlds {names[0]}..{names[-1]} #{digest}"


def plan_jobs(spec: SweepSpec) -> list[Job]:
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

    directory = str(Path(spec.directory).resolve())
    budget_s = float(spec.budget_s) or math.inf
    # v2: model names without -bi pass messages along edges only (v1 passed them both ways)
    common = {"v": 2, "epochs": int(spec.epochs), "dim": int(spec.dim), "dropout": float(spec.dropout),
              "batch_size": int(spec.batch_size)}  # fmt: skip
    jobs: dict[str, Job] = {}
    for setup in spec.setups:
        held: list[str] = []
        groups = [[w] for w in worlds] if setup == "supervised" else [worlds]
        if setup == "kshot":
            try:
                pretrain, held = kshot_worlds(worlds, spec.heldout, suite.with_role("test"))
            except KShotError as e:
                raise SweepError(str(e)) from None
            if any(k < 0 for k in spec.shots) or not spec.shots:
                raise SweepError(f"--shots must be non-negative step counts, got {list(spec.shots)}")
            groups = [pretrain]
        for model in spec.models:
            for seed in spec.seeds:
                for group in groups:
                    read = ident(group) + (ident(held) if setup == "kshot" else [])
                    key = {**common, "budget_s": float(spec.budget_s), "setup": setup, "model": model,
                           "seed": seed, "worlds": ident(group)}  # fmt: skip
                    params = {**common, "setup": setup, "model": model, "worlds": group}
                    if setup == "kshot":
                        key |= {"heldout": ident(held), "shots": sorted(set(spec.shots))}
                        params |= {"heldout": held, "shots": sorted(set(spec.shots))}
                    params["legacy_id"] = legacy_job_id(key)
                    text = json.dumps(params, sort_keys=True)
                    fingerprint = hashlib.sha256(json.dumps(read).encode()).hexdigest()[:16]
                    game = _world_list(",".join(group))
                    target, learner = f"{TARGET_PREFIX}{setup}", f"gnn-{model}"
                    ident_ = job_id(
                        game=game, target=target, predicate=setup, learner=learner, params=text,
                        dataset_fingerprint=fingerprint, seed=seed, repeat=0, budget_s=budget_s,
                    )  # fmt: skip
                    jobs.setdefault(
                        ident_,
                        Job(ident_, f"graphlog:{directory}", fingerprint, game, target, setup, learner, text,
                            int(seed), 0, budget_s),
                    )  # fmt: skip
    return list(jobs.values())


# --- rows -----------------------------------------------------------------------------------------


def _clean(x: object) -> object:
    """NaN as None and numpy scalars as Python numbers, so JSON and Parquet agree."""
    if isinstance(x, np.generic):
        x = x.item()
    return None if isinstance(x, float) and math.isnan(x) else x


def _base_row(job: GraphLogJob) -> dict:
    return {
        "job_id": job.job_id, "setup": job.setup, "model": job.model, "seed": job.seed,
        "worlds": ",".join(job.worlds), "heldout": ",".join(job.heldout) or None,
        "world": job.worlds[0] if job.setup == "supervised" else None,
        "epochs": job.epochs, "dim": job.dim, "dropout": job.dropout, "batch_size": job.batch_size,
        "budget_s": 0.0 if math.isinf(job.budget_s) else job.budget_s, "suite": job.directory,
    }  # fmt: skip


def detail_rows(job: GraphLogJob, got: list[dict], status: str, error: str | None, device: str | None,
                seconds: float | None) -> list[dict]:  # fmt: skip
    """The setup's rows (``learners.gnn.setups``) as stored per-world rows (:data:`DETAIL_COLUMNS`)."""
    from learners.gnn.setups import forgetting_curve

    forgetting = None
    if job.setup == "continual" and got:
        forgetting = json.dumps([{k: _clean(v) for k, v in s.items()} for s in forgetting_curve(got)])
    rows = []
    for r in got:
        valid, best = r.get("valid_acc"), r.get("best_epoch")
        rows.append(
            {
                **_base_row(job),
                "world": r["world"],
                "k": r.get("shots"),
                "step": r.get("after"),
                "trained_world": r.get("trained_world"),
                "current": r.get("current"),
                "train_acc": _clean(r.get("train_acc")),
                "valid_acc": None if valid is None or valid < 0 else _clean(valid),  # -1: no epoch ended
                "test_acc": _clean(r.get("test_acc")),
                "best_epoch": None if best is None or best < 0 else _clean(best),
                "epochs_run": _clean(r.get("epochs_run")),
                "train_s": _clean(r.get("train_s", r.get("adapt_s"))),
                "status": status,
                "error": error,
                "seconds": seconds,
                "device": device,
                "loss_curve": json.dumps([_clean(x) for x in r["loss_curve"]]) if "loss_curve" in r else None,
                "forgetting_curve": forgetting,
            }
        )
    return rows


def _job_rows(row: dict) -> list[dict]:
    """The per-world rows of one stored result row (a job without any: one row with its status)."""
    job = GraphLogJob.of(_job_of(row))
    extra = json.loads(row.get("extra") or "{}")
    got = extra.get("graphlog") or [
        {
            **_base_row(job),
            "status": row["status"],
            "error": row.get("error"),
            "seconds": row.get("learn_s"),
            "device": extra.get("device"),
        }  # fmt: skip
    ]
    return [{**dict.fromkeys(DETAIL_COLUMNS), **r, "finished": row["finished"]} for r in got]


def _job_of(row: dict) -> Job:
    return Job(row["job_id"], row["dataset"], row["dataset_fingerprint"], row["game"], row["target"],
               row["predicate"], row["learner"], row["params"], row["seed"], row["repeat"], row["budget_s"])  # fmt: skip


def planned_ids(jobs: Sequence[Job]) -> set[str]:
    """The ids of ``jobs`` for :func:`stored_rows`, old-scheme ids included."""
    return {j.job_id for j in jobs} | {json.loads(j.params)["legacy_id"] for j in jobs}


# --- the store ------------------------------------------------------------------------------------------


def _legacy_files(store: ResultStore) -> list[str]:
    return store.files(LEGACY_DIR)


def _read_legacy(store: ResultStore, path: str, columns: list[str] | None = None) -> pa.Table:
    try:
        return pq.read_table(path, filesystem=store.fs, columns=columns)
    except (OSError, pa.ArrowException, KeyError) as e:
        raise StoreError(f"{path}: not a readable graphlog result file: {scrub(str(e))}") from e


def legacy_job_ids(store: ResultStore) -> set[str]:
    """Ids (old scheme) of the jobs stored under ``graphlog/`` by orch before schema version 2."""
    return {
        j
        for path in _legacy_files(store)
        for j in _read_legacy(store, path, ["job_id"])["job_id"].to_pylist()
    }


def stored_rows(store: ResultStore, job_ids: set[str] | None = None) -> list[dict]:
    """Every GraphLog job's per-world rows from its latest attempt; ``job_ids``: only those jobs.

    Rows of stores written before schema version 2 (``graphlog/``) are included unless the same
    job (by its old id) has a newer row; their ``job_id`` is the old one.
    """
    latest = store.latest(filter=pc.starts_with(pc.field("target"), TARGET_PREFIX)).to_pylist()
    out: list[dict] = []
    superseded: set[str] = set()
    for row in latest:
        superseded.add(json.loads(row["params"]).get("legacy_id", ""))
        if job_ids is None or row["job_id"] in job_ids:
            out.extend(_job_rows(row))
    old: dict[str, list[dict]] = {}
    for path in _legacy_files(store):
        by_job: dict[str, list[dict]] = defaultdict(list)
        for r in _read_legacy(store, path).to_pylist():
            if r["job_id"] not in superseded and (job_ids is None or r["job_id"] in job_ids):
                by_job[r["job_id"]].append({k: r.get(k) for k in DETAIL_COLUMNS})
        old.update(by_job)  # files are named by write time: the latest file of a job wins
    return out + [r for rows in old.values() for r in rows]


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
    scored_worlds: dict[tuple, set[str]] = defaultdict(set)  # what a published figure must cover
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
                scored_worlds[(*group, r["k"])].add(r["world"])
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
                      "jobs": dict(sorted(jobs[key[:3]].items())),
                      "worlds": sorted(scored_worlds.get(key, ()))})  # fmt: skip
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
