"""The machinery of a sweep: which trials a grid holds and which settings they share.

The named grids themselves are files, sweeps/grids/<folder>/<name>.yaml (one source: read by
sweeps/engine/plan/sweepfile.py, edited where a researcher browses them, docs/sweeps.md "Grids").
This module crosses a grid's axes into trials, adds what every sweep of a task holds whatever
its grid -- the M = 1 references, the competitors, λ2 riding along, the regression preset --
and shrinks a sweep for --smoke.

A sweep is a base config (TrialConfig fields every trial shares; each trial drops those that do
not apply to it) and a list of per-trial overrides. One override is one Ray trial. Granularity
(docs/sweeps.md): a tabular trial runs all its CV folds in one process (a fold of Air Quality
takes seconds, a process start 2.5 s), an image trial runs one holdout split (minutes).
Combiner-only settings (λ2, T, η_α, K) are never a trial axis: every trial evaluates all of them
on the hypotheses it trained once.

Settings the grids do not name are the library's defaults for the trial
(sbfn_dist/settings/fields.py), so a default lives in one place.
"""

import json
import math
from dataclasses import dataclass, field, replace
from itertools import product

from sbfn_dist import catalog
from sbfn_dist.errors import ConfigError, DataError, SbfnError
from sbfn_dist.settings.fields import MEMBER_SEPARATOR, defaults
from sbfn_dist.settings.tasks import TASKS
from sweeps.engine.plan.grid_files import Grid, image_grid, named_grid
from sweeps.engine.plan.options import OBJECTIVES, SEARCHES
from sweeps.engine.plan.ranges import is_range


# Paper, Table "hyper" (tab:hyperparams): the λ2 values every regression trial evaluates.
PAPER_LAMBDA2 = (0.0, 3.0, 5.0, 7.0)


# What every tabular sweep of a task holds fixed beyond the library's defaults, whatever its
# grid (a sweep file naming none too), per data set ("*": any other); a grid file's `preset`
# joins it. Regression: the paper tunes κ, η_θ, χ, λ1 over Table "hyper" without reporting the
# values kept; the sweeps take the library's (κ = 50, η_θ = 0.03, χ = 0.1, λ1 = 0, online
# b = 1) and train 5 epochs, 20 on diabetes (442 rows), docs/sweeps.md. Classification: the
# library's defaults (50 epochs at b = 16, η_θ = 0.1, χ = 1) were chosen on wine and iris.
TABULAR_PRESETS = {
    "regression": {"*": {"epochs": 5}, "diabetes": {"epochs": 20}},
    "classification": {"*": {}},
}

# Combiner settings every trial of a tabular grid evaluates on its one set of members.
RIDE_ALONG = {"regression": {"lambda2": PAPER_LAMBDA2}, "classification": {}}

# The M = 1 reference: one network, no diversity, through the combiner that is the network
# itself. Regression: "arithmetic". Classification: at M = 1 logit, probability and base
# averaging all return the network's own prediction; "logit_mean" is the paper's "Mean". The
# heads (sbfn, moe) would put a learned layer over it, and the stacked ones would hold out a
# validation part, so it would train on fewer rows than the competitors. Plug-in hypotheses
# (--set plugin_members=...) never join it: it stays one network.
REFERENCE = {
    "regression": {"n_members": 1, "epsilon": 0.0, "combiners": ["arithmetic"],
                   "plugin_members": []},
    "classification": {"n_members": 1, "epsilon": 0.0, "combiners": ["logit_mean"]},
}
# Regression also trains it at a tenth of the learning rate: a single network takes the full
# residual step on every sample (at M >= 2 the ε-WTA weights share it out), and on Appliances'
# heavy-tailed target it diverged at lr = 0.03 in every fold (docs/sweeps.md). Cross-entropy's
# step in the logits (softmax - one-hot) is bounded and its members train in batches, so
# classification needs no second one.
REFERENCE_LR_FACTORS = {"regression": (1.0, 0.1), "classification": (1.0,)}


# --smoke: the same sweep, tiny -- 3 folds of at most 300 rows and a few epochs (tables), at
# most 256 training images, 1 epoch (images). Classification's stacked heads train 20 epochs
# instead of their 1,000-step minimum (about 500 epochs of wine's 28-row validation part).
SMOKE = {
    "tabular regression": {"folds": 3, "n_samples": 300, "epochs": 2},
    "tabular classification": {"folds": 3, "n_samples": 300, "epochs": 10, "head_epochs": 20},
    "image classification": {"epochs": 1, "n_train": 256, "n_val": 64, "n_test": 256,
                             "batch_size": 64},
}
# The image parts --smoke sizes; images too few for them all keep the library's parts instead
# (the official test set or a fifth tested, a tenth held out, the rest trained:
# sbfn_dist/data/images.py, default_n_test and default_n_val).
SMOKE_PARTS = ("n_train", "n_val", "n_test")

# The searches that draw configurations rather than list them (sweeps/engine/plan/options.py). Their
# space fixes the first value of the repeat axis (runner: sampled_space), so an image sweep's
# drawn configurations run split 0 alone.
SAMPLED = tuple(s for s in SEARCHES if s != "grid")


# Joins the items of one ensemble list in --ensembles: a comma there separates ensembles (as in
# every list flag), and no module path or architecture name holds a '+'.
LIST_JOIN = "+"


def axis_text(value) -> str:
    """An axis value as the sweep's lines print it: 0.35, 0 and 2 (floats without a '.0')."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def setting_text(name: str, value) -> str:
    """A setting as a line shows it for reuse in the next command: axis_text (a list as JSON),
    but an ensemble of mixed members as --ensembles takes it (simple_cnn+mynets:build). The
    settings store that list joined by MEMBER_SEPARATOR, a comma, on which the flag splits:
    copied as stored, it named two homogeneous ensembles, without a word. Trial ids keep the
    stored form (--resume finds trials by them)."""
    if isinstance(value, list):
        return json.dumps(value)
    text = axis_text(value)
    return text.replace(MEMBER_SEPARATOR, LIST_JOIN) if name == "ensemble" else text


@dataclass(frozen=True)
class SweepSpec:
    """Everything that decides a sweep's trials; `trials()` lists them in a fixed order."""
    grid: str
    dataset: str
    base: dict                    # holds "task": the config's, so csv:PATH sweeps either task
    axes: dict                    # name -> values, crossed in this order (or a Range: drawn)
    extra_trials: tuple = ()      # overrides outside the product (competitors)
    reference_lr_factors: tuple = ()   # one M = 1 reference per factor of the trials' lr
    repeat_axis: dict = field(default_factory=dict)  # seeds (tables) or splits (images)
    per_fold: bool = False        # each trial repeated per fold of its split (planning.plan)
    innermost: str | None = None  # the axis crossed last: its values' trials run side by side

    @property
    def task(self) -> str:
        return self.base["task"]

    @property
    def kind(self) -> str:
        return f"{catalog.lookup(self.dataset).modality} {self.task}"

    @property
    def mode(self) -> str:
        return TASKS[self.task].mode

    @property
    def objective(self) -> str:
        return OBJECTIVES[self.task]

    def size(self) -> int:
        """How many trials `trials()` lists, counted without listing them (a grid of 10^7
        listed took 111 s and 5.7 GB)."""
        repeats = len(next(iter(self.repeat_axis.values()))) if self.repeat_axis else 1
        crossed = math.prod(len(values) for values in self.axes.values())
        return (len(self.reference_lr_factors) + len(self.extra_trials) + crossed) * repeats

    def first_point(self) -> dict:
        """The first trial of the grid's crossing, as `trials()` lists it."""
        first = {name: values[0] for name, values in self.axes.items()}
        return {**first, **{name: values[0] for name, values in self.repeat_axis.items()
                            if values}}

    def trials(self, base: dict | None = None) -> list[dict]:
        """`base`: the settings the trials start from (the grid's with the user's --set; the
        grid's if None), whose learning rate the M = 1 references scale."""
        names = list(self.axes)
        order = sorted(names, key=lambda n: n == self.innermost)    # crossed in this order
        grid = [{n: values[order.index(n)] for n in names}     # keys (so trial ids) as axes
                for values in product(*(self.axes[n] for n in order))]
        references = _reference_trials(self.task, self.base if base is None else base,
                                       self.reference_lr_factors)
        grid = references + [dict(t) for t in self.extra_trials] + grid
        return [{**t, **rep} for rep in _expand(self.repeat_axis) for t in grid]


def _largest_first(values) -> tuple:
    return tuple(sorted(values, reverse=True))


def _expand(axis: dict) -> list[dict]:
    if not axis:
        return [{}]
    (name, values), = axis.items()
    return [{name: v} for v in values]


def tabular_sweep(task: str, dataset: str, grid: str, **options) -> SweepSpec:
    """The named grid `grid` (sweeps/grids/<task>/<grid>.yaml) on `dataset` (options:
    grid_sweep)."""
    return grid_sweep(task, dataset, grid, named_grid(task, grid), **options)


def grid_sweep(task: str, dataset: str, label: str, grid: Grid, *, folds: int | None = None,
               seeds: int | None = None, axes: dict | None = None, competitors=None,
               **settings) -> SweepSpec:
    """M × ε (× the other axes of the grid) + the M = 1 reference + one trial per competitor,
    per seed; `axes` (setting -> values) replace or join the grid's (with_axes). Each trial
    runs every fold and every combiner (with every value of the combiner settings, `settings`
    or RIDE_ALONG: λ2 for regression) on the same hypotheses. `grid` is a named one
    (tabular_sweep) or a sweep file's (sweeps/engine/plan/sweepfile.py), `label` its name."""
    _check_tabular(task, dataset, settings)
    folds = grid.folds if folds is None else folds
    seeds = grid.seeds if seeds is None else seeds
    given = {k: v for k, v in settings.items() if v is not None}
    base = {"dataset": dataset, "task": task, **_preset(task, dataset), **grid.preset,
            **({} if folds is None else {"folds": folds}),
            **{k: list(v) for k, v in {**RIDE_ALONG[task], **given}.items()}}
    axes = with_axes(grid.axes, axes or {})
    for name in set(axes) & set(RIDE_ALONG[task]):     # it trained the members once per value
        raise ConfigError(name, axes[name], f"no axis: every trial fits each of its values on "
                          f"the members it trained once; list them under the sweep file's "
                          f"settings ({name}: [0, 5]) or give --{name} 0 5")
    competitors = grid.competitors if competitors is None else competitors
    competitors = TASKS[task].competitors if competitors is None else competitors
    return SweepSpec(grid=label, dataset=dataset, base=base, axes=axes,
                     extra_trials=tuple(_competitor_trial(c) for c in competitors),
                     reference_lr_factors=REFERENCE_LR_FACTORS[task] if grid.references else (),
                     repeat_axis={"seed": tuple(range(seeds))}, per_fold=grid.per_fold)


def with_axes(axes: dict, given: dict) -> dict:
    """`axes` with the `given` ones (name -> values; None keeps the grid's) replacing or joining
    them. Largest M first (with the competitors and the reference before them): the longest
    trials start first, so the sweep does not end waiting on one big trial."""
    axes = {k: v if is_range(v) else tuple(v)      # a range is drawn from, not listed
            for k, v in {**axes, **{k: v for k, v in given.items() if v is not None}}.items()}
    if "n_members" in axes and not is_range(axes["n_members"]):
        axes["n_members"] = _largest_first(axes["n_members"])
    return axes


def regression_sweep(dataset: str, grid: str, **options) -> SweepSpec:
    return tabular_sweep("regression", dataset, grid, **options)


def classification_sweep(dataset: str, grid: str, **options) -> SweepSpec:
    return tabular_sweep("classification", dataset, grid, **options)


def _check_tabular(task: str, dataset: str, settings: dict) -> None:
    for name in set(settings) - set(RIDE_ALONG[task]):
        raise ConfigError(name, settings[name], f"a combiner setting {task} grids evaluate in "
                          f"every trial: one of {tuple(RIDE_ALONG[task])}")
    data = catalog.lookup(dataset)
    if data.modality != "tabular" or task not in data.tasks:
        raise ConfigError("dataset", dataset, f"{_swept_by(dataset, data)}; the {task} data "
                          f"sets are {', '.join(catalog.names('tabular', task))}, or csv:PATH "
                          "with --set target=COLUMN")


def _swept_by(dataset: str, data: catalog.DataSet) -> str:
    """The command that sweeps a data set of another task or modality (a user who gave
    breast_cancer to sweeps.regression was told only the regression ones)."""
    if data.modality == "image":
        return (f"{dataset} is an image data set: sweep it with python -m sweeps.images "
                f"--dataset {dataset}")
    if len(data.tasks) > 1:                     # your own table (csv:) is either task's
        return (f"{dataset} is a table: sweep it with python -m sweeps.regression or "
                f"sweeps.classification --dataset {dataset} --set target=COLUMN")
    return (f"{dataset} is a {data.task} data set: sweep it with python -m sweeps.{data.task} "
            f"--dataset {dataset}")


def _preset(task: str, dataset: str) -> dict:
    presets = TABULAR_PRESETS[task]
    return presets.get(dataset, presets["*"])


def _reference_trials(task: str, base: dict, factors: tuple) -> list[dict]:
    lr = {**defaults(task, "tabular"), **base}["lr"]
    one = {**REFERENCE[task], "role": "reference"}
    return [one if f == 1.0 else {**one, "lr": round(lr * f, 12)} for f in factors]


def _competitor_trial(name: str) -> dict:
    # One trial per competitor: SVR on 15k rows takes minutes per fit, so the three run in parallel.
    return {"combiners": [], "competitors": [name], "role": "competitors"}


def image_sweep(dataset: str, grid: Grid | None = None, *, splits: int | None = None,
                axes: dict | None = None, search: str | None = None) -> SweepSpec:
    """ε × M × ensemble kind, one trial per holdout split, every combiner in each trial. `grid`:
    the image grid (sweeps/grids/images/, sweepfile.IMAGE_GRID) unless given (a sweep file's,
    started from it); `axes` (setting -> values) replace its axes' values. `search`: the sweep's (--search),
    which decides how many splits a configuration runs (split_count)."""
    _check_image(dataset)
    grid = image_grid() if grid is None else grid
    splits = split_count(splits, grid, search)
    base = {"dataset": dataset, "task": "classification", "folds": splits, **grid.preset}
    axes = with_axes(grid.axes, axes or {})
    # The kinds of one (M, ε) run side by side: a sweep stopped early (or a GPU session's share
    # of one) has compared the mixed ensemble with the homogeneous ones wherever it got to.
    return SweepSpec(grid=catalog.short_name(dataset), dataset=dataset, base=base, axes=axes,
                     repeat_axis={"fold": tuple(range(splits))}, innermost="ensemble")


def split_count(given: int | None, grid: Grid, search: str | None = None) -> int:
    """The holdout splits each configuration runs: --splits, else the grid's `folds`, else the
    library's; refused in one line unless a positive count. A sampled search runs split 0
    alone, so its records say 1 (split 0 draws the same images whatever the count:
    sbfn_dist/data/images.holdout_splits) and more splits asked of it are refused."""
    name, splits = _asked_splits(given, grid)
    if splits < 1:
        raise SbfnError(f"{name}: {splits} is not a positive number of holdout splits; give 1 "
                        f"or more (the default: {defaults('classification', 'image')['folds']})")
    if search not in SAMPLED:
        return splits
    if name and splits > 1:
        raise SbfnError(f"{name} {splits} with --search {search}: a sampled search runs each "
                        f"configuration it draws on split 0 only, never on {splits} splits; "
                        f"leave {name} out (or give 1), or run every split with --search grid")
    return 1


def _asked_splits(given: int | None, grid: Grid) -> tuple[str | None, int]:
    """(where the count was asked: '--splits', a file's 'folds', None: the library's, count)."""
    if given is not None:
        return "--splits", given
    if grid.folds is not None:
        return "folds", grid.folds
    return None, defaults("classification", "image")["folds"]


def _check_image(dataset: str) -> None:
    """Refuse, in one line, a data set that holds no images: name the image sets, and the
    command that sweeps a table or the nearest known name to an unknown one (any modality's,
    as the table commands say it: a misspelt table is a table's near miss)."""
    images = f"{', '.join(catalog.names('image'))}, {catalog.own_data('image')}"
    try:
        data = catalog.lookup(dataset)
    except DataError:
        raise ConfigError("dataset", dataset, f"a known data set{catalog.meant(dataset)}; the "
                          f"image data sets: {images}") from None
    if data.modality != "image":
        raise ConfigError("dataset", dataset, f"an image data set: one of {images}; "
                          f"{_swept_by(dataset, data)}")


def smoke(spec: SweepSpec, given: frozenset = frozenset()) -> SweepSpec:
    """A tiny version of the same sweep: two values per axis (a range stays as it is: the
    samples are --num-samples), the first seed or split, one reference and the first competitor
    (the paper's: SVM-RBF; a user's own is checked too), little data, few epochs (SMOKE).
    `given`: what a command's flags named (an axis, "seed" or "fold", "competitors", "folds"),
    kept as given: `--smoke --seeds 2` runs two seeds (it ran one, without a word)."""
    axes = {k: v if is_range(v) or k in given else tuple(v[:2]) for k, v in spec.axes.items()}
    extra = spec.extra_trials if "competitors" in given else spec.extra_trials[:1]
    settings = {k: v for k, v in smoke_settings(spec).items() if k not in given}
    return replace(spec, base={**spec.base, **settings}, axes=axes, extra_trials=extra,
                   reference_lr_factors=spec.reference_lr_factors[:1],
                   repeat_axis={k: v if k in given else tuple(v[:1])
                                for k, v in spec.repeat_axis.items()})


def smoke_settings(spec: SweepSpec) -> dict:
    """SMOKE's settings for the sweep; an image set with fewer images than its parts ask for
    (75 in a folder) keeps the library's parts, as the full sweep does: --smoke runs on any
    data the full sweep runs on. --set n_train=... n_val=... n_test=... replaces either."""
    settings = SMOKE[spec.kind]
    if spec.kind != "image classification" or _holds(spec.dataset, settings):
        return settings
    return {k: v for k, v in settings.items() if k not in SMOKE_PARTS}


def _holds(dataset: str, settings: dict) -> bool:
    """Whether the image set holds the images of every part `settings` sizes. The built-in
    sets hold 1,797 (digits) or more; yours are counted without decoding them (a count that
    cannot be made says yes: the sweep's data check then names the problem)."""
    if not catalog.prefix_of(dataset):
        return True
    from sbfn_dist.data.image_files import count_images  # numpy and torch: images only
    n = count_images(catalog.absolute(dataset))
    return n is None or n >= sum(settings[k] for k in SMOKE_PARTS)
