"""The paper's GNNs: representation f_r (Param | GCN | GAT), composition f_c (RGCN | Edge-GAT), classifier.

* f_r maps the world to one vector per relation. Param is a free embedding table. GCN and GAT run
  on the world graph's *edge-node extension* (one extra node per edge, linked to the edge's two
  ends) and average the edge-nodes of each relation. Its nodes have no features: they start from
  fixed random vectors (seeded, so train and test see the same ones) passed through a learned
  linear map.
* f_c runs on a query graph with those relation vectors. RGCN: ``h_u = ReLU(sum_r sum_v (r x1 T) h_v)``
  with a shared tensor T (plus a root weight). Edge-GAT: attention over incoming edges conditioned
  on both endpoints and the relation vector, and an LSTM cell as the node update. Messages flow
  along edges only, as in the paper (PyG's default flow). ``NetConfig(reverse_messages=True)``
  (model names ending in ``-bi``) also sends them against edges, through a learned "inverse" map
  of the relation vector: u then hears the resolution path too, which lifts every model and
  removes the paper's gap between E-GAT (6 layers) and RGCN (2 layers); see docs/graphlog.md.
* The classifier is a two-layer MLP on ``[h_u; h_v]``.

One deviation, stated: the paper initialises query-graph nodes at random; we start every node from
one learned vector and add learned markers to u and v. This keeps predictions deterministic and
makes the query explicit to message passing. ``NetConfig(query_markers=False)`` (model names
ending in ``-rand``) is the paper's form (seeded random features per node).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GATConv, GCNConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from learners.gnn.data import MAX_RELATIONS, Batch, WorldData
from learners.gnn.incidence import Incidence, one_hot_rows, shifted

REPRESENTATIONS = ("param", "gcn", "gat")
COMPOSITIONS = ("rgcn", "egat")


# Model-name suffixes, in this order, for the variants that change what a model is:
#   -bi    messages also flow against edges (ours; the paper's pass them along edges only)
#   -rand  query-graph nodes start from random features (the paper's; ours: learned u/v markers)
VARIANTS = {"-bi": ("reverse_messages", True), "-rand": ("query_markers", False)}


def parse_model(name: str) -> dict:
    """``<rep>-<comp>[-bi][-rand]`` (e.g. ``gat-egat``) as the NetConfig fields it fixes.

    A ValueError names the choices.
    """
    fields, base = {}, name
    for suffix, (field, value) in reversed(VARIANTS.items()):
        if base.endswith(suffix):
            fields[field], base = value, base.removesuffix(suffix)
    rep, _, comp = base.partition("-")
    if rep not in REPRESENTATIONS or comp not in COMPOSITIONS:
        raise ValueError(
            f"unknown model {name!r}: expected <rep>-<comp>[{''.join(f'[{v}]' for v in VARIANTS)}] with rep in "
            f"{', '.join(REPRESENTATIONS)}, comp in {', '.join(COMPOSITIONS)}"
        )
    return {"rep": rep, "comp": comp, **fields}


def model_name(cfg: NetConfig) -> str:
    """The name ``parse_model`` reads back, e.g. ``gat-egat``, ``gat-egat-bi``, ``param-rgcn-rand``."""
    suffixes = "".join(s for s, (field, value) in VARIANTS.items() if getattr(cfg, field) == value)
    return f"{cfg.rep}-{cfg.comp}{suffixes}"


@dataclass(frozen=True)
class NetConfig:
    """Appendix E.2 defaults except ``dim`` (200 in the paper; smaller is much faster on CPU)."""

    rep: str = "gat"
    comp: str = "egat"
    dim: int = 64
    rep_layers: int = 2
    rep_heads: int = 2
    rep_dropout: float = 0.4  # GAT; the GCN has none
    rep_standardize: bool = (
        True  # ours: standardise relation vectors across relations (see GraphRepresentation)
    )
    # ours: query nodes start from a learned vector plus learned u/v markers; False (model names
    # ending in -rand) is the paper's form, every node starting from random features (seeded, so
    # predictions are repeatable)
    query_markers: bool = True
    # The paper's form (PyG convolutions pass messages along edges only): u, the source of the
    # resolution path, hears nothing of it, and v hears as many hops as there are layers. True
    # (model names ending in -bi) is ours: messages also flow against edges, through a learned
    # inverse of the relation vector.
    reverse_messages: bool = False
    egat_layers: int = 6
    egat_heads: int = 2
    egat_dropout: float = 0.4
    rgcn_layers: int = 2
    seed: int = 0


def net_config(model: str, *, dim: int, seed: int, dropout: float) -> NetConfig:
    """The configuration the CLI commands build from ``--model``, ``--dim``, ``--seed``, ``--dropout``."""
    return NetConfig(**parse_model(model), dim=dim, seed=seed, rep_dropout=dropout, egat_dropout=dropout)


class ParamRepresentation(nn.Module):
    def __init__(self, cfg: NetConfig):
        super().__init__()
        self.emb = nn.Embedding(MAX_RELATIONS, cfg.dim)

    def forward(self, world: WorldData) -> torch.Tensor:
        return self.emb.weight


@dataclass(frozen=True)
class _WorldGraph:
    """The world graph's edge-node extension on one device, with what every step reuses."""

    x: torch.Tensor  # fixed random node features
    edge_index: torch.Tensor  # with self loops (GAT) or GCN-normalised (GCN)
    edge_weight: torch.Tensor | None  # GCN normalisation; None for GAT
    src: Incidence  # edge_index[0] and [1] with their incidence tables (messages without scatter)
    dst: Incidence
    rel: torch.Tensor  # relation of each edge-node
    seen: torch.Tensor  # MAX_RELATIONS booleans: relations present in the world
    seen_share: torch.Tensor  # (MAX_RELATIONS, 1): 1/count for those relations, else 0 (means over them)
    rel_mean: torch.Tensor  # (MAX_RELATIONS, edges): the mean over each relation's edge-nodes, as a matrix


class GraphRepresentation(nn.Module):
    """GCN or GAT on the edge-node extension of the world graph, averaged per relation."""

    def __init__(self, cfg: NetConfig):
        super().__init__()
        self.cfg = cfg
        self.inp = nn.Linear(cfg.dim, cfg.dim)
        # The world graph is fixed, so its self loops (GAT) and normalisation (GCN) are computed once
        # per world in ``_extended`` rather than by the convolutions on every step: the same
        # arithmetic, without the boolean-mask indexing (a host sync on the GPU) PyG does for them.
        if cfg.rep == "gcn":
            self.convs = nn.ModuleList(
                GCNConv(cfg.dim, cfg.dim, normalize=False, bias=True) for _ in range(cfg.rep_layers)
            )
        else:
            self.convs = nn.ModuleList(
                GATConv(cfg.dim, cfg.dim // cfg.rep_heads, heads=cfg.rep_heads, dropout=cfg.rep_dropout,
                        add_self_loops=False)
                for _ in range(cfg.rep_layers)
            )  # fmt: skip
        self.missing = nn.Parameter(torch.zeros(MAX_RELATIONS, cfg.dim))
        self._cache: dict[str, _WorldGraph] = {}

    def _extended(self, world: WorldData, device: torch.device) -> _WorldGraph:
        hit = self._cache.get(world.name)
        if hit is not None and hit.x.device == device:
            return hit
        n, m = world.graph_nodes, len(world.graph_src)
        edge_nodes = torch.arange(n, n + m)
        src = torch.as_tensor(world.graph_src, dtype=torch.long)
        dst = torch.as_tensor(world.graph_dst, dtype=torch.long)
        a = torch.cat([edge_nodes, src, edge_nodes, dst])
        b = torch.cat([src, edge_nodes, dst, edge_nodes])
        gen = torch.Generator().manual_seed(self.cfg.seed)
        x = torch.randn(n + m, self.cfg.dim, generator=gen)
        rel = torch.as_tensor(world.graph_rel, dtype=torch.long)
        edge_index, weight = torch.stack([a, b]), None
        if self.cfg.rep == "gcn":  # what GCNConv(normalize=True) computes on every call
            edge_index, weight = gcn_norm(edge_index, None, n + m, add_self_loops=True)
        else:  # what GATConv(add_self_loops=True) appends on every call (the graph has no loops)
            loops = torch.arange(n + m)
            edge_index = torch.cat([edge_index, torch.stack([loops, loops])], 1)
        seen = torch.zeros(MAX_RELATIONS, dtype=torch.bool)
        seen[rel] = True
        members = one_hot_rows(rel, MAX_RELATIONS, torch.float32).T
        rel_mean = members / members.sum(1, keepdim=True).clamp_min(1.0)
        edge_index = edge_index.to(device)
        sources, targets = (Incidence.of(edge_index[i], n + m) for i in (0, 1))
        hit = _WorldGraph(
            x.to(device), edge_index, None if weight is None else weight.to(device), sources, targets, rel.to(device),
            seen.to(device), (seen / seen.sum()).float()[:, None].to(device), rel_mean.to(device),
        )  # fmt: skip
        self._cache[world.name] = hit
        return hit

    def forward(self, world: WorldData) -> torch.Tensor:
        device = self.missing.device
        g = self._extended(world, device)
        h = self.inp(g.x)
        for i, conv in enumerate(self.convs):
            h = _convolve(conv, h, g, self.training)
            if i < len(self.convs) - 1:
                h = F.elu(h) if self.cfg.rep == "gat" else F.relu(h)
        n = world.graph_nodes
        per_rel = g.rel_mean.to(h.dtype) @ h[n:]  # a matrix product: no scatter, deterministic
        if self.cfg.rep_standardize:
            # Averages of many edge-nodes share a large common part; centre and scale across the
            # relations so that what tells relations apart reaches the composition module.
            # (mean and standard deviation over the present relations, weighted: no row selection,
            # whose gradient would be a scatter)
            mean = (per_rel * g.seen_share).sum(0)
            std = (((per_rel - mean) ** 2) * g.seen_share).sum(0).sqrt()
            per_rel = (per_rel - mean) / (std + 1e-5)
        return torch.where(g.seen[:, None], per_rel, self.missing)


def _convolve(conv: nn.Module, h: torch.Tensor, g: _WorldGraph, training: bool) -> torch.Tensor:
    """What ``conv(h, g.edge_index[, g.edge_weight])`` computes (PyG's GCNConv without normalisation,
    or GATConv without self loops: both were done once in ``_extended``), with the convolution's own
    parameters, through incidence tables instead of PyG's scatters (deterministic without a sort)."""
    if isinstance(conv, GCNConv):
        assert g.edge_weight is not None
        return g.dst.sum(g.src.gather(conv.lin(h)) * g.edge_weight[:, None]) + conv.bias
    gat = cast(GATConv, conv)
    heads, width = gat.heads, gat.out_channels
    x = gat.lin(h).view(-1, heads, width)
    score_src, score_dst = (x * gat.att_src).sum(-1), (x * gat.att_dst).sum(-1)
    logit = F.leaky_relu(g.src.gather(score_src) + g.dst.gather(score_dst), gat.negative_slope)
    alpha = F.dropout(g.dst.softmax(logit), gat.dropout, training)
    return g.dst.sum(alpha[..., None] * g.src.gather(x)).view(-1, heads * width) + gat.bias


def _message_edges(b: Batch, reverse: bool) -> tuple[Incidence, Incidence, torch.Tensor, torch.Tensor]:
    """The message edges' sources and targets as :class:`Incidence` (gathers and per-node sums), their
    relations, and ``back``, which marks reversed copies: edges src->dst, plus their reverses when
    ``reverse`` (copy ``E + e`` of edge ``e``, so each table is the two tables side by side)."""
    src = Incidence.of(b.src, b.n_nodes, b.out_of)
    dst = Incidence.of(b.dst, b.n_nodes, b.into)
    if not reverse:
        return src, dst, b.rel, torch.zeros_like(b.rel, dtype=torch.bool)
    m = len(b.src)
    both_src = Incidence(torch.cat([b.src, b.dst]), torch.cat([src.table, shifted(dst.table, m)], 1))
    both_dst = Incidence(torch.cat([b.dst, b.src]), torch.cat([dst.table, shifted(src.table, m)], 1))
    rel = torch.cat([b.rel, b.rel])
    back = torch.cat([torch.zeros_like(b.rel, dtype=torch.bool), torch.ones_like(b.rel, dtype=torch.bool)])
    return both_src, both_dst, rel, back


class RGCNComposition(nn.Module):
    def __init__(self, cfg: NetConfig):
        super().__init__()
        d = cfg.dim
        self.layers = cfg.rgcn_layers
        self.reverse = cfg.reverse_messages
        # T[direction, layer] is the d x d x d tensor of the paper (forward, and inverse messages).
        self.T = nn.Parameter(torch.randn(1 + self.reverse, cfg.rgcn_layers, d, d, d) * d**-1.5)
        self.root = nn.ModuleList(nn.Linear(d, d) for _ in range(cfg.rgcn_layers))

    def forward(self, h: torch.Tensor, r: torch.Tensor, b: Batch) -> torch.Tensor:
        # The relations W_r is built for: the split's (fixed, so no ``torch.unique``, a host sync on
        # the GPU) when the batch carries them; the batch's own otherwise.
        used = b.relations if b.relations is not None else torch.unique(b.rel)
        # each edge's relation among ``used``, and the used relations' vectors, as one-hot products
        pick = (b.rel[:, None] == used[None, :]).to(h.dtype)[:, :, None]
        r_used = one_hot_rows(used, MAX_RELATIONS, r.dtype) @ r
        src, dst, _, _ = _message_edges(b, reverse=False)
        # direction 0 passes messages along edges; 1 (-bi only) against them
        ends = [(src, dst), (dst, src)][: len(self.T)]
        for t in range(self.layers):
            out = self.root[t](h)
            for direction, (frm, to) in enumerate(ends):
                # W_r = r x1 T for the relations used; each edge's message W_rel h_from
                w = torch.einsum("rk,kij->rij", r_used, self.T[direction, t])
                proj = torch.einsum("ej,rij->eri", frm.gather(h), w)
                msg = (proj * pick.to(proj.dtype)).sum(1)
                out = out + to.sum(msg.to(out.dtype))
            h = F.relu(out)
        return h


class EdgeGATComposition(nn.Module):
    def __init__(self, cfg: NetConfig):
        super().__init__()
        d, heads = cfg.dim, cfg.egat_heads
        self.heads, self.hd = heads, d // heads
        self.reverse = cfg.reverse_messages
        self.inverse = nn.Linear(d, d) if self.reverse else None
        self.layers = nn.ModuleList()
        for _ in range(cfg.egat_layers):
            self.layers.append(
                nn.ModuleDict(
                    {
                        "q": nn.Linear(d, heads * self.hd, bias=False),
                        "k": nn.Linear(d, heads * self.hd, bias=False),
                        "e": nn.Linear(d, heads * self.hd, bias=False),
                        "v": nn.Linear(2 * d, heads * self.hd),
                        "lstm": nn.LSTMCell(heads * self.hd, d),
                    }
                )
            )
        self.att = nn.Parameter(torch.randn(cfg.egat_layers, heads, 3 * self.hd) * 0.1)
        self.dropout = cfg.egat_dropout

    def forward(self, h: torch.Tensor, r: torch.Tensor, b: Batch) -> torch.Tensor:
        src, dst, rel, back = _message_edges(b, self.reverse)
        rv = one_hot_rows(rel, MAX_RELATIONS, r.dtype) @ r
        if self.inverse is not None:  # set exactly when self.reverse
            rv = torch.where(back[:, None], self.inverse(rv), rv)
        c = torch.zeros_like(h)
        n, hd, heads = h.shape[0], self.hd, self.heads
        for t, module in enumerate(self.layers):
            layer = cast(nn.ModuleDict, module)
            h_src, h_dst = src.gather(h), dst.gather(h)
            q = layer["q"](h_dst).view(-1, heads, hd)
            k = layer["k"](h_src).view(-1, heads, hd)
            e = layer["e"](rv).view(-1, heads, hd)
            logit = F.leaky_relu((torch.cat([q, k, e], -1) * self.att[t]).sum(-1), 0.2)
            alpha = dst.softmax(logit)
            alpha = F.dropout(alpha, self.dropout, self.training)
            value = layer["v"](torch.cat([h_src, rv], -1)).view(-1, heads, hd)
            m = dst.sum(alpha[..., None] * value).reshape(n, heads * hd)
            h, c = layer["lstm"](m, (h, c))
        return h


class GraphLogNet(nn.Module):
    """f_r, f_c and the MLP classifier, end to end: (world, batch) -> logits over relations."""

    def __init__(self, cfg: NetConfig):
        super().__init__()
        parse_model(model_name(cfg))
        self.cfg = cfg
        self.rep = ParamRepresentation(cfg) if cfg.rep == "param" else GraphRepresentation(cfg)
        self.comp = RGCNComposition(cfg) if cfg.comp == "rgcn" else EdgeGATComposition(cfg)
        d = cfg.dim
        self.node = nn.Parameter(torch.randn(d) * 0.1)
        self.marker = nn.Parameter(torch.randn(2, d) * 0.1)
        self.classifier = nn.Sequential(nn.Linear(2 * d, d), nn.ReLU(), nn.Linear(d, MAX_RELATIONS))

    def forward(self, world: WorldData, b: Batch) -> torch.Tensor:
        r = self.rep(world)
        if self.cfg.query_markers:
            # marker rows added through one-hot products: no index_put, whose gradient is a scatter
            at_u = one_hot_rows(b.query_u, b.n_nodes, r.dtype).sum(0).clamp_max(1.0)
            at_v = one_hot_rows(b.query_v, b.n_nodes, r.dtype).sum(0).clamp_max(1.0)
            h = self.node + at_u[:, None] * self.marker[0] + at_v[:, None] * self.marker[1]
        else:
            # fresh noise per training step (global RNG, seeded per run); fixed noise when evaluating
            # (drawn on the device when training: no host-to-device copy per step)
            if self.training:
                h = torch.randn(b.n_nodes, self.cfg.dim, device=r.device, dtype=r.dtype)
            else:
                gen = torch.Generator().manual_seed(self.cfg.seed)
                h = torch.randn(b.n_nodes, self.cfg.dim, generator=gen).to(r.device, r.dtype)
        h = self.comp(h, r, b)
        ends = one_hot_rows(torch.cat([b.query_u, b.query_v]), b.n_nodes, h.dtype) @ h  # h[u], then h[v]
        return self.classifier(torch.cat(ends.split(b.size), -1)) + world.class_mask(h.device)
