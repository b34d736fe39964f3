"""Model weights as they leave a GNN job: CPU tensors only (torch is not imported here)."""

from __future__ import annotations


def cpu_state(state: dict) -> dict:
    """``state`` with every tensor on the CPU: what a model pickles, since the process that
    receives it (the job's parent) must never see CUDA tensors. torch-free: only tensors have
    ``detach``."""
    return {k: v.detach().cpu() if hasattr(v, "detach") else v for k, v in state.items()}
