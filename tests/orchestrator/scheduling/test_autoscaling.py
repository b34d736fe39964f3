"""Ray's autoscaler with the fake multi-node provider: demand starts workers, idleness stops them.

The cluster mirrors cluster.yaml in miniature: a head with no CPU, a CPU worker type for ILP/KNN
jobs and a (fake) GPU worker type for GNN jobs, both scaling from zero. Each "node" is a real
raylet on this machine. The head runs in its own process group, on free ports, with its own temp
dir and a token of its own, so it never meets another Ray on the machine; teardown stops exactly
that process group (never `ray stop`, which would stop everyone's Ray).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from ray._private.authentication_test_utils import reset_auth_token_state  # noqa: E402

pytestmark = pytest.mark.ray
AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")

HEAD = "ray.head.default"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_cluster_config(gcs_address: str) -> dict:
    """What ``ray.cluster_utils.AutoscalingCluster`` builds from the example.yaml the wheel lacks."""
    no_commands: dict = {k: [] for k in ("initialization_commands", "setup_commands", "head_setup_commands")}
    no_commands |= {
        k: [] for k in ("worker_setup_commands", "head_start_ray_commands", "worker_start_ray_commands")
    }
    return {
        "cluster_name": "orch-fake",
        "max_workers": 2,
        "upscaling_speed": 1.0,
        "idle_timeout_minutes": 0.05,  # 3 s
        "provider": {
            "type": "fake_multinode",
            "use_node_id_as_ip": True,
            "disable_node_updaters": True,
            "disable_launch_config_check": True,
            "gcs_address": gcs_address,
        },
        "auth": {"ssh_user": "ubuntu"},
        "docker": {},
        "head_node_type": HEAD,
        "available_node_types": {
            HEAD: {"resources": {}, "node_config": {}, "max_workers": 0},
            "cpu_worker": {
                "resources": {"CPU": 2, "cpu_node": 1, "object_store_memory": 80 * 2**20},
                "node_config": {},
                "min_workers": 0,
                "max_workers": 1,
            },
            "gpu_worker": {
                "resources": {"CPU": 1, "GPU": 1, "gpu_node": 1, "object_store_memory": 80 * 2**20},
                "node_config": {},
                "min_workers": 0,
                "max_workers": 1,
            },
        },
        "file_mounts": {},
        "cluster_synced_files": [],
        "file_mounts_sync_continuously": False,
        "rsync_exclude": [],
        "rsync_filter": [],
        **no_commands,
    }


@pytest.fixture
def fake_cluster() -> Iterator[str]:
    """Start a fake autoscaling head; yield its GCS address; stop exactly what was started."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    temp = Path(tempfile.mkdtemp(prefix="orch-ray-"))  # short: Ray's socket paths must fit 107 bytes
    config = temp / "autoscaling.json"
    config.write_text(json.dumps(fake_cluster_config(address)))
    token = secrets.token_hex(32)
    env = {
        **os.environ,
        "RAY_FAKE_CLUSTER": "1",
        "AUTOSCALER_UPDATE_INTERVAL_S": "1",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
    }
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    ray_cli = Path(sys.executable).with_name("ray")
    cmd = [
        str(ray_cli) if ray_cli.exists() else "ray",
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        f"--ray-client-server-port={free_port()}",
        f"--dashboard-agent-listen-port={free_port()}",
        "--include-dashboard=false",
        "--num-cpus=0",
        f"--temp-dir={temp}",
        f"--autoscaling-config={config}",
    ]
    head = subprocess.Popen(
        cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    # This process (the driver) authenticates with the same token; Ray caches its auth settings.
    saved = {k: os.environ.pop(k, None) for k in AUTH_VARS}
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    reset_auth_token_state()
    try:
        deadline = time.monotonic() + 60
        while True:
            if head.poll() is not None:
                pytest.fail(f"ray start exited with {head.returncode}: {head.stderr.read().decode()[-2000:]}")
            try:
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield address
    finally:
        ray.shutdown()
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        try:  # anything left of the process group this fixture created (fake worker raylets)
            os.killpg(head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)
        for k, v in saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
        reset_auth_token_state()


def workers_alive() -> dict[str, int]:
    """Alive non-head nodes, by the resources they bring: {'cpu': n, 'gpu': n}."""
    alive = {"cpu": 0, "gpu": 0}
    for node in ray.nodes():
        if node["Alive"] and node["Resources"].get("CPU", 0) > 0:
            alive["gpu" if node["Resources"].get("GPU", 0) > 0 else "cpu"] += 1
    return alive


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}; nodes: {workers_alive()}")
        time.sleep(0.5)


def test_demand_scales_workers_up_and_idleness_scales_them_down(fake_cluster: str) -> None:
    assert workers_alive() == {"cpu": 0, "gpu": 0}  # min_workers 0: nothing runs without demand
    head = ray.get_runtime_context().get_node_id()  # the driver is attached to the head

    def where() -> tuple[str, str]:
        """The node a job ran on, and its type (the fake provider puts it in the node's env)."""
        return ray.get_runtime_context().get_node_id(), os.environ.get("RAY_NODE_TYPE_NAME", "?")

    # As cluster.yaml suggests: a sliver of the node-kind resource keeps CPU jobs off GPU nodes.
    @ray.remote(num_cpus=1, resources={"cpu_node": 0.01})
    def ilp_job() -> tuple[str, str]:
        time.sleep(1)
        return where()

    @ray.remote(num_cpus=1, num_gpus=1)
    def gnn_job() -> tuple[tuple[str, str], list]:
        return where(), ray.get_gpu_ids()

    cpu_refs = [ilp_job.remote() for _ in range(2)]
    gpu_ref = gnn_job.remote()
    cpu_runs = set(ray.get(cpu_refs, timeout=60))
    gpu_run, gpu_ids = ray.get(gpu_ref, timeout=60)

    assert len(cpu_runs) == 1  # both 1-CPU jobs fit the one 2-CPU worker the demand started
    (cpu_node, cpu_type) = cpu_runs.pop()
    assert cpu_type == "cpu_worker" and gpu_run[1] == "gpu_worker"
    assert len({head, cpu_node, gpu_run[0]}) == 3
    assert len(gpu_ids) == 1

    wait_for(lambda: workers_alive() == {"cpu": 0, "gpu": 0}, 45, "idle workers to be removed")
