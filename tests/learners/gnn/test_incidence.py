"""Incidence tables: gathers and per-node sums without scatter (learners.gnn.incidence), on the CPU.

Each operation is checked, values and gradients, against the scatter-based one it replaces; and a
training step of the composition modules runs none of the ops that need a sort under deterministic
algorithms on the GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.utils import softmax as pyg_softmax  # noqa: E402

from learners.gnn.data import WorldData, device_batches  # noqa: E402
from learners.gnn.incidence import NONE, Incidence, incidence_table, table_of  # noqa: E402
from learners.gnn.modules import GraphLogNet, NetConfig, _message_edges  # noqa: E402
from learners.gnn.train import cross_entropy  # noqa: E402
from tasks.graphlog.generator import GeneratorConfig, generate_suite  # noqa: E402

torch.set_num_threads(1)


def _index(n: int = 9, m: int = 40, seed: int = 0) -> torch.Tensor:
    """An edge -> node index that leaves some nodes without edges."""
    rng = np.random.default_rng(seed)
    return torch.as_tensor(rng.integers(0, n - 2, size=m), dtype=torch.long)


def test_a_table_lists_each_nodes_positions_in_order_then_none():
    index = np.array([2, 0, 2, 3, 2, 0])
    table = incidence_table(index, 5)
    assert table.tolist() == [[1, 5, NONE], [NONE] * 3, [0, 2, 4], [3, NONE, NONE], [NONE] * 3]
    assert incidence_table(index, 5, width=4).shape == (5, 4)
    assert incidence_table(np.zeros(0, dtype=np.int64), 3).tolist() == [[NONE]] * 3
    with pytest.raises(ValueError, match="does not fit width 2"):
        incidence_table(index, 5, width=2)


def test_gather_and_sum_are_index_select_and_index_add_with_their_gradients():
    n, index = 9, _index()
    inc = Incidence.of(index, n)
    x = torch.randn(n, 3, 2, dtype=torch.float64, requires_grad=True)
    e = torch.randn(len(index), 3, 2, dtype=torch.float64, requires_grad=True)
    ours = inc.sum(inc.gather(x) * e)
    ref = torch.zeros(n, 3, 2, dtype=torch.float64).index_add(0, index, x[index] * e)
    assert torch.allclose(ours, ref)
    w = torch.randn_like(ref)
    got = torch.autograd.grad((ours * w).sum(), [x, e])
    want = torch.autograd.grad((ref * w).sum(), [x, e])
    for a, b in zip(got, want, strict=True):
        assert torch.allclose(a, b)
    assert torch.equal(ours[[7, 8]], torch.zeros(2, 3, 2, dtype=torch.float64))  # nodes without edges


def test_softmax_is_pygs_with_its_gradient():
    n, index = 9, _index(seed=1)
    logit = (torch.randn(len(index), 2, dtype=torch.float64) * 5).requires_grad_()
    ours = Incidence.of(index, n).softmax(logit)
    ref = pyg_softmax(logit, index, num_nodes=n)
    assert torch.allclose(ours, ref)
    w = torch.randn_like(ref)
    (g_ours,) = torch.autograd.grad((ours * w).sum(), logit)
    (g_ref,) = torch.autograd.grad((ref * w).sum(), logit)
    assert torch.allclose(g_ours, g_ref)


def test_edges_in_no_table_reach_no_node_and_stay_finite():
    """Padding edges: indexed, but listed in no row (as in a padded batch's tables)."""
    n, index = 9, _index(seed=2)
    table = table_of(index, n)
    padded_index = torch.cat([index, torch.full((5,), n - 1)])  # five extra edges into node 8
    inc = Incidence(padded_index, table)
    logit = torch.cat([torch.randn(len(index)), torch.full((5,), 200.0)]).requires_grad_()
    alpha = inc.softmax(logit)
    assert torch.isfinite(alpha).all()
    assert torch.allclose(alpha[: len(index)], pyg_softmax(logit[: len(index)].detach(), index, num_nodes=n))
    sums = inc.sum(alpha)
    assert sums[n - 1] == 0
    (grad,) = torch.autograd.grad(sums[: n - 1].sum(), logit)
    assert torch.isfinite(grad).all()


def test_reversed_messages_carry_the_tables_of_the_doubled_edges():
    world = WorldData.of_world(
        generate_suite(GeneratorConfig(n_train=20, n_valid=4, n_test=4), worlds=[0])[0]
    )
    b = device_batches(world, "train", 8, torch.device("cpu"))[0]
    for reverse in (False, True):
        src, dst, _, _ = _message_edges(b, reverse)
        for inc in (src, dst):
            rows = [[e for e in row if e != NONE] for row in inc.table.tolist()]
            assert rows == [[e for e in row if e != NONE] for row in table_of(inc.index, b.n_nodes).tolist()]


@pytest.mark.parametrize("model", ["param-egat", "param-rgcn", "gat-egat", "gcn-rgcn-bi", "gat-egat-bi-rand"])
def test_a_training_step_runs_no_scatter(model):
    """What the GPU sorts for under deterministic algorithms (a dozen kernels each, dozens per
    step before): none of it in a training step, once the world's tables are built."""
    from torch.profiler import ProfilerActivity, profile

    from learners.gnn.modules import parse_model

    world = WorldData.of_world(
        generate_suite(GeneratorConfig(n_train=20, n_valid=4, n_test=4), worlds=[0])[0]
    )
    b = device_batches(world, "train", 8, torch.device("cpu"))[0]
    net = GraphLogNet(NetConfig(**parse_model(model), dim=16))
    net(world, b)  # the world's tables and class mask: built once per world and device, not per step
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        cross_entropy(net(world, b), b.target).backward()
    ops = {e.key for e in prof.key_averages()}
    assert not ops & {"aten::index_add_", "aten::index_add", "aten::scatter_add_", "aten::scatter_reduce",
                      "aten::_index_put_impl_", "aten::index_put_"}, sorted(ops)  # fmt: skip
