"""A generated corpus's manifest: one row per game, what was generated from what, and its verdicts.

``orch games generate DIR... --out OUT --all`` writes, beside ``data/``, ``types/`` and ``games/``:

* ``manifest.json``: one row per game (sorted by game), only fields that the inputs determine
  (provenance of the rulesheet, settings, engine, sizes, counts, quality verdicts), so that the
  same rulesheets, settings and orch version give it byte for byte (docs/ggp-benchmark.md);
* ``manifest.parquet``: the same rows flattened to one column per (target, split) figure, plus
  the generation time and the git commit;
* ``run.json``: what differs from run to run: the git commit, and seconds per game.

Why the split: "same seed, same bytes" is the reproducibility claim a benchmark makes, and it can
only be checked on files that hold nothing a clock or a checkout decides.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from tasks.task import SPLITS, TARGETS

MANIFEST = "manifest.json"
MANIFEST_PARQUET = "manifest.parquet"
RUN = "run.json"


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def manifest_row(
    result: dict, rulesheet: str | Path, *, seed: int, episodes: int, steps: int, orch_version: str
) -> dict:
    """The deterministic row of one game from its generation result (`GeneratedGame.as_dict`,
    or a failure ``{"game", "status", "error"}`` from the supervised worker)."""
    path = Path(rulesheet)
    targets = result.get("targets") or {}
    return {
        "game": result["game"],
        "status": result.get("status", "ok"),
        "error": result.get("error"),
        "rulesheet": path.name,
        "sha256": sha256_of(path) if path.is_file() else None,
        "orch_version": orch_version,
        "seed": seed,
        "episodes": episodes,
        "steps": steps,
        "engine": result.get("engine"),
        "roles": result.get("roles"),
        "fluents": result.get("fluents"),
        "distinct_states": result.get("distinct_states"),
        "distinct_transitions": result.get("distinct_transitions"),
        "terminal_episodes": result.get("terminal_episodes"),
        "played_anyway": result.get("leniencies") or [],
        "targets": {
            t: {"kept": not v["excluded"], "excluded": v["excluded"], "splits": v["splits"]}
            for t, v in targets.items()
        },
    }


def _flat(row: dict, seconds: float | None) -> dict:
    """One Parquet row: scalars only (one column per target/split figure)."""
    out = {k: v for k, v in row.items() if k not in ("targets", "roles", "played_anyway")}
    out["played_anyway"] = "; ".join(row["played_anyway"])
    out["roles"] = None if row["roles"] is None else ",".join(row["roles"])
    out["seconds"] = seconds
    for t in TARGETS:
        info = row["targets"].get(t)
        out[f"{t}_kept"] = None if info is None else info["kept"]
        out[f"{t}_excluded"] = None if info is None else "; ".join(info["excluded"])
        for s in SPLITS:
            split = (info or {}).get("splits", {}).get(s, {})
            out[f"{t}_{s}_examples"] = split.get("examples")
            out[f"{t}_{s}_positive_share"] = split.get("positive_share")
    return out


def write_manifest(
    out: str | Path, rows: Sequence[dict], seconds: dict[str, float | None], commit: str
) -> None:
    """Write ``manifest.json`` (deterministic), ``manifest.parquet`` and ``run.json`` into ``out``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: r["game"])
    (out / MANIFEST).write_text(json.dumps({"games": rows}, indent=1, sort_keys=True) + "\n")
    flat = [{**_flat(r, seconds.get(r["game"])), "commit": commit} for r in rows]
    pq.write_table(pa.Table.from_pylist(flat), out / MANIFEST_PARQUET)
    run = {"commit": commit, "seconds": {r["game"]: seconds.get(r["game"]) for r in rows}}
    (out / RUN).write_text(json.dumps(run, indent=1, sort_keys=True) + "\n")


def summary(rows: Iterable[dict]) -> dict:
    """Counts for a report: games generated/failed, targets kept/excluded, exclusions by rule."""
    rows = list(rows)
    by_rule: dict[str, int] = {}
    kept = excluded = 0
    for r in rows:
        for info in r["targets"].values():
            if info["kept"]:
                kept += 1
                continue
            excluded += 1
            for reason in info["excluded"]:
                rule = reason.partition(":")[0]
                by_rule[rule] = by_rule.get(rule, 0) + 1
    failed = {r["game"]: f"{r['status']}: {r['error']}" for r in rows if r["status"] != "ok"}
    return {
        "games": len(rows),
        "generated": len(rows) - len(failed),
        "failed": failed,
        "targets_kept": kept,
        "targets_excluded": excluded,
        "excluded_by_rule": dict(sorted(by_rule.items())),
    }


def read_manifest(corpus: str | Path) -> list[dict]:
    """The game rows of ``corpus``'s ``manifest.json`` (a clear error naming the file if absent)."""
    path = Path(corpus) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no manifest; generate the corpus with `orch games generate ... --all`"
        )
    try:
        return list(json.loads(path.read_text())["games"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a corpus manifest ({type(e).__name__}: {e})") from e


def kept_targets(rows: Iterable[dict]) -> tuple[set[tuple[str, str]], list[str]]:
    """(game, target) pairs that pass the quality rules, and one line per target or game left out
    with its reason: what the headline figures of the benchmark are computed on."""
    kept: set[tuple[str, str]] = set()
    left_out: list[str] = []
    for r in rows:
        if r["status"] != "ok":
            left_out.append(f"{r['game']}: not generated ({r['status']}: {r['error']})")
            continue
        for target, info in sorted(r["targets"].items()):
            if info["kept"]:
                kept.add((r["game"], target))
            else:
                left_out.append(f"{r['game']}/{target}: excluded ({'; '.join(info['excluded'])})")
    return kept, left_out
