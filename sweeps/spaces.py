"""The named sweeps as data: which trials a grid holds and which settings they share.

A sweep is a base config (TrialConfig fields every trial shares) and a list of per-trial
overrides. One override is one Ray trial. Granularity (docs/sweeps.md): a regression trial runs
all its CV folds in one process (a fold of Air Quality takes seconds, a process start 2.5 s),
an image trial runs one holdout split (minutes). Combiner-only settings (λ2, T, η_α, K) are
never a trial axis: every trial evaluates all of them on the hypotheses it trained once.
"""

from dataclasses import dataclass, field, replace
from itertools import product

from sbfn_dist.combiners import CLASSIFICATION_COMBINERS, REGRESSION_COMBINERS
from sbfn_dist.config import task_of
from sbfn_dist.errors import ConfigError

# Paper, Table "hyper" (tab:hyperparams).
PAPER_MEMBERS = (2, 5, 10, 20, 35)
PAPER_EPSILONS = (0.0, 0.1, 0.35, 0.5)
PAPER_LAMBDA2 = (0.0, 3.0, 5.0, 7.0)
PAPER_FULL_AXES = {
    "n_members": PAPER_MEMBERS, "width": (20, 50, 200, 2000), "lr": (0.03, 0.3, 1.0),
    "init_scale": (0.0001, 0.01, 0.1, 1.0), "epsilon": PAPER_EPSILONS,
    "lambda1": (0.0, 0.0001, 0.01, 0.07),
}
COMPETITORS = ("svm_rbf", "random_forest", "gradient_boosting")

# The κ, η, χ, λ1 the regression80 grid holds fixed (the paper tunes them over Table "hyper"
# without reporting the chosen values; docs/sweeps.md explains these choices).
REGRESSION_PRESETS = {
    "air_quality": {"width": 50, "lr": 0.03, "init_scale": 0.1, "lambda1": 0.0,
                    "epochs": 5, "batch_size": 1},
    "appliances": {"width": 50, "lr": 0.03, "init_scale": 0.1, "lambda1": 0.0,
                   "epochs": 5, "batch_size": 1},
    "diabetes": {"width": 50, "lr": 0.03, "init_scale": 0.1, "lambda1": 0.0,
                 "epochs": 20, "batch_size": 1},
}
DEFAULT_PRESET = REGRESSION_PRESETS["air_quality"]

# Paper, "Multiple Hypothesis Deep Ensembles": the image sweep's axes.
IMAGE_EPSILONS = (0.0, 0.1, 0.3, 0.5, 0.8)
IMAGE_MEMBERS = (2, 5, 10)
IMAGE_ENSEMBLES = ("mixed", "cnn", "resnet")
IMAGE_PRESET = {"epochs": 10, "batch_size": 128, "optimizer": "adam", "lr": 1e-3,
                "temperature": 3.0, "lr_alpha": 0.1}

REGRESSION_GRIDS = ("regression80", "paper-full", "demo")
IMAGE_DATASETS = ("cifar10", "mnist", "fashion_mnist", "digits")


@dataclass(frozen=True)
class SweepSpec:
    """Everything that decides a sweep's trials; `trials()` lists them in a fixed order."""
    grid: str
    dataset: str
    base: dict
    axes: dict                    # name -> values, crossed in this order
    extra_trials: tuple = ()      # overrides outside the product (reference, competitors)
    repeat_axis: dict = field(default_factory=dict)  # seeds (regression) or splits (images)
    metric: str = "objective"
    mode: str = "min"

    @property
    def task(self) -> str:
        return task_of(self.dataset)

    def trials(self) -> list[dict]:
        names = list(self.axes)
        grid = [dict(zip(names, values)) for values in product(*self.axes.values())]
        grid = [dict(t) for t in self.extra_trials] + grid
        return [{**t, **rep} for rep in _expand(self.repeat_axis) for t in grid]

    def with_overrides(self, **base) -> "SweepSpec":
        return replace(self, base={**self.base, **base})


def _largest_first(values) -> tuple:
    return tuple(sorted(values, reverse=True))


def _expand(axis: dict) -> list[dict]:
    if not axis:
        return [{}]
    (name, values), = axis.items()
    return [{name: v} for v in values]


def regression_sweep(dataset: str, grid: str, *, folds: int = 10, seeds: int = 1,
                     members=None, epsilons=None, lambda2=None, competitors=COMPETITORS) -> SweepSpec:
    """regression80: M × ε (20 trials) + the M = 1 reference + one competitors trial, per seed.

    Each trial runs every fold and every λ2 on the same hypotheses, so the paper's
    5 × 4 × 4 = 80 configurations come from 20 trainings per fold."""
    if grid not in REGRESSION_GRIDS:
        raise ConfigError("grid", grid, f"one of {REGRESSION_GRIDS} for regression data sets")
    if task_of(dataset) != "regression":
        raise ConfigError("dataset", dataset, "a regression data set for sweeps.regression "
                          "(image data sets: python -m sweeps.cifar10 / mnist / fashion_mnist)")
    preset = REGRESSION_PRESETS.get(dataset, DEFAULT_PRESET)
    base = {"dataset": dataset, "folds": folds, "split": "kfold", **preset,
            "lambda2": list(lambda2 or PAPER_LAMBDA2), "combiners": list(REGRESSION_COMBINERS),
            "competitors": [], "competitor_grid": "small"}
    # Largest M first (with the competitors and the reference before them): the longest trials
    # start first, so the sweep does not end waiting on one big trial.
    axes = {"n_members": _largest_first(members or PAPER_MEMBERS),
            "epsilon": tuple(PAPER_EPSILONS if epsilons is None else epsilons)}
    if grid == "paper-full":
        axes = {k: tuple(axes.get(k, v)) for k, v in PAPER_FULL_AXES.items()}
    if grid == "demo":
        base.update(folds=min(folds, 5), competitor_grid="small")
        axes = {"n_members": _largest_first(members or (2, 5, 10)),
                "epsilon": tuple((0.0, 0.35) if epsilons is None else epsilons)}
    extra = (*_reference_trials(base["lr"]), *(_competitor_trial(c) for c in competitors))
    return SweepSpec(grid=grid, dataset=dataset, base=base, axes=axes, extra_trials=extra,
                     repeat_axis={"seed": tuple(range(seeds))})


# The M = 1 reference also trains at a tenth of the learning rate: a single network takes the
# full residual step on every sample (at M >= 2 the ε-WTA weights share it out), and on
# Appliances' heavy-tailed target it diverged at lr = 0.03 in every fold (docs/sweeps.md).
REFERENCE_LR_FACTORS = (1.0, 0.1)


def _reference_trials(lr: float) -> list[dict]:
    # M = 1: one network, no diversity; its "arithmetic" combiner is the network itself.
    # Plug-in hypotheses (--set plugin_members=...) never join it: it stays one network.
    one = {"n_members": 1, "epsilon": 0.0, "combiners": ["arithmetic"], "plugin_members": [],
           "role": "reference"}
    return [one if f == 1.0 else {**one, "lr": round(lr * f, 12)} for f in REFERENCE_LR_FACTORS]


def _competitor_trial(name: str) -> dict:
    # One trial per competitor: SVR on 15k rows takes minutes per fit, so the three run in parallel.
    return {"combiners": [], "competitors": [name], "role": "competitors"}


def image_sweep(dataset: str, *, splits: int = 5, members=None, epsilons=None,
                ensembles=None) -> SweepSpec:
    """ε × M × ensemble kind, one trial per holdout split, every combiner in each trial."""
    if dataset not in IMAGE_DATASETS:
        raise ConfigError("dataset", dataset, f"one of {IMAGE_DATASETS}")
    base = {"dataset": dataset, "folds": splits, "split": "holdout", **IMAGE_PRESET,
            "combiners": list(CLASSIFICATION_COMBINERS)}
    axes = {"ensemble": tuple(ensembles or IMAGE_ENSEMBLES),
            "n_members": _largest_first(members or IMAGE_MEMBERS),
            "epsilon": tuple(IMAGE_EPSILONS if epsilons is None else epsilons)}
    return SweepSpec(grid=dataset, dataset=dataset, base=base, axes=axes,
                     repeat_axis={"fold": tuple(range(splits))}, mode="max")


def smoke(spec: SweepSpec) -> SweepSpec:
    """A tiny version of the same sweep: two values per axis, little data, one epoch."""
    axes = {k: tuple(v[:2]) for k, v in spec.axes.items()}
    if spec.task == "regression":
        base = {**spec.base, "folds": 3, "n_samples": 300, "epochs": 2, "competitor_grid": "small",
                "width": min(spec.base.get("width", 50), 50)}
        extra = tuple(t for t in spec.extra_trials if t.get("competitors") in (None, ["svm_rbf"])
                      and "lr" not in t)   # one reference, one competitor
        return replace(spec, base=base, axes=axes, extra_trials=extra,
                       repeat_axis={"seed": (0,)})
    base = {**spec.base, "epochs": 1, "n_train": 256, "n_val": 64, "n_test": 256,
            "batch_size": 64}
    return replace(spec, base=base, axes=axes, repeat_axis={"fold": (0,)})
