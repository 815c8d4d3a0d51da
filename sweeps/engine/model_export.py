"""A finished sweep's configuration as a saved model: refitted by the estimators, saved, logged.

    python -m sweeps.export RESULTS [--config ID] [--fold K] --out DIR     (sweeps/export.py)
    SweepResult.open(RESULTS).best_model(save_to=DIR)                       (sweeps/api.py)

    RESULTS (sweep.json + records) -> each configuration's full config (recorded_configs)
      -> the configuration (SweepResult.best, or --config) and its model's best setting
      -> kept: fold K's model as the trial fitted it, where the sweep ran with
         --keep-models best and K is the best configuration's (<results>/models/, engine/
         trainable.py): nothing trains, and its test predictions are the record's exactly
      -> else refit: SBFNRegressor / SBFNClassifier with the recorded settings, the model as the
         combiner and that setting, fitted on the trial's own rows (one fold of run_trial's
         loop, sbfn_dist.interfaces.estimators), seeded as the trial seeded that fold
      -> DIR (sbfn_dist.interfaces.saved) -> an MLflow pyfunc model under the sweep's run
         (sweeps.engine.tracking.serving: the model a server answers with, and its input checks)

Its rooms: results/recorded.py (the sweep read back), results/refit.py (the rows and the refit),
tracking/mlflow_model.py (the MLflow model), tracking/serving.py (what it answers when served).
"""
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.collect import sweep_info
from sbfn_dist.interfaces import saved
from sbfn_dist.settings.tasks import TASKS
from sweeps.engine.common.next_steps import console_script, interpreter
from sweeps.engine.common.tracking_uri import hide, mask
from sweeps.engine.results.recorded import ExportError, Finished, check_recorded, tracking_store
from sweeps.engine.results.refit import Refit, refit
from sweeps.engine.tracking.mlflow_model import Logged, log_model
from sweeps.engine.tracking.mlflow_runs import first_line
# pyfunc_model too: models logged before 2026-11-28 import it from here, by the name this module
# had then, sweeps.engine.export (sweeps/engine/__init__.py, MOVED).
from sweeps.engine.tracking.serving import pyfunc_model  # noqa: F401


@dataclass
class Exported:
    path: Path
    trial_id: str
    model: str
    model_params: dict
    refit: Refit
    recorded: dict           # the record's scores of the refitted split ({}: the final model)
    logged: Logged | None
    note: str = ""           # why it was not logged to MLflow
    failed: bool = False     # logging was asked for and failed
    partial: str = ""        # what the sweep lacks, where it is partial (analysis' rule)
    uninformative: bool = False     # the model beat the constant guess in no configuration
    learned_instead: list = field(default_factory=list)    # the models that did, if any


def export(finished: Finished, config: dict, model: str, model_params: dict, out,
           fold: int | None = None, mlflow_uri: str | None = None,
           mlflow: bool = True) -> Exported:
    """The configuration's `model` at `model_params` (kept by the sweep, else refitted: refit),
    saved to `out` and logged."""
    rows = finished.frame[finished.frame["trial_id"] == config["trial_id"]]
    config = check_recorded(config, rows)
    saved.check_target(out)          # before the refit's minutes, not after
    made = refit(config, model, model_params, fold, finished.store)
    recorded = {} if made.fold is None else _record(rows, made.fold, model, model_params)
    source = {"sweep": finished.spec["name"], "results": finished.store.location,
              "trial_id": config["trial_id"], "model": model, "model_params": model_params,
              "how": made.how, "fold": made.fold, "rows": made.what, "n_rows": made.n_rows,
              "scores": made.scores, "recorded_scores": recorded}
    path = saved.save(made.estimator, out, source=source)
    exported = Exported(path, config["trial_id"], model, model_params, made, recorded, None,
                        partial=sweep_info(finished.spec["name"], finished.store.location,
                                           finished.frame, finished.spec).partial)
    uri = hide(mlflow_uri) or tracking_store(finished)
    if not mlflow:
        return exported
    if not uri:
        exported.note = ("not logged to MLflow: the sweep has no tracking store in its results "
                         "directory (it ran with --no-mlflow, or logged to a server): pass "
                         "--mlflow-uri URI to log it")
        return exported
    try:
        tags = {"sweep": finished.spec["name"], "trial_id": config["trial_id"],
                "model": model, "fold": "all" if made.fold is None else str(made.fold)}
        exported.logged = log_model(finished, path, made, _model_name(config, made.fold), tags,
                                    uri)
    except Exception as exc:  # noqa: BLE001 - MLflow, HTTP, sqlite errors: the model is saved
        exported.note = (f"not logged to MLflow ({type(exc).__name__}: {first_line(exc)}); the "
                         "model is saved: run the export again once the tracking store answers")
        exported.failed = True
    return exported


def _record(rows: pd.DataFrame, fold: int, model: str, model_params: dict) -> dict:
    """The record of the refitted split's model and setting: its scores, if it is ok."""
    mine = rows[(rows["fold"] == fold) & (rows["model"] == model)
                & (rows["model_params"] == json.dumps(model_params))]
    if not len(mine):
        raise ExportError(f"{rows['trial_id'].iloc[0]} has no record of {model} "
                          f"{json.dumps(model_params)} on fold {fold}: pass --fold one it ran")
    row = mine.iloc[0]
    if row["status"] != "ok":
        raise ExportError(f"{row['trial_id']} {row['status']} on fold {fold} "
                          f"({str(row.get('error', ''))[:200]}): export another fold (--fold) "
                          "or configuration (--config)")
    return {s: float(row[s]) for s in TASKS[row["task"]].scores if s in row}


def _model_name(config: dict, fold: int | None) -> str:
    """The MLflow model's name: the configuration's key, and the split it was refitted on,
    without the characters MLflow refuses in one (a key holds "." as in eps0.35)."""
    name = config["trial_id"] if fold is None else f"{config['trial_id']}-fold{fold}"
    return re.sub(r"[/:.%\"']", "_", name)


def report(exported: Exported) -> list[str]:
    """What an export did, in lines: where it is, what it trained on, its score against the
    record, how to load and serve it."""
    made, name = exported.refit, type(exported.refit.estimator).__name__
    setting = " ".join(f"{k}={v}" for k, v in exported.model_params.items())
    lines = [f"exported {exported.trial_id}: {exported.model}{' ' + setting if setting else ''}"
             f", {_how(made)} on {made.what}, {made.n_rows} rows -> {exported.path}"]
    if exported.partial:
        lines.append(f"  {exported.partial}: the configuration is the best of those present; "
                     "--resume the sweep to finish it, then export again")
    if made.scores:
        recorded = exported.recorded
        lines.append("  held-out rows: " + ", ".join(
            f"{k} {v:.6g}" + (f" (recorded {recorded[k]:.6g})" if k in recorded else "")
            for k, v in made.scores.items()) + _against_majority(made))
    if exported.uninformative:
        lines.append(f"  {_uninformative_note(exported)}")
    code = saved.read_manifest(exported.path).get("code", [])
    trust = f", trust_plugins=True)   # its members: {', '.join(code)}" if code else ")"
    lines.append(f"  load it: from sbfn_dist.interfaces.estimators import {name}; "
                 f"{name}.load({str(exported.path)!r}{trust}")
    if exported.logged:
        lines += _serving(exported.logged)
    elif exported.note:
        lines.append(f"  {exported.note}")
    return lines


def _against_majority(made: Refit) -> str:
    """A classifier's held-out accuracy beside the constant guess's: 0.42 reads as learned
    only against the 0.33 of always answering the majority class."""
    if made.majority is None:
        return ""
    return f"; always answering the majority class: accuracy {made.majority:.6g}"


def _uninformative_note(exported: Exported) -> str:
    """Why the exported model is the best of models that learned nothing, and what to try."""
    others = (f", or rank by a combiner that learned (--objective "
              f"{' | '.join(exported.learned_instead)})" if exported.learned_instead else "")
    return (f"note: {exported.model} beat the constant guess in no configuration (it was right "
            "on no more of the rows it was fitted on than their majority class): this is the "
            "best of them, and predicts little better than the class prior; train longer "
            f"(--set epochs=N) or with more members{others}")


def _how(made: Refit) -> str:
    """refitted, or kept: the sweep's own fitted model, no refit."""
    return "refitted" if made.how == "refitted" else "kept from the sweep (no refit), trained"


def _serving(logged: Logged) -> list[str]:
    serve = console_script("mlflow", "models", "serve", "-m", logged.uri, "--env-manager",
                           "local", "-h", "127.0.0.1", "-p", "5001")
    return [f"  MLflow: {logged.uri}, logged under the sweep's run {logged.run_id} "
            f"({mask(logged.tracking_uri)})",
            f"  serve it: MLFLOW_TRACKING_URI={shlex.quote(mask(logged.tracking_uri))}"
            f"{_scripts_on_path()} {serve}"]


def _scripts_on_path() -> str:
    """`mlflow models serve` starts uvicorn by name: where this environment's scripts are not
    on PATH (a virtual environment not activated), the command puts them there."""
    if shutil.which("uvicorn"):
        return ""
    return f' PATH="{os.path.dirname(interpreter())}:$PATH"'
