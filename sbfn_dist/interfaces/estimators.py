"""scikit-learn front ends: SBFNRegressor (tables) and SBFNClassifier (tables and images).

    reg = SBFNRegressor(combiner="g2").fit(X, y)        # X (N, d)
    clf = SBFNClassifier().fit(X, y)                     # X (N, d), (N, H, W) or (N, C, H, W)
    reg.predict(X_new); clf.predict(X_new); clf.predict_proba(X_new)

fit trains M members together by epsilon-modulated winner-takes-all (sbfn_dist.learners.training: the
paper's Algorithm 1 on squared loss, Algorithm 2 on cross-entropy) and fits the estimator's one
combiner on them, as one fold of run_trial would with all of X as its training part; predict
maps new inputs through the frozen members and that combiner.

Parameters are the config names of sbfn_dist.settings.fields, grouped by concern below (MEMBERS, MLP,
...): PARAMETERS holds each one's constraint, the field's own, and every default is the fields'
default for estimators (estimator=True); no other place holds one. They are checked once, at
fit, as scikit-learn does (__init__ only stores them: clone and set_params must never raise); a
bad value raises ConfigError naming the parameter, the value and what is allowed. A parameter
that the combiner or the data kind does not use is ignored (the scikit-learn convention).
"""

import dataclasses
import inspect

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (check_array, check_is_fitted, check_X_y, column_or_1d,
                                      validate_data)

from sbfn_dist.combiners import ArithmeticCombiner, OnlineSBFN, SBFNLeastSquares, fit_online_grid
from sbfn_dist.combiners.classification import tune_temperature
from sbfn_dist.combiners.ensembles import combine, fit_stacked_head, make_head
from sbfn_dist.data.checks import numeric_target, require_classes
from sbfn_dist.data.images import DeviceImages
from sbfn_dist.data.splits import validation_part
from sbfn_dist.errors import ConfigError, DataError, SbfnError
from sbfn_dist.settings.fields import Ctx, Items, Maybe, OneOf, defaults, field
from sbfn_dist.learners.cnn import MIN_SIZE
from sbfn_dist.learners.training import (CNNConfig, MLPConfig, StreamRecorder, TrainingDiverged, train_cnn,
                               train_mlp)
from sbfn_dist.runtime import resolve_device
from sbfn_dist.settings.tasks import CLOSED_FORM, ITERATIVE, ON_THE_FLY_HEADS, STACKED, TASKS

# The estimators' parameters, grouped by concern; what each allows and its default are the
# field's of the same name in sbfn_dist.settings.fields (PARAMETERS, estimator_defaults).
MEMBERS = ("n_members", "epsilon", "lr", "epochs", "batch_size")
MLP = ("width", "init_scale", "lambda1", "activation", "init_scheme", "dtype")
CNN = ("ensemble", "optimizer", "momentum", "weight_decay")
REGRESSION_COMBINER = ("combiner", "lambda2", "lr_alpha", "window", "sbfn_basis",
                       "sbfn_intercept", "g3_basis")
CLASSIFICATION_COMBINER = ("combiner", "lr_alpha", "temperature", "sbfn_units_per_member",
                           "row_norm", "centre_init", "head_optimizer", "head_epochs",
                           "val_fraction")
RUN = ("device", "random_state")

# The classifier offers every classification combiner but base_avg: that one scores each member
# on its own (the paper's "Base Avg." column) and gives no single prediction.
COMBINERS = {"regression": TASKS["regression"].combiners,
             "classification": tuple(c for c in TASKS["classification"].combiners
                                     if c != "base_avg")}
MODALITIES = {"regression": ("tabular",), "classification": ("tabular", "image")}
DIVERGED_RMS = 1e6     # combiner output RMS, in target stds, taken as divergence


def _constraint(name: str):
    """The field's constraint; the trial's lambda2 (a path of values fitted on the same members)
    is one value here, and the combiner one of COMBINERS of the estimator's task."""
    if name == "combiner":
        return OneOf(lambda ctx: COMBINERS[ctx.task])
    check = field(name).check
    return check.inner if isinstance(check, Items) else check


# What each parameter of either estimator allows, checked once at fit.
PARAMETERS = {name: _constraint(name) for name in
              (*MEMBERS, *MLP, *CNN, *REGRESSION_COMBINER, *CLASSIFICATION_COMBINER, *RUN)}


def estimator_defaults(task: str) -> dict:
    """Each parameter's default: the fields' one for estimators, or None where it differs
    between the data kinds the task's estimator takes (None then means the data kind's own)."""
    kinds = [defaults(task, m, estimator=True) for m in MODALITIES[task]]
    return {n: kinds[0][n] if all(k[n] == kinds[0][n] for k in kinds) else None
            for n in PARAMETERS}


class FitDivergedError(SbfnError):
    """Training produced non-finite parameters; the message says which step size to lower."""


def _init(task: str, names: tuple):
    """The __init__ of an estimator taking `names` as keywords, defaults estimator_defaults(task).

    scikit-learn reads the parameters off the signature (get_params, clone), so it is set
    explicitly; __init__ only stores them, as scikit-learn requires (checks happen at fit)."""
    task_defaults = estimator_defaults(task)
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
        + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=task_defaults[n])
           for n in names])

    def __init__(self, **params):
        try:
            bound = signature.bind(self, **params)
        except TypeError as err:                    # an unknown name, as Python would say it
            raise TypeError(f"{type(self).__name__}: {err}") from None
        bound.apply_defaults()
        for name in names:
            setattr(self, name, bound.arguments[name])

    __init__.__signature__ = signature
    return __init__


class _SBFNEstimator(BaseEstimator):
    _task: str              # "regression" | "classification"

    def _settings(self, modality: str) -> dict:
        """Every parameter checked against PARAMETERS (once, at fit), numpy scalars made plain
        and None resolved to the default of the data kind fit sees."""
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
        out["seed"] = out["random_state"] or 0      # Maybe's note: None is seed 0
        return out

    def _train(self, s: dict, train, *args):
        """The members, by `train` (train_mlp or train_cnn); divergence is a FitDivergedError."""
        try:
            return train(*args)
        except TrainingDiverged as err:
            hint = "" if getattr(self, "image_shape_", None) else " or init_scale"
            raise FitDivergedError(f"{type(self).__name__} training diverged ({err}) with "
                                   f"lr={s['lr']}; try a smaller lr{hint}") from None

    def _scale_x(self, X: np.ndarray) -> np.ndarray:
        return (X - self.x_mean_) / self.x_scale_


def _config(cls, s: dict, **fixed):
    """A member config (MLPConfig, CNNConfig) from the settings its fields name."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{**{k: v for k, v in s.items() if k in names}, **fixed})


def _mlp_config(s: dict, geometry: str) -> MLPConfig:
    return _config(MLPConfig, s, device=resolve_device(s["device"]), geometry=geometry)


def _moments(a: np.ndarray):
    """Column means and stds; a (near-)constant column gets std 1 so scaling stays finite."""
    mean, std = a.mean(0), a.std(0)
    constant = std <= 1e-12 * np.maximum(1.0, np.abs(mean))
    return mean, np.where(constant, 1.0, std)


# ------------------------------------------------------------------------- regression
def _single_target(y: np.ndarray) -> np.ndarray:
    """y from validate_data(multi_output=True): refuse several targets with a clear message;
    a (n, 1) column is raveled with sklearn's usual DataConversionWarning."""
    if y.ndim == 2 and y.shape[1] > 1:
        raise ValueError(f"SBFNRegressor predicts a single target, but y has shape {y.shape}; "
                         "fit one estimator per target (sklearn.multioutput.MultiOutputRegressor)")
    return column_or_1d(y, warn=True)


def _regression_combiner(s: dict):
    name = s["combiner"]
    if name in CLOSED_FORM:
        linear = name == "sbfn_ls_linear"        # always with an intercept (sbfn_dist.settings.tasks)
        return SBFNLeastSquares(s["lambda2"], s["sbfn_basis"], None,
                                linear or s["sbfn_intercept"], linear, s["seed"])
    if name in ITERATIVE:
        return OnlineSBFN(name, s["lambda2"], s["lr_alpha"], s["window"], s["g3_basis"],
                          seed=s["seed"])
    return ArithmeticCombiner()


def _numpy(d: torch.Tensor) -> np.ndarray:
    return d.double().cpu().numpy()


class SBFNRegressor(RegressorMixin, _SBFNEstimator):
    """Structured Basis Function Network regressor: M members and one s-BFN combiner.

    X and y are standardised inside fit (constant columns are centred only), so the step sizes
    mean the same on any data scale. Members: `n_members` two-layer MLPs (`width`, `activation`,
    `init_scale` = chi, `init_scheme`, `dtype`) trained together by epsilon-modulated
    winner-takes-all SGD (`epsilon`, `lr` = eta_theta, `epochs`, `batch_size`, `lambda1`):
    the paper's Algorithm 1, in mini-batches of `batch_size`. Combiner, fitted on them:
      "sbfn_ls_linear" closed-form ridge s-BFN (Eq. "weights"; `lambda2`, `sbfn_basis`) with an
                       intercept and the raw member outputs as extra features (docs/method.md);
      "sbfn_ls"        the same without the extra features (`sbfn_intercept`: add an intercept);
      "g1", "g2", "g3" iterative s-BFN (Table "s-BFN variants") on the members' training-time
                       prediction stream, Algorithm 1's on-the-fly regime (`lambda2`,
                       `lr_alpha` = eta_alpha, `window` for g2/g3, `g3_basis` for g3);
      "arithmetic"     the members' mean.
    Parameters the combiner does not use are ignored.

    Defaults: a trial's (sbfn_dist.settings.fields; lambda2 = 0, the first value of its path) except, as
    measured in docs/method.md ("The scikit-learn estimators' defaults"): mini-batches of 16 for
    20 epochs where a trial steps per row for 10 (the same R^2 on diabetes in a third of the
    time), hence chi = 1 (0.1 barely moves mini-batch members); dtype float64, so predictions do
    not depend on how rows are batched (scikit-learn checks this to 1e-7); device "cpu". The
    combiner "sbfn_ls_linear" beat averaging in every regression run (docs/results, claim (1)).
    `random_state=None` means seed 0: fits are deterministic unless a seed is given.
    `device`: "cpu", "cuda" or "auto" (CUDA when present).

    Fitted attributes: `members_` (sbfn_dist.learners.training.TrainedMembers), `combiner_`, `x_mean_`,
    `x_scale_`, `y_mean_`, `y_scale_`, `n_features_in_` (and `feature_names_in_` for named
    columns).
    """

    _task = "regression"

    __init__ = _init("regression", (*MEMBERS, *MLP, *REGRESSION_COMBINER, *RUN))

    def fit(self, X, y):
        s = self._settings("tabular")
        if y is not None:     # None: scikit-learn's own message (validate_data)
            y = numeric_target(y, "y given to SBFNRegressor.fit", "use SBFNClassifier for "
                               "class labels")
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True)
        y = _single_target(y)
        self.x_mean_, self.x_scale_ = _moments(X)
        y_mean, y_scale = _moments(y.reshape(-1, 1))
        self.y_mean_, self.y_scale_ = float(y_mean[0]), float(y_scale[0])
        Xs, ys = self._scale_x(X), (y - self.y_mean_) / self.y_scale_
        # G1/G2/G3 replay the members' training-time predictions (sbfn_dist.learners.training).
        stream = (StreamRecorder(s["epochs"] * len(ys), s["n_members"], getattr(torch, s["dtype"]))
                  if s["combiner"] in ITERATIVE else None)
        members = self._train(s, train_mlp, Xs, ys, _mlp_config(s, "squared"), 1,
                              [stream] if stream else [])
        self.combiner_ = self._fit_combiner(s, _numpy(members.predict(Xs)), ys, stream)
        self.members_ = members
        return self

    def _fit_combiner(self, s: dict, D: np.ndarray, ys: np.ndarray, stream):
        comb = _regression_combiner(s)
        if stream is not None:
            fit_online_grid(*stream.arrays(), s["batch_size"], [comb])
        else:
            comb.fit(D, ys)
        # The alpha recursion runs with overflow warnings off, so a too-large lr_alpha
        # shows up only as absurd (or non-finite) fitted values. y is standardised here,
        # so an RMS of a million target stds cannot be a fit.
        with np.errstate(over="ignore", invalid="ignore"):
            rms = np.sqrt(np.mean(comb.predict(D) ** 2))
        if not rms < DIVERGED_RMS:
            fix = f"a smaller lr_alpha (now {s['lr_alpha']}) or" if stream is not None else ""
            raise FitDivergedError(
                f"SBFNRegressor combiner '{s['combiner']}' diverged (training predictions reach "
                f"{rms:.3g} target stds); try {fix} a larger lambda2 (now {s['lambda2']})")
        return comb

    def _scaled_members(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return _numpy(self.members_.predict(self._scale_x(X)))

    def predict(self, X) -> np.ndarray:
        """Combined prediction, shape (N,), in the units of y."""
        D = self._scaled_members(X)  # first: it raises NotFittedError before combiner_ is read
        return self.combiner_.predict(D) * self.y_scale_ + self.y_mean_

    def predict_members(self, X) -> np.ndarray:
        """Each member's prediction (the structured dataset D), shape (N, M), in the units of y."""
        return self._scaled_members(X) * self.y_scale_ + self.y_mean_


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


def _channel_moments(X: np.ndarray):
    """Per-channel pixel mean and std of float32 images (N, C, H, W); + 1e-8 keeps a constant
    channel finite."""
    return X.mean(axis=(0, 2, 3), keepdims=True), X.std(axis=(0, 2, 3), keepdims=True) + 1e-8


def _is_images(X) -> bool:
    """(N, H, W) or (N, C, H, W); anything else goes to validate_data as a table."""
    return (X.ndim if hasattr(X, "ndim") else np.asarray(X).ndim) in (3, 4)


def _as_images(X: np.ndarray) -> np.ndarray:
    return X[:, None] if X.ndim == 3 else X


def _head(name: str, s: dict, n_classes: int, device):
    return make_head(name, s.get, n_classes, s["seed"], device)


def _held_out(codes: np.ndarray, s: dict):
    """(member rows, held-out rows): a stratified, seeded `val_fraction` for stacked combiners."""
    rows = np.arange(len(codes))
    if s["combiner"] not in STACKED:
        return rows, rows[:0]
    return validation_part(codes, rows, s["val_fraction"], s["seed"])


class SBFNClassifier(ClassifierMixin, _SBFNEstimator):
    """Structured Basis Function Network classifier: M members and one combiner of their class
    probabilities.

    The data kind is read from X's shape at fit:
      tables (N, d): `n_members` two-layer MLPs (`width`, `activation`, `init_scale` = chi,
        `init_scheme`, `lambda1`, `dtype`) trained together by epsilon-modulated
        winner-takes-all cross-entropy with mini-batch SGD: the paper's Algorithm 2 on MLPs.
        X is standardised per column (constant columns are centred only).
      images (N, H, W) or (N, C, H, W), H, W >= 4: `n_members` CNNs (`ensemble`: an
        architecture or a mix, "Deep Base Learners"; `optimizer`, `momentum` for sgd,
        `weight_decay`) trained by Algorithm 2 without augmentation. Pixels are standardised
        per channel; predict refuses images of another shape.
    Both: `epsilon`, `lr` = eta_theta, `epochs`, `batch_size`. For lr, epochs, batch_size and
    combiner None (the default) means the default of sbfn_dist.settings.fields for the data kind fit sees
    (`fields.defaults("classification", "image", estimator=True)` for images).

    Defaults: a trial's except, as measured in docs/method.md ("The scikit-learn estimators'
    defaults"): images take the combiner "sbfn_stacked" (it beats the on-the-fly head,
    docs/results claim (3)) and 5 epochs, not a trial's 2 sized for tens of thousands of images
    (digits as 8x8 images, 30% held out: 0.98, was 0.62); tables take the on-the-fly "sbfn"
    (stacking holds out a fifth of a small table's rows: iris 0.92 vs 0.96); dtype float64 and
    device "cpu" as for the regressor.

    combiner (Table "Ensemble variants"):
      "sbfn"         the s-BFN head, trained on-the-fly: one step per member batch (Algorithm 2;
                     `temperature` T, `sbfn_units_per_member`, `row_norm`, `centre_init`,
                     `lr_alpha` = eta_alpha, `head_optimizer`);
      "moe"          a Mixture-of-Experts gate, on-the-fly (`lr_alpha`, `head_optimizer`);
      "sbfn_stacked", "moe_stacked"  the same heads fitted after the members on a stratified
                     `val_fraction` of the rows, held out from the members (`head_epochs`;
                     None: at least 10 epochs and 1000 steps);
      "logit_mean"   logit averaging (the paper's "Mean"); "logit_mean_tuned" the same with a
                     temperature tuned on the held-out part; "prob_mean" probability averaging.
    Parameters the combiner or the data kind does not use are ignored.

    Heads train in float32 (as in run_trial) and then run in the members' dtype. On tables with
    dtype float64 (the default) that makes predictions independent of how rows are batched
    (scikit-learn checks this to 1e-7): torch.cdist in the s-BFN head takes a matrix-product
    path above 25 rows, whose float32 distances differ from the row-by-row ones by ~1e-6.
    `random_state=None` means seed 0. `device`: "cpu", "cuda" or "auto".

    Fitted attributes: `classes_`, `members_` (sbfn_dist.learners.training.TrainedMembers), `combiner_`
    (a head module, a tuned temperature, or a fixed rule's name), `x_mean_`, `x_scale_`,
    `image_shape_` ((C, H, W); None for tables), `n_features_in_` (pixels per image for images).
    """

    _task = "classification"

    __init__ = _init("classification",
                     (*MEMBERS, *MLP, *CNN, *CLASSIFICATION_COMBINER, *RUN))

    def fit(self, X, y):
        images = _is_images(X)
        s = self._settings("image" if images else "tabular")
        X, y = self._fit_input(X, y, images)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        require_classes(self.classes_, "y given to SBFNClassifier.fit", "pass labels of at "
                        "least two classes")
        self.x_mean_, self.x_scale_ = _channel_moments(X) if images else _moments(X)
        x = self._scale_x(X)
        rows, held_out = _held_out(codes, s)
        device = resolve_device(s["device"])
        head = (_head(s["combiner"], s, len(self.classes_), device)
                if s["combiner"] in ON_THE_FLY_HEADS else None)
        members = self._train_members(x[rows], codes[rows], s, [head] if head else [])
        combiner = head or self._fit_stacked(s, members, x[held_out], codes[held_out])
        # Heads run in the members' dtype: float64 on tables makes predictions batch-invariant.
        dtype = torch.float32 if images else getattr(torch, s["dtype"])
        self.combiner_ = combiner.to(dtype) if isinstance(combiner, torch.nn.Module) else combiner
        self.members_ = members
        return self

    def _fit_input(self, X, y, images: bool):
        """Validated (X, y): tables by validate_data; images as float32 (N, C, H, W)."""
        if not images:
            self.image_shape_ = None
            return validate_data(self, X, y)
        X, y = check_X_y(X, y, allow_nd=True, dtype=np.float32)
        X = _as_images(X)
        if min(X.shape[2:]) < MIN_SIZE:
            raise DataError(f"SBFNClassifier needs images of at least {MIN_SIZE}x{MIN_SIZE} "
                            f"pixels, got an array of shape {X.shape}")
        self.image_shape_ = X.shape[1:]
        self.n_features_in_ = int(np.prod(self.image_shape_))
        return X, y

    def _train_members(self, x: np.ndarray, codes: np.ndarray, s: dict, observers):
        n_classes = len(self.classes_)
        if self.image_shape_ is None:
            return self._train(s, train_mlp, x, codes, _mlp_config(s, "cross_entropy"),
                               n_classes, observers)
        device = resolve_device(s["device"])
        images = _TensorImages(torch.as_tensor(x, device=device),
                               torch.as_tensor(codes, device=device), device)
        return self._train(s, train_cnn, images, n_classes, _config(CNNConfig, s), observers)

    def _fit_stacked(self, s: dict, members, x_val: np.ndarray, y_val: np.ndarray):
        """A stacked combiner fitted on the held-out rows' member outputs; a fixed rule's name
        (no fit) for the others."""
        name = s["combiner"]
        if name not in STACKED:
            return name
        logits = members.scores(self._member_input(x_val, members))
        y = torch.as_tensor(y_val, device=logits.device)
        if name == "logit_mean_tuned":
            return tune_temperature(logits, y)
        return fit_stacked_head(name, s.get, torch.softmax(logits, 2).float(), y, s["seed"])

    def _member_input(self, x: np.ndarray, members):
        """Images go to the members' device as a tensor; TrainedMembers converts tables itself."""
        if self.image_shape_ is None:
            return x
        return torch.as_tensor(x, device=next(members.model.parameters()).device)

    def _predict_input(self, X) -> np.ndarray:
        if self.image_shape_ is None:
            return validate_data(self, X, reset=False)
        X = _as_images(check_array(X, allow_nd=True, dtype=np.float32))
        if X.shape[1:] != self.image_shape_:
            raise DataError(f"SBFNClassifier was fitted on images of shape (C, H, W) = "
                            f"{self.image_shape_}, got an array of shape {X.shape}: resize or "
                            "crop them to the training size")
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

