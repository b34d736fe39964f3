"""Processes: the one place in orch that starts child processes (the bottom layer, below ``tasks``).

* :mod:`procs.env`: the names of the environment variables shared across layers.
* :mod:`procs.channel`: length-prefixed pickled messages over a socket pair.
* :mod:`procs.child`: start a child (fork or spawn) in its own process group that dies with its
  parent; kill its group and reap it.
* :mod:`procs.supervise`: items run one after another in supervised children, each under a
  deadline and a resident-memory cap (what every job of ``orch run`` runs in).
* :mod:`procs.cuda`: whether this process initialised CUDA (never initialising it itself), and the
  per-child GPU memory cap and peak.

Nothing here imports ``tasks``, ``learners`` or ``orchestrator``: every layer may use it.
"""
