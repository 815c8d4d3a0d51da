"""The trial configuration: every field of one run_trial call, validated up front.

A bad value raises ConfigError naming the field, the value and what is allowed; unknown
fields list the known ones. Fields whose sensible default depends on the task (regression on
tables vs image classification) default to None and are filled from TASK_DEFAULTS, so every
record shows the value actually used. Regression defaults follow the paper's Table "hyper";
image defaults follow section "Deep Base Learners" (T = 3, eta_alpha = 0.1) and a CPU-friendly
training recipe (docs/method.md).
"""

from dataclasses import asdict, dataclass, field, fields, replace

from sbfn_dist.baselines import COMPETITOR_GRIDS, COMPETITORS
from sbfn_dist.combiners import CLASSIFICATION_COMBINERS, REGRESSION_COMBINERS
from sbfn_dist.combiners.basis import BASES
from sbfn_dist.combiners.classification import CENTRE_INITS, HEAD_OPTIMIZERS, ROW_NORMS
from sbfn_dist.combiners.online import G3_BASES
from sbfn_dist.data.images import IMAGE_DATASETS
from sbfn_dist.data.splits import SCHEMES as SPLITS
from sbfn_dist.errors import ConfigError
from sbfn_dist.image_ensemble import OPTIMIZERS
from sbfn_dist.learners.mlp import ACTIVATIONS, INIT_SCHEMES
from sbfn_dist.plugins import PLUGINS

TASK_DEFAULTS = {
    "regression": {"split": "kfold", "folds": 10, "epsilon": 0.1, "lr": 0.03, "epochs": 10,
                   "batch_size": 1, "lr_alpha": 0.03, "combiners": REGRESSION_COMBINERS,
                   "optimizer": "sgd"},
    "classification": {"split": "holdout", "folds": 5, "epsilon": 0.5, "lr": 1e-3, "epochs": 2,
                       "batch_size": 128, "lr_alpha": 0.1, "combiners": CLASSIFICATION_COMBINERS,
                       "optimizer": "adam"},
}


def task_of(dataset: str) -> str:
    return "classification" if dataset in IMAGE_DATASETS else "regression"

REGIMES = ("on_the_fly", "plug_in")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class TrialConfig:
    # data and split
    dataset: str = "diabetes"
    target: str | None = None
    data_dir: str | None = None
    include_random_vars: bool = False
    n_samples: int | None = None     # a seeded random subset of rows (quick runs); None = all
    split: str | None = None         # kfold | holdout | fixed | fixed_train_kfold (task default)
    folds: int | None = None         # folds, or holdout splits for images (task default)
    fold: int | None = None          # run one fold only (a sweep's unit of work); None = all
    test_fraction: float = 0.2
    seed: int = 0
    # the M hypotheses (paper, Table "hyper")
    n_members: int = 5               # M
    epsilon: float | None = None
    width: int = 50                  # kappa
    init_scale: float = 0.1          # chi
    lambda1: float = 0.0
    lr: float | None = None          # eta_theta
    epochs: int | None = None
    batch_size: int | None = None    # b = 1: Algorithm 1 (online)
    activation: str = "tanh"
    init_scheme: str = "scaled_default"
    # combiners, all fitted on the same trained hypotheses
    combiners: tuple | None = None
    lambda2: tuple = (0.0,)          # every value is evaluated on the same hypotheses
    lr_alpha: float | None = None    # eta_alpha
    window: int = 100                # k, G2/G3's recent-prediction window
    online_regime: str = "on_the_fly"
    sbfn_basis: str = "member"
    sbfn_intercept: bool = False
    g3_basis: str = "exp"
    # plug-in hypotheses: fitted predictors that join the M members as extra columns of D
    # (paper, "Structured Dataset Formation"; docs/method.md "Heterogeneous plug-in hypotheses")
    plugin_members: tuple = ()       # names from sbfn_dist.plugins.PLUGINS
    plugin_folds: int = 5            # inner folds of the out-of-fold training columns
    # image ensembles (paper, "Multiple Hypothesis Deep Ensembles"); ignored for tables
    ensemble: str = "mixed"          # mixed (heterogeneous) | cnn | resnet | an architecture
    optimizer: str | None = None
    momentum: float = 0.9
    weight_decay: float = 0.0
    n_train: int | None = None       # member-training images per split (None: the rest)
    n_val: int | None = None         # held-out images for stacking / temperature (None: 10%)
    n_test: int | None = None        # test images per split (None: official test-set size)
    augment: bool | None = None      # None: the data set's default (CIFAR crop + flip)
    temperature: float = 3.0         # T of the s-BFN classifier
    sbfn_units_per_member: int = 4   # K = k * M radial units
    row_norm: str = "layernorm"      # paper: "e.g., LayerNorm"; sum | none (docs/method.md)
    centre_init: str = "kmeans++"    # s-BFN centre seeding: kmeans++ | random (docs/method.md)
    head_optimizer: str = "sgd"      # sgd: Algorithm 2's update; adam: see docs/method.md
    head_epochs: int | None = None   # stacking epochs (None: >= 10 and >= 1000 steps)
    # competitors (paper: SVM-RBF, random forest, gradient boosting)
    competitors: tuple = ()
    competitor_grid: str = "small"
    # run
    device: str = "auto"
    dtype: str = "float32"
    sweep: str = ""
    trial_id: str = ""
    extra: dict = field(default_factory=dict)   # free-form labels carried into every record

    @classmethod
    def from_dict(cls, config: dict) -> "TrialConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ConfigError(unknown[0], config[unknown[0]],
                              f"a known field; known fields: {', '.join(sorted(known))}")
        cfg = cls(**{k: _normalise(k, v) for k, v in config.items()}).with_task_defaults()
        cfg.validate()
        return cfg

    @property
    def task(self) -> str:
        return task_of(self.dataset)

    def with_task_defaults(self) -> "TrialConfig":
        defaults = TASK_DEFAULTS[self.task]
        return replace(self, **{k: v for k, v in defaults.items() if getattr(self, k) is None})

    def to_dict(self) -> dict:
        return asdict(self)

    def validate(self) -> None:
        for name, check, allowed in _RULES:
            value = getattr(self, name)
            if not check(value):
                raise ConfigError(name, value, allowed)
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(name, getattr(self, name), f"one of {allowed}")
        known = TASK_DEFAULTS[self.task]["combiners"]
        bad = [c for c in self.combiners if c not in known]
        if bad:
            raise ConfigError("combiners", bad[0], f"{self.task} combiners from {known}")
        if self.competitors and self.task == "classification":
            raise ConfigError("competitors", self.competitors, "() for image data sets")
        bad = [c for c in self.competitors if c not in COMPETITORS]
        if bad:
            raise ConfigError("competitors", bad[0], f"names from {tuple(COMPETITORS)}")
        self._validate_plugins()
        if self.competitor_grid not in COMPETITOR_GRIDS:
            raise ConfigError("competitor_grid", self.competitor_grid, f"one of {COMPETITOR_GRIDS}")
        if not (self.combiners or self.competitors):
            raise ConfigError("combiners", self.combiners, "at least one combiner or competitor")
        if self.folds < 2 and self.split in ("kfold", "fixed_train_kfold"):
            # One holdout split is a valid (cheap) image run; one "fold" of k-fold is not a split.
            raise ConfigError("folds", self.folds, f"an integer >= 2 for split={self.split} "
                              "(split=holdout allows 1)")
        if self.fold is not None and not (0 <= self.fold < self.folds or self.split == "fixed"):
            raise ConfigError("fold", self.fold, f"an index in [0, {self.folds}) or None for all folds")

    def _validate_plugins(self) -> None:
        if self.plugin_members and self.task == "classification":
            raise ConfigError("plugin_members", self.plugin_members, "() for image data sets")
        bad = [p for p in self.plugin_members if p not in PLUGINS]
        if bad:
            raise ConfigError("plugin_members", bad[0], f"names from {tuple(PLUGINS)}")
        if len(set(self.plugin_members)) < len(self.plugin_members):
            raise ConfigError("plugin_members", self.plugin_members,
                              "each name at most once (a repeat would be an identical column)")


def _normalise(name: str, value):
    """Lists become tuples; a single lambda2 becomes a one-element path."""
    if name in ("combiners", "competitors", "lambda2", "plugin_members"):
        if isinstance(value, (int, float, str)):
            value = (value,)
        return tuple(value)
    return value


def _is_int(v, lo):
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _is_num(v, lo, hi=float("inf"), lo_open=False):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    return ok and (v > lo if lo_open else v >= lo) and v <= hi


_RULES = [
    ("n_members", lambda v: _is_int(v, 1), "an integer M >= 1 (M = 1 is the single-hypothesis model)"),
    ("epsilon", lambda v: _is_num(v, 0.0, 1.0), "a number in [0, 1]"),
    ("width", lambda v: _is_int(v, 1), "an integer kappa >= 1"),
    ("init_scale", lambda v: _is_num(v, 0.0, lo_open=True), "a number chi > 0"),
    ("lambda1", lambda v: _is_num(v, 0.0), "a number >= 0"),
    ("lr", lambda v: _is_num(v, 0.0, lo_open=True), "a learning rate > 0"),
    ("lr_alpha", lambda v: _is_num(v, 0.0, lo_open=True), "a learning rate > 0"),
    ("epochs", lambda v: _is_int(v, 1), "an integer >= 1"),
    ("batch_size", lambda v: _is_int(v, 1), "an integer >= 1 (1 = online, Algorithm 1)"),
    ("folds", lambda v: _is_int(v, 1), "an integer >= 1 (>= 2 for k-fold splits)"),
    ("seed", lambda v: _is_int(v, 0), "an integer >= 0"),
    ("window", lambda v: _is_int(v, 2), "an integer >= 2"),
    ("plugin_folds", lambda v: _is_int(v, 2), "an integer >= 2 (inner folds of the plug-ins)"),
    ("test_fraction", lambda v: _is_num(v, 0.0, 1.0, lo_open=True) and v < 1, "a number in (0, 1)"),
    ("temperature", lambda v: _is_num(v, 0.0, lo_open=True), "a temperature T > 0"),
    ("sbfn_units_per_member", lambda v: _is_int(v, 1), "an integer k >= 1 (K = k * M)"),
    ("momentum", lambda v: _is_num(v, 0.0, 1.0), "a number in [0, 1]"),
    ("weight_decay", lambda v: _is_num(v, 0.0), "a number >= 0"),
    ("n_train", lambda v: v is None or _is_int(v, 10), "None or an integer >= 10"),
    ("n_val", lambda v: v is None or _is_int(v, 0), "None or an integer >= 0"),
    ("n_test", lambda v: v is None or _is_int(v, 10), "None or an integer >= 10"),
    ("head_epochs", lambda v: v is None or _is_int(v, 1), "None or an integer >= 1"),
    ("lambda2", lambda v: len(v) > 0 and all(_is_num(x, 0.0) for x in v),
     "one or more numbers >= 0"),
    ("fold", lambda v: v is None or _is_int(v, 0), "None (all folds) or an integer >= 0"),
    ("n_samples", lambda v: v is None or _is_int(v, 10), "None (all rows) or an integer >= 10"),
]

_CHOICES = {
    "split": SPLITS, "online_regime": REGIMES, "device": DEVICES, "dtype": DTYPES,
    "activation": ACTIVATIONS, "init_scheme": INIT_SCHEMES, "sbfn_basis": BASES,
    "g3_basis": G3_BASES, "optimizer": OPTIMIZERS, "row_norm": ROW_NORMS,
    "head_optimizer": HEAD_OPTIMIZERS, "centre_init": CENTRE_INITS,
}
