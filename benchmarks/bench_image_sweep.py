"""An image sweep end to end on one GPU: wall time, the GPU's busy share, and each trial's cost.

Runs `python -m sweeps.<dataset> --num-gpus 1 --splits S --no-mlflow` (the default grid: ε
{0, 0.1, 0.3, 0.5, 0.8} x M {2, 5, 10} x {mixed, cnn, resnet}, 10 epochs, full data) as a
subprocess while a thread samples the GPU's utilisation through NVML (the share of each
sampling period in which a kernel ran) every SAMPLE_S seconds. "busy after the first trial"
averages the samples from the moment the first trial's results land (its part file) to the
sweep's end: the target of issue 11 is >= 90%. --random-pixels times the sweep on random
images of the data set's shape (the timing does not depend on the pixels; the accuracy does).
Per-trial cost comes from the sweep's own records: member-training seconds of each (kind, M)
pack, so a reader can size a run on more GPUs. Needs CUDA and Ray.

    python -m benchmarks.bench_image_sweep [--dataset cifar10] [--splits 1] [--random-pixels]
        [--out summary.json] [-- extra sweep options]
"""

import argparse
import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

SAMPLE_S = 0.2
STOP_WAIT_S = 15          # for a sweep stopped from outside (pipeline.sh's GRACE_S is 40)
SHAPES = {"cifar10": (60000, 32, 32, 3), "fashion_mnist": (70000, 28, 28),
          "mnist": (70000, 28, 28)}


class Utilisation(threading.Thread):
    """(time, GPU utilisation %) every SAMPLE_S seconds until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples, self.stopped, self.handle = [], threading.Event(), None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception as exc:    # no NVML (no GPU, no driver): time the sweep all the same
            print(f"no GPU utilisation samples: {exc}")

    def run(self):
        while self.handle is not None and not self.stopped.wait(SAMPLE_S):
            rate = self.nvml.nvmlDeviceGetUtilizationRates(self.handle)
            self.samples.append((time.time(), rate.gpu))


def random_data_dir(dataset: str, root: pathlib.Path) -> pathlib.Path:
    """A data dir holding `dataset`'s npz with random pixels and labels of its shape."""
    rng = np.random.default_rng(0)
    n, *shape = SHAPES[dataset]
    n_test = 10000
    x = rng.integers(0, 256, (n, *shape), dtype=np.uint8)
    y = rng.integers(0, 10, n).astype(np.int64)
    (root / dataset).mkdir(parents=True, exist_ok=True)
    np.savez(root / dataset / f"{dataset}.npz", x_train=x[:-n_test], y_train=y[:-n_test],
             x_test=x[-n_test:], y_test=y[-n_test:])
    return root


def first_part_time(parts: pathlib.Path, since: float) -> float | None:
    """When this run's first fold ended: its first part (a resumed sweep's earlier parts, from
    another session, do not count)."""
    times = [f.stat().st_mtime for f in parts.glob("*.parquet")] if parts.is_dir() else []
    return min((t for t in times if t >= since), default=None)


def per_trial_cost(parts: pathlib.Path) -> list:
    """Member-training seconds per (kind, M) pack and split, from the records of the trials
    that finished (their part files: a sweep stopped early has no results.parquet)."""
    import pandas as pd
    df = pd.concat([pd.read_parquet(f) for f in sorted(parts.glob("*-f*.parquet"))])
    rows = df[df["model"] == "logit_mean"]
    cost = rows.groupby(["ensemble", "n_members", "fold"])["members_train_seconds"].sum()
    return [{"ensemble": k[0], "n_members": int(k[1]), "split": int(k[2]), "seconds": float(v)}
            for k, v in cost.items()]


def stopped_or_done(proc: subprocess.Popen):
    """The sweep's exit code; or, stopped from outside (SIGTERM: a time limit), the sweep is
    stopped as Ctrl-C would (what finished stays in its parts) and given STOP_WAIT_S to exit:
    then None if it is still stopping, so that this summary is written before a SIGKILL (a GPU
    sweep took over 40 s to stop Ray and its workers, 2026-11-27 and -28)."""
    stopping = threading.Event()

    def stop(*_):
        proc.send_signal(signal.SIGINT)
        stopping.set()
    signal.signal(signal.SIGTERM, stop)
    try:
        while proc.poll() is None:
            if stopping.wait(0.5):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=STOP_WAIT_S)
                break
        return proc.poll()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="cifar10", choices=tuple(SHAPES))
    p.add_argument("--splits", type=int, default=1)
    p.add_argument("--num-gpus", type=int, default=1)
    p.add_argument("--random-pixels", action="store_true")
    p.add_argument("--storage", default=None)
    p.add_argument("--name", default=None, help="the sweep's name (default bench-DATASET-S)")
    p.add_argument("--out", default=None)
    args, extra = p.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    storage = pathlib.Path(args.storage or tempfile.mkdtemp(prefix="bench-sweep-"))
    env = dict(os.environ)
    if args.random_pixels:
        env["SBFN_DATA_DIR"] = str(random_data_dir(args.dataset, storage / "random-data"))
    name = args.name or f"bench-{args.dataset}-{args.splits}"
    cmd = [sys.executable, "-m", f"sweeps.{args.dataset}", "--num-gpus", str(args.num_gpus), "--splits",
           str(args.splits), "--no-mlflow", "--storage", str(storage), "--name", name, *extra]
    sampler = Utilisation()
    sampler.start()
    begin = time.time()
    proc = subprocess.Popen(cmd, env=env)
    code = stopped_or_done(proc)
    end = time.time()
    sampler.stopped.set()
    first = first_part_time(storage / name / "parts", begin) or end
    after = [u for t, u in sampler.samples if t >= first]
    summary = {"command": " ".join(cmd), "exit": code, "random_pixels": args.random_pixels,
               "wall_s": end - begin, "first_trial_done_s": first - begin,
               "busy_after_first_pct": float(np.mean(after)) if after else float("nan"),
               "busy_all_pct": float(np.mean([u for _, u in sampler.samples] or [np.nan])),
               "samples": len(sampler.samples)}
    parts = storage / name / "parts"
    if parts.is_dir() and any(parts.glob("*.parquet")):
        summary["per_trial"] = per_trial_cost(parts)
    print(json.dumps({k: v for k, v in summary.items() if k != "per_trial"}, indent=1))
    for row in summary.get("per_trial", []):
        print(f"  {row['ensemble']:>6} M={row['n_members']:<3} split {row['split']}: "
              f"{row['seconds']:7.1f} s of member training")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    sys.exit(0 if main()["exit"] == 0 else 1)
