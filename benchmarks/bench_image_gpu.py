"""Image members on a GPU: the trial's training loop, today's way vs the fast path, side by side.

Both sides run the library's one loop, `sbfn_dist.members.train_cnn_pack`, over the same
random CIFAR-shaped images (3x32x32, 10 classes, crop + flip augmentation on), batch 128 (the
sweeps' default), Adam, with the two on-the-fly heads a trial trains beside the members (s-BFN
and MoE, Algorithm 2). They differ only in how the step runs (sbfn_dist.steps):

    today   fp32, eager (the step's kernels launched one by one from Python)
    bf16    bf16 autocast + channels_last, eager
    graph   fp32, the step captured once as a CUDA graph and replayed
    fast    bf16 + channels_last + CUDA graph (what `auto` picks on CUDA)

"today" already has this issue's loop fixes (epoch-level augmentation draws, heads that never
read a value back), which the old code lacked: the ratios understate the gain over the old code.
Rates are member-images/s (images x members per second of the loop: model build excluded;
warm-up and capture included) and the FLOP/s achieved (forward + backward FLOPs of the stack
counted by torch.utils.flop_counter, the optimizer not counted). "packed" trains the grid's five
epsilons of one (kind, M) as one stack (a --pack auto trial). Needs CUDA.

"fast + torch.compile" (`--compile`) runs the members' forward through torch.compile inside the
same CUDA graph (a warm-up run fills inductor's cache first; tracing stays inside the time).

    python -m benchmarks.bench_image_gpu [--quick] [--compile] [--json FILE]
"""

import argparse
import contextlib
import json
import pathlib
import time
from unittest import mock

import torch

from benchmarks.bench_image_members import step_flops
from benchmarks.common import table, target
from sbfn_dist import members
from sbfn_dist.combining import make_head
from sbfn_dist.data.images import DeviceImages, ImageData, _spec, holdout_splits
from sbfn_dist.fields import defaults
from sbfn_dist.learners.cnn import Ensemble
from sbfn_dist.members import CNNConfig, ColumnObserver, train_cnn_pack

BATCH, N_CLASSES, EPSILONS = 128, 10, (0.0, 0.1, 0.3, 0.5, 0.8)
SIDES = {"today": ("fp32", "eager"), "bf16": ("bf16", "eager"), "graph": ("fp32", "cuda_graph"),
         "fast": ("bf16", "cuda_graph")}
HEADS = ("sbfn", "moe")


def random_images(n: int, device: str, dataset: str = "cifar10") -> DeviceImages:
    """n random images of `dataset`'s shape and classes, augmented as it is."""
    gen = torch.Generator().manual_seed(0)
    shape = _spec(dataset).shape            # (C, H, W), as the data catalog has it
    x = torch.randint(0, 256, (n, *shape), generator=gen, dtype=torch.uint8).numpy()
    y = (torch.arange(n) % N_CLASSES).numpy()
    data = ImageData(dataset, x, y, tuple(str(c) for c in range(N_CLASSES)), n)
    split = holdout_splits(data, n_splits=1, n_train=n - 2 * N_CLASSES, n_test=2 * N_CLASSES)[0]
    return DeviceImages(data, split, device=device)


def trial_heads(m: int, n_sets: int, device) -> list:
    """The on-the-fly heads a trial trains beside its members, for each of n_sets sets of M."""
    setting = defaults("classification", "image").get
    return [ColumnObserver(make_head(h, lambda f: m if f == "n_members" else setting(f),
                                     N_CLASSES, 0, device), k * m, (k + 1) * m)
            for k in range(n_sets) for h in HEADS]


def compiled_ensemble(*args, **kwargs) -> Ensemble:
    """An Ensemble whose forward runs through torch.compile (inductor fuses the elementwise
    chains: BatchNorm, ReLU, pooling, additions; docs/benchmarks.md 9.4); the backward follows."""
    model = Ensemble(*args, **kwargs)
    model.forward = torch.compile(model.forward)
    return model


def train_rate(images, kind: str, m: int, side: str, epochs: int, epsilons=(0.5,),
               layout=None, compiled: bool = False) -> dict:
    """member-images/s of one training run of len(epsilons) sets of M members; `layout` (a
    torch memory format) overrides the one sbfn_dist.steps picks, for a side that measures it;
    `compiled`: the members' forward through torch.compile (compilation inside the time)."""
    precision, engine = SIDES[side]
    cfgs = [CNNConfig(ensemble=kind, n_members=m, epsilon=e, epochs=epochs, batch_size=BATCH,
                      precision=precision, engine=engine) for e in epsilons]
    heads = trial_heads(m, len(cfgs), images.device)
    cuda = images.device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    forced = (mock.patch.object(members, "memory_format", lambda *_: layout) if layout
              else contextlib.nullcontext())
    compiling = (mock.patch.object(members, "Ensemble", compiled_ensemble) if compiled
                 else contextlib.nullcontext())
    begin = time.perf_counter()
    with forced, compiling:
        trained = train_cnn_pack(images, N_CLASSES, cfgs, heads)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - begin
    member_images = len(images.train_y) * epochs * m * len(cfgs)
    return {"rate": member_images / seconds, "engine": trained[0].engine, "seconds": seconds,
            "peak_gib": torch.cuda.max_memory_allocated() / 2 ** 30 if cuda else float("nan")}


def flops_per_member_image(kind: str, m: int) -> float:
    x = torch.randn(BATCH, 3, 32, 32, device="cuda")
    y = torch.randint(N_CLASSES, (BATCH,), device="cuda")
    return step_flops(kind, m, x, y) / (BATCH * m)


def run(quick: bool = False, compiled: bool = False) -> list:
    if not torch.cuda.is_available():
        print("SKIP bench_image_gpu: no CUDA device")
        return []
    torch.backends.cudnn.benchmark = True      # as a trial's first steps would settle it
    n, epochs = (BATCH * 40, 1) if quick else (BATCH * 150, 2)
    images = random_images(n + 2 * N_CLASSES, "cuda")
    rows, out = [], []
    for kind in ("cnn", "mixed"):
        flops = flops_per_member_image(kind, 10)
        train_rate(images, kind, 10, "fast", 1)               # cuDNN's choices, allocator warm
        rates = {side: train_rate(images, kind, 10, side, epochs) for side in SIDES}
        more = [("fast, packed x5", train_rate(images, kind, 10, "fast", epochs, EPSILONS))]
        if compiled:
            train_rate(images, kind, 10, "fast", 1, compiled=True)   # inductor's cache filled
            more.append(("fast + torch.compile",
                         train_rate(images, kind, 10, "fast", epochs, compiled=True)))
        for side, r in [*rates.items(), *more]:
            ratio = r["rate"] / rates["today"]["rate"]
            rows.append([kind, side, r["engine"], f"{r['rate']:,.0f}",
                         f"{r['rate'] * flops / 1e12:.1f}", f"{ratio:.2f}x",
                         f"{r['peak_gib']:.1f}"])
            out.append({"kind": kind, "side": side, **r, "tflops": r["rate"] * flops / 1e12,
                        "ratio": ratio})
    table(f"{torch.cuda.get_device_name()}: image members M = 10, batch {BATCH}, 3x32x32, "
          f"{n} images x {epochs} epochs, Adam + s-BFN and MoE heads",
          ["ensemble", "side", "engine ran", "member-images/s", "TFLOP/s", "vs today",
           "peak GiB"], rows)
    for kind in ("cnn", "mixed"):
        target(f"{kind} M = 10, fast vs today", next(r["ratio"] for r in out if r["kind"] == kind
                                                    and r["side"] == "fast"), 5.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke-test sizes (seconds)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--compile", action="store_true",
                        help="add the fast side with the members' forward through torch.compile")
    args = parser.parse_args()
    rows = run(args.quick, args.compile)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
