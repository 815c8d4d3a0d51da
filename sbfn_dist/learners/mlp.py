"""The paper's base learner for tables: a two-layer feed-forward network (d outputs: one for
regression, C logits for classification).

M members live in one flat parameter buffer, shaped as batched weights (M, fan_in, fan_out),
so one forward/backward pass of plain batched matrix products trains all of them together
(paper: "Models Performance & Comparisons"; Algorithm 1). Gradients are written by hand:
the network is two tanh (or ReLU) layers of kappa units and a linear output, and a hand
backward costs a fraction of autograd's per-step overhead, which dominates online (b = 1)
training. `tests/test_vectorised_training.py` checks them against autograd member by member.
"""

import math

import torch

from sbfn_dist.errors import ConfigError
from sbfn_dist.fields import ACTIVATIONS, INIT_SCHEMES, defaults

_D = defaults("regression", "tabular")       # sbfn_dist.fields holds the defaults


def layer_shapes(n_features: int, width: int, n_outputs: int = 1) -> list[tuple[int, int]]:
    """(fan_in, fan_out) of the three linear maps: input -> kappa -> kappa -> d."""
    return [(n_features, width), (width, width), (width, n_outputs)]


def member_init(n_features: int, width: int, init_scale: float, seed: int, member: int,
                scheme: str = _D["init_scheme"], dtype=torch.float32,
                n_outputs: int = 1) -> list[torch.Tensor]:
    """Initial (W, b) of one member, drawn from its own generator (seed, member).

    The paper multiplies "the initial parameters" by chi without naming the base draw.
    scaled_default: chi * U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's nn.Linear default
    scaled by chi; scaled_normal: chi * N(0, 1). See docs/method.md.
    """
    if scheme not in INIT_SCHEMES:
        raise ConfigError("init_scheme", scheme, f"one of {INIT_SCHEMES}")
    gen = torch.Generator().manual_seed(int(seed) * 1_000_003 + int(member))
    out = []
    for fan_in, fan_out in layer_shapes(n_features, width, n_outputs):
        for shape in ((fan_in, fan_out), (fan_out,)):
            if scheme == "scaled_default":
                bound = 1.0 / math.sqrt(fan_in)
                t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound
            else:
                t = torch.randn(shape, generator=gen, dtype=torch.float64)
            out.append((t * init_scale).to(dtype))
    return out


class VectorisedMLP:
    """M two-layer MLPs as batched tensors in one flat buffer (params and grads alike)."""

    def __init__(self, n_features: int, n_members: int, width: int, init_scale: float,
                 seed: int, activation: str = _D["activation"],
                 init_scheme: str = _D["init_scheme"], dtype=torch.float32, device="cpu",
                 n_outputs: int = 1):
        if activation not in ACTIVATIONS:
            raise ConfigError("activation", activation, f"one of {ACTIVATIONS}")
        self.m, self.width, self.activation = n_members, width, activation
        self.n_features, self.n_outputs = n_features, n_outputs
        shapes = []
        for fan_in, fan_out in layer_shapes(n_features, width, n_outputs):
            shapes += [(n_members, fan_in, fan_out), (n_members, 1, fan_out)]
        sizes = [math.prod(s) for s in shapes]
        self.flat = torch.empty(sum(sizes), dtype=dtype, device=device)
        self.grad_flat = torch.zeros_like(self.flat)
        self.params = self._views(self.flat, shapes, sizes)
        self.grads = self._views(self.grad_flat, shapes, sizes)
        inits = [member_init(n_features, width, init_scale, seed, j, init_scheme, dtype, n_outputs)
                 for j in range(n_members)]
        for k, p in enumerate(self.params):
            p.copy_(torch.stack([init[k].reshape(p.shape[1:]) for init in inits]))

    @staticmethod
    def _views(flat, shapes, sizes):
        return [chunk.view(shape) for chunk, shape in zip(torch.split(flat, sizes), shapes)]

    @property
    def n_parameters(self) -> int:
        return self.flat.numel()

    @property
    def flops_per_example(self) -> float:
        """Multiply-adds of the three layers, counted as 2 FLOPs each, for all M members."""
        return 2.0 * self.m * sum(a * b for a, b in layer_shapes(self.n_features, self.width,
                                                                 self.n_outputs))

    def _act(self, a):
        return torch.tanh(a) if self.activation == "tanh" else torch.relu(a)

    def _scale_by_act_grad(self, d, h):
        """d * act'(a) from the activation's output h: tanh' = 1 - h^2, relu' = [h > 0]."""
        if self.activation == "tanh":
            return d.addcmul_(d * h, h, value=-1.0)
        return d.mul_(h > 0)

    def forward(self, x: torch.Tensor):
        """x (b, p) -> outputs z (b, M, d), plus the hidden activations for backward."""
        w1, b1, w2, b2, w3, b3 = self.params
        xb = x.unsqueeze(0).expand(self.m, -1, -1)
        h1 = self._act(torch.baddbmm(b1, xb, w1))
        h2 = self._act(torch.baddbmm(b2, h1, w2))
        z = torch.baddbmm(b3, h2, w3).transpose(0, 1)
        return z, (xb, h1, h2)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward(x)[0]

    def eval(self) -> "VectorisedMLP":
        return self           # no dropout or batch statistics: one mode

    def backward(self, dz: torch.Tensor, cache) -> None:
        """Fill grad_flat with d(objective)/d(params) given dz = d objective / d z, (b, M, d)."""
        xb, h1, h2 = cache
        _, _, w2, _, w3, _ = self.params
        gw1, gb1, gw2, gb2, gw3, gb3 = self.grads
        d3 = dz.transpose(0, 1)                                   # (M, b, d)
        torch.bmm(h2.transpose(1, 2), d3, out=gw3)
        torch.sum(d3, dim=1, keepdim=True, out=gb3)
        d2 = self._scale_by_act_grad(torch.bmm(d3, w3.transpose(1, 2)), h2)
        torch.bmm(h1.transpose(1, 2), d2, out=gw2)
        torch.sum(d2, dim=1, keepdim=True, out=gb2)
        d1 = self._scale_by_act_grad(torch.bmm(d2, w2.transpose(1, 2)), h1)
        torch.bmm(xb.transpose(1, 2), d1, out=gw1)
        torch.sum(d1, dim=1, keepdim=True, out=gb1)

    def sgd_step(self, lr: float, l1: float) -> None:
        """theta <- theta - lr * (grad + l1 * sgn(theta)) (Algorithm 1; l1 is lambda1 / N)."""
        if l1:
            self.grad_flat.add_(torch.sign(self.flat), alpha=l1)
        self.flat.add_(self.grad_flat, alpha=-lr)

    def member_state(self, j: int) -> list[torch.Tensor]:
        """Member j's (W, b) pairs in nn.Linear layout (weight is (out, in))."""
        out = []
        for k, p in enumerate(self.params):
            t = p[j]
            out.append(t.T.contiguous() if k % 2 == 0 else t.reshape(-1).clone())
        return out
