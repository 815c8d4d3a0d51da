"""The Ray Tune function trainable: one trial = one pack of configurations, all their folds (or
one image split). A pack is one configuration, or several tabular ones whose members train as
one stack per fold (`sbfn_dist.experiment.run_trials`, `--pack auto`).

For each fold the trial computes the configurations whose part is not in the store yet, writes
each one's records to the store at once (nothing finished is lost if the driver dies), then
reports running means per configuration and checkpoints which folds are done. A configuration
whose fold is already in the store (an earlier attempt, a resumed sweep) is read back, not
recomputed: retries and --resume work per configuration. A configuration that raises fails
alone: its pack-mates finish, as they would in trials of their own (`--pack off`).

With --keep-models best, each fold also saves each configuration's objective model, every
setting of it, as the estimator it is (run/kept.py says where).

The driver imports this module (Tune is handed sweep_trainable): what trains -- torch, the fold
loop, the estimators -- is run/trial.py, imported where a trial runs (the one import inside a
function on this floor), so that a tabular sweep's driver never loads torch.
"""

import contextlib
import json
import logging
import os
import sys
import tempfile

from ray import tune

from sweeps.engine.common.collector import import_then_freeze
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan.planning import Planned
from sweeps.engine.run.fold_means import error_line, summarise_pack


# Tune's logger in a trial's worker: its INFO lines say what the sweep's progress line says.
TRIAL_LOGGER = "ray.tune.trainable.trainable"


def quiet_trial_logs() -> None:
    """Warnings and errors only from Tune's trainable logger in this worker (run at its start:
    sweeps.engine.run.resources.QUIET_WORKERS), whose "Restored ... from checkpoint" after a
    --resume was printed after the sweep's summary, and in colour into a file."""
    logging.getLogger(TRIAL_LOGGER).setLevel(logging.WARNING)


def _quiet_worker_exit(unraisable) -> None:
    """Ray ends a reused worker with SIGTERM, whose handler raises SystemExit wherever the worker
    is; inside a finaliser (a WeakSet's callback) Python cannot raise it and prints "Exception
    ignored ... Traceback" into the sweep's output. Nothing is lost there: say nothing."""
    if isinstance(unraisable.exc_value, SystemExit):
        return
    sys.__unraisablehook__(unraisable)


def _trial_module():
    """run/trial.py, imported where the trial runs (the docstring): on a worker's first trial
    with the collector paused, then what the worker holds frozen (common/collector.py)."""
    first = "sweeps.engine.run.trial" not in sys.modules
    with import_then_freeze() if first else contextlib.nullcontext():
        from sweeps.engine.run import trial  # torch: here, where the trial runs (the docstring)
    return trial


def sweep_trainable(params: dict, *, plan: Planned, results_uri: str, objective: str,
                    gpu_fraction: float = 0.0, threads: int = 1, keep_model: str = "") -> None:
    """Tune function trainable over one pack: `params` is its Tune config (planned points, or a
    sampled sweep's draw, which the plan plans on arrival), whose configurations it runs as
    planned (sweeps.engine.plan.planning). Never returns a value (Tune's metric lookup).

    Pack-mates are independent: a configuration that raises is set aside (its pack-mates go on
    through every fold), and the trial raises its error at the end, so that Tune retries the
    trial: the retry reads the others back from the store and recomputes only the failed one.
    keep_model: the model whose fitted folds are kept (--keep-models best), "" none."""
    configs = plan.configs_of(params)
    logging.getLogger("ray.train").setLevel(logging.WARNING)  # one "checkpoint saved" per fold
    sys.unraisablehook = _quiet_worker_exit
    trial = _trial_module()
    store = ResultStore(results_uri)
    trial.prepared(store, configs, gpu_fraction, threads)
    keep = trial.keeper(store, keep_model)
    for config in configs:
        store.clear_failed(config.trial_id)
    done = _restored_folds()
    records = {c.trial_id: [] for c in configs}
    failed: dict = {}                           # trial key -> the exception it raised
    folds = configs[0].fold_indices()           # a pack's configurations share their folds
    # The folds each configuration has in the store: a trial rerun after a --resume reads them
    # back, and ASHA may stop it at a rung though its CV is whole (the progress line counts it).
    on_record = {c.trial_id: {k for k in folds if store.has_part(c.trial_id, k)}
                 for c in configs}
    for fold in folds:
        parts, computed = _fold_parts(store, configs, fold, failed, trial.run_fold, keep)
        if not parts:
            break                               # every configuration failed: nothing to report
        for key, part in parts.items():
            records[key] += part
            on_record[key].add(fold)
        done.add(fold)
        # fold_computed tells the progress line which folds cost time (read-backs do not).
        # fold: the fold just done (MLflow logs its own scores at that step).
        _report({**summarise_pack(records, objective, on_record), "fold": fold,
                 "folds_planned": len(folds), "fold_computed": computed}, done)
    if failed:
        raise _failure(failed)


def _fold_parts(store: ResultStore, configs: list, fold, failed: dict, run_fold,
                keep=None) -> tuple[dict, bool]:
    """The records on `fold` of each configuration not in `failed` (trial key -> exception),
    read back from the store, else computed and written; one that raises joins `failed`.
    Also: whether any was computed."""
    parts = {c.trial_id: store.read_part(c.trial_id, fold) for c in configs
             if c.trial_id not in failed}
    todo = [c for c in configs if c.trial_id in parts and parts[c.trial_id] is None]
    for config, part in zip(todo, run_fold(todo, fold, keep)):
        key = config.trial_id
        if isinstance(part, Exception):
            failed[key] = part
            del parts[key]
        else:
            store.write_part(key, fold, part)
            parts[key] = part
    return parts, bool(todo)


class PackMatesFailed(Exception):
    """Several configurations of a pack raised: each one's error (type: message) by trial key,
    for the `failed` row of each (sweeps.engine.run.progress.error_text)."""

    def __init__(self, errors: dict):
        super().__init__(errors)
        self.errors = errors

    def __str__(self) -> str:
        return "; ".join(f"{key}: {error}" for key, error in self.errors.items())


def _failure(failed: dict) -> Exception:
    """What the trial raises: the one configuration's own exception (its traceback in Tune's
    error.txt), or all of them by key."""
    if len(failed) == 1:
        return next(iter(failed.values()))
    return PackMatesFailed({key: error_line(exc) for key, exc in failed.items()})


def _restored_folds() -> set:
    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return set()
    with checkpoint.as_directory() as d:
        with open(os.path.join(d, "progress.json")) as f:
            return set(json.load(f)["done"])


def _report(metrics: dict, done: set) -> None:
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "progress.json"), "w") as f:
            json.dump({"done": sorted(done)}, f)
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))
