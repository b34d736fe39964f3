"""The actor pool's rules that need no Ray: which actor shape a learner's jobs run on. Its Ray side
(placement, reservations, readiness, lost and hung actors) is exercised end to end by
test_scheduler.py, test_faults.py, test_gpushare.py and test_autoscaling.py."""

from __future__ import annotations

from orchestrator.scheduling.actorpool import actor_shape


def test_gpu_learners_get_gpu_actors_only_where_the_cluster_has_a_gpu():
    assert actor_shape("gpusleep1", has_gpu=True) == "gpu"
    assert actor_shape("gpusleep1", has_gpu=False) == "cpu"  # GPU learners run on the CPU too
    assert actor_shape("noop", has_gpu=True) == "cpu"
