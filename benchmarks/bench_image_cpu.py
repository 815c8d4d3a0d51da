"""Image members on CPUs: the trial's training loop in the layout before (NCHW) vs what `auto`
runs now (channels_last), side by side.

Both sides run the library's one loop, `sbfn_dist.learners.training.train_cnn_pack`, fp32 and eager
(what a CPU trial resolves `precision` and `step_engine` to), with the two on-the-fly heads, on
random images (crop + flip where the data set has them), batch 128, Adam, 2 threads. They differ
only in the tensors' memory format, which `sbfn_dist.learners.steps.memory_format` picks: oneDNN's
convolutions run NHWC natively, so channels_last spares them a reorder of every activation and
gradient. Two shapes: CIFAR-10's 3x32x32 (per-member convolutions on a CPU) and digits' 1x8x8
(grouped ones). Each side is timed `repeats` times, interleaved; the ratio is the median of the
pairs'.

    python -m benchmarks.bench_image_cpu [--quick]
"""

import torch

from benchmarks.bench_image_gpu import BATCH, N_CLASSES, random_images, train_rate
from benchmarks.common import cli, compare, median, paired_ratio, table, target, threads

M = 5
SIDES = {"NCHW (before)": torch.contiguous_format, "channels_last (auto)": None}


def run(quick: bool = False) -> list:
    sizes = {"cifar10": BATCH * (3 if quick else 10), "digits": BATCH * (6 if quick else 40)}
    repeats = 2 if quick else 5
    rows, out = [], []
    with threads(2):
        for dataset, n in sizes.items():
            images = random_images(n + 2 * N_CLASSES, "cpu", dataset)
            for kind in ("cnn", "mixed"):
                sides = {name: (lambda fmt=fmt, kind=kind:
                                train_rate(images, kind, M, "today", 1, layout=fmt))
                         for name, fmt in SIDES.items()}
                for side in sides.values():      # first calls are slow (oneDNN's set-up)
                    side()
                times = compare(sides, repeats)
                before, now = times.values()
                ratio = paired_ratio(before, now)
                member_images = n * M
                rows.append([dataset, kind, f"{member_images / median(before):,.0f}",
                             f"{member_images / median(now):,.0f}", f"{ratio:.2f}x"])
                out.append({"dataset": dataset, "kind": kind, "ratio": ratio})
    table(f"CPU, 2 threads: image members M = {M}, batch {BATCH}, one epoch, fp32 eager, "
          f"Adam + s-BFN and MoE heads; member-images/s (median of {repeats}, interleaved)",
          ["shape", "ensemble", "NCHW (before)", "channels_last (auto)", "auto vs before"], rows)
    target("image members on CPU, auto vs the layout before (worst case)",
           min(r["ratio"] for r in out), 1.0)
    return out


def main() -> None:
    run(cli(__doc__.splitlines()[0]).quick)


if __name__ == "__main__":
    main()
