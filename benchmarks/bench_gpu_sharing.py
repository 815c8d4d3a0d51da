"""GPU sharing: aggregate member-images/s of 4 processes on one GPU (what 4 trials at 0.25 GPU
do) vs 1, with the GPU time-sliced between them (the default) and under CUDA MPS.

Ray's fractional GPUs are logical: four 0.25-GPU trials are four processes on one card, each
capping its memory at a quarter (as sweeps/engine/run/trial.py does). This benchmark runs exactly
that, without Ray (the GPU machine has no Ray): P worker processes start together, each trains
an M-member stack with the library's loop (`train_cnn_pack`: bf16 + the CUDA graph, both heads,
benchmarks.bench_image_gpu.train_rate) on random CIFAR-shaped images for a fixed time, and counts
member-images; the aggregate is their sum over the time from the common start to the last end.

Without MPS the processes' CUDA contexts take turns on the GPU: one kernel stream at a time, so a
step of small kernels (a few channels per member) leaves most of the SMs idle while the GPU
reads "busy". Under MPS (a daemon of the benchmark's own, as a sweep starts one:
sweeps/engine/run/mps.py) kernels of the four processes run at once.
`--mps` adds that side where `nvidia-cuda-mps-control` exists. Needs CUDA.

    python -m benchmarks.bench_gpu_sharing [--quick] [--mps] [--stacks cnn:2 mixed:5] [--json FILE]
"""

import argparse
import json
import multiprocessing as mp
import shutil
import time

import torch

from benchmarks.bench_image_gpu import BATCH, N_CLASSES, random_images, train_rate
from benchmarks.common import table
from sweeps.engine.run.mps import CONTROL, MpsError, daemon_while

SECONDS, STEPS, PROCESSES = 8.0, 100, 4
STACKS = (("cnn", 2), ("mixed", 5), ("resnet", 5))


def worker(share: float, kind: str, m: int, seconds: float, start, out) -> None:
    try:
        torch.cuda.set_per_process_memory_fraction(share)
        images = random_images(STEPS * BATCH + 2 * N_CLASSES, "cuda")
        train_rate(images, kind, m, "fast", 1)             # cuDNN's choices, the allocator
        start.wait()
        begin, done = time.time(), 0
        while time.time() - begin < seconds:
            train_rate(images, kind, m, "fast", 2)
            done += 2 * len(images.train_y) * m
        out.put((begin, time.time(), done))
    except Exception as exc:          # a side that cannot run is a finding, not a hang
        out.put(f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")


def aggregate(processes: int, kind: str, m: int, seconds: float) -> float:
    """Member-images/s of `processes` workers together (an error line if one failed)."""
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(processes), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(1 / processes, kind, m, seconds, start, out))
             for _ in range(processes)]
    for p in procs:
        p.start()
    try:
        got = [out.get(timeout=seconds + 60) for _ in procs]
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
    errors = [g for g in got if isinstance(g, str)]
    if errors:
        raise RuntimeError(errors[0])
    return sum(g[2] for g in got) / (max(g[1] for g in got) - min(g[0] for g in got))


def guarded(measure):
    try:
        return measure()
    except Exception as exc:
        return f"failed: {str(exc)[:160]}"


def run(quick: bool = False, mps: bool = False, stacks=STACKS) -> list:
    if not torch.cuda.is_available():
        print("SKIP bench_gpu_sharing: no CUDA device")
        return []
    seconds = 3.0 if quick else SECONDS
    sides = {"1 process": lambda k, m: aggregate(1, k, m, seconds),
             f"{PROCESSES}, time-sliced": lambda k, m: aggregate(PROCESSES, k, m, seconds)}
    found = {kind_m: {} for kind_m in stacks}
    for name, measure in sides.items():
        for kind, m in stacks:
            found[kind, m][name] = guarded(lambda: measure(kind, m))
    if mps and shutil.which(CONTROL) is None:
        print(f"MPS side skipped: no {CONTROL} on this machine")
    elif mps:
        name = f"{PROCESSES}, MPS"
        try:
            with daemon_while():
                for kind, m in stacks:
                    found[kind, m][name] = guarded(lambda: aggregate(PROCESSES, kind, m, seconds))
        except (OSError, MpsError) as exc:          # the other sides still report
            print(f"MPS side failed: {exc}")
    return report(found, seconds)


def report(found: dict, seconds: float) -> list:
    names = list(dict.fromkeys(n for sides in found.values() for n in sides))
    rows, out = [], []
    for (kind, m), sides in found.items():
        one = sides.get("1 process")
        cells = [f"{v:,.0f}" if isinstance(v, float) else v for v in sides.values()]
        ratios = [f"{v / one:.2f}x" if isinstance(v, float) and isinstance(one, float) else ""
                  for v in list(sides.values())[1:]]
        rows.append([kind, str(m), *cells, *ratios])
        out.append({"kind": kind, "m": m, **sides})
    table(f"{torch.cuda.get_device_name()}: member-images/s, M-member stack, bf16 + CUDA graph, "
          f"batch {BATCH}, 3x32x32, {seconds:g} s per side",
          ["ensemble", "M", *names, *[f"{n} vs 1" for n in names[1:]]], rows)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 s a side")
    parser.add_argument("--mps", action="store_true", help="add the side under CUDA MPS")
    parser.add_argument("--stacks", nargs="+", default=[f"{k}:{m}" for k, m in STACKS],
                        help="KIND:M stacks to measure")
    parser.add_argument("--json", help="also write the measurements to this file")
    opts = parser.parse_args()
    stacks = [(s.split(":")[0], int(s.split(":")[1])) for s in opts.stacks]
    out = run(opts.quick, opts.mps, stacks)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
