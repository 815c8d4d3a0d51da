"""Image members on a GPU: the trial's training loop, today's way vs the fast path, side by side.

Both sides run the library's one loop, `sbfn_dist.learners.training.train_cnn_pack`, over the same
random CIFAR-shaped images (3x32x32, 10 classes, crop + flip augmentation on), batch 128 (the
sweeps' default), Adam, with the two on-the-fly heads a trial trains beside the members (s-BFN
and MoE, Algorithm 2). They differ only in how the step runs (sbfn_dist.learners.steps):

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

Each side reports two rates: over the whole run (model build excluded; warm-up, graph capture
and, for a compiled side, tracing inside the time) and over its steady epochs (epochs 2.. alone:
what a longer training run approaches). `--compile` adds the members' forward through
torch.compile (inductor fuses the elementwise chains around the convolutions; AOTAutograd the
backward's), once run eagerly and once inside the CUDA graph, and reports the process's first
(cold) compilation separately. `--batches` adds the fast side at larger batches (more images per
kernel; note that the optimisation then differs: fewer, larger steps). A side that fails prints
its error as its row; the others still run.

    python -m benchmarks.bench_image_gpu [--quick] [--compile] [--batches 256 512] [--no-packed]
        [--json FILE]
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
from sbfn_dist.learners import training
from sbfn_dist.combiners.ensembles import make_head
from sbfn_dist.data.images import DeviceImages, ImageData, _spec, holdout_splits
from sbfn_dist.settings.fields import defaults
from sbfn_dist.learners.training import CNNConfig, ColumnObserver, train_cnn_pack

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


class EpochClock:
    """An observer that only notes when each epoch starts: train_cnn_pack reads each epoch's
    losses back (a host synchronisation) before the next starts, so the marks are GPU-true."""

    def __init__(self):
        self.marks = []

    def epoch_start(self) -> None:
        self.marks.append(time.perf_counter())

    def batch(self, d, y) -> None:      # replayed inside the CUDA graph too: nothing to record
        pass


def train_rate(images, kind: str, m: int, side: str, epochs: int, epsilons=(0.5,),
               layout=None, compiled: bool = False, batch: int = BATCH) -> dict:
    """member-images/s of one training run of len(epsilons) sets of M members, over the whole
    run and over its steady epochs (2..); `layout` (a torch memory format) overrides the one
    sbfn_dist.learners.steps picks, for a side that measures it; `compiled`: the members' forward
    through torch.compile (tracing inside the time)."""
    precision, engine = SIDES[side]
    cfgs = [CNNConfig(ensemble=kind, n_members=m, epsilon=e, epochs=epochs, batch_size=batch,
                      precision=precision, engine=engine, compile="on" if compiled else "off")
            for e in epsilons]
    clock = EpochClock()
    heads = [*trial_heads(m, len(cfgs), images.device), clock]
    cuda = images.device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    forced = (mock.patch.object(training, "memory_format", lambda *_: layout) if layout
              else contextlib.nullcontext())
    begin = time.perf_counter()
    with forced:
        trained = train_cnn_pack(images, N_CLASSES, cfgs, heads)
    if cuda:
        torch.cuda.synchronize()
    end = time.perf_counter()
    per_epoch = len(images.train_y) * m * len(cfgs)
    epoch_s = [b - a for a, b in zip(clock.marks, [*clock.marks[1:], end])]
    steady = sorted(epoch_s[1:])[len(epoch_s[1:]) // 2] if len(epoch_s) > 1 else float("nan")
    return {"rate": per_epoch * epochs / (end - begin), "steady_rate": per_epoch / steady,
            "engine": trained[0].engine, "seconds": end - begin, "epoch_seconds": epoch_s,
            "peak_gib": torch.cuda.max_memory_allocated() / 2 ** 30 if cuda else float("nan")}


def flops_per_member_image(kind: str, m: int) -> float:
    x = torch.randn(BATCH, 3, 32, 32, device="cuda")
    y = torch.randint(N_CLASSES, (BATCH,), device="cuda")
    return step_flops(kind, m, x, y) / (BATCH * m)


def guarded(measure) -> dict:
    """One side's measurement, or its error (one line) so that the other sides still run."""
    try:
        return measure()
    except Exception as exc:            # a side that cannot run is a finding, not a crash
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"}


def kind_sides(images, kind: str, epochs: int, opts) -> list:
    """(side name, measurement) of one ensemble kind at M = 10, every side of this run."""
    run = lambda side, **kw: guarded(lambda: train_rate(images, kind, 10, side, epochs, **kw))
    sides = [(side, run(side)) for side in SIDES]
    if opts.packed:
        sides.append(("fast, packed x5", run("fast", epsilons=EPSILONS)))
    sides += [(f"fast, batch {b}", run("fast", batch=b)) for b in opts.batches]
    if opts.compile:
        cold = guarded(lambda: train_rate(images, kind, 10, "bf16", 1, compiled=True))
        sides.append(("compile: first run in the process (1 epoch)", cold))
        sides.append(("bf16 eager + torch.compile", run("bf16", compiled=True)))
        sides.append(("fast + torch.compile", run("fast", compiled=True)))
    return sides


def row(kind: str, side: str, r: dict, flops: float, today: dict) -> list:
    if "error" in r:
        return [kind, side, "failed", r["error"], "", "", "", "", ""]
    ratio = lambda key: (f"{r[key] / today[key]:.2f}x" if "error" not in today else "")
    return [kind, side, r["engine"], f"{r['rate']:,.0f}", f"{r['steady_rate']:,.0f}",
            f"{r['steady_rate'] * flops / 1e12:.1f}", ratio("rate"), ratio("steady_rate"),
            f"{r['peak_gib']:.1f}"]


def run(opts) -> list:
    if not torch.cuda.is_available():
        print("SKIP bench_image_gpu: no CUDA device")
        return []
    torch.backends.cudnn.benchmark = True      # as a trial's first steps would settle it
    n, epochs = (BATCH * 40, 2) if opts.quick else (BATCH * 150, 3)
    images = random_images(n + 2 * N_CLASSES, "cuda")
    rows, out = [], []
    for kind in ("cnn", "mixed"):
        flops = flops_per_member_image(kind, 10)
        train_rate(images, kind, 10, "fast", 1)               # cuDNN's choices, allocator warm
        sides = kind_sides(images, kind, epochs, opts)
        today = sides[0][1]
        for side, r in sides:
            rows.append(row(kind, side, r, flops, today))
            out.append({"kind": kind, "side": side, "flops_per_member_image": flops, **r})
            print(" | ".join(rows[-1]), flush=True)
    table(f"{torch.cuda.get_device_name()}: image members M = 10, batch {BATCH} unless named, "
          f"3x32x32, {n} images x {epochs} epochs, Adam + s-BFN and MoE heads",
          ["ensemble", "side", "engine ran", "member-images/s (run)", "(steady epochs)",
           "TFLOP/s (steady)", "vs today (run)", "(steady)", "peak GiB"], rows)
    for kind in ("cnn", "mixed"):
        fast = next(r for r in out if r["kind"] == kind and r["side"] == "fast")
        today = next(r for r in out if r["kind"] == kind and r["side"] == "today")
        if "error" not in fast and "error" not in today:
            target(f"{kind} M = 10, fast vs today (steady)",
                   fast["steady_rate"] / today["steady_rate"], 5.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke-test sizes (seconds)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--compile", action="store_true",
                        help="add the sides with the members' forward through torch.compile")
    parser.add_argument("--batches", type=int, nargs="*", default=[],
                        help="add the fast side at these batch sizes")
    parser.add_argument("--no-packed", dest="packed", action="store_false",
                        help="leave out the five-ε packed side")
    args = parser.parse_args()
    rows = run(args)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
