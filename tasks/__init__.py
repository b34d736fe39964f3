"""Problems and their data: GDL games, the IGGP dataset, generated tasks, GraphLog worlds.

This package knows nothing of learners or Ray.
"""

from tasks.task import SPLITS, TARGETS, Split, Task, Vocabulary, format_atom, parse_atom, predicate_of

__all__ = ["SPLITS", "TARGETS", "Split", "Task", "Vocabulary", "format_atom", "parse_atom", "predicate_of"]
