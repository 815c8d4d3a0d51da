"""scikit-learn front ends: SBFNRegressor (tables) and SBFNClassifier (tables and images).

    reg = SBFNRegressor(combiner="g2").fit(X, y)        # X (N, d)
    clf = SBFNClassifier().fit(X, y)                     # X (N, d), (N, H, W) or (N, C, H, W)
    reg.predict(X_new); clf.predict(X_new); clf.predict_proba(X_new)
    reg.save("my-model"); SBFNRegressor.load("my-model")    # docs/models.md

fit runs one fold of run_trial's loop with all of X as its training part and the estimator's one
combiner as the trial's combiners:

    cfg  = self._settings(kind)                  # the parameters, checked, as a TrialConfig
    fold = _fold(cfg, x, y, ...)                 # x scaled by the trials' FoldScaler (tables)
    ens  = ENSEMBLES[task](cfg, fold)            # sbfn_dist.combiners.ensembles: member config
    [members] = train_together([ens])            #   (seeded_mlp_config / seeded_cnn_config),
    [(name, params, model, s)] = ens.fit(members)   # training, the combiner's construction

so the members train by epsilon-modulated winner-takes-all exactly as a trial's (Algorithm 1 on
squared loss, Algorithm 2 on cross-entropy) and the combiner is built and fitted by the same
code; predict maps new inputs through the frozen members and that combiner.

Parameters are the config names of sbfn_dist.settings.fields: each one's constraint is the
field's own (PARAMETERS) and each default the field's default for estimators (estimator=True),
read into the __init__ signatures below; no other place holds one. They are checked once, at
fit, as scikit-learn does (__init__ only stores them: clone and set_params must never raise); a
bad value raises ConfigError naming the parameter, the value and what is allowed. A parameter
that the combiner or the data kind does not use is ignored (the scikit-learn convention), but
for SBFNClassifier's `ensemble` given with a table: it names the architecture of image members,
so the table is most likely flattened images, and the refusal names the reshape.
"""

import copy
import dataclasses
import inspect
import math
import warnings

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (check_array, check_is_fitted, check_X_y, column_or_1d,
                                      validate_data)

from sbfn_dist.combiners.ensembles import ENSEMBLES, combine, train_together
from sbfn_dist.data.checks import numeric_target, require_classes
from sbfn_dist.data.images import DeviceImages, channel_moments
from sbfn_dist.data.preprocess import FoldScaler
from sbfn_dist.data.splits import validation_part
from sbfn_dist.errors import ConfigError, DataError, SbfnError, UninformativeWarning
from sbfn_dist.experiment import Fold
from sbfn_dist.interfaces import saved
from sbfn_dist.learners.cnn import MIN_SIZE
from sbfn_dist.learners.training import CNNConfig, TrainingDiverged
from sbfn_dist.runtime import resolve_device
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.fields import (TRIAL_FIELDS, Ctx, Int, Items, Maybe, OneOf, defaults,
                                       field)
from sbfn_dist.settings.tasks import ITERATIVE, LEARNED_HEADS, TASKS

# The classifier offers every classification combiner but base_avg: that one scores each member
# on its own (the paper's "Base Avg." column) and gives no single prediction.
COMBINERS = {"regression": TASKS["regression"].combiners,
             "classification": tuple(c for c in TASKS["classification"].combiners
                                     if c != "base_avg")}
MODALITIES = {"regression": ("tabular",), "classification": ("tabular", "image")}
DIVERGED_RMS = 1e6     # combiner output RMS, in target stds, taken as divergence
# Trial fields the fold loop reads that no estimator parameter sets: the estimator runs no
# plug-in members, and G1/G2/G3 replay the members' own training stream (docs/method.md).
LOOP_ONLY = ("online_regime", "plugin_members")


def estimator_defaults(task: str) -> dict:
    """Each setting's default for the task's estimator (fields.py, estimator=True), or None where
    it differs between the data kinds that estimator takes (None then means the data kind's own)."""
    kinds = [defaults(task, m, estimator=True) for m in MODALITIES[task]]
    return {n: v if all(k.get(n) == v for k in kinds) else None for n, v in kinds[0].items()}


# The defaults in the signatures below are read from sbfn_dist.settings.fields when this module
# loads, as MLPConfig's are: a reader and an IDE see every parameter and where its default comes
# from, get_params and repr see the value, and fields.py stays the one place a default is
# written. A sentinel default (resolved at fit) would hide the value from get_params and repr.
_REG = estimator_defaults("regression")
_CLF = estimator_defaults("classification")


class FitDivergedError(SbfnError):
    """Training produced non-finite parameters; the message says which step size to lower."""


class _SBFNEstimator(saved.Saveable, BaseEstimator):
    _task: str              # "regression" | "classification"

    def _settings(self, modality: str) -> TrialConfig:
        """Every parameter checked against PARAMETERS (once, at fit), numpy scalars made plain
        and None resolved to the default of the data kind fit sees; as the trial's config."""
        ctx = Ctx({"task": self._task}, estimator=True)
        task_defaults = estimator_defaults(self._task)
        kind = defaults(self._task, modality, estimator=True)
        out = {}
        for name, value in self.get_params().items():
            check = PARAMETERS[name]
            if task_defaults[name] is None and not isinstance(check, Maybe):
                check = Maybe(check, "the default of the data kind fit sees")
            if not check.ok(value, ctx):
                raise ConfigError(name, value, check.text(ctx))
            value = value.item() if isinstance(value, np.generic) else value
            out[name] = kind[name] if value is None else value
        return _trial_config(out, self._task)

    def _run_fold(self, cfg: TrialConfig, fold: Fold):
        """(members, fitted combiner, its record columns): the fold loop of run_trial
        (sbfn_dist.combiners.ensembles) on fit's rows; divergence of the members is a
        FitDivergedError."""
        ens = ENSEMBLES[self._task](cfg, fold)
        [members] = train_together([ens])
        if isinstance(members, TrainingDiverged):
            hint = "" if fold.images is not None else " or init_scale"
            raise FitDivergedError(f"{type(self).__name__} training diverged ({members}) with "
                                   f"lr={cfg.lr}; try a smaller lr{hint}")
        [(name, _, model, _)] = ens.fit(members)
        return members, model, ens.fitted_columns(name, model)


def _uninformative(cfg: TrialConfig) -> str:
    """What an uninformative combiner's fit says, and what to try (UninformativeWarning)."""
    combiner = cfg.combiners[0]
    now = ("predicts the class prior instead (head_fallback='prior')"
           if cfg.get("head_fallback") == "prior" and combiner in LEARNED_HEADS else
           "predicts no better than the class prior")
    return (f"SBFNClassifier's {combiner} combiner was right on no more of the rows it was "
            f"fitted on than their majority class, and {now}: {_what_to_try(combiner)}")


def _what_to_try(combiner: str) -> str:
    """The fix an UninformativeWarning suggests: the members' plain average where another
    combiner failed; where that average itself did, the members learned nothing to combine."""
    if combiner == "logit_mean":
        return ("its members learned nothing it could average: try more epochs or members, "
                "or another lr")
    return "try more epochs or members, or combiner='logit_mean'"


def _trial_config(s: dict, task: str) -> TrialConfig:
    """The checked parameters `s` as the TrialConfig the fold loop reads: the one combiner as the
    trial's combiners, lambda2 as a path of one value, random_state=None as seed 0 (fits are
    deterministic), the device resolved. CNN steps run fp32, eager and uncompiled on every device
    (CNNConfig's own defaults): an estimator's fit does not depend on a GPU's bf16."""
    values = {n: v for n, v in s.items() if n in TRIAL_FIELDS}
    ctx = Ctx({"task": task}, estimator=True)
    values.update({n: field(n).default_for(ctx) for n in LOOP_ONLY})
    values.update(task=task, combiners=(s["combiner"],), seed=s["random_state"] or 0,
                  device=resolve_device(s["device"]), precision=CNNConfig.precision,
                  step_engine=CNNConfig.engine, step_compile=CNNConfig.compile)
    if "lambda2" in s:
        values["lambda2"] = (s["lambda2"],)
    return TrialConfig(values)


def _fold(cfg: TrialConfig, x, y, **parts) -> Fold:
    """fit's rows as the training part of one fold of cfg's trial, seeded by random_state; it has
    no test part (predict brings the rows)."""
    return Fold(0, x, y, x[:0], np.empty(0), cfg.task, {}, cfg.seed, device=cfg.device, **parts)


def validated(estimator, X, *args, **kwargs):
    """scikit-learn's validate_data, after a table's columns are checked to hold numbers: its
    own message for a column of text ("could not convert string to float: 'x'") names none."""
    text = text_columns(X) if isinstance(X, pd.DataFrame) else {}
    if text:
        column, (row, value) = next(iter(text.items()))
        raise DataError(f"X given to {type(estimator).__name__} has non-numeric columns "
                        f"{list(text)} (e.g. {value!r} in column {column!r}, row {row}): encode "
                        "them as numbers (one-hot: pandas.get_dummies, or a OneHotEncoder in a "
                        "Pipeline before the estimator) or drop them")
    return validate_data(estimator, X, *args, **kwargs)


def text_columns(frame: pd.DataFrame) -> dict:
    """Each column of `frame` that holds something no number -> (its first row position, that
    value); missing cells are no text."""
    out = {}
    for j, column in enumerate(frame.columns):
        values = frame.iloc[:, j]
        if pd.api.types.is_numeric_dtype(values):
            continue
        rows = np.flatnonzero(pd.to_numeric(values, errors="coerce").isna() & values.notna())
        if rows.size:
            out[str(column)] = (int(rows[0]), values.iloc[rows[0]])
    return out


def _numpy(d: torch.Tensor) -> np.ndarray:
    return d.double().cpu().numpy()


# ------------------------------------------------------------------------- regression
def _single_target(y: np.ndarray) -> np.ndarray:
    """y from validate_data(multi_output=True): refuse several targets with a clear message;
    a (n, 1) column is raveled with sklearn's usual DataConversionWarning."""
    if y.ndim == 2 and y.shape[1] > 1:
        raise ValueError(f"SBFNRegressor predicts a single target, but y has shape {y.shape}; "
                         "fit one estimator per target (sklearn.multioutput.MultiOutputRegressor)")
    return column_or_1d(y, warn=True)


class SBFNRegressor(RegressorMixin, _SBFNEstimator):
    """Structured Basis Function Network regressor: M members and one s-BFN combiner.

    X and y are standardised inside fit by the trials' FoldScaler (constant columns are centred
    only, and a constant y is predicted), so the step sizes mean the same on any data scale.
    Members: `n_members` two-layer MLPs (`width`, `activation`, `init_scale` = chi,
    `init_scheme`, `dtype`) trained together by epsilon-modulated winner-takes-all SGD
    (`epsilon`, `lr` = eta_theta, `epochs`, `batch_size`, `lambda1`): the paper's Algorithm 1,
    in mini-batches of `batch_size`. Combiner, fitted on them:
      "sbfn_ls_linear" closed-form ridge s-BFN (Eq. "weights"; `lambda2`, `sbfn_basis`) with an
                       intercept and the raw member outputs as extra features (docs/method.md);
      "sbfn_ls"        the same without the extra features (`sbfn_intercept`: add an intercept);
      "g1", "g2", "g3" iterative s-BFN (Table "s-BFN variants") on the members' training-time
                       prediction stream, Algorithm 1's on-the-fly regime (`lambda2`,
                       `lr_alpha` = eta_alpha, `window` for g2/g3, `g3_basis` for g3);
      "arithmetic"     the members' mean;
      the practitioners' combiners, fitted on the members' training predictions
      (docs/method.md, "The practitioners' combiners"): "ensemble_selection" (Caruana et al.
      2004's greedy selection with replacement, `selection_rounds` rounds, squared error),
      "stack_nnls" (non-negative weights, Breiman 1996), "stack_ridge" (RidgeCV stacking),
      "best_single" (the member with the lowest training error).
    Parameters the combiner does not use are ignored.

    Defaults: a trial's (sbfn_dist.settings.fields; lambda2 = 0, the first value of its path)
    except, as measured in docs/method.md ("The scikit-learn estimators' defaults"): mini-batches
    of 16 for 20 epochs where a trial steps per row for 10 (the same R^2 on diabetes in a third
    of the time), hence chi = 1 (0.1 barely moves mini-batch members); dtype float64, so
    predictions do not depend on how rows are batched (scikit-learn checks this to 1e-7); device
    "cpu". The combiner "sbfn_ls_linear" beat averaging in every regression run (docs/results,
    claim (1)). `random_state=None` means seed 0: fits are deterministic unless a seed is given.
    `device`: "cpu", "cuda" or "auto" (CUDA when present).

    Fitted attributes: `members_` (sbfn_dist.learners.training.TrainedMembers), `combiner_`,
    `scaler_` (sbfn_dist.data.preprocess.FoldScaler of X and y), `n_features_in_` (and
    `feature_names_in_` for named columns).
    """

    _task = "regression"

    def __init__(self, *,
                 # the members (Algorithm 1)
                 n_members=_REG["n_members"], epsilon=_REG["epsilon"], lr=_REG["lr"],
                 epochs=_REG["epochs"], batch_size=_REG["batch_size"],
                 # each member, an MLP
                 width=_REG["width"], init_scale=_REG["init_scale"], lambda1=_REG["lambda1"],
                 activation=_REG["activation"], init_scheme=_REG["init_scheme"],
                 dtype=_REG["dtype"],
                 # the combiner
                 combiner=_REG["combiner"], lambda2=_REG["lambda2"], lr_alpha=_REG["lr_alpha"],
                 window=_REG["window"], sbfn_basis=_REG["sbfn_basis"],
                 sbfn_intercept=_REG["sbfn_intercept"], g3_basis=_REG["g3_basis"],
                 selection_rounds=_REG["selection_rounds"],
                 # where and how reproducibly it runs
                 device=_REG["device"], random_state=_REG["random_state"]):
        self.n_members = n_members
        self.epsilon = epsilon
        self.lr = lr
        self.epochs = epochs
        self.batch_size = batch_size
        self.width = width
        self.init_scale = init_scale
        self.lambda1 = lambda1
        self.activation = activation
        self.init_scheme = init_scheme
        self.dtype = dtype
        self.combiner = combiner
        self.lambda2 = lambda2
        self.lr_alpha = lr_alpha
        self.window = window
        self.sbfn_basis = sbfn_basis
        self.sbfn_intercept = sbfn_intercept
        self.g3_basis = g3_basis
        self.selection_rounds = selection_rounds
        self.device = device
        self.random_state = random_state

    def fit(self, X, y):
        cfg = self._settings("tabular")
        if y is not None:     # None: scikit-learn's own message (validate_data)
            y = numeric_target(y, "y given to SBFNRegressor.fit", "use SBFNClassifier for "
                               "class labels")
        X, y = validated(self, X, y, multi_output=True, y_numeric=True)
        y = _single_target(y)
        # The statistics of every row fit is given (a trial's training part is all of X here).
        self.scaler_ = FoldScaler(refuse_constant_target=False).fit(X, y)
        x = self.scaler_.transform_X(X)
        members, model, _ = self._run_fold(cfg, _fold(cfg, x, self.scaler_.transform_y(y),
                                                      scaler=self.scaler_))
        _check_combiner(cfg, model, _numpy(members.predict(x)))
        self.members_, self.combiner_ = members, model
        return self

    def _scaled_members(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validated(self, X, reset=False)
        return _numpy(self.members_.predict(self.scaler_.transform_X(X)))

    def predict(self, X) -> np.ndarray:
        """Combined prediction, shape (N,), in the units of y."""
        D = self._scaled_members(X)  # first: it raises NotFittedError before combiner_ is read
        return self.scaler_.inverse_y(self.combiner_.predict(D))

    def predict_members(self, X) -> np.ndarray:
        """Each member's prediction (the structured dataset D), shape (N, M), in the units of y."""
        D = self._scaled_members(X)  # first: it raises NotFittedError before scaler_ is read
        return self.scaler_.inverse_y(D)


def _check_combiner(cfg: TrialConfig, model, D: np.ndarray) -> None:
    """A FitDivergedError if the fitted combiner's training predictions are absurd.

    The alpha recursion runs with overflow warnings off, so a too-large lr_alpha shows up only
    as absurd (or non-finite) fitted values. y is standardised here, so an RMS of a million
    target stds cannot be a fit."""
    with np.errstate(over="ignore", invalid="ignore"):
        rms = np.sqrt(np.mean(model.predict(D) ** 2))
    if rms < DIVERGED_RMS:
        return
    [name] = cfg.combiners
    fix = f"a smaller lr_alpha (now {cfg.lr_alpha}) or" if name in ITERATIVE else ""
    raise FitDivergedError(
        f"SBFNRegressor combiner '{name}' diverged (training predictions reach {rms:.3g} "
        f"target stds); try {fix} a larger lambda2 (now {cfg.lambda2[0]})")


# ------------------------------------------------------------------------- classification
@dataclasses.dataclass
class _TensorImages:
    """The training-tensor view train_cnn needs; batching is DeviceImages' (no augmentation)."""
    train_x: torch.Tensor
    train_y: torch.Tensor
    device: str
    augment: bool = False
    batches = DeviceImages.batches
    epoch = DeviceImages.epoch


def _in_members_dtype(combiner, dtype: str, images: bool):
    """A learned head in the members' dtype (heads train in float32): float64 on tables makes
    predictions batch-invariant. Image members predict float32 logits."""
    if not isinstance(combiner, torch.nn.Module):
        return combiner
    return combiner.to(torch.float32 if images else getattr(torch, dtype))


def _is_images(X) -> bool:
    """(N, H, W) or (N, C, H, W); anything else goes to validate_data as a table."""
    return (X.ndim if hasattr(X, "ndim") else np.asarray(X).ndim) in (3, 4)


# The channels of an image: gray, RGB, RGBA (what a channel-last array's last axis holds).
CHANNELS = (1, 3, 4)


def _as_images(X: np.ndarray) -> np.ndarray:
    """(N, C, H, W): (N, H, W) as one channel; a channel-last array is refused (and any other
    shape left to the shape checks)."""
    if X.ndim == 3:
        return X[:, None]
    if X.ndim == 4:
        _refuse_channel_last(X.shape)
    return X


def _refuse_image_members(ensemble, shape: tuple) -> None:
    """`ensemble` names the image members' architecture; given with a table (flattened images,
    most likely), it would be ignored and MLPs trained: refused, naming the reshape."""
    values = int(np.prod(shape[1:]))
    square = [(c, math.isqrt(values // c)) for c in CHANNELS
              if c * math.isqrt(values // c) ** 2 == values]
    how = ""
    if square:
        c, h = square[0]
        how = f"; flattened {h}x{h} images go in as {_reshape((c, h, h))}" + (
            f" (channel-last ones as X.reshape(-1, {h}, {h}, {c}).transpose(0, 3, 1, 2))"
            if c > 1 else "")
    raise ConfigError("ensemble", ensemble, f"left out for a table (its members are MLPs): "
                      f"ensemble builds the members of images, (N, H, W) or (N, C, H, W), and "
                      f"X is a table of shape {tuple(shape)}{how}")


def _shape_fix(shape: tuple, image_shape: tuple) -> str:
    """What turns an array of `shape` into images of `image_shape` (C, H, W): a reshape where
    each row holds that many values (flattened images), else a resize or crop."""
    if len(shape) >= 2 and int(np.prod(shape[1:])) == int(np.prod(image_shape)):
        return f"pass {_reshape(image_shape)}"
    return "resize or crop them to the training size"


def _reshape(image_shape: tuple) -> str:
    """The call that makes rows of flattened images into images of `image_shape` (C, H, W)."""
    return f"X.reshape(-1, {', '.join(map(str, image_shape))})"


def _refuse_channel_last(shape: tuple) -> None:
    """(N, H, W, C) read as (N, C, H, W) would be H channels of W x C pixels: refused, naming
    the transpose, where the last axis holds channels and the second cannot."""
    if shape[3] in CHANNELS and shape[1] not in CHANNELS:
        raise DataError(f"SBFNClassifier takes images as (N, C, H, W); an array of shape "
                        f"{tuple(shape)} looks channel-last (N, H, W, C): pass "
                        "X.transpose(0, 3, 1, 2)")


def _held_out(codes: np.ndarray, cfg: TrialConfig, classes: np.ndarray):
    """(member rows, held-out rows): a stratified, seeded `val_fraction` for stacked combiners,
    as a trial's training part is split (sbfn_dist.experiment._tabular_fold); `classes`: the
    labels of the codes."""
    rows = np.arange(len(codes))
    if not cfg.uses_validation():
        return rows, rows[:0]
    return validation_part(codes, rows, cfg.val_fraction, cfg.seed, classes)


class SBFNClassifier(ClassifierMixin, _SBFNEstimator):
    """Structured Basis Function Network classifier: M members and one combiner of their class
    probabilities.

    The data kind is read from X's shape at fit:
      tables (N, d): `n_members` two-layer MLPs (`width`, `activation`, `init_scale` = chi,
        `init_scheme`, `lambda1`, `dtype`) trained together by epsilon-modulated
        winner-takes-all cross-entropy with mini-batch SGD: the paper's Algorithm 2 on MLPs.
        X is standardised per column by the trials' FoldScaler (constant columns are centred
        only).
      images (N, H, W) or (N, C, H, W), H, W >= 4: `n_members` CNNs (`ensemble`: an
        architecture or a mix, "Deep Base Learners"; `optimizer`, `momentum` for sgd,
        `weight_decay`) trained by Algorithm 2 without augmentation. Pixels are standardised
        per channel; predict refuses images of another shape. Your images in class folders
        (or an npz of arrays x, y) load with
        `sbfn_dist.data.images.load_images("folder:PATH", image_size=N)`: its `.x`
        (N, C, H, W) and `.y` (class codes; `.classes` the labels they stand for) are X and y
        (docs/image-data.md, "Your own images").
    Both: `epsilon`, `lr` = eta_theta, `epochs`, `batch_size`. For lr, epochs, batch_size and
    combiner None (the default) means the default of sbfn_dist.settings.fields for the data
    kind fit sees (`fields.defaults("classification", "image", estimator=True)` for images).
    A stacked combiner's held-out rows are drawn first; the statistics of the scaling are the
    other rows', which the members train on (as in a trial's fold).

    Defaults: a trial's except, as measured in docs/method.md ("The scikit-learn estimators'
    defaults"): images take the combiner "sbfn_stacked" (it beats the on-the-fly head,
    docs/results claim (3)) and 5 epochs, not a trial's 2 sized for tens of thousands of images
    (digits as 8x8 images, 30% held out: 0.98, was 0.62); tables take the on-the-fly "sbfn"
    (stacking holds out a fifth of a small table's rows: iris 0.92 vs 0.96); dtype float64 and
    device "cpu" as for the regressor.

    combiner (Table "Ensemble variants"):
      "sbfn"         the s-BFN head, trained on-the-fly: one step per member batch (Algorithm 2;
                     `temperature` T, `sbfn_units_per_member`, `row_norm`, `centre_init`,
                     `centre_step`, `lr_alpha` = eta_alpha, `head_optimizer`);
      "moe"          a Mixture-of-Experts gate, on-the-fly (`lr_alpha`, `head_optimizer`);
      "sbfn_stacked", "moe_stacked"  the same heads fitted after the members on a stratified
                     `val_fraction` of the rows, held out from the members (`head_epochs`;
                     None: at least 10 epochs and 1000 steps);
      "logit_mean"   logit averaging (the paper's "Mean"); "logit_mean_tuned" the same with a
                     temperature tuned on the held-out part; "prob_mean" probability averaging;
      the practitioners' combiners, fitted on the held-out part's member probabilities
      (docs/method.md, "The practitioners' combiners"): "ensemble_selection" (Caruana et al.
      2004, `selection_rounds` rounds minimising `selection_metric`: "log_loss" or
      "accuracy"), "stack_nnls" (the Super Learner's NNLS: non-negative weights summing to
      one, Brier score), "stack_logistic" (LogisticRegression stacking), "best_single" (the
      member with the lowest held-out log-loss).
    The learned heads (sbfn, moe and their stacked forms) take `head_fallback`: "prior" (the
    default) answers the class prior where the head is right on no more of the rows it was fitted
    on than their majority class; "none" keeps its own output. `head_calibration`
    "temperature" scales their probabilities by a temperature fitted on the held-out part
    (Guo et al. 2017; a stacked head's out-of-fold probabilities there; docs/method.md,
    "Calibrated heads"), "none" leaves them as trained.
    Parameters the combiner or the data kind does not use are ignored.

    Heads train in float32 (as in run_trial) and then run in the members' dtype. On tables with
    dtype float64 (the default) that makes predictions independent of how rows are batched
    (scikit-learn checks this to 1e-7): torch.cdist in the s-BFN head takes a matrix-product
    path above 25 rows, whose float32 distances differ from the row-by-row ones by ~1e-6.
    `random_state=None` means seed 0. `device`: "cpu", "cuda" or "auto".

    Fitted attributes: `classes_`, `members_` (sbfn_dist.learners.training.TrainedMembers),
    `combiner_` (a head module, a tuned temperature, a fixed rule's name, or a fitted anchor),
    `scaler_` (tables: the FoldScaler of X; None for images), `x_mean_`, `x_scale_` (images: per
    channel; None for tables), `image_shape_` ((C, H, W); None for tables), `n_features_in_`
    (pixels per image for images), `uninformative_` (fit: True when the combiner was right on
    no more of the rows it was fitted on than their majority class, as the records'
    `uninformative` says; fit then warns with an UninformativeWarning).
    """

    _task = "classification"

    def __init__(self, *,
                 # the members (Algorithm 2)
                 n_members=_CLF["n_members"], epsilon=_CLF["epsilon"], lr=_CLF["lr"],
                 epochs=_CLF["epochs"], batch_size=_CLF["batch_size"],
                 # each member on tables, an MLP
                 width=_CLF["width"], init_scale=_CLF["init_scale"], lambda1=_CLF["lambda1"],
                 activation=_CLF["activation"], init_scheme=_CLF["init_scheme"],
                 dtype=_CLF["dtype"],
                 # the members on images, CNNs
                 ensemble=_CLF["ensemble"], optimizer=_CLF["optimizer"],
                 momentum=_CLF["momentum"], weight_decay=_CLF["weight_decay"],
                 # the combiner
                 combiner=_CLF["combiner"], lr_alpha=_CLF["lr_alpha"],
                 temperature=_CLF["temperature"],
                 sbfn_units_per_member=_CLF["sbfn_units_per_member"],
                 row_norm=_CLF["row_norm"], centre_init=_CLF["centre_init"],
                 centre_step=_CLF["centre_step"], head_optimizer=_CLF["head_optimizer"],
                 head_fallback=_CLF["head_fallback"], head_epochs=_CLF["head_epochs"],
                 head_calibration=_CLF["head_calibration"], selection_rounds=_CLF["selection_rounds"],
                 selection_metric=_CLF["selection_metric"], val_fraction=_CLF["val_fraction"],
                 # where and how reproducibly it runs
                 device=_CLF["device"], random_state=_CLF["random_state"]):
        self.n_members = n_members
        self.epsilon = epsilon
        self.lr = lr
        self.epochs = epochs
        self.batch_size = batch_size
        self.width = width
        self.init_scale = init_scale
        self.lambda1 = lambda1
        self.activation = activation
        self.init_scheme = init_scheme
        self.dtype = dtype
        self.ensemble = ensemble
        self.optimizer = optimizer
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.combiner = combiner
        self.lr_alpha = lr_alpha
        self.temperature = temperature
        self.sbfn_units_per_member = sbfn_units_per_member
        self.row_norm = row_norm
        self.centre_init = centre_init
        self.centre_step = centre_step
        self.head_optimizer = head_optimizer
        self.head_fallback = head_fallback
        self.head_epochs = head_epochs
        self.head_calibration = head_calibration
        self.selection_rounds = selection_rounds
        self.selection_metric = selection_metric
        self.val_fraction = val_fraction
        self.device = device
        self.random_state = random_state

    def fit(self, X, y):
        images = _is_images(X)
        if not images and self.ensemble != _CLF["ensemble"]:
            _refuse_image_members(self.ensemble, np.shape(X))
        cfg = self._settings("image" if images else "tabular")
        X, y = self._fit_input(X, y, images)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        require_classes(self.classes_, "y given to SBFNClassifier.fit", "pass labels of at "
                        "least two classes")
        rows, held_out = _held_out(codes, cfg, self.classes_)
        # Scaled by the members' rows' statistics, as a trial's fold is (experiment._tabular_fold,
        # data.images.DeviceImages): the same rows give the same members.
        self._fit_scaling(X[rows], images)
        x = self._scale_x(X)
        fold = (self._image_fold(cfg, x, codes, rows, held_out) if images else
                _fold(cfg, x[rows], codes[rows], x_val=x[held_out], y_val=codes[held_out],
                      n_classes=len(self.classes_)))
        members, combiner, fitted = self._run_fold(cfg, fold)
        self.combiner_ = _in_members_dtype(combiner, cfg.dtype, images)
        self.members_ = members
        self.uninformative_ = bool(fitted.get("uninformative"))
        if self.uninformative_:
            warnings.warn(_uninformative(cfg), UninformativeWarning, stacklevel=2)
        return self

    def _fit_input(self, X, y, images: bool):
        """Validated (X, y): tables by validate_data; images as float32 (N, C, H, W)."""
        if not images:
            self.image_shape_ = None
            return validated(self, X, y)
        X, y = check_X_y(X, y, allow_nd=True, dtype=np.float32)
        X = _as_images(X)
        if min(X.shape[2:]) < MIN_SIZE:
            raise DataError(f"SBFNClassifier needs images of at least {MIN_SIZE}x{MIN_SIZE} "
                            f"pixels, got an array of shape {X.shape}")
        self.image_shape_ = X.shape[1:]
        self.n_features_in_ = int(np.prod(self.image_shape_))
        return X, y

    def _adopt(self, fold: Fold, combiner) -> None:
        """What fit sets but members_, from a trial's fold (estimator_from_fold): its scaling
        and input shape, its class codes and a copy of its combiner in the members' dtype (the
        trial's own is left as the trial holds it)."""
        images = fold.images is not None
        self.classes_ = np.arange(fold.n_classes)
        self.combiner_ = _in_members_dtype(copy.deepcopy(combiner), self.dtype, images)
        shape = tuple(int(n) for n in fold.x_train.shape[1:])
        self.image_shape_ = shape if images else None
        self.n_features_in_ = int(np.prod(shape))
        if images:
            self._scaling(None, (fold.images.mean, fold.images.std))
        else:
            self._scaling(fold.scaler, None)

    def _fit_scaling(self, X: np.ndarray, images: bool) -> None:
        """Tables: the trials' FoldScaler; images: per-channel moments (channel_moments)."""
        if images:
            self._scaling(None, channel_moments(torch.as_tensor(X)))
        else:
            self._scaling(FoldScaler().fit(X), None)

    def _scaling(self, scaler: FoldScaler | None, moments) -> None:
        """scaler_ (tables) or x_mean_, x_scale_ (images: the (C,) moments, shaped to broadcast
        over (N, C, H, W) arrays)."""
        self.scaler_ = scaler
        self.x_mean_, self.x_scale_ = ((None, None) if moments is None else
                                       (m.cpu().numpy().reshape(1, -1, 1, 1) for m in moments))

    def _scale_x(self, X: np.ndarray) -> np.ndarray:
        if self.image_shape_ is None:
            return self.scaler_.transform_X(X)
        return (X - self.x_mean_) / self.x_scale_

    def _image_fold(self, cfg: TrialConfig, x: np.ndarray, codes: np.ndarray, rows, held_out):
        """The fold of images: the member rows as tensors on the device (DeviceImages' batching,
        without augmentation), the held-out rows for a stacked combiner."""
        on = lambda a: torch.as_tensor(a, device=cfg.device)  # noqa: E731
        images = _TensorImages(on(x[rows]), on(codes[rows]), cfg.device)
        return _fold(cfg, images.train_x, images.train_y, x_val=on(x[held_out]),
                     y_val=codes[held_out], n_classes=len(self.classes_), images=images)

    def _member_input(self, x: np.ndarray, members):
        """Images go to the members' device as a tensor; TrainedMembers converts tables itself."""
        if self.image_shape_ is None:
            return x
        return torch.as_tensor(x, device=next(members.model.parameters()).device)

    def _predict_input(self, X) -> np.ndarray:
        if self.image_shape_ is None:
            return validated(self, X, reset=False)
        X = _as_images(check_array(X, allow_nd=True, dtype=np.float32))
        if X.shape[1:] != self.image_shape_:
            raise DataError(f"SBFNClassifier was fitted on images of shape (C, H, W) = "
                            f"{self.image_shape_}, got an array of shape {X.shape}: "
                            f"{_shape_fix(X.shape, self.image_shape_)}")
        return X

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (N, n_classes), columns in the order of classes_."""
        check_is_fitted(self)
        x = self._scale_x(self._predict_input(X))
        logits = self.members_.scores(self._member_input(x, self.members_))
        return combine(self.combiner_, logits, torch.softmax(logits, 2)).cpu().numpy()

    def predict(self, X) -> np.ndarray:
        proba = self.predict_proba(X)   # first: it raises NotFittedError before classes_ is read
        return self.classes_[proba.argmax(1)]


# ------------------------------------------------------------------------- from a trial
def estimator_for(config: dict, combiner: str, combiner_params: dict, random_state: int):
    """The task's estimator, unfitted, with a trial config's settings and `combiner` at
    `combiner_params` (the trial's lambda2 path becomes that setting's one value)."""
    cls = SBFNRegressor if config["task"] == "regression" else SBFNClassifier
    params = {n: config[n] for n in cls().get_params() if n in config and n != "lambda2"}
    params.update(combiner=combiner, random_state=random_state)
    if "lambda2" in combiner_params:
        params["lambda2"] = combiner_params["lambda2"]
    elif combiner == "sbfn_rbf" and "lambda2" in config:    # the grid its inner CV chooses from
        params["lambda2"] = config["lambda2"]
    return cls(**params)


def estimator_from_fold(config: dict, combiner: str, combiner_params: dict, fold: Fold,
                        members, model):
    """The estimator that one fold of a trial trained (run_trials' `keep`): its settings
    `config`, the fold's scaling and seed, its trained `members` and the combiner `model` fitted
    on them at `combiner_params`; fitted as fit leaves an estimator, so it predicts the fold's
    test rows as the trial's record scored them (a classifier: its classes are the class codes
    the trial trained on, 0..C-1)."""
    estimator = estimator_for(config, combiner, combiner_params, fold.seed)
    estimator.members_ = members
    if isinstance(estimator, SBFNRegressor):
        estimator.scaler_, estimator.combiner_ = fold.scaler, model
        estimator.n_features_in_ = fold.x_train.shape[1]
    else:
        estimator._adopt(fold, model)
    return estimator


def _constraint(name: str):
    """The field's constraint; the trial's lambda2 (a path of values fitted on the same members)
    is one value here, the combiner one of COMBINERS of the estimator's task, and M >= 1."""
    if name == "combiner":
        return OneOf(lambda ctx: COMBINERS[ctx.task])
    if name == "n_members":       # its members are its only hypotheses (no plug-ins here)
        return Int(1, note="M = 1 is the single-hypothesis model; for your own models as "
                           "hypotheses, sbfn_dist.interfaces.stacking_estimators")
    check = field(name).check
    return check.inner if isinstance(check, Items) else check


# What each parameter of either estimator allows, checked once at fit: the constraint of the
# field of the same name (a parameter that is no field fails here, on import).
PARAMETERS = {name: _constraint(name) for est in (SBFNRegressor, SBFNClassifier)
              for name in inspect.signature(est).parameters}
