"""Reference trainer: M separate torch models in a Python loop, autograd and torch.optim.

It does the same work as `sbfn_dist.ensemble.train_members` (same initial parameters, same
batches, same delta) one member at a time. Tests use it to check the vectorised trainer and
its hand-written gradients; benchmarks use it as the loop baseline. Not used for experiments.
"""

import numpy as np
import torch
from torch import nn

from sbfn_dist.diversity import wta_weights
from sbfn_dist.ensemble import MemberConfig, batch_slices
from sbfn_dist.learners.mlp import layer_shapes, member_init


def build_member(n_features: int, cfg: MemberConfig, j: int) -> nn.Sequential:
    act = nn.Tanh if cfg.activation == "tanh" else nn.ReLU
    (p, k), (_, k2), (_, o) = layer_shapes(n_features, cfg.width)
    dtype = getattr(torch, cfg.dtype)
    net = nn.Sequential(nn.Linear(p, k), act(), nn.Linear(k, k2), act(), nn.Linear(k2, o)).to(dtype)
    init = member_init(n_features, cfg.width, cfg.init_scale, cfg.seed, j, cfg.init_scheme, dtype)
    linears = [m for m in net if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for lin, (w, b) in zip(linears, zip(init[::2], init[1::2])):
            lin.weight.copy_(w.T)
            lin.bias.copy_(b)
    return net


def train_members_looped(X: np.ndarray, y: np.ndarray, cfg: MemberConfig) -> list[nn.Sequential]:
    dtype = getattr(torch, cfg.dtype)
    x, yt = torch.as_tensor(X, dtype=dtype), torch.as_tensor(y, dtype=dtype)
    n = len(x)
    nets = [build_member(x.shape[1], cfg, j) for j in range(cfg.n_members)]
    opts = [torch.optim.SGD(net.parameters(), lr=cfg.lr) for net in nets]
    for epoch in range(cfg.epochs):
        for idx in batch_slices(n, cfg, epoch):
            xb, yb = x[idx], yt[idx]
            preds = [net(xb).squeeze(-1) for net in nets]
            with torch.no_grad():
                delta = wta_weights(torch.stack([(p - yb) ** 2 for p in preds], 1), cfg.epsilon)
            for j, (net, opt, p) in enumerate(zip(nets, opts, preds)):
                opt.zero_grad()
                (delta[:, j] * (p - yb) ** 2).mean().backward()
                with torch.no_grad():
                    for param in net.parameters():
                        param.grad.add_(torch.sign(param), alpha=cfg.lambda1 / n)
                opt.step()
    return nets
