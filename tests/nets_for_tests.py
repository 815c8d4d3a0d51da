"""Member network factories the tests name by import path (`tests.nets_for_tests:NAME`): good
ones, and one of each kind a planning check must refuse."""

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


NOT_CALLABLE = 3
