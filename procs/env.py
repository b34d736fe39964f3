"""The environment variables that more than one layer reads or sets, named once (issue 29).

A name spelt as a string literal in two packages is a hidden dependency between them; every user
imports the name from here instead (tests/test_architecture.py enforces it).
"""

from __future__ import annotations

JOB_PROCESS_ENV = "ORCH_JOB_PARENT"
"""Set in every supervised child to the pid of the process that started it."""

MEMORY_CAP_ENV = "ORCH_MEMORY_CAP"
"""Set in a supervised child to its resident-memory cap in bytes, when there is one."""

GPU_MEMORY_CAP_ENV = "ORCH_GPU_MEMORY_CAP"
"""Set in a supervised child to its GPU memory cap in bytes, when there is one (:mod:`procs.cuda`)."""
