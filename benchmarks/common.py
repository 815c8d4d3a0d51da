"""Shared helpers: thread limits, interleaved side-by-side timing, tables, target lines."""

import argparse
import contextlib
import os
import platform
import statistics
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits


@contextlib.contextmanager
def threads(n: int):
    """n intra-op threads for torch and for numpy's BLAS (a Ray trial gets one CPU: n = 1)."""
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(n):
            yield
    finally:
        torch.set_num_threads(old)


def seconds(fn, clock=time.perf_counter) -> float:
    """fn's duration on `clock`: wall time, or time.process_time (this process's CPU time, which
    other jobs on a shared machine do not inflate; for single-threaded CPU work)."""
    start = clock()
    fn()
    return clock() - start


def compare(sides: dict, repeats: int, clock=time.perf_counter) -> dict:
    """Time each side `repeats` times, in turn (A B, then B A, ...) so drift hits both alike.

    Returns {name: [seconds per repeat]} on `clock` (see seconds). Warm the sides up before
    (first calls are slow).
    """
    names = list(sides)
    times = {name: [] for name in names}
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            times[name].append(seconds(sides[name], clock))
    return times


def median(xs) -> float:
    return statistics.median(xs)


def paired_ratio(slow: list, fast: list) -> float:
    """Median over repeats of slow/fast, each pair measured back to back."""
    return statistics.median(s / f for s, f in zip(slow, fast))


def regression_data(n: int, p: int, seed: int = 0):
    """Synthetic regression problem: a smooth nonlinear target of p standard-normal features."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    w = rng.standard_normal(p) / np.sqrt(p)
    y = np.tanh(X @ w) + 0.3 * np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    return X.astype(np.float32), ((y - y.mean()) / y.std()).astype(np.float32)


def table(title: str, headers: list, rows: list) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    print(f"\n{title}")
    for k, row in enumerate(cells):
        print("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))))
        if k == 0:
            print("  " + "  ".join("-" * w for w in widths))


def target(label: str, measured: float, goal: float) -> bool:
    ok = measured >= goal
    print(f"TARGET {label}: {measured:.1f}x (target >= {goal:g}x) {'PASS' if ok else 'MISS'}")
    return ok


def machine() -> str:
    return (f"{platform.machine()} CPU, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"torch {torch.__version__}, numpy {np.__version__}")


def cli(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small smoke-test sizes (seconds)")
    return parser.parse_args()
