"""Your member networks (issue 23): a factory named by import path trains as one vectorised stack
with the built-ins' epsilon-WTA objective. A factory returning the built-in SimpleCNN trains the
built-in's members; M ordinary modules trained in a loop with the same epsilon-WTA weights are
the generic stack's members; channels_last trains NCHW's members; a list mixes both; a bad
factory is refused in one line before any training. The factories live in
tests/nets_for_tests.py (imported as tests.nets_for_tests)."""

import math

import pytest
import torch

from sbfn_dist.data.images import device_images, holdout_splits, load_images
from sbfn_dist.errors import ConfigError
from sbfn_dist.experiment import run_trial
from sbfn_dist.folds import check_data
from sbfn_dist.learners import training
from sbfn_dist.learners.cnn import member_seed
from sbfn_dist.learners.factories import GenericStack, build_factory_member, check_factory
from sbfn_dist.learners.geometry import CrossEntropy
from sbfn_dist.learners.registry import ensemble_archs
from sbfn_dist.learners.training import CNNConfig, train_cnn
from sbfn_dist.settings.config import TrialConfig
from tests.nets_for_tests import small_bn_net

SIMPLE = "tests.nets_for_tests:simple_cnn"
BN_NET = "tests.nets_for_tests:small_bn_net"
GLOBAL_AVG = "tests.nets_for_tests:global_avg_net"
DIGITS = (1, 8, 8)
TINY_TRIAL = {"dataset": "digits", "folds": 2, "fold": 0, "n_train": 120, "n_test": 100,
              "epochs": 1, "batch_size": 40, "combiners": ["logit_mean"]}


def rounding_bound(steps: int, longest_sum: int, dtype, magnitude: float) -> float:
    """How far two correct computations that round differently may drift apart: every step
    rounds each value differently by a few units in the last place of the largest one, the
    sums' orders differ (a sum of n terms: errors grow like sqrt(n)), and the steps' drifts
    add up at worst linearly."""
    return steps * math.sqrt(longest_sum) * torch.finfo(dtype).eps * magnitude


def largest(state: dict) -> float:
    return max(t.abs().max().item() for t in state.values() if t.is_floating_point())


def assert_same_members(model_a, model_b, n_members: int, tolerance):
    """Member j of each holds the same parameters and buffers (tolerance(state) -> atol)."""
    for j in range(n_members):
        a, b = model_a.member(j).state_dict(), model_b.member(j).state_dict()
        assert a.keys() == b.keys()
        atol = tolerance(b)
        for name in a:
            torch.testing.assert_close(a[name], b[name], rtol=0, atol=atol, msg=name)


# ------------------------------------------------------------------ the built-in through a factory
BATCH, EPOCHS = 32, 2


def digits_images():
    data = load_images("digits")
    split = holdout_splits(data, n_splits=1, n_train=128, n_test=100, seed=0)[0]
    return device_images(data, split, "cpu", None)


def test_a_factory_of_simple_cnn_trains_the_built_in_members():
    # SGD: its step is linear in the gradient, so rounding-level gradient differences stay
    # rounding-level (Adam's m / sqrt(v) makes any sign flip of a near-zero gradient a whole
    # step). On 8x8 images the built-ins run grouped convolutions, the factory's stack vmap.
    images = digits_images()
    cfg = dict(n_members=3, epsilon=0.5, epochs=EPOCHS, batch_size=BATCH, optimizer="sgd",
               lr=0.05, seed=1)
    built_in = train_cnn(images, 10, CNNConfig(ensemble="cnn", **cfg))
    factory = train_cnn(images, 10, CNNConfig(ensemble=SIMPLE, **cfg))
    steps = EPOCHS * math.ceil(len(images.train_y) / BATCH)
    # the longest sum of a step: a first-layer weight's gradient, over the batch's pixels
    bound = lambda state: rounding_bound(steps, BATCH * 8 * 8, torch.float32,  # noqa: E731
                                         largest(state))
    assert_same_members(factory.model, built_in.model, 3, bound)
    assert not torch.equal(factory.model.member(0).fc2.weight,    # the members did train
                           build_factory_member(SIMPLE, 1, 10, member_seed(1, 0)).fc2.weight)


@pytest.mark.filterwarnings("ignore:There is a performance drop")    # expected: see below
def test_the_memory_format_changes_only_the_speed_of_a_factorys_members(monkeypatch):
    # channels_last (a CPU's layout) through vmap, where PyTorch runs global average pooling's
    # restride member by member (its warning: docs/benchmarks.md 4.6), trains NCHW's members.
    # SGD, as above: rounding-level gradient differences stay rounding-level.
    images, runs = digits_images(), {}
    cfg = CNNConfig(ensemble=GLOBAL_AVG, n_members=3, epsilon=0.5, epochs=EPOCHS,
                    batch_size=BATCH, optimizer="sgd", lr=0.05, seed=1)
    for fmt in (torch.channels_last, torch.contiguous_format):
        monkeypatch.setattr(training, "memory_format", lambda precision, device, fmt=fmt: fmt)
        runs[fmt] = train_cnn(images, 10, cfg)
    nhwc, nchw = (runs[f].model for f in (torch.channels_last, torch.contiguous_format))
    conv = next(p for p in nhwc.parameters() if p.ndim == 4)
    assert conv.is_contiguous(memory_format=torch.channels_last)    # it did train in NHWC
    steps = EPOCHS * math.ceil(len(images.train_y) / BATCH)
    bound = lambda state: rounding_bound(steps, BATCH * 8 * 8, torch.float32,  # noqa: E731
                                         largest(state))
    assert_same_members(nhwc, nchw, 3, bound)
    assert not torch.equal(nhwc.member(0)[5].weight,                # the members did train
                           build_factory_member(GLOBAL_AVG, 1, 10, member_seed(1, 0))[5].weight)


# ------------------------------------------------------------------ a loop of ordinary modules
STEPS, LOOP_BATCH, EPSILON = 3, 16, 0.3


def wta_steps(forward, optimizers, batches):
    """SGD steps of the epsilon-WTA cross-entropy (Algorithm 2) of forward(x) -> (b, M, C)."""
    for x, y in batches:
        loss = CrossEntropy().wta_loss(forward(x), y, EPSILON)[0]
        for opt in optimizers:
            opt.zero_grad()
        loss.backward()
        for opt in optimizers:
            opt.step()


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def wta_batches():
    gen = torch.Generator().manual_seed(0)
    return [(torch.randn(LOOP_BATCH, *DIGITS, generator=gen, dtype=torch.float64),
             torch.randint(0, 10, (LOOP_BATCH,), generator=gen)) for _ in range(STEPS)]


class Loop:
    """M ordinary modules side by side, as the generic stack presents its members."""

    def __init__(self, modules):
        self.modules = modules

    def __call__(self, x):
        return torch.stack([m(x) for m in self.modules], 1)

    def member(self, j):
        return self.modules[j]


@pytest.mark.parametrize("strategy", ["grouped", "per_member"])
def test_a_loop_of_modules_trains_the_generic_stacks_members(strategy):
    seeds = [5, 6, 7]
    stack = GenericStack(BN_NET, 1, 10, seeds, strategy).double()
    loop = Loop([build_factory_member(small_bn_net, 1, 10, s).double() for s in seeds])
    batches = wta_batches()
    wta_steps(stack, [sgd(stack.parameters())], batches)
    wta_steps(loop, [sgd(m.parameters()) for m in loop.modules], batches)
    # the longest sum: BatchNorm's statistics and a first-layer weight's gradient, over the
    # batch's pixels; parameters, running statistics and batch counts, member by member
    bound = lambda state: rounding_bound(STEPS, LOOP_BATCH * 8 * 8, torch.float64,  # noqa: E731
                                         largest(state))
    assert_same_members(stack, loop, len(seeds), bound)
    assert [int(stack.member(j)[1].num_batches_tracked) for j in range(3)] == [STEPS] * 3
    x = batches[0][0]
    for mode in (True, False):      # batch statistics, then each member's running ones
        out = stack.train(mode)(x)
        for j, member in enumerate(loop.modules):
            expected = member.train(mode)(x)
            atol = rounding_bound(STEPS + 1, LOOP_BATCH * 8 * 8, torch.float64,
                                  expected.abs().max().item())
            torch.testing.assert_close(out[:, j], expected, rtol=0, atol=atol)


def test_the_members_keep_their_own_running_statistics():
    stack = GenericStack(BN_NET, 1, 10, [0, 1], "grouped").train()
    stack(torch.randn(8, *DIGITS))
    first, second = (stack.member(j)[1].running_mean for j in range(2))
    assert not torch.equal(first, second) and first.abs().sum() > 0


# ------------------------------------------------------------------ mixed with the built-ins
def test_a_list_mixes_built_ins_and_factories_cyclically_and_trains():
    assert ensemble_archs(["simple_cnn", BN_NET], 3) == ["simple_cnn", BN_NET, "simple_cnn"]
    records = run_trial(dict(TINY_TRIAL, n_members=3, ensemble=["simple_cnn", BN_NET]))
    [row] = records
    assert row["status"] == "ok" and 0 <= row["accuracy"] <= 1
    assert row["ensemble"] == f"simple_cnn,{BN_NET}"      # the records say what was used
    assert TrialConfig.from_dict(dict(TINY_TRIAL, ensemble=BN_NET)).ensemble == BN_NET


# ------------------------------------------------------------------ refused before training
@pytest.mark.parametrize("path, says", [
    ("no_such_module_here:build", "No module named 'no_such_module_here'"),
    ("tests.nets_for_tests:missing", "has no 'missing'"),
    ("tests.nets_for_tests:NOT_CALLABLE", "not callable"),
    ("simple_cnn,tests.nets_for_tests:missing", "has no 'missing'"),
    ("simple_cn", "did you mean 'simple_cnn'"),
])
def test_a_factory_that_does_not_import_is_refused_with_the_settings(path, says):
    with pytest.raises(ConfigError, match=says) as refused:
        TrialConfig.from_dict(dict(TINY_TRIAL, ensemble=path))
    assert "\n" not in str(refused.value)


# A kind in a list was "'mixed' is no architecture and no factory path (did you mean 'mixed'?)".
@pytest.mark.parametrize("kind, means", [("mixed", "simple_cnn, resnet_tiny1, resnet_tiny2"),
                                         ("cnn", "simple_cnn"), ("resnet", "resnet_tiny2")])
def test_a_kind_in_a_list_is_refused_naming_what_a_list_holds(kind, means):
    refusals = []
    for make in (lambda: TrialConfig.from_dict(dict(TINY_TRIAL, ensemble=[kind, BN_NET])),
                 lambda: ensemble_archs(f"{kind},{BN_NET}", 2)):
        with pytest.raises(ConfigError) as refused:
            make()
        refusals.append(str(refused.value))
    for message in refusals:
        assert f"'{kind}' is an ensemble kind (mixed, cnn, resnet), which cannot be an item of " \
               "a list: only architectures (simple_cnn, resnet_tiny1, resnet_tiny2) and " \
               "factory paths (package.module:build) can" in message
        assert f"for {kind}'s members list {means}" in message and "did you mean" not in message


def test_a_misspelt_item_of_a_list_is_matched_against_the_architectures_alone():
    """A list's items are networks: 'mixd' in a list suggests no kind, 'mixd' alone does."""
    with pytest.raises(ConfigError) as refused:
        TrialConfig.from_dict(dict(TINY_TRIAL, ensemble=["mixd", "simple_cnn"]))
    assert "'mixd' is no architecture and no factory path;" in str(refused.value)
    with pytest.raises(ConfigError, match=r"did you mean 'mixed'\?"):
        TrialConfig.from_dict(dict(TINY_TRIAL, ensemble="mixd"))


@pytest.mark.parametrize("name, says", [
    ("wrong_shape", r"to \(2, 11\) float32, not to \(2, 10\)"),
    ("integer_output", r"to \(2, 10\) int64, not to \(2, 10\) float logits"),
    ("softmax_output", r"gives probabilities \(each row of its output sums to 1: a final "
                       r"softmax\?\), not logits"),
    # every trial failed after its retries: the stack (vmap on 8x8 images) cannot branch
    ("branching", r"two of its members, stacked as a trial trains them \(under "
                  r"torch.func.vmap, .*\), fail a step on a batch of shape \(2, 1, 8, 8\): "
                  r"RuntimeError: vmap: .*data-dependent control flow"),
    ("no_parameters", "no parameters"),
    ("not_a_module", "not a torch.nn.Module"),
    ("fails_to_build", r"build\(1, 10\) failed: ValueError: this network takes 3 channels, not 1"),
    ("fails_forward", r"its forward on a batch of shape \(2, 1, 8, 8\) failed: RuntimeError: "),
])
def test_a_factory_that_builds_no_member_is_refused_at_planning_and_before_training(
        name, says, monkeypatch):
    config = dict(TINY_TRIAL, ensemble=["simple_cnn", f"tests.nets_for_tests:{name}"])
    with pytest.raises(ConfigError, match=says) as planned:
        check_data([config])                       # a sweep's planning
    assert "\n" not in str(planned.value)

    def no_training(*args, **kwargs):
        raise AssertionError("members were built: the factory was not checked first")
    monkeypatch.setattr(training, "Ensemble", no_training)
    with pytest.raises(ConfigError, match=says):
        run_trial(config)


@pytest.mark.parametrize("module, source, says", [
    ("raising_nets", "x = undefined_name\n",
     "importing raising_nets failed: NameError: name 'undefined_name' is not defined"),
    ("exiting_nets", "import sys\nsys.exit(1)\n", "importing exiting_nets called sys.exit(1)"),
])
def test_a_factory_module_that_fails_to_import_is_refused_with_its_own_error(
        module, source, says, tmp_path, monkeypatch):
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as refused:
        TrialConfig.from_dict(dict(TINY_TRIAL, ensemble=["simple_cnn", f"{module}:build"]))
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_log_probabilities_are_logits():
    assert check_factory("tests.nets_for_tests:log_softmax_output", 1, 10, (8, 8),
                         torch.device("cpu")) == ""


def test_logits_on_another_device_than_the_images_are_refused():
    """The device check, without a GPU: the dummy batch on the meta device, logits on the CPU."""
    why = check_factory("tests.nets_for_tests:output_on_cpu", 1, 10, (8, 8), torch.device("meta"))
    assert why == "its output is on cpu, not on meta with its input"


# ------------------------------------------------------------------ lazy modules
# They passed the planning check, then every trial failed after its retries with "Can't access
# the shape of an uninitialized parameter" (issue 32): a stack joins its members' tensors when
# it is built, before any batch.
LAZY = "tests.nets_for_tests:lazy_net"


def test_a_factorys_lazy_modules_take_their_shapes_from_the_images_seeded_per_member():
    seeds = [3, 4]
    stack = GenericStack(LAZY, 1, 10, seeds, "grouped", size=(8, 8))
    for j, seed in enumerate(seeds):
        alone = build_factory_member(LAZY, 1, 10, seed, (8, 8))
        assert alone[4].weight.shape == (10, 6 * 8 * 8)
        member = stack.member(j).state_dict()
        for name, tensor in alone.state_dict().items():     # the same start, exactly
            assert torch.equal(member[name], tensor), name
        assert alone[1].num_batches_tracked == 0           # the dummy batch counted nowhere
    assert not torch.equal(stack.member(0)[4].weight, stack.member(1)[4].weight)
    assert stack(torch.zeros(5, *DIGITS)).shape == (5, 2, 10)
    with pytest.raises(ConfigError, match=r"lazy modules, .*size=\(H, W\)"):
        GenericStack(LAZY, 1, 10, seeds)                    # no images' size to take


def test_a_classifier_of_lazy_members_fits_saves_and_loads(tmp_path):
    from sbfn_dist import SBFNClassifier
    check_data([dict(TINY_TRIAL, ensemble=LAZY)])           # a sweep's planning
    [row] = run_trial(dict(TINY_TRIAL, n_members=2, ensemble=LAZY))
    assert row["status"] == "ok"
    data = load_images("digits")
    model = SBFNClassifier(n_members=2, ensemble=LAZY, epochs=1).fit(data.x[:200], data.y[:200])
    model.save(tmp_path / "lazy")
    again = SBFNClassifier.load(tmp_path / "lazy", trust_plugins=True)
    torch.testing.assert_close(torch.as_tensor(again.predict_proba(data.x[200:260])),
                               torch.as_tensor(model.predict_proba(data.x[200:260])),
                               rtol=0, atol=0)
