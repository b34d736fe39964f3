"""Generation sweeps on Ray: ``orch games generate --all`` fans GDL playouts out over the cluster.

Each game is one Ray task running :func:`orchestrator.scheduling.worker.generate_one`, which generates in a
supervised child process: a broken or hostile GDL file, or a runaway playout, fails only its own
game, with a status (error, oom, timeout, lost) and a message.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from orchestrator.scheduling.raysession import ray_session
from orchestrator.scheduling.worker import generate_one


def generate_games(
    games: Sequence[tuple[str | os.PathLike, str | os.PathLike | None]],
    out: str,
    *,
    episodes: int = 1000,
    steps: int = 100,
    seed: int = 0,
    timeout_s: float | None = None,
    memory_per_job: int | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    max_retries: int = 1,
    record_keys: Sequence[dict | None] | None = None,
) -> list[dict]:
    """Generate many games' tasks in parallel on Ray: ``games`` is [(GAME.txt, GAME.typ or None), ...].

    Each game is one Ray task running :func:`orchestrator.scheduling.worker.generate_one` (a supervised child
    per game, so a broken GDL file or a runaway playout fails only its own game, with a status);
    a task whose worker dies is retried ``max_retries`` times. Returns one dict per game, in order.
    ``record_keys`` (one per game, `tasks.corpus.record_key`) make each game record its result in
    ``out`` as it ends, for a rerun to resume from.
    """
    keys = list(record_keys) if record_keys is not None else [None] * len(games)
    with ray_session(address, num_cpus) as ray:
        remote = ray.remote(generate_one).options(
            num_cpus=1, max_retries=max_retries, scheduling_strategy="SPREAD"
        )
        # t is None for a rulesheet without .typ (inferred), never the string "None"
        refs = [remote.remote(str(g), None if t is None else str(t), str(out), episodes, steps, seed, timeout_s,
                              memory_per_job, key) for (g, t), key in zip(games, keys, strict=True)]  # fmt: skip
        results = []
        for (g, _), ref in zip(games, refs, strict=True):
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayError as e:
                name = os.path.splitext(os.path.basename(str(g)))[0]
                results.append({"game": name, "status": "lost", "error": f"{type(e).__name__}: {e}"})
        return results
