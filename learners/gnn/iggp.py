"""``gnn-iggp``: a relational GNN baseline for any Task (IGGP or GraphLog), scoring every target atom.

Each example's background (plus the statics) becomes one relational graph:

* every constant of the task is a node in every example (so target atoms over constants absent
  from a state can still be scored); a learned embedding per constant starts it;
* unary atoms ``p(a)`` add a learned label vector to a's node;
* binary atoms ``p(a, b)`` are typed edges a -> b (and a typed reverse edge);
* any other arity (0, 3, ...) becomes a *fact node* of type p, linked to its i-th argument by an
  edge of type (p, i) (and its reverse).

The statics (the game's fixed facts: adjacency, arithmetic tables, ...) are the same in every
example and, on generated games, most of the graph: pacman2p's 4,320 static fact atoms against 83
state atoms per example. Static *fact nodes* are therefore not copied into each example: they form
one static graph (with the constants, the static labels and the static binary edges), run through
the same layers once per batch, and what they send into the constants at each layer (their own edge
types, (p, i, static)) is added to every example's constants. So a static fact sees the statics
only, not the state; static binary edges and labels stay in each example, where state messages flow
along them (adjacency, succ). Each example's readout mean is over its own nodes.

An R-GCN (PyG's, evaluated edge by edge: learners.gnn.rgcn) runs over the graph; a target atom ``q(c1, ..., ck)`` is scored by an MLP on
``[h_c1 .. h_ck (zero-padded); embedding(q); mean of all nodes]``; the loss is class-balanced
binary cross-entropy over the split's candidate atoms, and a prediction is ``sigmoid > 0.5``.
The best model on the validation split (balanced accuracy) is checkpointed and reported. Two rules
keep a model in hand at the orchestrator's hard kill, however big the game: the first checkpoint is
reported *before* it is validated (validating a generated game's whole split can take longer than
the budget), and checkpoints are compared on a fixed seeded sample of at most ``VALIDATE_AT_MOST``
validation examples, so one validation pass costs a bounded share of the budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from learners.base import Budget, Report, ignore_report
from learners.gnn.state import cpu_state
from tasks.task import Split, Task, parse_atom

# Checkpoints are compared on at most this many validation examples (a fixed sample, drawn with the
# job's seed): every IGGP game of the committed results validates on all of its split; a generated
# GGP game with 7,000 validation states spends seconds, not most of its budget, per pass.
VALIDATE_AT_MOST = 1024


@dataclass
class Encoding:
    """The task's atoms mapped to graph parts, computed once per task."""

    constants: dict[str, int]
    kind: np.ndarray  # per background atom: 0 binary edge, 1 unary label, 2 fact node
    a0: np.ndarray  # binary: source constant; unary: the constant; fact: the predicate type
    a1: np.ndarray  # binary: destination constant
    rel: np.ndarray  # binary: edge type; unary: label id
    # fact atoms' arguments, flat (CSR): atom i's are fact_etype/fact_const[fact_ptr[i]:fact_ptr[i+1]]
    fact_ptr: np.ndarray
    fact_etype: np.ndarray  # the edge type (predicate, argument position)
    fact_const: np.ndarray  # the argument's constant
    n_edge_types: int
    n_labels: int
    n_fact_types: int
    target_pred: np.ndarray
    target_args: np.ndarray  # (|target_atoms|, max arity), -1 padded
    n_target_preds: int
    static_fact: np.ndarray  # per background atom: a fact atom among the task's statics
    static: dict[str, np.ndarray] = field(default_factory=dict)  # the static graph (_static_graph)

    @classmethod
    def of(cls, task: Task) -> Encoding:
        consts: dict[str, int] = {}
        edge_types: dict[tuple, int] = {}
        labels: dict[str, int] = {}
        fact_types: dict[str, int] = {}
        parsed = [parse_atom(a) for a in task.background_atoms.names]
        targets = [parse_atom(a) for a in task.target_atoms.names]
        for _, args in parsed + targets:
            for c in args:
                consts.setdefault(c, len(consts))
        n = len(parsed)
        static = np.zeros(n, dtype=bool)
        static[np.asarray(task.statics, dtype=np.int64)] = True
        kind, a0, a1, rel = (np.zeros(n, dtype=np.int64) for _ in range(4))
        fact_args: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # [(edge type, constant)]
        for i, (p, args) in enumerate(parsed):
            if len(args) == 2:
                kind[i], a0[i], a1[i] = 0, consts[args[0]], consts[args[1]]
                rel[i] = edge_types.setdefault((p,), len(edge_types))
            elif len(args) == 1:
                kind[i], a0[i], rel[i] = 1, consts[args[0]], labels.setdefault(p, len(labels))
            else:
                kind[i], a0[i] = 2, fact_types.setdefault(p, len(fact_types))
                fact_args[i] = [
                    (edge_types.setdefault((p, j, bool(static[i])), len(edge_types)), consts[c])
                    for j, c in enumerate(args)
                ]
        arity = max([len(a) for _, a in targets] + [1])
        tpreds: dict[str, int] = {}
        tp = np.array([tpreds.setdefault(p, len(tpreds)) for p, _ in targets], dtype=np.int64)
        ta = np.full((len(targets), arity), -1, dtype=np.int64)
        for i, (_, args) in enumerate(targets):
            ta[i, : len(args)] = [consts[c] for c in args]
        fact_ptr = np.zeros(n + 1, dtype=np.int64)
        fact_ptr[1:] = np.cumsum([len(f) for f in fact_args])
        flat = [pair for f in fact_args for pair in f]
        fact_etype = np.array([t for t, _ in flat], dtype=np.int64)
        fact_const = np.array([c for _, c in flat], dtype=np.int64)
        enc = cls(
            consts, kind, a0, a1, rel, fact_ptr, fact_etype, fact_const,
            max(len(edge_types), 1), max(len(labels), 1),
            max(len(fact_types), 1), tp, ta, max(len(tpreds), 1), static & (kind == 2),
        )  # fmt: skip
        enc.static = _static_graph(enc, np.asarray(task.statics, dtype=np.int64))
        return enc


def _fact_edges(
    enc: Encoding, facts: np.ndarray, nodes: np.ndarray, base: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges of fact atoms ``facts`` (graph nodes ``nodes``; the example's constants from
    ``base``): for every argument of every fact, in order, constant -> fact with edge type (p, i)
    and its reverse with type (p, i) + n_edge_types, interleaved. Returns (src, dst, type).

    Vectorised over the flat arguments: a Python loop per fact took seconds per batch on big games.
    """
    starts, counts = enc.fact_ptr[facts], enc.fact_ptr[facts + 1] - enc.fact_ptr[facts]
    arg = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
    node = np.repeat(nodes, counts)
    const, etype = base + enc.fact_const[arg], enc.fact_etype[arg]
    return _interleave(const, node), _interleave(node, const), _interleave(etype, etype + enc.n_edge_types)


def _interleave(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a[0], b[0], a[1], b[1], ...: each edge directly followed by its reverse."""
    return np.stack([a, b], 1).reshape(-1)


def _example_graph(enc: Encoding, atoms: np.ndarray, base: int) -> dict[str, list[np.ndarray]]:
    """The graph parts of ``atoms`` (background atom ids), constants numbered from ``base`` and
    fact nodes right after them: edges (src, dst, type), labels (node, id), facts (node, type)."""
    C, E = len(enc.constants), enc.n_edge_types
    k = enc.kind[atoms]
    b, u, facts = atoms[k == 0], atoms[k == 1], atoms[k == 2]
    nodes = base + C + np.arange(len(facts))
    src, dst, etype = _fact_edges(enc, facts, nodes, base)
    return {
        "src": [base + enc.a0[b], base + enc.a1[b], src],
        "dst": [base + enc.a1[b], base + enc.a0[b], dst],
        "type": [enc.rel[b], enc.rel[b] + E, etype],
        "label_node": [base + enc.a0[u]],
        "label_id": [enc.rel[u]],
        "fact_node": [nodes],
        "fact_type": [enc.a0[facts]],
    }


def _static_graph(enc: Encoding, statics: np.ndarray) -> dict[str, np.ndarray]:
    """The statics as one graph (constants, then the static fact nodes), and which of its edges
    carry a static fact's message into a constant (``into``)."""
    parts = _example_graph(enc, statics, 0)
    g = {k: _cat(v) for k, v in parts.items()}
    g["n"] = np.array(len(enc.constants) + len(g["fact_node"]), dtype=np.int64)
    g["into"] = np.flatnonzero(g["src"] >= len(enc.constants))  # fact -> constant edges
    return g


def _cat(xs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(xs).astype(np.int64) if xs else np.zeros(0, dtype=np.int64)


def _graph_batch(enc: Encoding, task: Task, split: Split, idx: np.ndarray, device):
    """Stack examples ``idx`` into one graph: per example its constants, then its fact nodes (not
    the static ones: ``static`` holds those, shared by the batch)."""
    import torch

    C = len(enc.constants)
    parts: dict[str, list[np.ndarray]] = {}
    const_base, n_total = [], 0
    for i in idx:
        atoms = np.union1d(split.background_of(int(i)), task.statics)
        atoms = atoms[~enc.static_fact[atoms]]
        ex = _example_graph(enc, atoms, n_total)
        for key, arrays in ex.items():
            parts.setdefault(key, []).extend(arrays)
        const_base.append(n_total)
        n_total += C + len(ex["fact_node"][0])

    def tensor(x: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(x, device=device)

    s = enc.static
    return {
        "n": n_total,
        "const_base": tensor(np.array(const_base, dtype=np.int64)),
        "edge_index": torch.stack([tensor(_cat(parts.get("src", []))), tensor(_cat(parts.get("dst", [])))]),
        "edge_type": tensor(_cat(parts.get("type", []))),
        **{k: tensor(_cat(parts.get(k, []))) for k in ("label_node", "label_id", "fact_node", "fact_type")},
        "static": {
            "n": int(s["n"]),
            "edge_index": torch.stack([tensor(s["src"]), tensor(s["dst"])]),
            "edge_type": tensor(s["type"]),
            "into": tensor(s["into"]),
            **{k: tensor(s[k]) for k in ("label_node", "label_id", "fact_node", "fact_type")},
        },
    }


def _net(enc: Encoding, dim: int, layers: int):
    import torch
    from torch import nn

    from learners.gnn.rgcn import EdgePlan, EdgeRGCNConv

    class IGGPNet(nn.Module):
        t_pred: torch.Tensor  # buffers (register_buffer below)
        t_args: torch.Tensor

        def __init__(self):
            super().__init__()
            C = len(enc.constants)
            self.const = nn.Embedding(C, dim)
            self.label = nn.Embedding(enc.n_labels, dim)
            self.fact = nn.Embedding(enc.n_fact_types, dim)
            self.tpred = nn.Embedding(enc.n_target_preds, dim)
            R = 2 * enc.n_edge_types
            self.convs = nn.ModuleList(EdgeRGCNConv(dim, dim, R, num_bases=min(R, 8)) for _ in range(layers))
            A = enc.target_args.shape[1]
            self.score = nn.Sequential(nn.Linear((A + 2) * dim, dim), nn.ReLU(), nn.Linear(dim, 1))
            self.register_buffer("t_pred", torch.as_tensor(enc.target_pred))
            self.register_buffer("t_args", torch.as_tensor(enc.target_args))

        def initial(self, g: dict, const_nodes: torch.Tensor, copies: int) -> torch.Tensor:
            """Node states before the first layer: constant embeddings plus their labels; fact types."""
            h = torch.zeros(g["n"], dim, device=self.const.weight.device)
            h[const_nodes] = self.const.weight.repeat(copies, 1)
            h = h.index_add(0, g["label_node"], self.label(g["label_id"]))
            h[g["fact_node"]] = self.fact(g["fact_type"])
            return h

        def forward(self, g: dict) -> torch.Tensor:
            B, C = len(g["const_base"]), len(enc.constants)
            R = self.convs[0].num_relations
            dev = self.const.weight.device
            const_nodes = (g["const_base"][:, None] + torch.arange(C, device=dev)).reshape(-1)
            h = self.initial(g, const_nodes, B)
            plan = EdgePlan.of(g["edge_index"], g["edge_type"], R)
            st = g["static"]
            hs = self.initial(st, torch.arange(C, device=dev), 1)
            s_plan = EdgePlan.of(st["edge_index"], st["edge_type"], R)
            into_index, into_type = st["edge_index"][:, st["into"]], st["edge_type"][st["into"]]
            into_plan = EdgePlan.of(into_index, into_type, R)
            for conv in self.convs:
                # what the static facts send into the constants at this layer, once for the batch
                from_statics = conv.messages(hs, into_index, into_plan)[:C].repeat(B, 1)
                out = conv(h, g["edge_index"], g["edge_type"], plan).index_add(0, const_nodes, from_statics)
                hs = torch.relu(conv(hs, st["edge_index"], st["edge_type"], s_plan) + hs)
                h = torch.relu(out + h)
            hc = h[const_nodes].view(B, C, dim)
            graph = torch.zeros(B, dim, device=h.device)
            owner = torch.bucketize(torch.arange(g["n"], device=h.device), g["const_base"], right=True) - 1
            graph = graph.index_add(0, owner, h) / torch.bincount(owner, minlength=B).clamp(min=1)[:, None]
            return self.scores(hc, graph)

        def scores(self, hc: torch.Tensor, graph: torch.Tensor) -> torch.Tensor:
            """``score`` on ``[h_c1 .. h_cA (zero-padded); embedding(q); graph mean]`` per target atom,
            its first layer applied block by block: each block's product is taken once per constant
            (or predicate, or example) and gathered, not once per target atom. The same function;
            on a game with 40,000 target atoms the concatenated input was gigabytes a batch."""
            B, C, d = hc.shape
            first, out = self.score[0], self.score[2]
            w = first.weight.view(dim, -1, dim)  # out x (A + 2) x in
            A = self.t_args.shape[1]
            # B x T x d is the one big tensor (hundreds of MB on a big game): built once, then in place
            pre = ((self.tpred(self.t_pred) @ w[:, A].T) + first.bias).expand(B, -1, -1).clone()
            pre.add_((graph @ w[:, A + 1].T)[:, None])
            for i in range(A):
                per_const = torch.cat([hc @ w[:, i].T, hc.new_zeros(B, 1, d)], 1)  # row C: padding
                pre.add_(per_const.index_select(1, torch.where(self.t_args[:, i] >= 0, self.t_args[:, i], C)))
            return out(torch.relu_(pre)).squeeze(-1)

    return IGGPNet()


@dataclass
class IGGPGNNModel:
    encoding: Encoding
    dim: int
    layers: int
    state: dict
    valid_bacc: float
    epoch: int
    # [{"epoch", "loss", "valid_acc"}, ...]: validation balanced accuracy per epoch (``extra.learning_curve``).
    learning_curve: list[dict] = field(default_factory=list)

    def __getstate__(self) -> dict:
        """Pickled with CPU tensors only, wherever the weights were."""
        return {**self.__dict__, "state": cpu_state(self.state)}

    def predict(self, task: Task, split: Split) -> np.ndarray:
        import torch

        from learners.gnn.train import autocast, pick_device, use_deterministic

        use_deterministic()
        device = pick_device()
        net = _net(self.encoding, self.dim, self.layers).to(device)
        net.load_state_dict(self.state)
        net.eval()
        out = []
        with torch.no_grad(), autocast(device):
            for i in range(0, split.n_examples, 64):
                idx = np.arange(i, min(i + 64, split.n_examples))
                out.append(
                    (net(_graph_batch(self.encoding, task, split, idx, device)).float() > 0).cpu().numpy()
                )
        return np.concatenate(out) if out else np.zeros((0, len(task.target_atoms)), dtype=bool)

    def describe(self) -> str:
        net = f"relational GNN over state graphs (R-GCN, {self.layers} layers, dim {self.dim})"
        if np.isnan(self.valid_bacc):
            return f"{net}; the first checkpoint (epoch {self.epoch}), reported before its validation ended"
        return f"{net}; best validation balanced accuracy {self.valid_bacc:.3f} at epoch {self.epoch}"

    def rules(self) -> str | None:
        return None


class IGGPGNNLearner:
    name = "gnn-iggp"

    def __init__(self, dim: int | None = None, epochs: int | None = None, seed: int | None = None):
        self.dim = int(dim) if dim is not None else 32
        self.epochs = int(epochs) if epochs is not None else 100
        self.layers = 2
        self.batch_size = 32
        self.seed = seed  # None: the job's (fit's ``seed``, else drawn from the job-seeded numpy RNG)

    def prepare(self) -> None:
        """Import torch and PyG ahead of the job's clock (see GraphLogGNNLearner.prepare)."""
        from learners.gnn.train import use_deterministic

        use_deterministic()

    def fit(
        self, task: Task, budget: Budget, report: Report = ignore_report, seed: int | None = None
    ) -> IGGPGNNModel:
        """Train within ``budget``; the seed as in GraphLogGNNLearner.fit."""
        from learners.gnn.train import use_deterministic

        use_deterministic()  # first: before this job's first CUDA call
        import torch
        import torch.nn.functional as F

        from learners.gnn.train import autocast, build_net, first_checkpoint_budget, job_seed, pick_device
        from learners.metrics import count, pool

        seed = job_seed(seed if seed is not None else self.seed)
        device = pick_device()
        enc = Encoding.of(task)
        net = build_net(lambda: _net(enc, self.dim, self.layers), seed, device)
        opt = torch.optim.Adam(net.parameters(), lr=3e-3, weight_decay=1e-5)
        train = task.split("train")
        valid_task = task
        if "validate" in task.splits and task.splits["validate"].n_examples > VALIDATE_AT_MOST:
            valid_task = task.sampled("validate", VALIDATE_AT_MOST, seed)
        valid = valid_task.splits.get("validate", train)
        cand_host = np.asarray(train.candidates, dtype=np.int64)
        cand = torch.as_tensor(cand_host, device=device)
        # labels stay sparse on the host (a dense examples x atoms matrix of a big game is gigabytes);
        # each batch's rows are densified as it is trained on
        labels = train.positives.tocsr()[:, cand_host].astype(np.float32).tocsr()
        n_pos = float(labels.sum())
        n_neg = float(labels.shape[0] * labels.shape[1]) - n_pos
        pos_weight = torch.tensor(max(n_neg, 1.0) / max(n_pos, 1.0), device=device).clamp(max=100.0)
        rng = np.random.default_rng(seed)
        first_cut = first_checkpoint_budget(budget)
        best: IGGPGNNModel | None = None
        curve: list[dict] = []
        for epoch in range(self.epochs):
            net.train()
            losses = []
            order = rng.permutation(train.n_examples)
            # before the first checkpoint the epoch stops at FIRST_CHECKPOINT_AT of the budget, so
            # that a model is reported before the orchestrator's kill at the budget
            stop = budget if best is not None else first_cut
            for i in range(0, train.n_examples, self.batch_size):
                if stop.expired():
                    break
                idx = order[i : i + self.batch_size]
                with autocast(device):
                    logits = net(_graph_batch(enc, task, train, idx, device)).float()[:, cand]
                target = torch.as_tensor(labels[idx].toarray(), device=device)
                loss = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos_weight)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                losses.append(float(loss.detach()))
            state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
            model = IGGPGNNModel(enc, self.dim, self.layers, state, float("nan"), epoch)
            if best is None:
                report(model)  # the first checkpoint, before its validation: a model at any kill
            model.valid_bacc = pool(
                count(valid_task, valid, model.predict(valid_task, valid)).values()
            ).balanced_accuracy
            curve.append(
                {"epoch": epoch, "loss": float(np.mean(losses or [np.nan])), "valid_acc": model.valid_bacc}
            )
            model.learning_curve = list(curve)
            if best is None or model.valid_bacc > best.valid_bacc:
                best = model
                report(model)
            if budget.expired() or best.valid_bacc == 1.0:
                break
        if best is None:
            raise RuntimeError(f"gnn-iggp on {task.name}: no epoch ran (epochs={self.epochs})")
        best.learning_curve = list(curve)
        return best
