"""Heterogeneous plug-in hypotheses: fitted predictors as extra hypotheses of the structured
dataset D.

In the plug-in regime (paper, section "Structured Dataset Formation") D holds the predictions of
any fitted hypotheses, so the M epsilon-trained MLPs can be joined by, e.g., gradient-boosted
trees and random forests. Regression: one column per plug-in (its predictions), every combiner
sees M + P columns. Classification: one block of C columns per plug-in, its class probabilities
(the simplex geometry's d_j = C), read by the stacked heads and stack_logistic (docs/method.md,
"Plug-in classifiers").

The training rows are out-of-fold predictions (inner folds of the training part: `cv` seeded
k folds, stratified for classes, or a scikit-learn splitter): an in-sample fit of a tree
ensemble nearly reproduces y, and a combiner fitted on it would put all its weight on that
hypothesis. The test rows come from the model refitted on the whole training part. The test
rows are never seen by a plug-in fit (docs/method.md).

The plug-ins of a trial are names of the estimators registry (`registry_plugins`); those of the
stacking estimators (sbfn_dist.interfaces.stacking_estimators) are the user's own models
(`given_plugins`); both are fitted here, by `fit_columns`.
"""

import numbers
import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold, check_cv, cross_val_predict

from sbfn_dist.data.splits import kfold_splits
from sbfn_dist.evaluation.diagnostics import nll
from sbfn_dist.learners.competitors import build_competitor, competitor_configs
from sbfn_dist.learners.training import MLPConfig, epoch_order

# The grid each plug-in tuning draws its candidates from (sbfn_dist.learners.competitors): "default"
# is the competitors' default setting, so a plug-in column is the model of a default competitor
# row; "inner_cv" chooses among the competitors' "small" grid.
CANDIDATES = {"default": "default", "inner_cv": "small"}


@dataclass(frozen=True)
class Plugin:
    """One plug-in hypothesis: its name and its candidate settings, each a (setting, unfitted
    estimator) pair; with several, the lowest out-of-fold loss picks one."""
    name: str
    candidates: tuple


@dataclass(frozen=True)
class PluginSet:
    """The plug-ins of an ensemble and how their out-of-fold predictions are made: `cv` an int
    (seeded shuffled k folds, stratified for classes), a scikit-learn splitter or an iterable
    of (train, test) index pairs that partition the rows; `n_jobs` for cross_val_predict."""
    plugins: tuple = ()
    cv: object = 5
    n_jobs: int | None = None


def registry_plugins(names, tuning: str, seed: int, task: str = "regression") -> tuple:
    """A trial's plug-ins, named by the estimators registry or by import paths, each with the
    candidates of its `tuning` (CANDIDATES), seeded by the fold."""
    return tuple(Plugin(name, tuple((params, build_competitor(name, params, seed, task))
                                    for params in competitor_configs(name, CANDIDATES[tuning],
                                                                     task)))
                 for name in names)


def given_plugins(estimators) -> tuple:
    """A user's (name, estimator) pairs as plug-ins at their own settings (recorded as {})."""
    return tuple(Plugin(name, (({}, estimator),)) for name, estimator in estimators)


def trial_plugins(cfg, seed: int, task: str) -> PluginSet:
    """The plug-ins a trial's config names (plugin_members, plugin_tuning, plugin_folds)."""
    names = cfg.get("plugin_members", ())
    return PluginSet(registry_plugins(names, cfg.get("plugin_tuning", "default"), seed, task),
                     cfg.get("plugin_folds", PluginSet.cv))


@dataclass
class PluginColumns:
    names: tuple
    train: np.ndarray        # (N_train, P[, C]) out-of-fold predictions on the training part
    test: np.ndarray         # (N_test, P[, C]) predictions of the refit on the whole training part
    fit_seconds: float       # inner-fold fits + refits
    eval_seconds: float      # test predictions
    settings: list = field(default_factory=list)   # per plug-in, the setting used
    seconds: list = field(default_factory=list)    # per plug-in, its fits' seconds
    models: list = field(default_factory=list)     # per plug-in, its refit on the training part

    def stream(self, cfg: MLPConfig) -> np.ndarray:
        """The training columns in the members' visit order, epoch after epoch: the rows that
        sit beside the recorded on-the-fly stream (a plug-in is a frozen hypothesis there)."""
        n = len(self.train)
        order = np.concatenate([epoch_order(n, cfg, e).numpy() for e in range(cfg.epochs)])
        return self.train[order]


def fit_plugins(names, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                folds: int, seed: int, tuning: str = "default") -> PluginColumns:
    """Out-of-fold training columns and refit test columns for every named regression plug-in
    (fit_columns over registry_plugins, `folds` seeded inner folds)."""
    plugins = PluginSet(registry_plugins(names, tuning, seed), folds)
    return fit_columns(plugins, X_train, y_train, X_test, seed)


def fit_columns(plugins: PluginSet, X_train: np.ndarray, y_train: np.ndarray,
                X_test: np.ndarray, seed: int, n_classes: int | None = None) -> PluginColumns:
    """Every plug-in's out-of-fold predictions on the training part (the candidate with the
    lowest out-of-fold loss: MSE, or NLL of the class probabilities) and its refit's on the
    test part; `n_classes` None for regression, else y holds class codes 0 .. n_classes - 1."""
    inner = (inner_splits(plugins.cv, X_train, y_train, seed, n_classes is not None)
             if plugins.plugins else [])
    train_cols, settings, seconds, models = [], [], [], []
    for plugin in plugins.plugins:
        start = time.perf_counter()
        oof, params, model = _best_out_of_fold(plugin, X_train, y_train, inner, n_classes,
                                               plugins.n_jobs)
        models.append(model.fit(X_train, y_train))
        seconds.append(time.perf_counter() - start)
        train_cols.append(oof)
        settings.append(params)
    start = time.perf_counter()
    test = plugin_predictions(models, X_test, n_classes)
    eval_seconds = time.perf_counter() - start
    names = tuple(p.name for p in plugins.plugins)
    return PluginColumns(names, _hypotheses(train_cols, len(X_train), n_classes), test,
                         sum(seconds), eval_seconds, settings, seconds, models)


def plugin_predictions(models, X, n_classes: int | None = None) -> np.ndarray:
    """The fitted plug-ins' hypotheses on rows X: (N, P) predictions, or (N, P, C) class
    probabilities; what a fold's test part and a stacking estimator's predict read."""
    if len(X) == 0:     # an estimator's fold has no test part; scikit-learn refuses 0 rows
        return np.empty((0, len(models)) + (() if n_classes is None else (n_classes,)))
    if n_classes is None:
        cols = [model.predict(X) for model in models]
    else:
        cols = [in_classes(model.predict_proba(X), model.classes_, n_classes) for model in models]
    return _hypotheses(cols, len(X), n_classes)


def in_classes(probs: np.ndarray, present, n_classes: int) -> np.ndarray:
    """(N, n_classes) probabilities from a model's columns of the codes it saw (`present`): a
    class absent from its training rows has probability 0."""
    out = np.zeros((len(probs), n_classes))
    out[:, np.asarray(present, dtype=int)] = probs
    return out


def inner_splits(cv, X, y, seed: int, stratify: bool) -> list:
    """The inner folds of the training part: an int k is seeded shuffled k-fold (the sweeps'
    kfold_splits), stratified by the class codes y when `stratify`; anything else goes through
    scikit-learn's check_cv. Stratified as scikit-learn stratifies (StratifiedKFold, what
    kfold_splits runs once its class counts pass): a class rarer than k is absent from some
    inner folds, and its out-of-fold probability there is 0 (cross_val_predict warns)."""
    if not isinstance(cv, numbers.Integral):
        return list(check_cv(cv, y, classifier=stratify).split(X, y))
    if stratify:
        return list(StratifiedKFold(int(cv), shuffle=True, random_state=seed).split(X, y))
    return kfold_splits(len(y), int(cv), seed)


def _hypotheses(cols: list, n: int, n_classes: int | None) -> np.ndarray:
    """Per-plug-in arrays side by side: (n, P) columns, or (n, P, C) probability blocks."""
    if cols:
        return np.stack(cols, axis=1)
    return np.empty((n, 0) if n_classes is None else (n, 0, n_classes))


def _best_out_of_fold(plugin: Plugin, X, y, inner, n_classes, n_jobs):
    """(out-of-fold predictions, setting, unfitted model) of the candidate with the lowest
    out-of-fold loss (the first one on a tie)."""
    best = None
    for params, model in plugin.candidates:
        oof = _out_of_fold(model, X, y, inner, n_classes, n_jobs)
        loss = float(((oof - y) ** 2).mean()) if n_classes is None else nll(oof, y)
        if best is None or loss < best[0]:
            best = (loss, oof, params, model)
    return best[1], best[2], clone(best[3])


def _out_of_fold(model, X, y, inner, n_classes, n_jobs) -> np.ndarray:
    if n_classes is None:
        return cross_val_predict(clone(model), X, y, cv=inner, n_jobs=n_jobs)
    probs = cross_val_predict(clone(model), X, y, cv=inner, n_jobs=n_jobs,
                              method="predict_proba")
    return in_classes(probs, np.unique(y), n_classes)   # its columns: the codes y holds
