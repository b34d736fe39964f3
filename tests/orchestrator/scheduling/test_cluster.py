"""cluster.yaml is a valid Ray autoscaler config, and it keeps the promises its comments make."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

pytest.importorskip("jsonschema")
from ray.autoscaler._private.util import prepare_config, validate_config  # noqa: E402

CLUSTER_YAML = Path(__file__).resolve().parents[3] / "cluster.yaml"


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load(CLUSTER_YAML.read_text())


def test_validates_against_rays_autoscaler_schema(config: dict) -> None:
    validate_config(prepare_config(copy.deepcopy(config)))


def test_the_validator_does_reject_a_broken_config(config: dict) -> None:
    """Guards the test above: Ray's validation is strict enough to notice a typo."""
    import jsonschema

    broken = copy.deepcopy(config)
    broken["available_node_types"]["gpu_worker"]["min_wrokers"] = 0
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config(broken))


def test_workers_scale_from_zero_with_cpu_and_gpu_kinds(config: dict) -> None:
    types = config["available_node_types"]
    head = types[config["head_node_type"]]
    workers = {name: t for name, t in types.items() if name != config["head_node_type"]}
    assert head["resources"].get("GPU", 0) == 0 and head["resources"]["CPU"] == 0
    assert workers and all(t["min_workers"] == 0 and t["max_workers"] > 0 for t in workers.values())
    gpu = [t for t in workers.values() if t["resources"].get("GPU", 0) > 0]
    cpu = [t for t in workers.values() if t["resources"].get("GPU", 0) == 0]
    assert gpu and cpu
    assert sum(t["max_workers"] for t in workers.values()) <= config["max_workers"]


def _commands(config: dict, node_type: str) -> list[str]:
    merged = prepare_config(copy.deepcopy(config))
    t = merged["available_node_types"][node_type]
    if node_type == merged["head_node_type"]:
        return merged["head_setup_commands"]
    return t.get("worker_setup_commands", merged["worker_setup_commands"])


def test_setup_installs_torch_first_and_gnn_only_on_gpu_nodes(config: dict) -> None:
    for name, t in config["available_node_types"].items():
        commands = _commands(config, name)
        torch = next(i for i, c in enumerate(commands) if "torch==2.13.0" in c)
        project = next(i for i, c in enumerate(commands) if "/home/ray/orch" in c)
        assert torch < project, name
        has_gpu = t["resources"].get("GPU", 0) > 0
        assert ("[gnn]" in commands[project]) == has_gpu, name
        assert ("whl/cpu" in commands[torch]) != has_gpu, name


def test_token_auth_is_on_everywhere_and_nothing_binds_publicly(config: dict) -> None:
    assert "/home/ray/.ray/auth_token" in config["file_mounts"]
    starts = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    assert all("RAY_AUTH_MODE=token" in c for c in starts if "ray start" in c)
    assert all("RAY_worker_niceness=0" in c for c in starts if "ray start" in c)  # jobs not niced
    for name in config["available_node_types"]:
        assert any("RAY_AUTH_MODE=token" in c for c in _commands(config, name)), name
    text = CLUSTER_YAML.read_text()
    assert "0.0.0.0" not in text and "--dashboard-host=127.0.0.1" in text
    assert "aws_secret_access_key" not in text.lower()
