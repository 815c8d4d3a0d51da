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
setting of it, as the estimator it is (sbfn_dist.interfaces.saved):

    <results>/models/<trial_id>/fold-<k>/<model>_<setting>/    e.g. .../fold-1/sbfn_ls_lambda2-3.0

and the sweep's end deletes all but the best configuration's (sweeps.engine.export.keep_only).
"""

import json
import logging
import os
import re
import sys
import tempfile

import pyarrow.fs as pafs

from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.tasks import TASKS
from sweeps.engine.plan.planning import Planned, folds_of
from sweeps.engine.plan.grids import axis_text
from sweeps.engine.common.store import ResultStore

# The driver imports this module too (Tune is handed sweep_trainable; the progress line and
# MLflow read summarise): what trains (torch, the fold loop, the estimators) is imported inside
# the functions that run in a trial, so that a tabular sweep's driver never loads torch.


def _quiet_worker_exit(unraisable) -> None:
    """Ray ends a reused worker with SIGTERM, whose handler raises SystemExit wherever the worker
    is; inside a finaliser (a WeakSet's callback) Python cannot raise it and prints "Exception
    ignored ... Traceback" into the sweep's output. Nothing is lost there: say nothing."""
    if isinstance(unraisable.exc_value, SystemExit):
        return
    sys.__unraisablehook__(unraisable)


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
    _limit_device(gpu_fraction, threads)
    store = ResultStore(results_uri)
    _share_compile_cache(store, configs)
    keep = _keeper(store, keep_model)
    for config in configs:
        store.clear_failed(config["trial_id"])
    done = _restored_folds()
    records = {c["trial_id"]: [] for c in configs}
    failed: dict = {}                           # trial key -> the exception it raised
    folds = folds_of(configs[0])                # a pack's configurations share their folds
    # The folds each configuration has in the store: a trial rerun after a --resume reads them
    # back, and ASHA may stop it at a rung though its CV is whole (the progress line counts it).
    on_record = {c["trial_id"]: {k for k in folds if store.has_part(c["trial_id"], k)}
                 for c in configs}
    for fold in folds:
        parts, computed = _fold_parts(store, configs, fold, failed, keep)
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


def _fold_parts(store: ResultStore, configs: list[dict], fold, failed: dict,
                keep=None) -> tuple[dict, bool]:
    """The records on `fold` of each configuration not in `failed` (trial key -> exception),
    read back from the store, else computed and written; one that raises joins `failed`.
    Also: whether any was computed."""
    parts = {c["trial_id"]: store.read_part(c["trial_id"], fold) for c in configs
             if c["trial_id"] not in failed}
    todo = [c for c in configs if c["trial_id"] in parts and parts[c["trial_id"]] is None]
    for config, part in zip(todo, _run_fold(todo, fold, keep)):
        key = config["trial_id"]
        if isinstance(part, Exception):
            failed[key] = part
            del parts[key]
        else:
            store.write_part(key, fold, part)
            parts[key] = part
    return parts, bool(todo)


def _run_fold(configs: list[dict], fold, keep=None) -> list:
    """Each configuration's records on `fold`, or the exception it raised: the pack trains
    together, and if that raises, each configuration alone (only then is it known which)."""
    # Planned configurations, validated in the driver: trusted here (TrialConfig, not from_dict),
    # and one of their own folds keeps them valid.
    runs = [TrialConfig({**c, "fold": fold}) for c in configs]
    try:
        return _run_trials(runs, keep)
    except Exception as exc:  # noqa: BLE001 - a configuration's own error, recorded below
        if len(runs) == 1:
            return [exc]
    return [_alone(run, keep) for run in runs]


def _alone(run: TrialConfig, keep=None):
    try:
        return _run_trials([run], keep)[0]
    except Exception as exc:  # noqa: BLE001 - this configuration's error, raised at the end
        return exc


def _run_trials(runs: list, keep=None) -> list:
    """sbfn_dist.experiment.run_trials, imported here, where a trial runs (torch)."""
    from sbfn_dist.experiment import run_trials
    return run_trials(runs, keep)


# ------------------------------------------------------------------------- kept models
KEPT = "models"          # under the results directory


def kept_dir(trial_id: str, fold, model: str, model_params: dict) -> str:
    """Where a configuration's fitted `model` at `model_params` on `fold` is kept, relative to
    the results directory."""
    return f"{KEPT}/{trial_id}/fold-{fold}/{model}_{_setting_label(json.dumps(model_params))}"


def keepable(cfg: TrialConfig, model: str) -> bool:
    """Whether an estimator holds the trial's fitted `model`: a combiner of the task's estimator
    over the members alone (plug-in members, heterogeneous combiners: an export refits)."""
    from sbfn_dist.interfaces.estimators import COMBINERS
    return model in COMBINERS[cfg.task] and not cfg.get("plugin_members")


def _keeper(store: ResultStore, model: str):
    """run_trials' `keep` for --keep-models best: every setting of `model` that an estimator
    holds, saved per fold into the store; None when no model is kept."""
    if not model:
        return None

    def keep(cfg: TrialConfig, fold, members, name: str, params: dict, fitted) -> None:
        if name == model and keepable(cfg, name):
            from sbfn_dist.interfaces.estimators import estimator_from_fold
            estimator = estimator_from_fold(cfg.to_dict(), name, params, fold, members, fitted)
            _save_kept(store, estimator, kept_dir(cfg.trial_id, fold.index, name, params))
    return keep


def _save_kept(store: ResultStore, estimator, relative: str) -> None:
    """The estimator saved locally, then copied into the store (any pyarrow filesystem), its
    manifest last: the export takes a kept folder only with its manifest, so a copy cut short
    (a killed worker) is never half-read but refitted."""
    from sbfn_dist.interfaces import saved
    with tempfile.TemporaryDirectory() as d:
        saved.save(estimator, f"{d}/model")
        os.replace(f"{d}/model/{saved.MANIFEST}", f"{d}/{saved.MANIFEST}")
        local, target = pafs.LocalFileSystem(), f"{store.root}/{relative}"
        copy_directory(f"{d}/model", local, target, store.fs)
        pafs.copy_files(f"{d}/{saved.MANIFEST}", f"{target}/{saved.MANIFEST}",
                        source_filesystem=local, destination_filesystem=store.fs)


def copy_directory(source: str, source_fs, destination: str, destination_fs) -> None:
    """A directory copied between pyarrow filesystems (a saved model to or from the store)."""
    destination_fs.create_dir(destination, recursive=True)    # copy_files does not make it
    pafs.copy_files(source, destination, source_filesystem=source_fs,
                    destination_filesystem=destination_fs)


class PackMatesFailed(Exception):
    """Several configurations of a pack raised: each one's error (type: message) by trial key,
    for the `failed` row of each (sweeps.engine.progress.error_text)."""

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


def error_line(exc: BaseException) -> str:
    """An error as one line: its type and the last line of its message."""
    lines = str(exc).strip().splitlines() or [""]
    return f"{type(exc).__name__}: {lines[-1][:500]}"


def summarise_pack(records: dict, objective: str, on_record: dict | None = None) -> dict:
    """The pack's result: each configuration's running summary (under "configs", by key; one
    that failed has none; with `on_record`, key -> the folds it has in the store, their count as
    its "folds_recorded"), the folds done by all of them together, and the best objective among
    them (Tune's metric). trial_keys: every configuration of the pack, in its order."""
    per = {key: summarise(recs, objective) for key, recs in records.items() if recs}
    for key in per.keys() & (on_record or {}).keys():
        per[key]["folds_recorded"] = len(on_record[key])
    task = TASKS[next(recs for recs in records.values() if recs)[0]["task"]]
    scored = [k for k, s in per.items() if s["objective"] == s["objective"]]   # not NaN
    # The sweep's objective model where a configuration has it (not an M = 1 reference's mean)
    scored = [k for k in scored if per[k]["objective_model"] == objective] or scored
    best = min(scored, key=lambda k: task.sign() * per[k]["objective"], default=None)
    return {"configs": per, "trial_keys": list(records),
            "folds_done": sum(s["folds_done"] for s in per.values()),
            "not_ok": sum(s["not_ok"] for s in per.values()),
            "objective": per[best]["objective"] if best else float("nan"),
            "objective_model": per[best]["objective_model"] if best else "",
            "objective_key": best or ""}


def _limit_device(gpu_fraction: float, threads: int) -> None:
    import torch
    torch.set_num_threads(max(1, threads))
    if 0 < gpu_fraction < 1 and torch.cuda.is_available():
        # Fractional GPUs share memory with no isolation: cap each trial at its share.
        torch.cuda.set_per_process_memory_fraction(gpu_fraction)


# torch's compilation caches of a sweep's compiled stacks (step_compile), under its results
COMPILE_CACHE = "compile_cache"


def _share_compile_cache(store: ResultStore, configs: list[dict]) -> None:
    """A stack compiled by one trial is read back by every later process that trains it: the
    caches live in the results directory (a shared file system on a cluster), so compilation
    is paid once per sweep, not once per worker. Storage that is not a file system (s3://)
    leaves torch's own per-machine cache; a trial that compiles nothing leaves the setting."""
    from sbfn_dist.learners.steps import resolve_compile, share_compile_cache
    from sbfn_dist.runtime import resolve_device
    compiles = any(resolve_compile(c["step_compile"], resolve_device(c["device"])) == "on"
                   for c in configs if "step_compile" in c)      # planned: trusted, as run
    if compiles and isinstance(store.fs, pafs.LocalFileSystem):
        share_compile_cache(f"{store.root}/{COMPILE_CACHE}")


def _restored_folds() -> set:
    # Ray is imported where a trial runs, not where the driver plans: the sweep sets Ray's
    # environment before its first import (sweeps/engine/common/environment.py).
    from ray import tune
    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return set()
    with checkpoint.as_directory() as d:
        with open(os.path.join(d, "progress.json")) as f:
            return set(json.load(f)["done"])


def _report(metrics: dict, done: set) -> None:
    from ray import tune
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "progress.json"), "w") as f:
            json.dump({"done": sorted(done)}, f)
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))


def summarise(records: list[dict], objective: str) -> dict:
    """Running means over the folds done: metric/model (best setting) and metric/model/setting.

    `objective` is the model whose best mean drives search and "best so far" (falls back to
    the best model present, e.g. in the competitors trial)."""
    task = TASKS[records[0]["task"]]
    metric, sign = task.metric, task.sign()
    means: dict = {}
    for r in records:
        if r["status"] == "ok":
            means.setdefault((r["model"], r.get("model_params", "{}")), []).append(r[metric])
    out = {"folds_done": len({r["fold"] for r in records}),
           "not_ok": sum(r["status"] != "ok" for r in records)}
    best: dict = {}
    for (model, params), values in means.items():
        mean = sum(values) / len(values)
        out[f"{metric}/{model}/{_setting_label(params)}"] = mean
        if model not in best or sign * mean < sign * best[model]:
            best[model] = mean
    out.update({f"{metric}/{model}": v for model, v in best.items()})
    pick = objective if objective in best else min(best, key=lambda m: sign * best[m], default=None)
    out["objective"] = best[pick] if pick else float("nan")
    out["objective_model"] = pick or ""
    return out


def _setting_label(params: str) -> str:
    values = json.loads(params) if params else {}
    if not values:
        return "default"
    label = "_".join(f"{k}-{axis_text(v)}" for k, v in sorted(values.items()))
    return re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:120]  # MLflow's metric-name characters
