"""Ray overhead: the smoke regression sweep through Ray Tune vs the same trials in a plain loop.

Sides, measured in turn in one process:
- loop: every planned trial's folds through `run_trial`, one after another, in this process
  (what a hand-written script does; one core);
- tune xN: `run_sweep` with N concurrent trials on a fresh local Ray (num_cpus = 2), MLflow
  logging and results.parquet included; "end to end" adds ray.init + ray.shutdown.
Target (issue 4): tune x2 / loop <= 1.3 on 2 cores. Also reports the 1 -> 2 concurrency scaling.
The whole-grid throughput (regression80 x 10 folds on Air Quality) is a real run, not a
benchmark: see docs/results/ and docs/benchmarks.md.
"""

import os
import tempfile
import time

from benchmarks.common import cli, machine, median, table
from sbfn_dist.experiment import run_trial
from sweeps.engine.plan.grid_trials import smoke
from sweeps.engine.plan.planning import plan
from sweeps.engine.plan.planning import folds_of
from sweeps.engine.sweep import run_sweep
from sweeps.regression import build

TARGET_RATIO = 1.3


GRIDS = {  # name -> (sweep arguments, apply smoke())
    "smoke": (["--dataset", "diabetes", "--grid", "demo"], True),
    "quick": (["--dataset", "diabetes", "--grid", "demo", "--members", "2",
               "--competitors", "none"], True),
    "demo": (["--dataset", "diabetes", "--grid", "demo"], False),
}


def loop_side(spec, opts) -> float:
    start = time.perf_counter()
    for config in plan(spec, opts):
        for fold in folds_of(config):
            run_trial({**config, "fold": fold})
    return time.perf_counter() - start


def sweep(grid: str, *extra):
    args, tiny = GRIDS[grid]
    spec, _, opts = build(args + list(extra))
    return (smoke(spec) if tiny else spec), opts


def tune_side(grid: str, concurrent: int, storage: str, run: int) -> tuple[float, float]:
    """(end-to-end seconds including Ray start/stop, seconds of the sweep itself)."""
    import ray
    start = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")
    spec, opts = sweep(grid, "--storage", storage, "--name", f"{grid}-{concurrent}-{run}",
                       "--max-concurrent", str(concurrent))
    with open(os.devnull, "w") as quiet:
        outcome = run_sweep(spec, opts, out=quiet)
    ray.shutdown()
    return time.perf_counter() - start, outcome.seconds


def run(quick: bool) -> None:
    for grid in (["quick"] if quick else ["smoke", "demo"]):
        compare_grid(grid, repeats=2 if grid == "smoke" else 1)


def compare_grid(grid: str, repeats: int) -> None:
    spec, opts = sweep(grid, "--no-mlflow")
    n_trials, n_folds = len(plan(spec, opts)), sum(len(folds_of(c)) for c in plan(spec, opts))
    times = {"loop": [], "tune x1": [], "tune x2": []}
    sweep_only = {"tune x1": [], "tune x2": []}
    with tempfile.TemporaryDirectory() as storage:
        for r in range(repeats):
            for side in (["loop", "tune x2", "tune x1"] if r % 2 == 0 else ["tune x1", "tune x2", "loop"]):
                if side == "loop":
                    times[side].append(loop_side(spec, opts))
                else:
                    total, inner = tune_side(grid, int(side[-1]), storage, r)
                    times[side].append(total)
                    sweep_only[side].append(inner)
    loop = median(times["loop"])
    rows = [["loop (in-process, 1 core)", f"{loop:.1f}", "-", "1.00"]]
    for side in ("tune x1", "tune x2"):
        rows.append([side, f"{median(times[side]):.1f}", f"{median(sweep_only[side]):.1f}",
                     f"{median(times[side]) / loop:.2f}"])
    table(f"{grid} regression sweep on diabetes: {n_trials} trials, {n_folds} folds, "
          f"median of {repeats}", ["side", "end-to-end s", "sweep s", "ratio to loop"], rows)
    ratio = median(times["tune x2"]) / loop
    print(f"TARGET {grid}: tune x2 / loop wall time: {ratio:.2f} (target <= {TARGET_RATIO}) "
          f"{'PASS' if ratio <= TARGET_RATIO else 'MISS'}")
    print(f"RESULT {grid}: fixed cost of a sweep ~{median(sweep_only['tune x1']) - loop:.1f} s "
          f"over the loop at 1 concurrent trial")
    print(f"RESULT {grid}: scaling 1 -> 2 concurrent trials: "
          f"{median(sweep_only['tune x1']) / median(sweep_only['tune x2']):.2f}x")


if __name__ == "__main__":
    print(machine())
    run(cli(__doc__.splitlines()[0]).quick)
