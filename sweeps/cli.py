"""Command-line options shared by every sweep command, and the error handling around them.

Bad input ends with one `error: ...` line that names the problem and the fix (exit 2); a sweep
whose trials failed after their retries lists them and exits 1; an interrupted sweep tells how
to resume it.
"""

import argparse
import shlex
import sys

from sbfn_dist.cli import parse_assignments
from sbfn_dist.errors import SbfnError
from sbfn_dist.usage import HelpFormatter, add_list_fields
from sweeps.packing import PACK_MODES
from sweeps.runner import SweepOptions, failed_trials, run_sweep
from sweeps.spaces import smoke
from sweeps.sweepfile import sweep_options


def common_parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description, formatter_class=HelpFormatter)
    g = p.add_argument_group("where and how to run")
    g.add_argument("--address", help="a running Ray cluster (HOST:PORT, ray://..., auto); "
                   "default: $RAY_ADDRESS if set, else start Ray on this machine, on 127.0.0.1")
    g.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default: all)")
    g.add_argument("--cpus-per-trial", type=float, default=1, help="CPUs of one trial; torch "
                   "threads follow it")
    g.add_argument("--num-gpus", type=float, default=0, help="GPUs to use (0: CPU only)")
    g.add_argument("--gpus-per-trial", type=float, default=None,
                   help="fraction of a GPU per trial (default 0.25 with GPUs: 4 trials share one)")
    g.add_argument("--max-concurrent", type=int, help="at most this many trials at once "
                   "(default: as many as the CPUs and GPUs fit)")
    g.add_argument("--max-failures", type=int, default=2, help="retries of a failed trial")
    g.add_argument("--pack", choices=PACK_MODES, default="auto",
                   help="auto: tabular configurations that can share a member stack train "
                   "together, one Ray trial per pack; on: image ones too (the epsilons of one "
                   "kind, M and split; slower per member on an H100, docs/sweeps.md); off: one "
                   "configuration per trial")
    g.add_argument("--storage", default="results", help="parent directory or pyarrow URI "
                   "(s3://bucket/prefix) of the sweep's results directory (default: results)")
    g.add_argument("--name", help="the sweep's name (default: DATASET-GRID[-smoke])")
    g.add_argument("--resume", action="store_true", help="continue the sweep of this name")
    g.add_argument("--mlflow-uri", help="MLflow tracking URI (default: sqlite store inside "
                   "the results directory)")
    g.add_argument("--no-mlflow", action="store_true", help="do not log to MLflow")
    g.add_argument("--dry-run", action="store_true", help="list the trials and resources; run nothing")
    g.add_argument("--smoke", action="store_true", help="a tiny version of the same sweep")
    g.add_argument("--data-dir", help="local data directory (default: SBFN_DATA_DIR, then cache/download)")
    g.add_argument("--search", choices=("grid", "optuna"), default="grid",
                   help="every point of the grid, or Optuna's TPE over its axes")
    g.add_argument("--num-samples", type=int, default=20, help="Optuna trials (--search optuna)")
    g.add_argument("--search-seed", type=int, default=0, help="seed of Optuna's sampler")
    g.add_argument("--objective", default="", help="model that search and 'best so far' use "
                   "(default: sbfn_ls for regression, sbfn for classification)")
    # Not a ListOf: a setting's own list value holds commas (--set lambda2=0,3,5).
    g.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="trial settings for every trial they apply to (e.g. --set epochs=3 "
                   "n_train=5000); one that applies to no trial is refused. Every setting, its "
                   "default and where it applies: --list-fields")
    add_list_fields(p)
    return p


def options(args, default_name: str, default_objective: str) -> SweepOptions:
    """The flags as SweepOptions, translated as sweep files are (sweeps/sweepfile.py)."""
    return sweep_options({**vars(args), "mlflow": not args.no_mlflow}, default_name=default_name,
                         objective=default_objective, smoke=args.smoke,
                         overrides=parse_assignments(args.set),
                         command=" ".join(shlex.quote(a) for a in sys.argv))


def run(build, argv=None) -> int:
    """`build(argv) -> (spec, args, opts)`; runs it and turns errors into one clear line."""
    try:
        spec, args, opts = build(argv)
        if args.smoke:
            spec = smoke(spec)
        outcome = run_sweep(spec, opts)
    except SbfnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished folds are in results.parquet; continue with the same "
              "command plus --resume", file=sys.stderr)
        return 130
    failed = failed_trials(outcome.table) if outcome else {}
    if failed:
        print(f"error: {len(failed)} trials failed after their retries (listed above with their "
              "errors); fix the cause, then rerun with --resume: it keeps every finished fold",
              file=sys.stderr)
        return 1
    return 0
