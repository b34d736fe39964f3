"""GraphLog: stored rule-based runs scored with their rules applied recursively.

Why: on a ``graphlog:`` dataset a sweep learns one predicate ``rel_rK`` per class, and each job is
scored one step (its clauses fire on the query graph's own edges). The world's rules, and any
learner that recovers them, are meant to compose: ``r5`` derived from two edges feeds the rule
whose body holds ``r5``. This joins a run's per-predicate programs into one program and applies
it with :func:`tasks.graphlog.closure.closure` to the world's query graphs, so that a learner that
found the world's chain rules is credited on paths longer than any clause.

A run is (sweep, dataset, game, learner, seed, repeat). Runs none of whose stored models is a
program (KNN, GNNs) are skipped. A predicate whose job failed, or whose model is a description
(an ILP job that learned no rule stores why), contributes no rules; the row says how many
predicates were joined (``predicates``) out of the world's ``classes``.
"""

from __future__ import annotations

from orchestrator.analysis.predictive import RUN, cached_source, rule_model, stored_runs
from orchestrator.storage.store import ResultStore


def score_composed(
    store: ResultStore, dataset: str | None = None, split: str = "test", sweep: str | None = None
) -> list[dict]:
    """Exact / resolved / ambiguous query rates of every rule-based GraphLog run in ``store``.

    ``dataset`` overrides the stored ``graphlog:DIR`` (e.g. the suite moved). Exact: the program
    derives exactly the query's relation; resolved: it derives it (maybe among others);
    ambiguous: it derives more than one. ``sweep``: only that sweep's runs.
    """
    from tasks.graphlog.as_task import TARGET
    from tasks.graphlog.closure import closure, score

    def keep(r: dict) -> bool:
        return (
            str(r["dataset"]).startswith("graphlog:")
            and r["target"] == TARGET
            and sweep in (None, r["sweep"])
        )

    out: list[dict] = []
    sources: dict[str, object] = {}
    for key, members in stored_runs(store, keep).items():
        models = [m for r in members if (m := rule_model(r["program"], r["learner"])) is not None]
        if not models:
            continue  # KNN, GNNs: their stored models are descriptions
        run = dict(zip(RUN, key, strict=True))
        source = cached_source(sources, dataset or run["dataset"])
        graphs = source.suite.load(run["game"]).splits.get(split)
        if graphs is None:
            raise ValueError(f"{run['game']} has no {split!r} split (splits: train, valid, test)")
        program = "\n".join(m.rules() for m in models)
        result = closure(program, graphs)
        s = score(result.derived, graphs.target)
        out.append(
            {
                **run,
                "predicates": len(models),
                "classes": len(source.predicates(run["game"], TARGET)),
                "split": split,
                "graphs": s.n,
                "exact": s.exact,
                "resolved": s.resolved,
                "ambiguous": s.ambiguous,
                "no_model": len(result.unsat),
            }
        )
    return out
