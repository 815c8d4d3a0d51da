"""The paper's deep base learners (SimpleCNN, ResNetTiny1, ResNetTiny2) and their vectorised form.

Paper, "Deep Base Learners and s-BFN Variants" / Algorithm 2. Every architecture is written once,
for `members` independent copies held as ONE grouped model: member j owns channel block j of
every layer (M*C channels), every convolution uses groups=M, BatchNorm2d over M*C channels keeps
per-member statistics, and fully connected layers are batched matrix products over a weight of
shape (M*out, in). With members=1 the same class is an ordinary model built from plain nn.Conv2d /
nn.BatchNorm2d / nn.Linear layers (`build_member`).

Because member j's block of every grouped tensor is rows [j*n, (j+1)*n) of dim 0 (n = the
ordinary tensor's first dim), one rule maps an ordinary model into a stack slot and back
(`write_member` / `read_member`). The first convolution sees the same image for every member,
so instead of repeating the input M times along channels it is an ungrouped conv with M*C_out
outputs: the same weight layout as the grouped conv on the repeated input, at 1/M of the input
traffic.

On a CPU, oneDNN's grouped convolutions are slower than dense per-member ones once images are
large (28x28 and up), so MemberStack can also run the ordinary architecture member by member on
views of the same stacked tensors (strategy "per_member"); "auto" chooses. See
docs/architectures.md for layouts, parameter counts, FLOPs and the measurements behind "auto".
A user's own networks stack in learners/factories.py; registry.py's Ensemble holds both kinds.
"""

from functools import partial
from itertools import chain

import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F

from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.settings.fields import ARCHITECTURES

MIN_SIZE = 4    # two stride-2 reductions must leave at least one pixel
GROUPED_MAX_PIXELS = 16 * 16   # MemberStack 'auto': on CPU, grouped only up to this image size


class GroupedLinear(nn.Module):
    """M independent nn.Linear(in, out) maps on x of shape (B, M, in) -> (B, M, out).

    weight is (M*out, in): member j's nn.Linear weight is rows [j*out, (j+1)*out), the same
    dim-0 block rule as the grouped convolutions. Initialised to zero: a stack is always filled
    from ordinary members (MemberStack), so a random draw here would be wasted.
    """

    def __init__(self, in_features: int, out_features: int, members: int):
        super().__init__()
        self.members, self.out_features = members, out_features
        self.weight = nn.Parameter(torch.zeros(members * out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(members * out_features))

    def forward(self, x):
        w = self.weight.view(self.members, self.out_features, -1)
        b = self.bias.view(self.members, 1, self.out_features)
        # (M, B, in) @ (M, in, out): one batched matrix product for all members
        return torch.baddbmm(b, x.transpose(0, 1), w.transpose(1, 2)).transpose(0, 1)


def linear(in_features: int, out_features: int, members: int) -> nn.Module:
    """An ordinary nn.Linear for one member (build_member), a GroupedLinear for a stack."""
    if members == 1:
        return nn.Linear(in_features, out_features)
    return GroupedLinear(in_features, out_features, members)


def conv(cin: int, cout: int, kernel: int, members: int, stride: int = 1, bias: bool = False,
         shared_input: bool = False) -> nn.Conv2d:
    """Grouped conv: member j maps its cin channels to its cout channels.

    shared_input: the layer reads the raw image, which is the same for all members, so it takes
    cin channels (not members*cin) and needs no grouping (see the module docstring).
    """
    groups = 1 if shared_input else members
    return nn.Conv2d(cin * (1 if shared_input else members), cout * members, kernel, stride,
                     padding=kernel // 2, groups=groups, bias=bias)


def batch_norm(channels: int, members: int) -> nn.BatchNorm2d:
    # per-channel statistics, so each member's channel block gets its own statistics for free
    return nn.BatchNorm2d(channels * members)


class SimpleCNN(nn.Module):
    """conv3x3(32)-maxpool2-ReLU, conv3x3(64)-maxpool2-ReLU, adaptive avg pool 4x4, fc 128-ReLU,
    fc n_classes. The fixed 4x4 grid makes fc1 (1024 -> 128, most of the ~0.15M parameters)
    independent of the input size."""

    GRID = 4

    def __init__(self, in_channels: int, n_classes: int, members: int = 1):
        super().__init__()
        self.members = members
        self.conv1 = conv(in_channels, 32, 3, members, bias=True, shared_input=True)
        self.conv2 = conv(32, 64, 3, members, bias=True)
        self.fc1 = linear(64 * self.GRID ** 2, 128, members)
        self.fc2 = linear(128, n_classes, members)

    def forward(self, x):
        """(B, C_in, H, W) -> (B, members * n_classes), member blocks concatenated."""
        # ReLU after the pool equals ReLU before it (both monotone) and touches 4x less memory
        h = F.relu(F.max_pool2d(self.conv1(x), 2))
        h = F.relu(F.max_pool2d(self.conv2(h), 2))
        h = F.adaptive_avg_pool2d(h, self.GRID)
        # member j's features are its channel block, flattened in nn.Flatten's (c, h, w) order
        h = h.reshape(len(x), self.members, -1)
        return self.fc2(F.relu(self.fc1(h))).flatten(1)


class BasicBlock(nn.Module):
    """conv3x3-BN-ReLU-conv3x3-BN plus shortcut (1x1 conv-BN when the shape changes), ReLU."""

    def __init__(self, cin: int, cout: int, stride: int, members: int):
        super().__init__()
        self.conv1 = conv(cin, cout, 3, members, stride)
        self.bn1 = batch_norm(cout, members)
        self.conv2 = conv(cout, cout, 3, members)
        self.bn2 = batch_norm(cout, members)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(conv(cin, cout, 1, members, stride),
                                          batch_norm(cout, members))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + self.shortcut(x))


class ResNetTiny(nn.Module):
    """Stem conv3x3-BN-ReLU, three stages of basic blocks (stride 2 entering stages 2 and 3),
    global average pool, fc n_classes."""

    def __init__(self, in_channels: int, n_classes: int, blocks, widths, members: int = 1):
        super().__init__()
        self.members = members
        self.stem = nn.Sequential(conv(in_channels, widths[0], 3, members, shared_input=True),
                                  batch_norm(widths[0], members), nn.ReLU())
        layers, cin = [], widths[0]
        for stage, (n_blocks, width) in enumerate(zip(blocks, widths)):
            for b in range(n_blocks):
                stride = 2 if stage > 0 and b == 0 else 1
                layers.append(BasicBlock(cin, width, stride, members))
                cin = width
        self.stages = nn.Sequential(*layers)
        self.fc = linear(cin, n_classes, members)

    def forward(self, x):
        """(B, C_in, H, W) -> (B, members * n_classes), member blocks concatenated."""
        h = F.adaptive_avg_pool2d(self.stages(self.stem(x)), 1)
        return self.fc(h.reshape(len(x), self.members, -1)).flatten(1)


NETS = {
    "simple_cnn": SimpleCNN,
    "resnet_tiny1": partial(ResNetTiny, blocks=(1, 1, 1), widths=(16, 32, 64)),
    "resnet_tiny2": partial(ResNetTiny, blocks=(1, 2, 2), widths=(24, 48, 96)),
}
assert tuple(NETS) == ARCHITECTURES, "sbfn_dist.settings.fields.ARCHITECTURES names the nets above"


def check_arch(arch: str) -> str:
    if arch not in NETS:
        raise ConfigError("architecture", arch, f"one of {ARCHITECTURES}")
    return arch


def member_seed(seed: int, j: int) -> int:
    """Seed of member j of an ensemble seeded with `seed` (the same rule as the MLP members)."""
    return int(seed) * 1_000_003 + int(j)


def build_member(arch: str, in_channels: int, n_classes: int, seed: int) -> nn.Module:
    """One ordinary model, initialised from `seed` without touching the global RNG stream.

    forward: (B, in_channels, H, W) -> (B, n_classes).
    """
    check_arch(arch)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return NETS[arch](in_channels, n_classes)


def member_views(net: nn.Module) -> list[dict[str, torch.Tensor]]:
    """For each member j of a grouped net, {name: member j's block} of every parameter and buffer.

    The blocks are views (torch.split along dim 0), so writes reach the stack and gradients flow
    back into the stacked parameter through a single SplitBackward. 0-dim tensors (BatchNorm's
    num_batches_tracked) are one counter shared by all members.
    """
    views = [{} for _ in range(net.members)]
    for name, t in chain(net.named_parameters(), net.named_buffers()):
        blocks = [t] * net.members if t.ndim == 0 else t.split(len(t) // net.members)
        for view, block in zip(views, blocks):
            view[name] = block
    return views


@torch.no_grad()
def write_member(net: nn.Module, j: int, member: nn.Module) -> None:
    """Copy an ordinary model's parameters and buffers into slot j of a grouped net."""
    state = member.state_dict()
    for name, block in member_views(net)[j].items():
        block.copy_(state[name])


@torch.no_grad()
def read_member(net: nn.Module, j: int, member: nn.Module) -> nn.Module:
    """Inverse of write_member: fill `member` (an ordinary model) with slot j of the net."""
    state = member.state_dict()
    for name, block in member_views(net)[j].items():
        state[name].copy_(block)
    return member


def check_images(x: torch.Tensor, in_channels: int) -> None:
    if x.ndim != 4 or x.shape[1] != in_channels or min(x.shape[2:]) < MIN_SIZE:
        raise DataError(f"expected images of shape (batch, {in_channels}, H, W) with H, W >= "
                        f"{MIN_SIZE}, got a tensor of shape {tuple(x.shape)}")


STRATEGIES = ("auto", "grouped", "per_member")


def runs_grouped(strategy: str, x: torch.Tensor) -> bool:
    """Whether a stack runs its members with one kernel per layer on the batch x. "auto": yes,
    except on a CPU for images of more than GROUPED_MAX_PIXELS pixels, where the convolutions are
    compute-bound and dense per-member kernels are faster (measured in docs/architectures.md)."""
    if strategy != "auto":
        return strategy == "grouped"
    return x.device.type != "cpu" or x.shape[2] * x.shape[3] <= GROUPED_MAX_PIXELS


class MemberStack(nn.Module):
    """M members of one architecture held as a single grouped model (one tensor per layer).

    Member j starts with exactly the weights of build_member(arch, ..., seed=seeds[j]).
    forward: (B, C_in, H, W) -> (B, M, n_classes).

    strategy says how forward computes, never what: "grouped" runs the grouped net (all members
    in one kernel per layer); "per_member" runs the ordinary architecture once per member on
    views of the same stacked tensors (torch.func.functional_call), for CPUs where dense
    per-member convolutions beat oneDNN's grouped ones; "auto" picks per batch (see
    `uses_grouped`). Parameters, buffers, gradients and optimizer state are the same either way.
    """

    def __init__(self, arch: str, in_channels: int, n_classes: int, n_members: int,
                 seeds: list[int], strategy: str = "auto"):
        super().__init__()
        check_arch(arch)
        if n_members < 1 or len(seeds) != n_members:
            raise ConfigError("seeds", seeds, f"one seed per member ({n_members} members)")
        if strategy not in STRATEGIES:
            raise ConfigError("strategy", strategy, f"one of {STRATEGIES}")
        self.arch, self.in_channels, self.n_classes = arch, in_channels, n_classes
        self.n_members, self.strategy = n_members, strategy
        self.net = NETS[arch](in_channels, n_classes, members=n_members)
        for j, s in enumerate(seeds):
            write_member(self.net, j, build_member(arch, in_channels, n_classes, s))
        with torch.device("meta"):   # weightless: per_member supplies every tensor
            template = NETS[arch](in_channels, n_classes)
        self.__dict__["_template"] = template     # not a submodule: adds no parameters

    def uses_grouped(self, x: torch.Tensor) -> bool:
        return runs_grouped(self.strategy, x)

    def forward(self, x):
        check_images(x, self.in_channels)
        if self.uses_grouped(x):
            return self.net(x).view(len(x), self.n_members, self.n_classes)
        return self._forward_per_member(x)

    def _forward_per_member(self, x):
        self._template.train(self.training)
        outs = []
        for j, tensors in enumerate(member_views(self.net)):
            if j:   # BatchNorm counts batches once per step, as the grouped net does
                tensors = {k: v.clone() if v.ndim == 0 else v for k, v in tensors.items()}
            outs.append(functional_call(self._template, tensors, (x,)))
        return torch.stack(outs, 1)

    def member(self, j: int) -> nn.Module:
        """An ordinary model holding member j's current weights, on the stack's device/dtype."""
        ref = next(self.net.parameters())
        model = build_member(self.arch, self.in_channels, self.n_classes, 0)
        model = model.to(device=ref.device, dtype=ref.dtype).train(self.training)
        return read_member(self.net, j, model)

    def load_member(self, j: int, member: nn.Module) -> None:
        """Member j's parameters and buffers := an ordinary model's."""
        write_member(self.net, j, member)

