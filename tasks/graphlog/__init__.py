"""GraphLog: the world generator, the released jsonl reader, Parquet storage, and the task source.

Modules: ``rules`` (Algorithms 1-2), ``generator`` (Algorithms 3-4 and per-world statistics),
``graphs`` (columnar query graphs), ``store`` (Parquet suites), ``released`` (jsonl reader),
``as_task`` (a world as a common Task). ``graphlog:DIR`` opens a generated suite (DIR has
``worlds.parquet``) or a released one (DIR/WORLD/train.jsonl) as a task source whose games are
the worlds, with one target ``relation`` whose predicates are ``rel_rK``
(:data:`tasks.sources.PLUGINS` names :class:`GraphLogSource` for the scheme; this package does not
import the registry).
"""

from __future__ import annotations

from pathlib import Path

from tasks.task import Task


class GraphLogSource:
    """The :class:`tasks.sources.TaskSource` over a GraphLog suite (generated or released)."""

    def __init__(self, root: str | Path):
        from tasks.graphlog.released import ReleasedSuite
        from tasks.graphlog.suite_files import Suite

        self.root = str(root)
        path = Path(root)
        if not path.is_dir():
            raise FileNotFoundError(f"graphlog:{root}: no such directory")
        self.suite = Suite(path) if (path / "worlds.parquet").is_file() else ReleasedSuite(path)

    def games(self) -> list[str]:
        return self.suite.worlds()

    def targets(self, game: str) -> list[str]:
        from tasks.graphlog.as_task import TARGET

        self.suite.meta(game)
        return [TARGET]

    def predicates(self, game: str, target: str) -> list[str]:
        from tasks.graphlog.as_task import TARGET, target_predicate

        if target != TARGET:
            raise KeyError(f"GraphLog world {game} has only the target {TARGET!r}, not {target!r}")
        from tasks.graphlog.suite_files import Suite

        meta = self.suite.meta(game)
        if isinstance(self.suite, Suite) and "rule_ids" in meta:  # generated suites know their rules
            heads = {self.suite.rules[i].head for i in meta["rule_ids"]}
        else:
            heads = set(meta.get("rule_heads", []))
        if not heads:  # a released world without config.json: the classes are known only from data
            return self.load_task(game, target).predicates
        return [target_predicate(h) for h in sorted(heads)]

    def load_task(self, game: str, target: str) -> Task:
        from tasks.graphlog.as_task import TARGET, world_task

        if target != TARGET:
            raise KeyError(f"GraphLog world {game} has only the target {TARGET!r}, not {target!r}")
        return world_task(self.suite.load(game), source=f"graphlog:{self.root}")

    def fingerprint(self, game: str) -> str:
        return self.suite.fingerprint(game)
