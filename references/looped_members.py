"""Reference trainer: M separate torch models in a Python loop, autograd and torch.optim.

It does the same work as `sbfn_dist.learners.training.train_mlp` (same initial parameters, same
batches, same delta, the same geometry's loss) with one nn.Sequential per member. Tests use it to
check the vectorised trainer and its hand-written gradients (squared loss and cross-entropy);
benchmarks use it as the loop baseline. Not used for experiments.
"""

import numpy as np
import torch
from torch import nn

from sbfn_dist.learners.geometry import GEOMETRIES
from sbfn_dist.learners.mlp import layer_shapes, member_init
from sbfn_dist.learners.training import MLPConfig, batch_slices


def build_member(n_features: int, cfg: MLPConfig, j: int, n_outputs: int = 1) -> nn.Sequential:
    act = nn.Tanh if cfg.activation == "tanh" else nn.ReLU
    (p, k), (_, k2), (_, o) = layer_shapes(n_features, cfg.width, n_outputs)
    dtype = getattr(torch, cfg.dtype)
    net = nn.Sequential(nn.Linear(p, k), act(), nn.Linear(k, k2), act(), nn.Linear(k2, o)).to(dtype)
    init = member_init(n_features, cfg.width, cfg.init_scale, cfg.seed, j, cfg.init_scheme, dtype,
                       n_outputs)
    linears = [m for m in net if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for lin, (w, b) in zip(linears, zip(init[::2], init[1::2])):
            lin.weight.copy_(w.T)
            lin.bias.copy_(b)
    return net


def train_members_looped(X: np.ndarray, y: np.ndarray, cfg: MLPConfig,
                         n_outputs: int = 1) -> list[nn.Sequential]:
    geometry = GEOMETRIES[cfg.geometry]
    dtype = getattr(torch, cfg.dtype)
    x = torch.as_tensor(X, dtype=dtype)
    yt = torch.as_tensor(y, dtype=dtype if cfg.geometry == "squared" else torch.int64)
    n = len(x)
    nets = [build_member(x.shape[1], cfg, j, n_outputs) for j in range(cfg.n_members)]
    opts = [torch.optim.SGD(net.parameters(), lr=cfg.lr) for net in nets]
    for epoch in range(cfg.epochs):
        for idx in batch_slices(n, cfg, epoch):
            xb, yb = x[idx], yt[idx]
            z = torch.stack([net(xb) for net in nets], 1)            # (b, M, d)
            objective, _ = geometry.wta_loss(z, yb, cfg.epsilon)     # member j's term is its own
            for opt in opts:
                opt.zero_grad()
            objective.backward()
            with torch.no_grad():
                for net in nets:
                    for param in net.parameters():
                        param.grad.add_(torch.sign(param), alpha=cfg.lambda1 / n)
            for opt in opts:
                opt.step()
    return nets
