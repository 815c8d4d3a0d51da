"""A trial's work on its worker: the device it gets, its folds trained and scored
(sbfn_dist.experiment.run_trials, which imports torch), and the models it keeps. The trainable
imports this module where a trial runs, never where the driver plans (run/trainable.py).
"""

import os
import tempfile

import pyarrow.fs as pafs
import torch

from sbfn_dist.experiment import run_trials
from sbfn_dist.interfaces import saved
from sbfn_dist.interfaces.estimators import COMBINERS, estimator_from_fold
from sbfn_dist.learners.steps import resolve_compile, share_compile_cache
from sbfn_dist.runtime import resolve_device
from sbfn_dist.settings.config import TrialConfig
from sweeps.engine.common.store import ResultStore
from sweeps.engine.run.kept import copy_directory, kept_dir


def prepared(store: ResultStore, configs: list[TrialConfig], gpu_fraction: float,
             threads: int) -> None:
    """The worker set up for the trial's configurations: its threads and GPU share, and the
    compilation caches of the stacks it compiles."""
    _limit_device(gpu_fraction, threads)
    _share_compile_cache(store, configs)


def run_fold(configs: list[TrialConfig], fold, keep=None) -> list:
    """Each configuration's records on `fold`, or the exception it raised: the pack trains
    together, and if that raises, each configuration alone (only then is it known which)."""
    # Planned configurations, validated in the driver: trusted here, and one of their own
    # folds keeps them valid (with_values checks nothing again).
    runs = [c.with_values(fold=fold) for c in configs]
    try:
        return run_trials(runs, keep)
    except Exception as exc:  # noqa: BLE001 - a configuration's own error, recorded below
        if len(runs) == 1:
            return [exc]
    return [_alone(run, keep) for run in runs]


def _alone(run: TrialConfig, keep=None):
    try:
        return run_trials([run], keep)[0]
    except Exception as exc:  # noqa: BLE001 - this configuration's error, raised at the end
        return exc


def keepable(cfg: TrialConfig, model: str) -> bool:
    """Whether an estimator holds the trial's fitted `model`: a combiner of the task's estimator
    over the members alone (plug-in members, heterogeneous combiners: an export refits)."""
    return model in COMBINERS[cfg.task] and not cfg.get("plugin_members")


def keeper(store: ResultStore, model: str):
    """run_trials' `keep` for --keep-models best: every setting of `model` that an estimator
    holds, saved per fold into the store; None when no model is kept."""
    if not model:
        return None

    def keep(cfg: TrialConfig, fold, members, name: str, params: dict, fitted) -> None:
        if name == model and keepable(cfg, name):
            estimator = estimator_from_fold(cfg.to_dict(), name, params, fold, members, fitted)
            _save_kept(store, estimator, kept_dir(cfg.trial_id, fold.index, name, params))
    return keep


def _save_kept(store: ResultStore, estimator, relative: str) -> None:
    """The estimator saved locally, then copied into the store (any pyarrow filesystem), its
    manifest last: the export takes a kept folder only with its manifest, so a copy cut short
    (a killed worker) is never half-read but refitted."""
    with tempfile.TemporaryDirectory() as d:
        saved.save(estimator, f"{d}/model")
        os.replace(f"{d}/model/{saved.MANIFEST}", f"{d}/{saved.MANIFEST}")
        local, target = pafs.LocalFileSystem(), f"{store.root}/{relative}"
        copy_directory(f"{d}/model", local, target, store.fs)
        pafs.copy_files(f"{d}/{saved.MANIFEST}", f"{target}/{saved.MANIFEST}",
                        source_filesystem=local, destination_filesystem=store.fs)


def _limit_device(gpu_fraction: float, threads: int) -> None:
    torch.set_num_threads(max(1, threads))
    if 0 < gpu_fraction < 1 and torch.cuda.is_available():
        # Fractional GPUs share memory with no isolation: cap each trial at its share.
        torch.cuda.set_per_process_memory_fraction(gpu_fraction)


# torch's compilation caches of a sweep's compiled stacks (step_compile), under its results
COMPILE_CACHE = "compile_cache"


def _share_compile_cache(store: ResultStore, configs: list[TrialConfig]) -> None:
    """A stack compiled by one trial is read back by every later process that trains it: the
    caches live in the results directory (a shared file system on a cluster), so compilation
    is paid once per sweep, not once per worker. Storage that is not a file system (s3://)
    leaves torch's own per-machine cache; a trial that compiles nothing leaves the setting."""
    compiles = any(resolve_compile(c["step_compile"], resolve_device(c["device"])) == "on"
                   for c in configs if "step_compile" in c)      # planned: trusted, as run
    if compiles and isinstance(store.fs, pafs.LocalFileSystem):
        share_compile_cache(f"{store.root}/{COMPILE_CACHE}")
