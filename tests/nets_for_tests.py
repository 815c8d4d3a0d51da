"""Member network factories the tests name by import path (`tests.nets_for_tests:NAME`): good
ones, and one of each kind a planning check must refuse."""

import torch
from torch import nn

from sbfn_dist.learners.cnn import SimpleCNN


def simple_cnn(in_channels: int, n_classes: int) -> nn.Module:
    """The built-in SimpleCNN, built as a user's factory would build it."""
    return SimpleCNN(in_channels, n_classes)


def small_bn_net(in_channels: int, n_classes: int) -> nn.Module:
    """A small CNN with BatchNorm in 2-D and 1-D: per-member running statistics to keep."""
    return nn.Sequential(
        nn.Conv2d(in_channels, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
        nn.AdaptiveAvgPool2d(2), nn.Flatten(),
        nn.Linear(24, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, n_classes))


def global_avg_net(in_channels: int, n_classes: int) -> nn.Module:
    """A CNN ending in global average pooling, as torchvision's ResNets do: under vmap on
    channels_last tensors PyTorch restrides the pooled output member by member and warns
    (aten::as_strided_ has no batching rule)."""
    return nn.Sequential(
        nn.Conv2d(in_channels, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, n_classes))


def wrong_shape(in_channels: int, n_classes: int) -> nn.Module:
    """Logits of one class too many."""
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(in_channels, n_classes + 1))


class _Zeros(nn.Module):
    def __init__(self, n_classes: int):
        super().__init__()
        self.n_classes = n_classes

    def forward(self, x):
        return x.new_zeros(len(x), self.n_classes)


def no_parameters(in_channels: int, n_classes: int) -> nn.Module:
    """The right shape, nothing to train."""
    return _Zeros(n_classes)


def not_a_module(in_channels: int, n_classes: int):
    return lambda x: x


def fails_to_build(in_channels: int, n_classes: int) -> nn.Module:
    """A factory that refuses the data's channels, as a user's might."""
    raise ValueError(f"this network takes 3 channels, not {in_channels}")


class _ZerosOnCPU(_Zeros):
    """Logits made on the CPU whatever the input's device (a parameter, unused, to train)."""

    def __init__(self, n_classes: int):
        super().__init__(n_classes)
        self.unused = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return torch.zeros(len(x), self.n_classes)


def output_on_cpu(in_channels: int, n_classes: int) -> nn.Module:
    return _ZerosOnCPU(n_classes)


class _Classes(_ZerosOnCPU):
    """Class indices where logits belong: the right shape, an integer type."""

    def forward(self, x):
        return x.new_zeros(len(x), self.n_classes, dtype=torch.int64)


def integer_output(in_channels: int, n_classes: int) -> nn.Module:
    return _Classes(n_classes)


def fails_forward(in_channels: int, n_classes: int) -> nn.Module:
    """A network that cannot take the images: a linear layer of the wrong width."""
    return nn.Linear(5, n_classes)


NOT_CALLABLE = 3


def lazy_net(in_channels: int, n_classes: int) -> nn.Module:
    """A CNN whose layers take their input sizes from the first batch, as PyTorch's lazy
    modules let a network be written without the images' size."""
    return nn.Sequential(nn.LazyConv2d(6, 3, padding=1), nn.LazyBatchNorm2d(), nn.ReLU(),
                         nn.Flatten(), nn.LazyLinear(n_classes))


def softmax_output(in_channels: int, n_classes: int) -> nn.Module:
    """Probabilities where logits belong (a final softmax)."""
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(in_channels, n_classes),
                         nn.Softmax(dim=1))


def log_softmax_output(in_channels: int, n_classes: int) -> nn.Module:
    """Log-probabilities: logits (a softmax of them gives the same probabilities)."""
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(in_channels, n_classes),
                         nn.LogSoftmax(dim=1))


class _Branching(nn.Module):
    """Logits halved when one is large: a Python branch on a tensor's value, which a module
    alone runs and vmap (a stack's grouped strategy) cannot."""

    def __init__(self, in_channels: int, n_classes: int):
        super().__init__()
        self.body = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(in_channels, n_classes))

    def forward(self, x):
        logits = self.body(x)
        if logits.abs().max() > 1e6:
            logits = logits / 2
        return logits


def branching(in_channels: int, n_classes: int) -> nn.Module:
    return _Branching(in_channels, n_classes)
