"""The fast image path (issue 11): bf16 keeps the epsilon-WTA choices, packs of epsilon sets equal
their sets trained alone, the CUDA-graph step equals the eager one, the per-process image cache,
and where packing and the GPU-only settings apply."""

import os

import numpy as np
import pytest
import torch

from sbfn_dist.data.images import ImageData, device_images, holdout_splits, load_images
from sbfn_dist.errors import ConfigError
from sbfn_dist.experiment import run_trial, run_trials
from sbfn_dist.folds import pack_key
from sbfn_dist.learners import training
from sbfn_dist.learners.diversity import wta_weights
from sbfn_dist.learners.geometry import GEOMETRIES
from sbfn_dist.learners.registry import build_ensemble
from sbfn_dist.learners.steps import (autocast, memory_format, resolve_compile, resolve_engine,
                                      resolve_precision)
from sbfn_dist.learners.training import CNNConfig, train_cnn_pack
from sbfn_dist.settings.config import TrialConfig
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan.grid_trials import image_sweep
from sweeps.engine.plan.packing import packs
from sweeps.engine.run.trial import COMPILE_CACHE, _share_compile_cache

CUDA = torch.cuda.is_available()
DEVICE = torch.device("cuda" if CUDA else "cpu")
# bf16 keeps 8 significant bits: a member's cross-entropy of O(1) moves by a few 1e-3 (logits
# rounded to 2^-9 relative). Rows whose best and second-best fp32 losses differ by more than
# this must get the same winner and the same delta in bf16.
BF16_LOSS_TOLERANCE = 0.05
# Packed and lone stacks run convolutions of different group counts, whose float32 sums round
# differently (and cuDNN picks other kernels per group count). Adam divides each gradient by its
# own RMS: a weight whose gradient is rounding noise still steps by up to lr (1e-3) in a
# direction the rounding sets, so single weights may differ by up to lr x steps while the
# function does not (weights apart by > 1e-5 on an AMD EPYC CPU and an H100, > 1e-4 on an H200;
# epoch losses within 1e-6 everywhere). So the members' test outputs are compared, on every
# device: logits of order 1-10 stay within lr of each other (measured: 5e-7 on CPUs, 1e-4 on
# GPUs), while the two epsilon sets' differ by ~2.
LOGIT_ATOL = 1e-3


def digits_images(n_train=256, seed=0):
    data = load_images("digits")
    split = holdout_splits(data, n_splits=1, n_train=n_train, n_test=200, seed=seed)[0]
    return device_images(data, split, str(DEVICE), None)


def test_bf16_picks_the_fp32_winners_and_weights():
    torch.manual_seed(0)
    model = build_ensemble("mixed", 6, 3, 10, seed=3).to(DEVICE).train()
    # 16 x 16 images: a CPU without AVX-512 BF16 runs bf16 ~25x slower than fp32 (30 s at
    # 256 x 32 x 32 on an AVX2 EPYC), and the check needs rows, not pixels.
    x = torch.randn(128, 3, 16, 16, device=DEVICE)
    y = torch.randint(10, (128,), device=DEVICE)
    ce = GEOMETRIES["cross_entropy"]
    with torch.no_grad():
        fp32 = ce.score_loss(model(x), y)
        with autocast("bf16", DEVICE):
            logits = model(x)
        bf16 = ce.score_loss(logits.float(), y)
    assert logits.dtype == torch.bfloat16                  # the forward did run in bf16
    assert (bf16 - fp32).abs().max() < BF16_LOSS_TOLERANCE
    top2 = fp32.topk(2, dim=1, largest=False).values
    clear = (top2[:, 1] - top2[:, 0]) > 2 * BF16_LOSS_TOLERANCE
    assert clear.float().mean() > 0.3                      # the check covers many rows
    for eps in (0.0, 0.5):
        assert torch.equal(wta_weights(bf16, eps)[clear], wta_weights(fp32, eps)[clear])


def _params(trained):
    return torch.cat([p.detach().flatten().double().cpu() for p in trained.model.parameters()])


def test_a_pack_of_epsilon_sets_trains_each_set_as_alone(monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)   # fp32 means fp32 on a GPU
    images = digits_images()
    cfgs = [CNNConfig(ensemble="mixed", n_members=3, epsilon=e, epochs=1, batch_size=64, seed=4)
            for e in (0.0, 0.5)]
    packed = train_cnn_pack(images, 10, cfgs)
    for cfg, together in zip(cfgs, packed):
        [alone] = train_cnn_pack(images, 10, [cfg])
        assert together.model.archs == alone.model.archs and together.packed_members == 6
        assert torch.allclose(together.scores(images.test_x), alone.scores(images.test_x),
                              atol=LOGIT_ATOL)
        assert np.allclose(together.epoch_loss[0], alone.epoch_loss[0], atol=1e-5)
    # the two sets did learn differently: epsilon reached each set's own delta
    apart = (packed[0].scores(images.test_x) - packed[1].scores(images.test_x)).abs().max()
    assert apart > 100 * LOGIT_ATOL


def test_packed_trials_give_the_records_of_trials_run_alone(monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    base = {"dataset": "digits", "task": "classification", "folds": 1, "epochs": 1,
            "n_train": 256, "n_test": 200, "n_members": 2, "ensemble": "cnn", "batch_size": 64,
            "combiners": ["logit_mean", "sbfn", "moe"], "precision": "fp32"}
    configs = [{**base, "epsilon": e, "trial_id": f"e{e}"} for e in (0.1, 0.8)]
    assert pack_key(TrialConfig(configs[0])) == pack_key(TrialConfig(configs[1]))
    together = run_trials(configs)
    for config, recs in zip(configs, together):
        alone = run_trial(config)
        assert [r["model"] for r in recs] == [r["model"] for r in alone]
        assert np.allclose([r["accuracy"] for r in recs], [r["accuracy"] for r in alone],
                           atol=1e-2)       # 200 test images: at most 2 flip by rounding
        assert {r["packed_members"] for r in recs} == {4}
        assert {r["precision"] for r in recs} == {"fp32"}
        assert {r["step_engine"] for r in recs} == {resolve_engine("auto", DEVICE.type)}


def cifar_shaped_images(n_train=192):
    """Random pixels of CIFAR-10's shape: 3 channels of 32x32 (per-member convolutions on a CPU,
    where digits' 8x8 run grouped ones)."""
    gen = torch.Generator().manual_seed(0)
    n = n_train + 20
    data = ImageData("cifar10", torch.randint(0, 256, (n, 3, 32, 32), generator=gen,
                                              dtype=torch.uint8).numpy(),
                     np.arange(n) % 10, tuple("abcdefghij"), n)
    split = holdout_splits(data, n_splits=1, n_train=n_train, n_test=20)[0]
    return device_images(data, split, str(DEVICE), None)


@pytest.mark.parametrize("images", [digits_images, cifar_shaped_images])
def test_the_memory_format_changes_only_the_speed(monkeypatch, images):
    """channels_last (a CPU's layout, and bf16's on CUDA) trains the numbers NCHW trains. SGD:
    Adam's first steps move a weight by about +-lr whatever its gradient's size, so a gradient
    near zero that rounds to the other sign moves it 2 lr apart; SGD moves weights in proportion
    to their gradients, so the weights agree as closely as the two layouts' sums."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    images, runs = images(), {}
    cfg = CNNConfig(ensemble="mixed", n_members=3, epochs=1, batch_size=64, seed=2,
                    optimizer="sgd", lr=0.05)
    for fmt in (torch.channels_last, torch.contiguous_format):
        monkeypatch.setattr(training, "memory_format", lambda precision, device, fmt=fmt: fmt)
        [runs[fmt]] = train_cnn_pack(images, 10, [cfg])
    conv = next(p for p in runs[torch.channels_last].model.parameters() if p.ndim == 4)
    assert conv.is_contiguous(memory_format=torch.channels_last)    # it did train in NHWC
    assert torch.allclose(_params(runs[torch.channels_last]),
                          _params(runs[torch.contiguous_format]), atol=1e-4)
    assert np.allclose(runs[torch.channels_last].epoch_loss,
                       runs[torch.contiguous_format].epoch_loss, atol=1e-5)


@pytest.mark.skipif(not CUDA, reason="the CUDA-graph step needs a CUDA GPU")
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_cuda_graph_step_trains_as_the_eager_step(monkeypatch, optimizer):
    """The replayed graph trains the eager step's weights. SGD moves weights in proportion to
    their gradients, so the two agree as closely as fused and unfused updates round (a replay
    that missed a batch moves them by lr x gradient: median 5e-4). Adam moves a weight whose
    gradient rounds to the other sign ~2 lr apart (test above), and the graph's Adam is the fused
    one: some weights differ by ~1e-4 (seen on an H200), so Adam's check is on the median weight.
    Measured on a CPU with this test's digits (eager, fused vs unfused Adam): median 2.4e-6; one
    batch left out: median 7.6e-4. The bound sits between, 20x from either."""
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", True)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    images = digits_images(n_train=64 * 12 + 17)          # 12 full batches and a short one
    lr = {"sgd": 0.05, "adam": 1e-3}[optimizer]
    runs = {}
    for engine in ("eager", "cuda_graph"):
        cfg = CNNConfig(ensemble="mixed", n_members=3, epochs=2, batch_size=64, seed=1,
                        precision="fp32", engine=engine, optimizer=optimizer, lr=lr)
        [runs[engine]] = train_cnn_pack(images, 10, [cfg])
    assert runs["cuda_graph"].engine == "cuda_graph"        # captured, not fallen back
    gap = (_params(runs["cuda_graph"]) - _params(runs["eager"])).abs()
    if optimizer == "sgd":
        assert gap.max() <= 1e-4
        assert np.allclose(runs["cuda_graph"].epoch_loss, runs["eager"].epoch_loss, atol=1e-5)
    else:
        assert gap.median() <= 5e-5


@pytest.mark.skipif(not CUDA, reason="compiling a stack costs ~25 s of a 2-core CPU (of make "
                    "test's 8 minutes); step_compile is a GPU setting: the kit's GPU tests run it")
def test_a_compiled_stack_trains_as_the_uncompiled_one(monkeypatch, tmp_path):
    """step_compile=on runs the members' forward through torch.compile (inside the CUDA graph on
    a GPU): the same operations with fused elementwise chains, so SGD trains the uncompiled
    weights up to float32 rounding (fused kernels sum in another order; the bound is the layout
    test's). The epoch's short last batch runs uncompiled; the compiled graphs go to the cache
    directory asked for (a sweep's results directory)."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    images = digits_images(n_train=64 * 4 + 17)
    runs = {}
    for compile in ("off", "on"):
        cfg = CNNConfig(ensemble="cnn", n_members=2, epochs=2, batch_size=64, seed=1,
                        optimizer="sgd", lr=0.05, precision="fp32",
                        engine=resolve_engine("auto", DEVICE.type), compile=compile)
        [runs[compile]] = train_cnn_pack(images, 10, [cfg])
    assert runs["on"].engine == resolve_engine("auto", DEVICE.type)   # CUDA: replayed
    assert (_params(runs["on"]) - _params(runs["off"])).abs().max() <= 1e-4
    assert np.allclose(runs["on"].epoch_loss, runs["off"].epoch_loss, atol=1e-5)
    assert any(tmp_path.rglob("*")), "nothing compiled into the cache directory"


def test_a_sweep_that_compiles_keeps_the_compilation_in_its_results(monkeypatch, tmp_path):
    """Trials that compile point torch's caches at the results directory (shared by every
    worker, on a cluster too); trials that do not, leave torch's setting alone."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")       # restored to the test's start after it
    base = {"dataset": "digits", "task": "classification", "n_members": 2, "ensemble": "cnn",
            "combiners": ["logit_mean"]}
    planned = [TrialConfig.from_dict({**base, **c}).to_dict() for c in ({}, {"step_compile": "on"})]
    store = ResultStore(str(tmp_path))
    _share_compile_cache(store, planned[:1])
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ
    _share_compile_cache(store, planned)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == f"{tmp_path}/{COMPILE_CACHE}"


def test_a_worker_keeps_a_splits_images_on_its_device():
    data = load_images("digits")
    a, b = holdout_splits(data, n_splits=2, n_train=256, n_test=200)
    first = device_images(data, a, "cpu", None)
    assert device_images(data, a, "cpu", None) is first
    assert device_images(data, b, "cpu", None) is not first
    assert device_images(data, a, "cpu", True) is not first


def test_images_pack_by_epsilon_only_when_asked():
    spec = image_sweep("digits", splits=2)
    configs = [TrialConfig.from_dict({**spec.base, **o}).to_dict() for o in spec.trials()]
    packed = packs(configs, "on", slots=16)
    assert len(packed) == len(configs) // 5 and {len(p) for p in packed} == {5}
    for pack in packed:
        rest = [{k: v for k, v in configs[i].items() if k != "epsilon"} for i in pack]
        assert all(r == rest[0] for r in rest)
        assert sorted(configs[i]["epsilon"] for i in pack) == [0.0, 0.1, 0.3, 0.5, 0.8]
    alone = [[i] for i in range(len(configs))]
    assert packs(configs, "auto", slots=16) == packs(configs, "off", slots=16) == alone


def test_gpu_only_settings_are_refused_on_a_cpu():
    assert resolve_engine("auto", "cpu") == "eager" and resolve_precision("auto", "cpu") == "fp32"
    assert memory_format("fp32", torch.device("cpu")) == torch.channels_last   # oneDNN's NHWC
    assert resolve_engine("auto", "cuda") == "cuda_graph"
    assert resolve_precision("auto", "cuda") == "bf16"
    assert resolve_compile("auto", "cpu") == "off" and resolve_compile("on", "cpu") == "on"
    with pytest.raises(ConfigError, match="CUDA graphs need a CUDA device"):
        resolve_engine("cuda_graph", "cpu")
