"""Starting or joining Ray safely: loopback only for a private local Ray, token auth always on.

Why a module of its own: every entry point that needs Ray (a sweep, a generation fan-out, the
tests and benchmarks) must get the same guarantees, and they are subtle in Ray 2.60:

* A local Ray started by ``ray.init()`` listens on every interface, even with
  ``_node_ip_address="127.0.0.1"`` (Ray resolves loopback to the host's IP). :func:`loopback_only`
  switches on Ray's laptop mode, which keeps every server on 127.0.0.1.
* Token authentication is Ray's default for a new local cluster when ``RAY_AUTH_MODE`` is unset
  (it creates ``~/.ray/auth_token``). Setting the variable from here, after Ray's config is
  loaded, would desynchronise this process from the cluster, so it is left alone; an explicit
  ``RAY_AUTH_MODE=disabled`` is refused. A remote cluster (``--address``) needs its token where
  Ray looks for one (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``).
* No dashboard, and workers' logs stay in Ray's log files (``log_to_driver=False``): the job
  rows carry errors and tracebacks, and nothing from a worker reaches the terminal.
* Workers run at the driver's priority (``worker_niceness`` 0). Ray starts them at nice 15, so
  that its own services stay responsive; a job then got ~3% of a core beside any process at the
  normal priority: beside two CPU burners on 2 cores an ``ilasp`` job that takes 23 s alone took
  595 s, and budgets cut searches that an idle machine finishes. A cluster's nodes need
  ``RAY_worker_niceness=0`` where ``ray start`` runs (cluster.yaml); each row says its job's
  niceness (``extra.nice``, only where it is not 0).
* The raylet's error messages do not go through ``log_to_driver``: the driver's error listener
  thread prints them with ``ray._private.worker.print_to_stdstream``. Its multi-line "A worker died
  or was killed..." text (a SIGKILLed or OOM-killed worker) is replaced by one line of orch's own
  (:func:`worker_deaths_in_one_line`); the scheduler retries the job and records why.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any


class SchedulerError(RuntimeError):
    """The sweep cannot run at all (no Ray, no resources); per-job failures never raise this."""


LOOPBACK_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to 0, Ray (2.60) advertises and binds its local node on 127.0.0.1 instead of the host's IP."""


@contextmanager
def loopback_only() -> Iterator[None]:
    """Within this block, Ray nodes started from this process listen on 127.0.0.1 only.

    ``ray.init(_node_ip_address="127.0.0.1")`` is not enough: Ray resolves a loopback address to the
    host's routable IP and its servers then listen on every interface. Ray's own "no cluster" mode
    (the one it uses on laptops) keeps every server on the loopback interface; it is switched on
    for this process (read at call time) and, through the environment, for the node processes, and
    switched back afterwards.
    """
    from ray._private import ray_constants

    saved = os.environ.get(LOOPBACK_ONLY_ENV), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[LOOPBACK_ONLY_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if saved[0] is None:
            os.environ.pop(LOOPBACK_ONLY_ENV, None)
        else:
            os.environ[LOOPBACK_ONLY_ENV] = saved[0]
        ray_constants.ENABLE_RAY_CLUSTER = saved[1]


WORKER_NICENESS = 0
"""The niceness of a local Ray's workers (Ray's default is 15: see the module docstring)."""

WORKER_DEATH_TEXT = "worker died or was killed"
WORKER_DEATH_LINE = (
    "a Ray worker died (killed, out of memory or crashed): its job is retried, then stored as lost"
)


@contextmanager
def worker_deaths_in_one_line() -> Iterator[None]:
    """Within this block, Ray's "A worker died or was killed..." error text (published by the raylet,
    printed by the driver's error listener) becomes :data:`WORKER_DEATH_LINE` on stderr."""
    from ray._private import worker as ray_worker

    original = ray_worker.print_to_stdstream

    def filtered(data: dict, ignore_prefix: bool) -> None:
        lines = [str(line) for line in data.get("lines") or []]
        if any(WORKER_DEATH_TEXT in line.lower() for line in lines):
            print(f"orch: {WORKER_DEATH_LINE}", file=sys.stderr, flush=True)
            return
        original(data, ignore_prefix)

    ray_worker.print_to_stdstream = filtered
    try:
        yield
    finally:
        ray_worker.print_to_stdstream = original


@contextmanager
def local_ray(num_cpus: int | None = None) -> Iterator[Any]:
    """A private single-node Ray on 127.0.0.1 (:func:`loopback_only`), no dashboard; shut down after.

    Token authentication stays on (Ray's default for a new local cluster).
    """
    import ray

    with loopback_only(), worker_deaths_in_one_line():
        # address="local": always a new private Ray, never a cluster someone else started with `ray start`
        ray.init(
            address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
            logging_level=logging.ERROR, _system_config={"worker_niceness": WORKER_NICENESS},
        )  # fmt: skip
        try:
            yield ray
        finally:
            ray.shutdown()


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """Connect to ``address`` or start a private local Ray on 127.0.0.1 (:func:`start_local_ray`).

    Reuses a Ray already initialised in this process (tests) and then leaves it running.
    """
    import ray

    if ray.is_initialized():
        yield ray
        return
    mode = os.environ.get("RAY_AUTH_MODE", "").lower()
    if mode == "disabled":
        raise SchedulerError("RAY_AUTH_MODE=disabled: orch keeps Ray's token authentication on; unset it")
    # Ray >= 2.5x turns token authentication on by itself for a new local cluster when
    # RAY_AUTH_MODE is unset (creating ~/.ray/auth_token); setting the variable here, after Ray's
    # config is loaded, would desynchronise this process from the cluster, so it is left alone.
    if address is None:
        stack = ExitStack()
        try:
            started = stack.enter_context(local_ray(num_cpus))
        except Exception as e:  # a clear message instead of Ray's stack
            raise SchedulerError(f"cannot start a local Ray: {e}") from e
        with stack:
            yield started
        return
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    except Exception as e:  # a clear message instead of Ray's stack
        raise SchedulerError(f"cannot reach the Ray cluster at {address}: {e}") from e
    try:
        with worker_deaths_in_one_line():
            yield ray
    finally:
        ray.shutdown()
