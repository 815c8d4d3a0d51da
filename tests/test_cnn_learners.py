"""Deep base learners: layouts and sizes, and the grouped member stack equals its members."""

import re

import pytest
import torch
from torch.nn import functional as F

from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.learners.cnn import MemberStack, member_seed
from sbfn_dist.learners.registry import (ARCHITECTURES, build_ensemble, build_member,
                                         ensemble_archs)

# exact trainable-parameter counts for 10 classes (documented in docs/architectures.md)
PARAMS = {("simple_cnn", 1): 151_306, ("simple_cnn", 3): 151_882,
          ("resnet_tiny1", 1): 77_754, ("resnet_tiny1", 3): 78_042,
          ("resnet_tiny2", 1): 381_778, ("resnet_tiny2", 3): 382_210}
INPUTS = [(1, 28, 28), (3, 32, 32), (1, 8, 8)]    # MNIST, CIFAR-10, scikit-learn digits


def n_params(model):
    return sum(p.numel() for p in model.parameters())


def assert_same_state(a, b, atol=0.0):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for name in sa:
        torch.testing.assert_close(sa[name], sb[name], rtol=0, atol=atol, msg=name)


@pytest.mark.parametrize("arch, in_channels", PARAMS)
def test_parameter_counts(arch, in_channels):
    expected = PARAMS[arch, in_channels]
    assert n_params(build_member(arch, in_channels, 10, 0)) == expected
    # a stack of M holds exactly M members' parameters, nothing shared or extra
    assert n_params(MemberStack(arch, in_channels, 10, 3, [0, 1, 2])) == 3 * expected


@pytest.mark.parametrize("shape", INPUTS)
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_output_shapes(arch, shape):
    x = torch.randn(2, *shape)
    assert build_member(arch, shape[0], 10, 0)(x).shape == (2, 10)
    assert MemberStack(arch, shape[0], 7, 3, [0, 1, 2])(x).shape == (2, 3, 7)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_stack_member_j_is_build_member_with_seed_j(arch):
    seeds = [5, 6, 7]
    stack = MemberStack(arch, 1, 10, 3, seeds)
    for j, seed in enumerate(seeds):
        assert_same_state(stack.member(j), build_member(arch, 1, 10, seed))
    first, second = (build_member(arch, 1, 10, s).state_dict() for s in seeds[:2])
    assert not all(torch.equal(first[k], second[k]) for k in first)   # seeds matter


def weighted_ce(logits, y, weights):
    """Per-member loss (1/b) sum_i w_ij CE_ij, summed over members; logits (b, M, C)."""
    ce = F.cross_entropy(logits.transpose(1, 2), y[:, None].expand(-1, logits.shape[1]),
                         reduction="none")
    return (weights * ce).mean(0).sum()


def sgd_steps(model, forward, batches, train_mode):
    """A few SGD-with-momentum steps of the weighted loss; forward(x) -> (b, M, C)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model.train(train_mode)
    for x, y, w in batches:
        opt.zero_grad()
        weighted_ce(forward(x), y, w).backward()
        opt.step()


def batches(n_members, steps=3, b=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(b, 1, 8, 8, generator=gen, dtype=torch.float64),
             torch.randint(0, 10, (b,), generator=gen),
             torch.rand(b, n_members, generator=gen, dtype=torch.float64))
            for _ in range(steps)]


def check_trains_like_its_members(model, members, train_mode):
    """Train the vectorised model and the ordinary members (each on its own loss term,
    the same batches); parameters, BN running statistics and outputs must agree."""
    model.double()
    members = [m.double() for m in members]
    data = batches(len(members))
    sgd_steps(model, model, data, train_mode)
    for j, member in enumerate(members):    # one by one, each on its own column of weights
        own = [(x, y, w[:, j:j + 1]) for x, y, w in data]
        sgd_steps(member, lambda x, m=member: m(x)[:, None], own, train_mode)
    x = data[0][0]
    for mode in (True, False):      # batch statistics (updating running ones), then running
        out = model.train(mode)(x)
        for j, member in enumerate(members):
            torch.testing.assert_close(out[:, j], member.train(mode)(x), rtol=0, atol=1e-10)
            assert_same_state(model.member(j), member, atol=1e-10)


@pytest.mark.parametrize("strategy", ["grouped", "per_member"])
@pytest.mark.parametrize("train_mode", [True, False])
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_stack_trains_like_members_one_by_one(arch, train_mode, strategy):
    seeds = [3, 1, 4]
    stack = MemberStack(arch, 1, 10, len(seeds), seeds, strategy)
    members = [build_member(arch, 1, 10, s) for s in seeds]
    check_trains_like_its_members(stack, members, train_mode)


def test_mixed_ensemble_trains_like_members_one_by_one():
    archs = ensemble_archs("mixed", 4)
    members = [build_member(a, 1, 10, member_seed(9, j)) for j, a in enumerate(archs)]
    check_trains_like_its_members(build_ensemble("mixed", 4, 1, 10, seed=9), members, True)


def test_auto_strategy_groups_small_cpu_images_only():
    stack = MemberStack("simple_cnn", 1, 10, 2, [0, 1])
    assert stack.uses_grouped(torch.zeros(1, 1, 8, 8))            # overhead-bound: grouped wins
    assert not stack.uses_grouped(torch.zeros(1, 1, 28, 28))      # compute-bound on a CPU


def test_mixed_ensemble_cycles_architectures_in_member_order():
    archs = ensemble_archs("mixed", 5)
    assert archs == ["simple_cnn", "resnet_tiny1", "resnet_tiny2", "simple_cnn", "resnet_tiny1"]
    ensemble = build_ensemble("mixed", 5, 1, 10, seed=2).eval()
    x = torch.randn(4, 1, 8, 8)
    out = ensemble(x)
    for j, arch in enumerate(archs):
        member = build_member(arch, 1, 10, member_seed(2, j)).eval()
        torch.testing.assert_close(out[:, j], member(x))


@pytest.mark.parametrize("kind, arch", [("cnn", "simple_cnn"), ("resnet", "resnet_tiny2"),
                                        ("resnet_tiny1", "resnet_tiny1")])
def test_homogeneous_kinds(kind, arch):
    assert ensemble_archs(kind, 3) == [arch] * 3


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ConfigError, match="resnet_tiny2"):
        build_member("vgg16", 3, 10, 0)
    with pytest.raises(ConfigError, match="mixed"):
        ensemble_archs("forest", 5)
    with pytest.raises(ConfigError, match="positive integer"):
        ensemble_archs("mixed", 0)
    with pytest.raises(ConfigError, match="one seed per member"):
        MemberStack("simple_cnn", 1, 10, 3, [0, 1])
    with pytest.raises(ConfigError, match="per_member"):
        MemberStack("simple_cnn", 1, 10, 2, [0, 1], strategy="vmap")


@pytest.mark.parametrize("shape", [(4, 64), (2, 3, 8, 8), (2, 1, 2, 2)])
def test_wrong_input_shape_says_what_was_expected(shape):
    model = build_ensemble("mixed", 3, 1, 10, seed=0)
    expected = re.escape("(batch, 1, H, W)") + ".*" + re.escape(str(shape))
    with pytest.raises(DataError, match=expected):
        model(torch.randn(*shape))
