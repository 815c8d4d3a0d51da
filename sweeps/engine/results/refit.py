"""A configuration's model fitted again for its export (or read back where its trial kept it):
SBFNRegressor / SBFNClassifier with the recorded settings, the model as the combiner and that
setting, fitted on the trial's own rows (one fold of run_trial's loop,
sbfn_dist.interfaces.estimators), seeded as the trial seeded that fold.

Which rows: a split that holds out a test set (published, holdout, the image splits) trains on
its training part -- split 0 unless --fold names another -- so the export is that split's
trial and its test score reproduces the record. k-fold CV trains the final model on all rows
(on the published training rows for fixed_train_kfold, whose test rows then score it);
--fold K refits fold K's training part instead, seeded as fold K was, so its score on fold K's
test rows is the record's (tables; image trials augment and hold out their own validation
images, the estimator does neither: close, not equal -- a kept image model is the trial's own).
"""

import tempfile
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow.fs as pafs

from sbfn_dist.data.splits import fixed_split, validation_part
from sbfn_dist.evaluation.metrics import classification_scores, regression_metrics
from sbfn_dist.folds import load_data, make_parts
from sbfn_dist.interfaces import saved
from sbfn_dist.interfaces.estimators import COMBINERS, estimator_for
from sbfn_dist.learners.registry import kind_archs
from sbfn_dist.runtime import fold_seed
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.tasks import ITERATIVE, STACKED
from sweeps.engine.common.store import ResultStore
from sweeps.engine.results.recorded import ExportError
from sweeps.engine.run.kept import copy_directory, kept_dir


EXAMPLE_ROWS = 3                 # rows of the MLflow model's input example


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
    majority: float | None = None  # a classifier's: the held-out share of their commonest class


def refit(config, model: str, model_params: dict, fold: int | None = None,
          store: ResultStore | None = None) -> Refit:
    """The configuration's `model` at `model_params` on its rows: the model the sweep kept of
    that fold, where `store` holds one, else refitted by the estimators. `config`: a planned or
    recorded one (a TrialConfig, or its values as a dict), trusted."""
    cfg = TrialConfig.trusted(config)
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
    return Refit(estimator, fold, len(train), what, scores, _take(X, train[:EXAMPLE_ROWS]), how,
                 _majority(y[test], data.classes))


def _members_rows(cfg: TrialConfig, model: str, data, train, seed: int, what: str):
    """(rows, in words) the estimator fits on, seeded as the trial's fold (`seed`): a table
    classifier's trial whose stacked combiners held out a validation part trained its members
    and every other combiner without it (experiment._tabular_fold), so an export of another
    combiner leaves it out too; a stacked combiner's estimator holds out those rows itself."""
    if cfg.modality != "tabular" or not cfg.uses_validation() or model in STACKED:
        return train, what
    members, _ = validation_part(data.y, train, cfg.val_fraction, seed, data.classes)
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
    """Tables as a DataFrame, so the model knows its columns by name (and a CSV's columns their
    own dtypes: the MLflow signature is inferred from its rows); images as arrays."""
    if not hasattr(data, "feature_names"):
        return data.x
    frame = pd.DataFrame(data.X, columns=list(data.feature_names))
    return frame.astype(dict(zip(frame.columns, data.feature_dtypes or ())))


def _take(X, rows):
    return X.iloc[rows] if isinstance(X, pd.DataFrame) else X[rows]


def _majority(y, classes) -> float | None:
    """The accuracy of always answering the commonest class of held-out labels `y` (class
    codes); None for regression or without held-out rows."""
    if classes is None or not len(y):
        return None
    return float(np.bincount(y).max() / len(y))


def _scores(estimator, X, y, classes) -> dict:
    """The task's scores on held-out rows, as the records compute them."""
    if classes is None:
        return regression_metrics(y, estimator.predict(X))
    probs = np.zeros((len(y), len(classes)))
    codes = [list(classes).index(c) for c in estimator.classes_]
    probs[:, codes] = estimator.predict_proba(X)
    return classification_scores(probs, y)
