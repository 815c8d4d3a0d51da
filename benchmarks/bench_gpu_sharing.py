"""GPU sharing: aggregate images/s of 4 processes on one GPU (what 4 trials at 0.25 GPU do) vs 1.

Ray's fractional GPUs are logical: four 0.25-GPU trials are four processes on one card, each
capping its memory at a quarter (as sweeps/engine/trainable.py does). This benchmark runs exactly
that, without Ray (the GPU machine has no Ray): P worker processes start together, each trains
an M-member CNN stack (ε-WTA cross-entropy, Adam, CIFAR-sized random batches) for a fixed
time, and reports images/s; the aggregate is the sum. Needs CUDA.

    python -m benchmarks.bench_gpu_sharing [--quick]
"""

import multiprocessing as mp
import time

import torch

from benchmarks.bench_image_members import STEPS, vectorised_side
from benchmarks.common import cli, table

BATCH, SECONDS, WARMUP = 128, 10.0, 3


def worker(share: float, kind: str, m: int, seconds: float, start, out) -> None:
    torch.cuda.set_per_process_memory_fraction(share)
    x = torch.randn(BATCH, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (BATCH,), device="cuda")
    step = vectorised_side(kind, m, x, y)           # STEPS optimiser steps per call
    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    start.wait()
    begin, calls = time.perf_counter(), 0
    while time.perf_counter() - begin < seconds:
        step()
        calls += 1
    torch.cuda.synchronize()
    out.put(calls * STEPS * BATCH / (time.perf_counter() - begin))


def aggregate(processes: int, kind: str, m: int, seconds: float) -> list[float]:
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(processes), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(1 / processes, kind, m, seconds, start, out))
             for _ in range(processes)]
    for p in procs:
        p.start()
    rates = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return rates


def run(quick: bool = False) -> None:
    if not torch.cuda.is_available():
        print("SKIP bench_gpu_sharing: no CUDA device")
        return
    seconds = 5.0 if quick else SECONDS
    rows = []
    for kind, m in (("cnn", 5), ("mixed", 5)):
        one = sum(aggregate(1, kind, m, seconds))
        four = aggregate(4, kind, m, seconds)
        rows.append([kind, m, f"{one:,.0f}", f"{sum(four):,.0f}",
                     " / ".join(f"{r:,.0f}" for r in four), f"{sum(four) / one:.2f}x"])
    table(f"{torch.cuda.get_device_name()}: M-member stack, batch {BATCH}, 3x32x32, "
          f"{seconds:g} s per side", ["ensemble", "M", "1 process img/s", "4 processes img/s",
                                      "per process", "aggregate ratio"], rows)


if __name__ == "__main__":
    run(cli(__doc__.splitlines()[0]).quick)
