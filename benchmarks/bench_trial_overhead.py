"""Per-trial overhead as a sweep grows: 1,000 one-configuration trials (2 folds, --pack off) on a
local Ray of 2 CPUs, the overhead of the first 100 trials against the last 100.

Each trial trains almost nothing (diabetes, 60 rows, M = 2, one epoch), so what a trial costs is
what the sweep spends around it: Tune's scheduling, the worker, the trial's parts and
checkpoints, the driver's callbacks. A trial's slot time is the time from its worker's previous
trial finishing to its own (each trial's finish: the last part it wrote); its overhead
subtracts the compute its records report (members, combiners and evaluation): what a trial
slot spends on anything but the trial's own work. Each window of `window` trials (in the order
they finished) reports medians, which other work on a shared machine moves less than means;
"between trials" is the window's mean time from one trial finishing to the next (the sweep's
pace). Target (issue 21): median overhead of the last window / the first <= 1.2 (the driver
used to rewrite results.parquet from every part at each trial's end: 0.40 s between trials at
the start of a 200-trial sweep, 2.08 s at its end). Also reported: the sweep's wall time, and
the most trials that ran at once. `--mlflow` logs to the sweep's sqlite MLflow store too (off by
default: the bookkeeping measured is the sweep's own).
"""

import argparse
import io
import os
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks.common import machine, table
from sweeps import Sweep
from sweeps.engine.sweep import run_sweep

TARGET_RATIO = 1.2
SLOTS = 2
SIZES = {"full": (1000, 100), "quick": (60, 20)}      # trials, window


def sweep(trials: int, storage: str, mlflow: bool) -> Sweep:
    return Sweep.from_dict({
        "name": f"overhead-{trials}", "dataset": "diabetes", "folds": 2, "references": False,
        "competitors": [], "storage": storage, "mlflow": mlflow,
        "axes": {"epsilon": [round(i / trials, 6) for i in range(trials)]},
        "settings": {"n_samples": 60, "epochs": 1, "n_members": 2},
        "resources": {"num_cpus": SLOTS, "pack": "off"}})


def trial_times(root: Path, trials: list[dict]) -> pd.DataFrame:
    """Per trial (its configuration's key), in the order they finished: when it finished (the
    last part it wrote), its worker process, and its slot time (since that worker's previous
    trial finished; none for a worker's first)."""
    finished: dict = {}
    for part in (root / "parts").glob("*-f*.parquet"):
        key = part.name.rsplit("-f", 1)[0]
        finished[key] = max(finished.get(key, 0.0), part.stat().st_mtime)
    worker = {key: t["pid"] for t in trials for key in t["trial_keys"]}
    times = pd.DataFrame({"finished": finished, "worker": worker}).sort_values("finished")
    times["slot_s"] = times.groupby("worker")["finished"].diff()
    return times


def compute_seconds(table_: pd.DataFrame) -> pd.Series:
    """Each trial's own compute per its records: per fold, the longest train time of a model
    (the members' and its combiner's fit) plus every model's evaluation."""
    folds = table_.groupby(["trial_id", "fold"]).agg(train=("train_seconds", "max"),
                                                     evaluate=("eval_seconds", "sum"))
    return (folds["train"] + folds["evaluate"]).groupby("trial_id").sum()


def window_costs(times: pd.DataFrame, compute: pd.Series, window: int) -> list[dict]:
    """Per window of `window` trials in the order they finished (the first and the last are the
    target's): the mean time between trials finishing, and median slot, compute and overhead
    seconds per trial."""
    times = times.assign(compute_s=compute.reindex(times.index))
    times["overhead_s"] = times["slot_s"] - times["compute_s"]
    out = []
    for start in range(0, len(times) - window + 1, window):
        part = times.iloc[start:start + window]
        between = (part["finished"].iloc[-1] - part["finished"].iloc[0]) / (len(part) - 1)
        out.append({"trials": f"{start + 1}-{start + window}", "between_s": between,
                    **part[["slot_s", "compute_s", "overhead_s"]].median().to_dict()})
    return out


def measure(trials: int, window: int, mlflow: bool) -> dict:
    with tempfile.TemporaryDirectory(dir="/tmp") as storage:
        definition = sweep(trials, storage, mlflow)
        load = os.getloadavg()[0]
        start = time.perf_counter()
        outcome = run_sweep(definition.spec, definition.options, out=io.StringIO())
        wall = time.perf_counter() - start
        root = Path(outcome.root)
        windows = window_costs(trial_times(root, outcome.trials),
                               compute_seconds(outcome.table), window)
    return {"trials": trials, "window": window, "wall_s": wall, "sweep_s": outcome.seconds,
            "max_running": outcome.max_running, "windows": windows,
            "load": (load, os.getloadavg()[0])}


def run(quick: bool = False, mlflow: bool = False) -> dict:
    trials, window = SIZES["quick" if quick else "full"]
    r = measure(trials, window, mlflow)
    rows = [[w["trials"], f"{w['between_s']:.3f}", f"{w['slot_s']:.3f}", f"{w['compute_s']:.3f}",
             f"{w['overhead_s']:.3f}"] for w in r["windows"]]
    table(f"{trials} one-configuration trials, 2 folds, --pack off, {SLOTS} CPUs"
          f"{', MLflow' if mlflow else ''}: seconds per trial, by the order trials finished",
          ["trials", "between trials s", "slot s (median)", "compute s (median)",
           "overhead s (median)"], rows)
    ratio = r["windows"][-1]["overhead_s"] / r["windows"][0]["overhead_s"]
    print(f"RESULT wall time {r['wall_s']:.0f} s (sweep {r['sweep_s']:.0f} s, Ray's start "
          f"included in wall), at most {r['max_running']} trials at once; load average "
          f"{r['load'][0]:.1f} before, {r['load'][1]:.1f} after (other work on the machine)")
    print(f"TARGET median per-trial overhead, last / first {window} trials: {ratio:.2f} "
          f"(target <= {TARGET_RATIO}) {'PASS' if ratio <= TARGET_RATIO else 'MISS'}"
          + (" (quick size: the target is for 1,000 trials)" if quick else ""))
    return r


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke-test sizes (seconds)")
    parser.add_argument("--mlflow", action="store_true", help="log to MLflow as well")
    args = parser.parse_args()
    print(machine())
    run(args.quick, args.mlflow)
