"""Padded training steps (the shapes CUDA graphs replay) train exactly as the unpadded ones.

On the CPU the padded step runs eagerly (``step_runner(..., padded=True)``), so CI checks what a
CUDA graph would compute: same losses, same weights after several steps, including an epoch's last,
smaller batch. The capture itself needs CUDA: the ``gpu`` test compares replayed with eager steps.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from learners.base import Budget  # noqa: E402
from learners.gnn.data import WorldData, device_batches  # noqa: E402
from learners.gnn.graphstep import empty_padded, fill_padded, padded_shape  # noqa: E402
from learners.gnn.modules import GraphLogNet, net_config  # noqa: E402
from learners.gnn.train import (  # noqa: E402
    TrainConfig,
    build_net,
    cross_entropy,
    make_optimizer,
    step_runner,
    train_steps,
    use_deterministic,
)
from tasks.graphlog.generator import GeneratorConfig, generate_suite  # noqa: E402

torch.set_num_threads(1)
SMALL = GeneratorConfig(n_train=44, n_valid=8, n_test=8, world_nodes=100)  # 44 = 5 batches of 8 + 4


@pytest.fixture(scope="module")
def world():
    return WorldData.of_world(generate_suite(SMALL, worlds=[0])[0])


def _train(
    world, model: str, device: torch.device, padded: bool, cfg: TrainConfig
) -> tuple[list[float], dict]:
    net = build_net(lambda: GraphLogNet(net_config(model, dim=16, seed=0, dropout=0.0)), 0, device)
    opt = make_optimizer(net, cfg)
    step_runner(net, opt, cfg, padded=padded)
    losses = []
    for epoch in range(2):
        steps = train_steps(net, opt, world, "train", cfg, np.random.default_rng(epoch), Budget())
        losses += [float(x) for x in steps]
    return losses, {k: v.detach().cpu() for k, v in net.state_dict().items()}


MODELS = ["gat-egat", "param-rgcn", "gcn-rgcn-bi", "param-egat-bi"]


@pytest.mark.parametrize("model", MODELS)
def test_padded_steps_train_as_unpadded_ones(world, model):
    """Two epochs with Adam: the same loss at every step (the weights are compared through the
    losses they give: Adam magnifies float noise in gradients that are zero by construction)."""
    cfg = TrainConfig(batch_size=8, cuda_graphs=False)
    plain, _ = _train(world, model, torch.device("cpu"), False, cfg)
    padded, _ = _train(world, model, torch.device("cpu"), True, cfg)
    assert len(plain) == len(padded) == 12  # two epochs of 6 batches, the last of 4 graphs
    np.testing.assert_allclose(padded, plain, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_padded_batches_give_the_unpadded_gradients(world, model):
    device = torch.device("cpu")
    net = build_net(lambda: GraphLogNet(net_config(model, dim=16, seed=0, dropout=0.0)), 0, device).train()
    split = world.on_device("train", device)
    buf = empty_padded(*padded_shape(split, 8), 8, split.relations, device)
    for b in device_batches(world, "train", 8, device, np.random.default_rng(1)):
        grads = []
        for batch in (b, buf):
            if batch is buf:
                fill_padded(buf, b)
            net.zero_grad(set_to_none=True)
            cross_entropy(net(world, batch), batch.target, batch.weight).backward()
            grads.append({k: p.grad.clone() for k, p in net.named_parameters() if p.grad is not None})
        assert grads[0].keys() == grads[1].keys()
        for k in grads[0]:
            torch.testing.assert_close(grads[1][k], grads[0][k], rtol=1e-4, atol=1e-7, msg=k)


def test_padding_bounds_every_batch_and_points_at_the_padding_node(world):
    device = torch.device("cpu")
    split = world.on_device("train", device)
    nodes, edges = padded_shape(split, 8)
    buf = empty_padded(nodes, edges, 8, split.relations, device)
    for b in device_batches(world, "train", 8, device, np.random.default_rng(3)):
        fill_padded(buf, b)
        e, q = len(b.src), b.size
        assert torch.equal(buf.src[:e], b.src) and (buf.src[e:] == nodes - 1).all()
        assert (buf.dst[e:] == nodes - 1).all() and (buf.query_u[q:] == nodes - 1).all()
        assert buf.weight.tolist() == [1.0] * q + [0.0] * (8 - q)
        assert set(buf.target.tolist()) <= set(world.classes)  # padding queries keep finite logits
    too_big = device_batches(world, "train", 16, device)[0]
    with pytest.raises(ValueError, match="does not fit the padded shape"):
        fill_padded(buf, too_big)


def test_at_most_max_slots_worlds_keep_buffers(monkeypatch):
    """A multi-task run over many worlds keeps the most recently used MAX_SLOTS (each a graph and
    its memory pool on the GPU), and trains on the others as well."""
    import learners.gnn.graphstep as graphstep

    monkeypatch.setattr(graphstep, "MAX_SLOTS", 2)
    worlds = [WorldData.of_world(w) for w in generate_suite(SMALL, worlds=[0, 1, 2])]
    net = build_net(
        lambda: GraphLogNet(net_config("param-rgcn", dim=8, seed=0, dropout=0.0)), 0, torch.device("cpu")
    )
    cfg = TrainConfig(batch_size=8, cuda_graphs=False)
    opt = make_optimizer(net, cfg)
    runner = step_runner(net, opt, cfg, padded=True)
    for w in worlds + worlds[:1]:
        assert len(list(train_steps(net, opt, w, "train", cfg, np.random.default_rng(0), Budget()))) == 6
    assert [k[0] for k in runner.slots] == [worlds[2].name, worlds[0].name]


def test_a_step_runner_does_not_outlive_its_optimizer(world):
    """The runner (and on the GPU its graphs and their memory) is freed with its optimizer: a
    k-shot run makes an optimizer per adaptation."""
    import gc
    import weakref

    net = build_net(
        lambda: GraphLogNet(net_config("param-rgcn", dim=8, seed=0, dropout=0.0)), 0, torch.device("cpu")
    )
    cfg = TrainConfig(batch_size=8, cuda_graphs=False)
    opt = make_optimizer(net, cfg)
    assert step_runner(net, opt, cfg, padded=True) is step_runner(net, opt, cfg)
    list(train_steps(net, opt, world, "train", cfg, np.random.default_rng(0), Budget(), max_steps=2))
    gone = weakref.ref(step_runner(net, opt, cfg))
    del opt
    gc.collect()
    assert gone() is None


def test_weighted_cross_entropy_is_the_mean_over_real_queries():
    logits = torch.randn(5, 7)
    target = torch.tensor([1, 2, 3, 1, 1])
    weight = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0])
    logits[3:, 1] = float("-inf")  # a padding query's logit may be anything: it must not leak
    assert torch.allclose(cross_entropy(logits, target, weight), cross_entropy(logits[:3], target[:3]))
    assert torch.isfinite(cross_entropy(logits, target, weight))


requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("model", ["gat-egat", "param-rgcn"])
def test_gpu_replayed_steps_train_as_eager_padded_ones(world, model):
    """CUDA graph replays (after the eager warm-up steps) give the eager padded step's losses and
    weights (float32, no dropout), and a rerun replays identically."""
    use_deterministic()
    cuda = torch.device("cuda")
    eager = _train(world, model, cuda, True, TrainConfig(batch_size=8, cuda_graphs=False, autocast=False))
    runs = [_train(world, model, cuda, False, TrainConfig(batch_size=8, autocast=False)) for _ in range(2)]
    np.testing.assert_allclose(runs[0][0], eager[0], rtol=1e-4, atol=1e-5)
    assert runs[0][0] == runs[1][0]
    for k in eager[1]:
        torch.testing.assert_close(runs[0][1][k], eager[1][k], rtol=1e-3, atol=1e-4, msg=k)
        assert torch.equal(runs[0][1][k], runs[1][1][k]), k
