"""Your own member networks: the generic stack (learners/factories.py) vs a plain loop over M
modules, training images/s side by side (issue 23). `python -m benchmarks.bench_generic_stack`.

One training step = all members forward, the epsilon-WTA cross-entropy (Algorithm 2), one
backward, one Adam step, in the library's precision and memory format for the device
(bf16 + channels_last on CUDA, fp32 + channels_last on a CPU; learners/steps.py), eagerly on
both sides (the CUDA graph the library would add is a separate gain, docs/benchmarks.md 9).
The stack: GenericStack, strategy "auto" (vmap on a GPU, per-member calls on views of the
joined tensors on a CPU for 32x32 images) and the other strategy beside it; the loop: M
ordinary modules with ONE Adam over all their parameters (PyTorch's foreach Adam batches them,
the strongest plain baseline). The factories build the built-in SimpleCNN and ResNetTiny1 (with
BatchNorm) as a user's module would be: ordinary nn.Modules. CIFAR shape: 3x32x32, batch 128,
M = 10. Targets: >= 2x the loop on a CUDA GPU, not slower than it on a CPU.
Runs on CUDA when one is present (wall time), else on the CPU in one thread (a Ray trial's one
CPU), timed by this process's CPU time: on a shared machine other jobs' load inflates wall
time unevenly between the sides, CPU time not.

A second table, on a CPU: the memory format of your networks' stack. Under vmap,
F.adaptive_avg_pool2d(x, 1) on a channels_last tensor restrides its output with
aten::as_strided_, which has no batching rule: PyTorch warns once per process ("There is a
performance drop because we have not yet implemented the batching rule for aten::as_strided_")
and runs that one call member by member. The table times the library's loop (train_cnn_pack,
1 thread, CPU time) for a small CNN ending in global average pooling, global max pooling or a
plain mean, in channels_last (what `memory_format` picks on a CPU) against NCHW (the layout that
avoids the warning), at 3x16x16 (vmap, `auto`'s choice on a CPU) and 3x32x32 (per-member calls).
"""

import statistics
import time
import warnings
from unittest import mock

import numpy as np
import torch
from torch import nn

from benchmarks.common import cli, compare, machine, median, paired_ratio, table, target, threads
from sbfn_dist.data.images import DeviceImages, ImageData, holdout_splits
from sbfn_dist.learners import training
from sbfn_dist.learners.cnn import NETS, runs_grouped
from sbfn_dist.learners.factories import GenericStack, build_factory_member
from sbfn_dist.learners.geometry import CrossEntropy
from sbfn_dist.learners.steps import autocast, memory_format, resolve_precision
from sbfn_dist.learners.training import CNNConfig, train_cnn_pack

# Many short paired repeats: the median ratio of back-to-back pairs resists a shared machine's
# load swings better than a few long ones (5 repeats of 3 steps spread 0.91-0.99x on 2 cores).
N_CLASSES, EPSILON, STEPS, REPEATS, SHAPE = 10, 0.5, 2, 9, (3, 32, 32)
GPU_GOAL = 2.0     # issue 23: >= 2x the loop on a CUDA GPU


def simple_cnn(in_channels: int, n_classes: int):
    return NETS["simple_cnn"](in_channels, n_classes)


def resnet_tiny1(in_channels: int, n_classes: int):
    return NETS["resnet_tiny1"](in_channels, n_classes)


FACTORIES = {"simple_cnn": simple_cnn, "resnet_tiny1": resnet_tiny1}


def training_steps(forward, params, x, y, precision: str):
    """STEPS epsilon-WTA Adam steps of forward(x) -> (b, M, C), as train_cnn_pack runs them."""
    opt = torch.optim.Adam(params, lr=1e-3)

    def run():
        for _ in range(STEPS):
            with autocast(precision, x.device):
                logits = forward(x)
            loss = CrossEntropy().wta_loss(logits.float(), y, EPSILON)[0]
            opt.zero_grad(set_to_none=False)
            loss.backward()
            opt.step()
        if x.device.type == "cuda":      # the steps only queue kernels: wait for them
            torch.cuda.synchronize(x.device)
    return run


def stack_side(build, m, x, y, precision, strategy):
    fmt = memory_format(precision, x.device)
    stack = GenericStack(build, SHAPE[0], N_CLASSES, list(range(m)), strategy)
    stack = stack.to(device=x.device, memory_format=fmt).train()
    return training_steps(stack, stack.parameters(), x, y, precision)


def loop_side(build, m, x, y, precision):
    fmt = memory_format(precision, x.device)
    nets = [build_factory_member(build, SHAPE[0], N_CLASSES, j).to(device=x.device,
                                                                     memory_format=fmt).train()
            for j in range(m)]
    params = [p for net in nets for p in net.parameters()]
    return training_steps(lambda inp: torch.stack([net(inp) for net in nets], 1), params, x, y,
                          precision)


def measure(name, m, batch, repeats, device) -> dict:
    precision = resolve_precision("auto", str(device))
    x = torch.randn(batch, *SHAPE, device=device)
    x = x.contiguous(memory_format=memory_format(precision, device))
    y = torch.randint(N_CLASSES, (batch,), device=device)
    build = FACTORIES[name]
    auto = "grouped" if runs_grouped("auto", x) else "per_member"
    other = "per_member" if auto == "grouped" else "grouped"
    sides = {"auto": stack_side(build, m, x, y, precision, auto),
             "other": stack_side(build, m, x, y, precision, other),
             "loop": loop_side(build, m, x, y, precision)}
    for run in sides.values():
        run()                                       # warm-up (first calls, cuDNN's choices)
    t = compare(sides, repeats, time.perf_counter if device.type == "cuda" else time.process_time)
    images = batch * STEPS
    return {"net": name, "M": m, "batch": batch, "precision": precision, "strategy": auto,
            "other_strategy": other, **{k: images / median(v) for k, v in t.items()},
            "ratio": paired_ratio(t["loop"], t["auto"]), "spread": spread(t["loop"], t["auto"]),
            "other_ratio": paired_ratio(t["loop"], t["other"])}


def spread(slow: list, fast: list) -> float:
    """Half the interquartile range of the back-to-back pairs' ratios: how far one pair's
    ratio strays from another's on this machine (0 with fewer than two pairs)."""
    if len(slow) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles([s / f for s, f in zip(slow, fast)], n=4)
    return (q3 - q1) / 2


def not_slower(label: str, ratio: float, spread_: float, than: str = "the loop") -> bool:
    """The CPU target: the other side (`than`) is not faster, beyond the pairs' own spread (the
    work is the same dense convolutions on both sides, docs/benchmarks.md 4.5)."""
    ok = ratio + spread_ >= 1
    print(f"TARGET {label}: {ratio:.2f}x, pairs' spread +-{spread_:.2f} (target: not slower "
          f"than {than}, >= 1x within the spread) {'PASS' if ok else 'MISS'}")
    return ok


# ------------------------------------------------------------- your networks' memory format
LAYOUTS = {"channels_last (auto)": torch.channels_last, "NCHW": torch.contiguous_format}
LAYOUT_SHAPES = ((3, 16, 16), (3, 32, 32))     # vmap on a CPU (auto), per-member calls
LAYOUT_M, LAYOUT_BATCH, LAYOUT_BATCHES, LAYOUT_REPEATS = 8, 128, 4, 5
FALLBACK = "There is a performance drop"        # PyTorch's warning for an op vmap lacks


class GlobalMean(nn.Module):
    """Global average pooling written as a mean: no adaptive pooling."""

    def forward(self, x):
        return x.mean((-2, -1))


POOLS = {"AdaptiveAvgPool2d(1)": lambda: nn.AdaptiveAvgPool2d(1),
         "AdaptiveMaxPool2d(1)": lambda: nn.AdaptiveMaxPool2d(1), "x.mean((2, 3))": GlobalMean}


def pooled_net(pool):
    """A factory of a small CNN (two convolutions with BatchNorm) ending in pool() -> 32."""
    def build(in_channels: int, n_classes: int):
        return nn.Sequential(
            nn.Conv2d(in_channels, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            pool(), nn.Flatten(), nn.Linear(32, n_classes))
    return build


def random_images(n: int, shape) -> DeviceImages:
    """n random images of `shape` as your own arrays (npz:), on the CPU, not augmented."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (n + N_CLASSES, *shape), generator=gen, dtype=torch.uint8).numpy()
    data = ImageData("npz:random", x, np.arange(len(x)) % N_CLASSES,
                     tuple(str(c) for c in range(N_CLASSES)), len(x))
    split = holdout_splits(data, n_splits=1, n_train=n, n_test=N_CLASSES)[0]
    return DeviceImages(data, split, "cpu", augment=False)


def layout_side(build, images, m: int, batch: int, fmt):
    """One epoch of the library's loop for M members of `build`, in memory format fmt."""
    cfg = CNNConfig(ensemble=build, n_members=m, epochs=1, batch_size=batch, optimizer="adam",
                    lr=1e-3)

    def run():
        with mock.patch.object(training, "memory_format", lambda *_: fmt):
            train_cnn_pack(images, N_CLASSES, [cfg])
    return run


def warns(run) -> bool:
    """Whether run() raises PyTorch's vmap fallback warning (recorded each time, not once)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return any(FALLBACK in str(w.message) for w in caught)


def measure_layout(shape, pool: str, m: int, batch: int, repeats: int) -> dict:
    images = random_images(batch * LAYOUT_BATCHES, shape)
    build = pooled_net(POOLS[pool])
    sides = {name: layout_side(build, images, m, batch, fmt) for name, fmt in LAYOUTS.items()}
    warned = {name: warns(run) for name, run in sides.items()}     # also the warm-up
    t = compare(sides, repeats, time.process_time)
    fast, slow = t.values()
    x = images.train_x[:1]
    return {"shape": "x".join(map(str, shape)), "pool": pool, "M": m, "batch": batch,
            "strategy": "vmap" if runs_grouped("auto", x) else "per_member",
            **{k: len(images.train_y) / median(v) for k, v in t.items()},
            "warned": warned, "ratio": paired_ratio(slow, fast), "spread": spread(slow, fast)}


def run_layouts(quick: bool) -> list:
    """The second table (module docstring): channels_last against NCHW, per pooling."""
    m, batch, repeats = (2, 16, 1) if quick else (LAYOUT_M, LAYOUT_BATCH, LAYOUT_REPEATS)
    with threads(1):
        rows = [measure_layout(shape, pool, m, batch, repeats)
                for shape in LAYOUT_SHAPES[:1 if quick else None] for pool in POOLS]
    table(f"Your networks' layout on a CPU (1 thread, CPU time, train_cnn_pack, Adam, "
          f"{LAYOUT_BATCHES} batches, median of {repeats}, interleaved)",
          ["shape", "auto strategy", "pooling", "M", "batch", *[f"{k} img/s" for k in LAYOUTS],
           "channels_last vs NCHW, speed (+- spread)", "fallback warning (channels_last, NCHW)"],
          [[r["shape"], r["strategy"], r["pool"], r["M"], r["batch"],
            *[f"{r[k]:,.1f}" for k in LAYOUTS], f"{r['ratio']:.2f}x +-{r['spread']:.2f}",
            ", ".join("yes" if r["warned"][k] else "no" for k in LAYOUTS)] for r in rows])
    for r in ([] if quick else rows):
        not_slower(f"channels_last vs NCHW, {r['pool']}, {r['shape']}", r["ratio"], r["spread"],
                   "NCHW")
    return rows


def run(quick: bool = False, device: str | None = None) -> list:
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    repeats = 1 if quick else REPEATS
    grid = [("simple_cnn", 2, 16)] if quick else [(n, 10, 128) for n in FACTORIES]
    with threads(1):
        rows = [measure(n, m, b, repeats, device) for n, m, b in grid]
    where = (torch.cuda.get_device_name(device) if device.type == "cuda"
             else "CPU, 1 thread, CPU time")
    table(f"Your member networks: generic stack vs a loop over M modules ({where}, "
          f"3x32x32, Adam, eps = {EPSILON}, {STEPS} steps, median of {repeats})",
          ["net", "M", "batch", "precision", "stack img/s (auto)", "other strategy img/s",
           "loop img/s", "auto / loop (+- spread)", "other / loop"],
          [[r["net"], r["M"], r["batch"], r["precision"],
            f"{r['auto']:,.1f} ({r['strategy']})", f"{r['other']:,.1f} ({r['other_strategy']})",
            f"{r['loop']:,.1f}", f"{r['ratio']:.2f}x +-{r['spread']:.2f}",
            f"{r['other_ratio']:.2f}x"]
           for r in rows])
    for r in ([] if quick else rows):
        label = f"generic stack ({r['strategy']}) vs loop, {r['net']} M={r['M']}"
        if device.type == "cuda":
            target(f"{label} on a GPU", r["ratio"], GPU_GOAL)
        else:
            not_slower(f"{label} on a CPU", r["ratio"], r["spread"])
    return rows + (run_layouts(quick) if device.type == "cpu" else [])


if __name__ == "__main__":
    print(machine())
    run(cli(__doc__.splitlines()[0]).quick)
