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
from sbfn_dist.settings.fields import ACTIVATIONS, INIT_SCHEMES, defaults

_D = defaults("regression", "tabular")       # sbfn_dist.settings.fields holds the defaults


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
    """M two-layer MLPs as batched tensors in one flat buffer."""

    def __init__(self, member_params: list, activation: str = _D["activation"]):
        """member_params[j]: member j's [W1, b1, W2, b2, W3, b3] in member_init's layout (all
        members of one shape, dtype and device); they are copied into the flat buffer."""
        if activation not in ACTIVATIONS:
            raise ConfigError("activation", activation, f"one of {ACTIVATIONS}")
        first = member_params[0]
        self.m, self.activation = len(member_params), activation
        (self.n_features, self.width), self.n_outputs = first[0].shape, first[4].shape[1]
        shapes = []
        for fan_in, fan_out in layer_shapes(self.n_features, self.width, self.n_outputs):
            shapes += [(self.m, fan_in, fan_out), (self.m, 1, fan_out)]
        sizes = [math.prod(s) for s in shapes]
        self.flat = torch.empty(sum(sizes), dtype=first[0].dtype, device=first[0].device)
        self.params = self._views(self.flat, shapes, sizes)
        for k, p in enumerate(self.params):
            p.copy_(torch.stack([member[k].reshape(p.shape[1:]) for member in member_params]))

    @classmethod
    def initialised(cls, n_features: int, n_members: int, width: int, init_scale: float,
                    seed: int, activation: str = _D["activation"],
                    init_scheme: str = _D["init_scheme"], dtype=torch.float32, device="cpu",
                    n_outputs: int = 1) -> "VectorisedMLP":
        """M members drawn by member_init (member j from the generator of (seed, j))."""
        return cls([[t.to(device) for t in member_init(n_features, width, init_scale, seed, j,
                                                       init_scheme, dtype, n_outputs)]
                    for j in range(n_members)], activation)

    def subset(self, start: int, stop: int) -> "VectorisedMLP":
        """Members [start, stop) as a model of their own (a copy of their parameters)."""
        return VectorisedMLP([self.member_params(j) for j in range(start, stop)], self.activation)

    def member_params(self, j: int) -> list:
        """Member j's [W1, b1, W2, b2, W3, b3] in member_init's layout (views)."""
        return [p[j] if k % 2 == 0 else p[j].reshape(-1) for k, p in enumerate(self.params)]

    def member_values(self, values: torch.Tensor) -> torch.Tensor:
        """A flat tensor laid out as the parameters, holding values[j] at every parameter of
        member j: per-member step sizes for the flat SGD step."""
        return torch.cat([values.to(self.flat).view(-1, *[1] * (p.dim() - 1)).expand_as(p).reshape(-1)
                          for p in self.params])

    def finite_members(self) -> torch.Tensor:
        """(M,) bool: whether each member's parameters are all finite."""
        finite = torch.ones(self.m, dtype=torch.bool, device=self.flat.device)
        for p in self.params:
            finite &= torch.isfinite(p).flatten(1).all(1)
        return finite

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

    def step(self, dz: torch.Tensor, cache, lr, shrink) -> None:
        """One SGD step of every member from dz = d objective / d z (b, M, d):
        theta <- theta - lr * (grad + l1 * sgn(theta)) (Algorithm 1; l1 is lambda1 / N).

        dz is scaled by lr first, so every layer's delta below is already lr times the
        gradient's (a pack's members may each have their own lr, and a set computes the same
        numbers in a pack as alone). The deltas all come from the pre-step weights; then the L1
        shrink (with the pre-step signs) and each layer's rank-b update in place (baddbmm_: the
        gradient is never written out and read back, which halves the weight traffic of a large
        stack, docs/benchmarks.md). lr: a number, or an (M,) tensor of the members' own rates;
        shrink: lr * l1, a number, or a flat tensor from member_values."""
        xb, h1, h2 = cache
        w1, b1, w2, b2, w3, b3 = self.params
        rate = lr.view(-1, 1, 1) if isinstance(lr, torch.Tensor) else lr
        d3 = dz.transpose(0, 1) * rate                            # (M, b, d)
        d2 = self._scale_by_act_grad(torch.bmm(d3, w3.transpose(1, 2)), h2)
        d1 = self._scale_by_act_grad(torch.bmm(d2, w2.transpose(1, 2)), h1)
        if isinstance(shrink, torch.Tensor):
            self.flat.addcmul_(torch.sign(self.flat), shrink, value=-1.0)
        elif shrink:
            self.flat.add_(torch.sign(self.flat), alpha=-shrink)
        for w, b, inputs, d in ((w3, b3, h2, d3), (w2, b2, h1, d2), (w1, b1, xb, d1)):
            w.baddbmm_(inputs.transpose(1, 2), d, alpha=-1.0)
            b.sub_(d if d.shape[1] == 1 else d.sum(1, keepdim=True))
