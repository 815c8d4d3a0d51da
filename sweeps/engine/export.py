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
         (sweeps.engine.serving: the model a server answers with, and its input checks)

Which rows: a split that holds out a test set (published, holdout, the image splits) trains on
its training part -- split 0 unless --fold names another -- so the export is that split's
trial and its test score reproduces the record. k-fold CV trains the final model on all rows
(on the published training rows for fixed_train_kfold, whose test rows then score it);
--fold K refits fold K's training part instead, seeded as fold K was, so its score on fold K's
test rows is the record's (tables; image trials augment and hold out their own validation
images, the estimator does neither: close, not equal -- a kept image model is the trial's own).

A configuration's full config is rebuilt from its records (each row carries the settings its
model used) and sweep.json's shared settings, and checked against the digest in its trial_id
(sweeps.engine.plan.planning.trial_key): a config that would not give the same key is refused.
"""

import itertools
import json
import os
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.fs as pafs

from sbfn_dist.data.splits import fixed_split, validation_part
from sbfn_dist.errors import SbfnError
from sbfn_dist.evaluation.metrics import classification_scores, regression_metrics
from sbfn_dist.folds import load_data, make_parts
from sbfn_dist.interfaces import saved
from sbfn_dist.interfaces.estimators import COMBINERS, estimator_for
from sbfn_dist.learners.registry import kind_archs
from sbfn_dist.runtime import fold_seed
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.fields import BY_NAME, Int, Maybe, Real
from sbfn_dist.settings.records import COLUMNS
from sbfn_dist.settings.tasks import ITERATIVE, STACKED, TASKS
from analysis.collect import sweep_info
from sweeps.engine.common.environment import values_while
from sweeps.engine.common.next_steps import console_script, interpreter
from sweeps.engine.plan.planning import trial_key
# pyfunc_model too: models logged before sweeps/engine/serving.py import it from here.
from sweeps.engine.serving import (ARTIFACT, MODEL_CODE, TRUSTED, SavedSBFN,  # noqa: F401
                                   pyfunc_model)
from sweeps.engine.common.store import ResultStore
from sweeps.engine.run.kept import KEPT, copy_directory, kept_dir
from sweeps.engine.common.tracking_uri import hide, login, mask

# Settings the records carry as they ran (auto resolved to this machine's cuda, bf16, ...) where
# the planned config asked for them: the plan's value is the sweep's shared one, or the default.
RESOLVED = ("device", "precision", "step_engine", "step_compile")
EXAMPLE_ROWS = 3                 # rows of the MLflow model's input example


class ExportError(SbfnError):
    """A sweep, configuration or fold that cannot be exported; the message names the fix."""


# ------------------------------------------------------------------------- the sweep, read back
@dataclass
class Finished:
    """A sweep's results directory as the export reads it."""
    store: ResultStore
    spec: dict               # sweep.json
    frame: pd.DataFrame      # its records (results.parquet, else the parts of a stopped run)


def read_sweep(results: str) -> Finished:
    store = ResultStore(results)
    spec = store.require_spec()
    frame = store.read_records()
    if not len(frame):
        raise ExportError(f"the sweep at {store.root} has no records yet: let it finish a fold "
                          "(or --resume it)")
    return Finished(store, spec, frame)


def tracking_store(finished: Finished) -> str | None:
    """The sweep's own MLflow store when it logged to the default one (runner._tracking_store:
    sqlite in the results directory), else None."""
    db = f"{finished.store.root}/mlflow.db"
    return f"sqlite:///{db}" if finished.store.has("mlflow.db") else None


# ------------------------------------------------------------------------- configs from records
def recorded_configs(spec: dict, frame: pd.DataFrame) -> list[dict]:
    """Every configuration's full config (with its trial_id), rebuilt from its records and the
    sweep's shared settings; in the order sweep.json lists them."""
    by_id = dict(list(frame.groupby("trial_id", sort=False)))
    scored = set(frame.loc[frame["family"].isin(("sbfn", "competitor")), "trial_id"])
    # A configuration that failed on every fold names no model: nothing of it ranks or exports.
    # Sampled ones (a search over ranges) have keys the plan did not list: after the plan's.
    keys = list(dict.fromkeys([*spec["trial_ids"], *by_id]))
    configs = [recorded_config(spec, by_id[key], key) for key in keys if key in scored]
    # As planned where the key tells (an image split's or a per-fold trial's one fold: it
    # ranks by that fold alone); else as read, for check_recorded to refuse at an export.
    return [_keyed(c, by_id[c["trial_id"]]) or c for c in configs]


def recorded_config(spec: dict, rows: pd.DataFrame, trial_id: str) -> dict:
    """One configuration's config: the settings its rows carry over the sweep's shared ones,
    its models, its role; validated as a config is (what does not apply is left out)."""
    base = spec.get("base", {})
    values = {name: value for name in rows.columns if _is_setting(name)
              if (value := _recorded(rows[name], name)) is not None}
    values.update({name: base.get(name) for name in RESOLVED})
    values.update(_lists(rows), **_models(rows, base, spec["task"]))
    extra = {**base.get("extra", {}), "role": _first(rows.get("role", pd.Series(dtype=object)))
             or "ensemble"}
    config = {**base, **values, "extra": extra, "sweep": spec["name"]}
    cfg = TrialConfig.from_dict({k: v for k, v in config.items() if v is not None},
                                optional=set(config))
    return {**cfg.to_dict(), "trial_id": trial_id}


def _is_setting(column: str) -> bool:
    """A config field recorded as one column (lists and labels are read apart)."""
    return (column in BY_NAME and COLUMNS.get(column) is not None
            and COLUMNS[column].kind == "config" and column not in RESOLVED)


def _recorded(column: pd.Series, name: str):
    """The setting's value in the rows that carry it, as the config holds it (parquet gives
    numpy types, and integers as floats in a column with gaps)."""
    value = _first(column)
    if value is None:
        return None
    value = value.item() if isinstance(value, np.generic) else value
    integral = isinstance(value, float) and value.is_integer()
    if integral and isinstance(_unwrapped(BY_NAME[name].check), Int):
        return int(value)
    return value


def _first(column: pd.Series):
    present = column.dropna()
    return present.iloc[0] if len(present) else None


def _lists(rows: pd.DataFrame) -> dict:
    """The list settings, which records carry as JSON."""
    out = {}
    for name, column in (("lambda2", "lambda2_grid"), ("plugin_members", "plugin_members")):
        text = _first(rows[column]) if column in rows else None
        if text is not None:
            out[name] = json.loads(text)
    return out


def _models(rows: pd.DataFrame, base: dict, task: str) -> dict:
    """combiners and competitors: the models the rows name, in the order the config would list
    them (the shared settings', the task's, or the rows' own for competitors)."""
    plugins = set(_lists(rows).get("plugin_members", ()))
    order = list(dict.fromkeys([*base.get("combiners", ()), *TASKS[task].allowed]))
    combiners = sorted(_named(rows, "sbfn"), key=order.index)
    return {"combiners": combiners,
            "competitors": [c for c in _named(rows, "competitor") if c not in plugins]}


def _named(rows: pd.DataFrame, family: str) -> list:
    """The models of a family the rows name, in the order they first appear."""
    return list(dict.fromkeys(rows.loc[rows["family"] == family, "model"]))


def check_recorded(config: dict, rows: pd.DataFrame) -> dict:
    """The config as planned, found by the configuration's own key (the digest of every setting
    it changes, sweeps.engine.plan.planning.trial_key) among what its records may stand for."""
    found = _keyed(config, rows)
    if found is not None:
        return found
    raise ExportError(f"the records of {config['trial_id']} do not give back the settings it "
                      "ran with (their digest differs from its key): it cannot be refitted "
                      "faithfully; export another configuration (--config)")


def _keyed(config: dict, rows: pd.DataFrame) -> dict | None:
    """The reading of the records whose key is the configuration's own, or None."""
    digest = config["trial_id"].rsplit("_", 1)[-1]
    return next((c for c in _readings(config, rows)
                 if trial_key(TrialConfig(c), {}) == digest), None)


def _readings(config: dict, rows: pd.DataFrame):
    """The configs the records may stand for: a per-fold trial's names its fold, and a whole
    number in a column of floats may have been planned as an integer (epsilon: [0, 0.35] in a
    sweep file), which the key's digest tells apart."""
    folds = sorted(set(rows["fold"].dropna().astype(int)))
    whole = [k for k, v in config.items() if isinstance(v, float) and v.is_integer()
             and isinstance(_unwrapped(BY_NAME[k].check), Real)]
    for fold in [config.get("fold")] + folds[:1] * (len(folds) == 1):
        for ints in itertools.product((False, True), repeat=len(whole)):
            yield {**config, "fold": fold, **{k: int(config[k]) for k, i in zip(whole, ints) if i}}


def _unwrapped(check):
    return check.inner if isinstance(check, Maybe) else check


# ------------------------------------------------------------------------- the refit
@dataclass
class Refit:
    """An estimator refitted as a configuration's trial, and on which rows."""
    estimator: object
    fold: int | None             # the split whose training part it is, None: the final model
    n_rows: int
    what: str                    # the rows, in words
    scores: dict = field(default_factory=dict)     # on the held-out rows, where there are some
    example: object = None       # a few training rows, for the MLflow model's input example
    how: str = "refitted"        # or "kept": the sweep's own fitted model (--keep-models best)


def refit(config: dict, model: str, model_params: dict, fold: int | None = None,
          store: ResultStore | None = None) -> Refit:
    """The configuration's `model` at `model_params` on its rows: the model the sweep kept of
    that fold, where `store` holds one, else refitted by the estimators."""
    cfg = TrialConfig(config)
    _check_exportable(cfg, model)
    fold = _fold(cfg, fold)
    data = load_data(cfg)
    train, test, what = _rows(cfg, data, make_parts(cfg, data), fold)
    X, y = _inputs(data), data.y
    estimator = _kept(store, config, model, model_params, fold)
    how = "refitted" if estimator is None else "kept"
    if estimator is None:
        seed = cfg.seed if fold is None else fold_seed(cfg.seed, fold)
        train, what = _members_rows(cfg, model, data, train, seed, what)
        estimator = estimator_for(config, model, model_params, seed)
        estimator.fit(_take(X, train), y[train])
    _with_data_names(estimator, X, data.classes)
    scores = _scores(estimator, _take(X, test), y[test], data.classes) if len(test) else {}
    return Refit(estimator, fold, len(train), what, scores, _take(X, train[:EXAMPLE_ROWS]), how)


def _members_rows(cfg: TrialConfig, model: str, data, train, seed: int, what: str):
    """(rows, in words) the estimator fits on, seeded as the trial's fold (`seed`): a table
    classifier's trial whose stacked combiners held out a validation part trained its members
    and every other combiner without it (experiment._tabular_fold), so an export of another
    combiner leaves it out too; a stacked combiner's estimator holds out those rows itself."""
    if cfg.modality != "tabular" or not cfg.uses_validation() or model in STACKED:
        return train, what
    members, _ = validation_part(data.y, train, cfg.val_fraction, seed)
    return members, f"{what}, less the validation part its trial held out for stacked combiners"


def _with_data_names(estimator, X, classes) -> None:
    """The data's names on a model trained as the trial was, on class codes (the same
    stratified parts and member outputs) and a bare table: the saved model answers with the
    classes' names and knows the trial's columns, in their order, by name."""
    if classes is not None:
        estimator.classes_ = np.asarray(classes)[estimator.classes_]
    if isinstance(X, pd.DataFrame):
        estimator.feature_names_in_ = np.asarray(X.columns, dtype=object)


def _kept(store: ResultStore | None, config: dict, model: str, model_params: dict,
          fold: int | None):
    """The fitted model the sweep kept of `fold` (--keep-models best), or None: none kept there
    (another configuration, setting or fold, the final model of a CV, no store)."""
    if store is None or fold is None:
        return None
    relative = kept_dir(config["trial_id"], fold, model, model_params)
    if not store.has(f"{relative}/{saved.MANIFEST}"):
        return None
    with tempfile.TemporaryDirectory() as d:     # the store may be remote (s3://...)
        copy_directory(f"{store.root}/{relative}", store.fs, f"{d}/model", pafs.LocalFileSystem())
        # The member factories the configuration names are imported by a refit too: trusted as
        # much, and no other code a kept model might name.
        return saved.load(f"{d}/model", trust_factories=_factories(config))


def _factories(config: dict) -> list:
    """The member factories (package.module:build) a configuration's image members import."""
    return kind_archs(config["ensemble"]) if config.get("ensemble") else []


def keep_only(store: ResultStore, best, trials: list) -> None:
    """Delete every kept model (engine/trainable.py, --keep-models best) but those of `best`
    (the best configuration's CV-means row: model, model_params; None: delete all) that its
    `trials` kept (one, or one per split: sweeps.engine.ranking.trials_of)."""
    for trial in _listed(store, f"{store.root}/{KEPT}"):
        if best is None or _name(trial) not in trials:
            store.fs.delete_dir(trial)
            continue
        leaf = _name(kept_dir(best["trial_id"], 0, best["model"],
                              json.loads(best["model_params"] or "{}")))
        for fold in _listed(store, trial):
            for setting in _listed(store, fold):
                if _name(setting) != leaf:
                    store.fs.delete_dir(setting)


def _listed(store: ResultStore, directory: str) -> list[str]:
    """The directories directly under `directory` (none where it does not exist)."""
    found = store.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
    return [i.path for i in found if i.type == pafs.FileType.Directory]


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def check_ensemble(config: dict) -> None:
    """A competitor trial trains no members: nothing of it is an s-BFN model."""
    if not config.get("combiners"):
        raise ExportError(f"{config['trial_id']} is a competitor trial "
                          f"({', '.join(config.get('competitors', ()))}): exports are s-BFN "
                          "ensembles; pass --config a configuration that trains members")


def _check_exportable(cfg: TrialConfig, model: str) -> None:
    """What the estimators cannot refit is refused here, before any data is loaded."""
    check_ensemble(cfg.to_dict())
    if model not in COMBINERS[cfg.task]:
        raise ExportError(f"the model {model} cannot be exported: the estimators fit "
                          f"{', '.join(COMBINERS[cfg.task])}; choose one with --objective")
    if cfg.get("plugin_members"):
        raise ExportError(f"{cfg.trial_id} puts plug-in models beside its members "
                          f"({', '.join(cfg.plugin_members)}), which the estimators do not fit; "
                          "export a configuration without plugin_members")
    if model in ITERATIVE and cfg.online_regime != "on_the_fly":
        raise ExportError(f"{model} ran in the plug-in regime ({cfg.trial_id}); the estimators "
                          "replay the members' training stream: export another model "
                          "(--objective)")


def _fold(cfg: TrialConfig, fold: int | None) -> int | None:
    """The split to refit: the one asked for (one the configuration ran), else split 0 of a
    held-out scheme, else None (all rows of a cross-validation)."""
    ran = cfg.fold_indices()
    if fold is not None and fold not in ran:
        raise ExportError(f"--fold {fold}: {cfg.trial_id} ran folds {', '.join(map(str, ran))}")
    if fold is None and not _cross_validated(cfg):
        return ran[0]
    return fold


def _cross_validated(cfg: TrialConfig) -> bool:
    return cfg.modality == "tabular" and cfg.split in ("kfold", "fixed_train_kfold")


def _rows(cfg: TrialConfig, data, parts: list, fold: int | None):
    """(training rows, held-out rows, the rows in words)."""
    if fold is not None:
        train, test = _part(parts[fold])
        return train, test, PART_NAMES.get(cfg.split, "split {}'s training part").format(fold)
    if cfg.split == "fixed_train_kfold":
        train, test = fixed_split(data.fixed_test_mask)[0]
        return train, test, "the published training rows (scored on the published test rows)"
    return np.arange(len(data.y)), np.arange(0), f"all rows ({cfg.folds}-fold CV: the final model)"


PART_NAMES = {"kfold": "fold {}'s training part", "fixed_train_kfold": "fold {}'s training part",
              "fixed": "the published training rows"}


def _part(part) -> tuple:
    """A tabular part (train, test), or an image split, whose validation images join the
    training part (the estimator holds out its own)."""
    if isinstance(part, tuple):
        return part
    return np.sort(np.concatenate([part.train, part.val])), part.test


def _inputs(data):
    """Tables as a DataFrame, so the model knows its columns by name; images as arrays."""
    if hasattr(data, "feature_names"):
        return pd.DataFrame(data.X, columns=list(data.feature_names))
    return data.x


def _take(X, rows):
    return X.iloc[rows] if isinstance(X, pd.DataFrame) else X[rows]


def _scores(estimator, X, y, classes) -> dict:
    """The task's scores on held-out rows, as the records compute them."""
    if classes is None:
        return regression_metrics(y, estimator.predict(X))
    probs = np.zeros((len(y), len(classes)))
    codes = [list(classes).index(c) for c in estimator.classes_]
    probs[:, codes] = estimator.predict_proba(X)
    return classification_scores(probs, y)


# ------------------------------------------------------------------------- MLflow
@dataclass
class Logged:
    uri: str                 # models:/<id>
    tracking_uri: str
    run_id: str


def log_model(finished: Finished, directory: Path, refit_: Refit, name: str, tags: dict,
              tracking_uri: str) -> Logged:
    """The saved directory as an MLflow pyfunc model of the sweep's run (found by its role tag,
    or opened: sweeps.engine.tracking), with its signature and an input example."""
    import mlflow
    from mlflow.models import Model, infer_signature
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    from sweeps.engine.tracking import SweepTracker, client_environment
    spec = finished.spec
    sweep = {k: spec[k] for k in ("name", "grid", "dataset", "task")}
    artifacts = Path(finished.store.root, "mlartifacts").as_uri() if tracking_uri == \
        tracking_store(finished) else None
    example = refit_.example
    signature = infer_signature(example, _predicted(refit_.estimator, example))
    with client_environment(tracking_uri), _use_tracking_uri(login(tracking_uri).uri), \
            values_while(QUIET_MLFLOW), tempfile.TemporaryDirectory() as code:
        tracker = SweepTracker(tracking_uri, sweep, finished.store, artifacts)
        run = tracker.parent_id
        # Made here, in the sweep's experiment: Model.log would make it in MLflow's active
        # experiment (Default, its artifacts under ./mlruns), whatever run it names.
        model = tracker.client.create_logged_model(
            tracker.experiment_id, name, source_run_id=run, tags=tags,
            params={k: str(v) for k, v in refit_.estimator.get_params().items()})
        Path(code, "sbfn_pyfunc.py").write_text(MODEL_CODE)
        factories = saved.read_manifest(directory).get("code", [])
        Model.log(artifact_path=None, name=name, flavor=mlflow.pyfunc, run_id=run,
                  model_id=model.model_id, python_model=str(Path(code, "sbfn_pyfunc.py")),
                  artifacts={ARTIFACT: str(directory)}, signature=signature,
                  input_example=example, pip_requirements=requirements(),
                  model_config={TRUSTED: factories}, code_paths=factory_code(factories) or None)
    return Logged(f"models:/{model.model_id}", tracking_uri, run)


def factory_code(factories: list) -> list[str]:
    """The files of your member factories' top-level modules (a module, or a package's folder)
    that an MLflow model carries (code_paths: on sys.path where it loads, so that a server
    started anywhere imports them); installed packages' are requirements, not copied."""
    import importlib.util
    import sysconfig
    installed = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib",
                                                                    "stdlib")}
    out = []
    for top in dict.fromkeys(f.split(":")[0].split(".")[0] for f in factories):
        spec = importlib.util.find_spec(top)
        package = spec.submodule_search_locations        # a package's folder(s), else None
        where = Path(list(package)[0] if package else spec.origin).resolve()
        if not any(where.is_relative_to(i) for i in installed):
            out.append(str(where))
    return out


# What loading the model imports, pinned as installed here. Given, not inferred: MLflow's
# inference loads the model in a subprocess (seconds) and lists whatever the exporting process
# had imported (psutil, through Ray). sbfn-dist is this project (pip install -e . where it runs).
REQUIREMENTS = ("sbfn-dist", "torch", "numpy", "pandas", "scikit-learn", "skops", "mlflow")


def requirements() -> list[str]:
    from importlib.metadata import PackageNotFoundError, version
    out = []
    for name in REQUIREMENTS:
        try:
            out.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            out.append(name)
    return out


# MLflow draws a progress bar on stderr for every artifact it copies.
QUIET_MLFLOW = {"MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}


def _predicted(estimator, example):
    """What the pyfunc model answers for `example` (its signature's output)."""
    wrapper = SavedSBFN()
    wrapper.model = estimator
    return wrapper.predict(None, example)


# ------------------------------------------------------------------------- the export
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
        from sweeps.engine.tracking import first_line
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
            for k, v in made.scores.items()))
    code = saved.read_manifest(exported.path).get("code", [])
    trust = f", trust_plugins=True)   # its members: {', '.join(code)}" if code else ")"
    lines.append(f"  load it: from sbfn_dist.interfaces.estimators import {name}; "
                 f"{name}.load({str(exported.path)!r}{trust}")
    if exported.logged:
        lines += _serving(exported.logged)
    elif exported.note:
        lines.append(f"  {exported.note}")
    return lines


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
