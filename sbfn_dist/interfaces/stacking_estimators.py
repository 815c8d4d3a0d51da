"""scikit-learn stacking with the s-BFN as the final combiner: SBFNStackingRegressor and
SBFNStackingClassifier, in the constructor shape of StackingRegressor / StackingClassifier.

    est = SBFNStackingRegressor([("rf", RandomForestRegressor()),
                                 ("knn", KNeighborsRegressor())], cv=5)
    est.fit(X, y).predict(X_new)
    clf = SBFNStackingClassifier(estimators=[("rf", RandomForestClassifier()), ...]).fit(X, y)

fit is one fold of run_trial's loop with all of X as its training part, as SBFNRegressor's is
(sbfn_dist.interfaces.estimators), with your estimators as the fold's plug-in hypotheses
(docs/method.md, "s-BFN over your own models"):

    fold = _fold(cfg, x, y, ...)                   # x: X scaled by the trials' FoldScaler
    ens  = ENSEMBLES[task](cfg, fold, PluginSet(given_plugins(estimators), cv, n_jobs))
    [members] = train_together([ens])              # n_members eps-MLPs, or none (the default)
    [(name, params, model, s)] = ens.fit(members)  # out-of-fold hypotheses, the s-BFN on D

so the out-of-fold predictions, the refits and the s-BFN fitted over them are a sweep's plug-in
path (sbfn_dist.combiners.plugins.fit_columns, sbfn_dist.combiners.ensembles), and predict builds
D for new rows as a fold builds it for its test part (regression_hypotheses, class_hypotheses).

Differences from scikit-learn's stacking, and why:
- X is standardised (the trials' FoldScaler) before any estimator sees it, as in a sweep's
  fold; trees do not care, k-NN and kernels usually gain. Put your own scaling in a Pipeline
  around an estimator if it needs raw X.
- An int `cv` is seeded shuffled k-fold (stratified for classes; `random_state`), not
  scikit-learn's unshuffled KFold: rows stored in order (time, class) would otherwise give
  folds unlike the whole. Pass a splitter (`cv=KFold(5)`) for scikit-learn's folds.
- No `final_estimator`: the final combiner is the s-BFN. No `passthrough`: the s-BFN's basis
  lives on the space of hypotheses (every column a prediction of the same target), and raw
  features are not hypotheses. No `sample_weight`: the members and the s-BFN fit unweighted.
- Classification: the hypotheses are the estimators' class probabilities (the simplex geometry,
  paper Table "geom_loss_shapes_pred"), so every estimator needs predict_proba.

Parameters are checked once, at fit (__init__ only stores them, as scikit-learn asks); a bad
value raises ConfigError naming the parameter, the value and what is allowed. `estimators` comes
first and may be given by position, as scikit-learn's. Each member and combiner parameter is
the config field of the same name (sbfn_dist.settings.fields), its constraint and its default
the estimators' (SBFNRegressor's, SBFNClassifier's on tables), but one: the members' learning
rate is `lr_theta` (eta_theta, the field `lr`; FIELD_OF), because an estimator may not be named
like a parameter (scikit-learn's get_params / set_params share one namespace) and "lr" is what
users call a LogisticRegression. n_members defaults to 0 here: your estimators alone.
"""

import inspect
import numbers

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.ensemble._base import _BaseHeterogeneousEnsemble
from sklearn.utils import Bunch
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from sbfn_dist.combiners.ensembles import (ENSEMBLES, class_hypotheses, combine,
                                           regression_hypotheses, train_together)
from sbfn_dist.combiners.plugins import PluginSet, given_plugins, plugin_predictions
from sbfn_dist.data.checks import numeric_target, require_classes
from sbfn_dist.data.preprocess import FoldScaler
from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.interfaces import saved
from sbfn_dist.interfaces.estimators import (PARAMETERS, FitDivergedError, _fold, _held_out,
                                             _trial_config, validated)
from sbfn_dist.learners.training import TrainingDiverged
from sbfn_dist.settings.fields import Ctx, Int, OneOf, defaults, field
from sbfn_dist.settings.tasks import CLOSED_FORM, PRACTITIONERS

# The final combiners each stacker offers (docs/method.md): the s-BFN -- regression: the
# closed-form s-BFN (Eq. "weights") on the paper's map, with the linear terms, or the general
# multivariate basis with K by inner CV; classification: the s-BFN head (Algorithm 2) fitted on
# held-out hypotheses -- or one of the practitioners' combiners, on the same out-of-fold D, so
# that a user compares them on the same columns.
# The classifier's default: the s-BFN head (Algorithm 2) fitted on held-out hypotheses.
CLASSIFICATION_COMBINER = "sbfn_stacked"
COMBINERS = {"regression": (*CLOSED_FORM, "sbfn_rbf", *PRACTITIONERS["regression"]),
             "classification": (CLASSIFICATION_COMBINER, *PRACTITIONERS["classification"])}
NO_MEMBERS = 0      # the default: your estimators alone are the hypotheses

_REG = defaults("regression", "tabular", estimator=True)
_CLF = defaults("classification", "tabular", estimator=True)

# What each parameter allows beyond the fields' own (PARAMETERS, the SBFN estimators'); cv and
# n_jobs are scikit-learn's (_check_cv; joblib checks n_jobs).
CHECKS = {"n_members": Int(0, note="0: your estimators are the only hypotheses"),
          "combiner": OneOf(lambda ctx: COMBINERS[ctx.task]), "rbf_units": field("rbf_units").check}
SKLEARN_PARAMETERS = ("estimators", "cv", "n_jobs")
# The parameters named otherwise than their config field, so that no common estimator name is a
# parameter (module docstring): parameter -> field.
FIELD_OF = {"lr_theta": "lr"}
# A stack saved before a rename loads with its parameter's new name (saved.load reads this):
# until then, each parameter bore its field's name.
FORMER_NAMES = {field_name: parameter for parameter, field_name in FIELD_OF.items()}


class _SBFNStacking(saved.Saveable, _BaseHeterogeneousEnsemble):
    """What both stacking estimators share: parameters, the fold, its fit and the fitted state.
    The base class is scikit-learn's own for StackingRegressor / VotingRegressor: `estimators`
    validation, get_params / set_params of named estimators (`rf__max_depth` in a grid), drop."""

    _task: str
    _former_names = FORMER_NAMES

    def _validate_names(self, names) -> None:
        """scikit-learn's rules (unique, no "__", no parameter's name), the clash told with its
        fix: the stacker's parameters are its own settings (docs/method.md)."""
        taken = sorted(set(names) & set(self.get_params(deep=False)))
        if taken:
            raise ValueError(f"estimator names {taken} are parameters of {type(self).__name__} "
                             "(scikit-learn's get_params and set_params would confuse them): "
                             f"rename the estimators, e.g. '{taken[0]}_model'")
        super()._validate_names(names)

    def _pairs(self) -> list:
        """The (name, estimator) pairs that take part ('drop' left out), validated."""
        names, estimators = self._validate_estimators()
        return [(n, e) for n, e in zip(names, estimators) if not _dropped(e)]

    def _settings(self) -> dict:
        """Every s-BFN parameter checked (once, at fit), lists as tuples, numpy scalars plain."""
        ctx = Ctx({"task": self._task}, estimator=True)
        out = {}
        for name in inspect.signature(type(self)).parameters:
            if name in SKLEARN_PARAMETERS:
                continue
            value = _plain(getattr(self, name))
            field_name = FIELD_OF.get(name, name)
            check = CHECKS.get(field_name) or PARAMETERS[field_name]
            if not check.ok(value, ctx):
                raise ConfigError(name, value, check.text(ctx))
            out[field_name] = value
        _check_cv(self.cv)
        return out

    def _config(self, own: dict):
        """The trial config of the fold: the estimators' defaults for tables, then `own`."""
        kind = _REG if self._task == "regression" else _CLF
        return _trial_config({**kind, **own}, self._task)

    def _fit_fold(self, cfg, fold, pairs: list):
        """(members, fitted combiner, plug-in columns): the fold loop with `pairs` as plug-ins;
        a stacked head then runs in float64 (predictions that do not depend on how rows are
        batched; its training was float32, as in a trial)."""
        plugins = PluginSet(given_plugins(pairs), self.cv, self.n_jobs)
        ens = ENSEMBLES[self._task](cfg, fold, plugins)
        [members] = train_together([ens])
        if isinstance(members, TrainingDiverged):
            raise FitDivergedError(f"{type(self).__name__} member training diverged ({members}) "
                                   f"with lr_theta={cfg.lr}; try a smaller lr_theta or "
                                   "init_scale")
        [(_, _, model, _)] = ens.fit(members)
        if isinstance(model, torch.nn.Module):
            model = model.to(torch.float64)
        return members, model, ens.plug

    def _keep(self, pairs: list, members, plug) -> None:
        """The fitted state: the members, and each estimator refitted on every row."""
        self.members_ = members
        self.estimators_ = list(plug.models)
        self.named_estimators_ = Bunch(**{n: m for (n, _), m in zip(pairs, plug.models)})

    def _scaled(self, X) -> np.ndarray:
        check_is_fitted(self)
        return self.scaler_.transform_X(validated(self, X, reset=False))

    def __sklearn_tags__(self):
        # The base class allows NaN and sparse X when the estimators do; the members and the
        # FoldScaler take dense, finite X (validate_data refuses the others).
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = tags.input_tags.sparse = False
        return tags


def _dropped(estimator) -> bool:
    return isinstance(estimator, str) and estimator == "drop"


def _plain(value):
    """A list as a tuple (rbf_units), a numpy scalar as a Python one."""
    if isinstance(value, list):
        return tuple(value)
    return value.item() if isinstance(value, np.generic) else value


def _check_cv(cv) -> None:
    if isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if cv >= 2:
            return
    elif hasattr(cv, "split") or (hasattr(cv, "__iter__") and not isinstance(cv, str)):
        return
    raise ConfigError("cv", cv, "an integer >= 2 (seeded shuffled k-fold), a scikit-learn CV "
                      "splitter, or an iterable of (train, test) index arrays")


def _require_rows(estimator, n_rows: int) -> None:
    """An int cv of k folds needs k rows: every inner test fold holds at least one."""
    cv = estimator.cv
    if isinstance(cv, numbers.Integral) and n_rows < cv:
        raise DataError(f"{type(estimator).__name__} makes out-of-fold predictions over cv={cv} "
                        f"folds, which needs at least {cv} rows; got n_samples={n_rows}: pass "
                        "more rows or a smaller cv")


# ------------------------------------------------------------------------- regression
class SBFNStackingRegressor(RegressorMixin, _SBFNStacking):
    """Stacked regression with the s-BFN as the final combiner over your own regressors.

    Each estimator's out-of-fold predictions over `cv` folds of the training rows are a column
    of the structured dataset D (the paper's plug-in regime), beside `n_members` epsilon-trained
    MLP members' predictions when n_members > 0 (Algorithm 1 in mini-batches, the settings of
    SBFNRegressor: `epsilon`, `lr_theta` (SBFNRegressor's `lr`), `epochs`, `batch_size`,
    `width`, `init_scale`). The s-BFN
    is fitted on D (y standardised by the trials' FoldScaler), each estimator is refitted on
    every row, and predict combines the refits' (and members') predictions:
      "sbfn_ls_linear" the closed-form s-BFN (Eq. "weights", ridge `lambda2`), one Gaussian
                       unit per hypothesis plus the raw hypotheses and an intercept;
      "sbfn_ls"        the paper's map alone (one Gaussian unit per hypothesis);
      "sbfn_rbf"       the general form: K multivariate Gaussian units over the whole
                       hypothesis vector, K from `rbf_units` by 5-fold inner CV on D;
      the practitioners' combiners on the same D (docs/method.md, "The practitioners'
      combiners"), to compare with the s-BFN on the same out-of-fold columns:
      "ensemble_selection" (Caruana et al. 2004, `selection_rounds` greedy rounds with
      replacement, squared error), "stack_nnls" (non-negative weights, Breiman 1996),
      "stack_ridge" (RidgeCV: StackingRegressor's final step), "best_single" (the column
      with the lowest out-of-fold error).

    Parameters: `estimators` a list of (name, regressor) pairs ('drop' leaves one out; first,
    by position or by name, as StackingRegressor's); `cv` an
    int (seeded shuffled k-fold; `random_state`), a splitter or an iterable of (train, test)
    pairs; `n_jobs` for the out-of-fold fits (cross_val_predict); `random_state` None means
    seed 0 (the folds, the members, k-means; your estimators keep their own); `device` for the
    members ("cpu", "cuda", "auto").

    Fitted attributes: `estimators_` (refitted on every row, in order), `named_estimators_`,
    `members_` (sbfn_dist.learners.training.TrainedMembers, or ensembles.NoMembers), `combiner_`
    (the fitted s-BFN or anchor; a weighted one's `weights_` in the order of D's columns: the
    members, then the estimators), `scaler_` (the FoldScaler of X and y), `n_features_in_`.
    """

    _task = "regression"

    def __init__(self, estimators, *, cv=5, n_jobs=None,
                 # the final combiner
                 combiner=_REG["combiner"], lambda2=_REG["lambda2"], rbf_units=_REG["rbf_units"],
                 selection_rounds=_REG["selection_rounds"],
                 # epsilon-trained MLP members beside your estimators (Algorithm 1)
                 n_members=NO_MEMBERS, epsilon=_REG["epsilon"], lr_theta=_REG["lr"],
                 epochs=_REG["epochs"], batch_size=_REG["batch_size"], width=_REG["width"],
                 init_scale=_REG["init_scale"],
                 # where and how reproducibly it runs
                 device=_REG["device"], random_state=_REG["random_state"]):
        self.estimators = estimators
        self.cv = cv
        self.n_jobs = n_jobs
        self.combiner = combiner
        self.lambda2 = lambda2
        self.rbf_units = rbf_units
        self.selection_rounds = selection_rounds
        self.n_members = n_members
        self.epsilon = epsilon
        self.lr_theta = lr_theta
        self.epochs = epochs
        self.batch_size = batch_size
        self.width = width
        self.init_scale = init_scale
        self.device = device
        self.random_state = random_state

    def fit(self, X, y):
        pairs = self._pairs()
        cfg = self._config(self._settings())
        if y is not None:     # None: scikit-learn's own message (validate_data)
            y = numeric_target(y, f"y given to {type(self).__name__}.fit",
                               "use SBFNStackingClassifier for class labels")
        # One target: a (n, 1) column is raveled with scikit-learn's DataConversionWarning,
        # several columns are refused by scikit-learn's own one-line message.
        X, y = validated(self, X, y, y_numeric=True)
        _require_rows(self, len(y))
        self.scaler_ = FoldScaler(refuse_constant_target=False).fit(X, y)
        x = self.scaler_.transform_X(X)
        fold = _fold(cfg, x, self.scaler_.transform_y(y), scaler=self.scaler_)
        members, self.combiner_, plug = self._fit_fold(cfg, fold, pairs)
        self._keep(pairs, members, plug)
        return self

    def predict(self, X) -> np.ndarray:
        """Combined prediction, shape (N,), in the units of y."""
        x = self._scaled(X)
        D = regression_hypotheses(self.members_, x, plugin_predictions(self.estimators_, x))
        return self.scaler_.inverse_y(self.combiner_.predict(D))


# ------------------------------------------------------------------------- classification
class SBFNStackingClassifier(ClassifierMixin, _SBFNStacking):
    """Stacked classification with the s-BFN head (Algorithm 2) as the final combiner over your
    own classifiers.

    Each estimator's out-of-fold class probabilities over `cv` stratified folds of the training
    rows are one hypothesis of the structured dataset D (N, H, C) (the paper's simplex geometry:
    D_i the hypotheses' probability vectors side by side). The final `combiner` is fitted on D,
    each estimator is refitted on every row, and predict_proba combines the refits'
    probabilities. Tables only (X is standardised per column by the trials' FoldScaler).
      "sbfn_stacked"   the s-BFN head: K = `sbfn_units_per_member` x H Gaussian units on D_i,
                       row-normalised, logits H alpha / T (`temperature`), alpha and the
                       centres trained by SGD (`lr_alpha`, `head_optimizer`, `head_epochs`;
                       None: at least 10 epochs and 1000 steps of `batch_size` rows;
                       `head_calibration` "temperature": its probabilities temperature-scaled,
                       tau fitted on its out-of-fold probabilities of the rows it fits on);
      the practitioners' combiners on the same D (docs/method.md, "The practitioners'
      combiners"): "ensemble_selection" (Caruana et al. 2004, `selection_rounds` greedy rounds
      minimising `selection_metric`: "log_loss" or "accuracy"), "stack_nnls" (the Super
      Learner's NNLS: non-negative weights summing to one, Brier score), "stack_logistic"
      (LogisticRegression: StackingClassifier's final step), "best_single" (the hypothesis
      with the lowest log-loss).

    With n_members > 0, that many epsilon-trained MLP members (SBFNClassifier's settings:
    `epsilon`, `lr_theta` (its `lr`), `epochs`, `batch_size`, `width`, `init_scale`) join as
    hypotheses. Their
    probabilities on rows they trained on would be in-sample, so, as in a sweep's trial, a
    stratified `val_fraction` of the rows is held out from them and the head is fitted there, on
    the members' and the estimators' (out-of-fold) probabilities; without members it is fitted
    on every row.

    The head trains in float32 and then runs in float64, so that predictions do not depend on
    how rows are batched (as SBFNClassifier's on tables). `random_state` None means seed 0.

    Fitted attributes: `classes_`, `estimators_`, `named_estimators_`, `members_`, `combiner_`
    (the s-BFN head, a torch module; or the fitted anchor, a weighted one's `weights_` in the
    order of D's hypotheses), `scaler_`, `n_features_in_`.
    """

    _task = "classification"

    def __init__(self, estimators, *, cv=5, n_jobs=None,
                 # the final combiner: the s-BFN head (Algorithm 2), stacked, or an anchor
                 combiner=CLASSIFICATION_COMBINER, temperature=_CLF["temperature"],
                 sbfn_units_per_member=_CLF["sbfn_units_per_member"],
                 lr_alpha=_CLF["lr_alpha"], head_optimizer=_CLF["head_optimizer"],
                 head_epochs=_CLF["head_epochs"], head_calibration=_CLF["head_calibration"],
                 selection_rounds=_CLF["selection_rounds"],
                 selection_metric=_CLF["selection_metric"],
                 # epsilon-trained MLP members beside your estimators (Algorithm 2 on MLPs)
                 n_members=NO_MEMBERS, epsilon=_CLF["epsilon"], lr_theta=_CLF["lr"],
                 epochs=_CLF["epochs"], batch_size=_CLF["batch_size"], width=_CLF["width"],
                 init_scale=_CLF["init_scale"], val_fraction=_CLF["val_fraction"],
                 # where and how reproducibly it runs
                 device=_CLF["device"], random_state=_CLF["random_state"]):
        self.estimators = estimators
        self.cv = cv
        self.n_jobs = n_jobs
        self.combiner = combiner
        self.temperature = temperature
        self.sbfn_units_per_member = sbfn_units_per_member
        self.lr_alpha = lr_alpha
        self.head_optimizer = head_optimizer
        self.head_epochs = head_epochs
        self.head_calibration = head_calibration
        self.selection_rounds = selection_rounds
        self.selection_metric = selection_metric
        self.n_members = n_members
        self.epsilon = epsilon
        self.lr_theta = lr_theta
        self.epochs = epochs
        self.batch_size = batch_size
        self.width = width
        self.init_scale = init_scale
        self.val_fraction = val_fraction
        self.device = device
        self.random_state = random_state

    def _pairs(self) -> list:
        pairs = super()._pairs()
        for name, estimator in pairs:
            if not hasattr(estimator, "predict_proba"):
                raise ValueError(f"{type(self).__name__} combines class probabilities, but "
                                 f"estimator '{name}' ({type(estimator).__name__}) has no "
                                 "predict_proba: use one that has (e.g. SVC(probability=True)"
                                 " or CalibratedClassifierCV around it)")
        return pairs

    def fit(self, X, y):
        pairs = self._pairs()
        cfg = self._config(self._settings())
        X, y = validated(self, X, y)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        require_classes(self.classes_, f"y given to {type(self).__name__}.fit",
                        "pass labels of at least two classes")
        _require_rows(self, len(y))
        self.scaler_ = FoldScaler().fit(X)
        x = self.scaler_.transform_X(X)
        rows, held_out = _head_rows(codes, cfg, self.classes_)
        fold = _fold(cfg, x[rows], codes[rows], x_val=x[held_out], y_val=codes[held_out],
                     n_classes=len(self.classes_))
        members, self.combiner_, plug = self._fit_fold(cfg, fold, pairs)
        self._keep(pairs, members, plug)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (N, n_classes), columns in the order of classes_."""
        x = self._scaled(X)
        probs = plugin_predictions(self.estimators_, x, len(self.classes_))
        logits, D = class_hypotheses(self.members_, x, probs)
        return combine(self.combiner_, logits, D).cpu().numpy()

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)   # first: it raises NotFittedError before classes_ is read
        return self.classes_[proba.argmax(1)]


def _head_rows(codes: np.ndarray, cfg, classes: np.ndarray):
    """(member rows, rows the head is fitted on): a stratified held-out part when members
    train (as SBFNClassifier's and a trial's); without members, every row (the estimators'
    probabilities are out-of-fold on all of them)."""
    if cfg.n_members:
        return _held_out(codes, cfg, classes)
    rows = np.arange(len(codes))
    return rows[:0], rows
