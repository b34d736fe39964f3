"""Scheduling, storage and the CLI: sweeps of games x learners x predicates on Ray."""

__version__ = "0.1.0"
