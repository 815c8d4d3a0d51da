"""A sweep as data: a sweep file (YAML) or a dict, checked key by key, and the one translation of
a sweep's settings -- from a file, a dict or a command's flags -- into a SweepSpec and
SweepOptions (docs/sweeps.md, "Python API and sweep files").

    name: diabetes-width              # default DATASET-GRID (GRID: `grid`, else the file's name)
    dataset: diabetes                 # required; task: the data set's first unless `task`
    grid: demo                        # optional: a built-in grid to start from
    axes: {n_members: [2, 5], width: [20, 50]}    # any trial setting: a list of values,
    #     or a range for --search optuna|random: {epsilon: uniform(0, 1)} (ranges.py)
    preset: {width: 100}              # the grid's own settings: --set and --smoke replace them
    settings: {epochs: 10}            # as --set: every trial they apply to
    folds: 5
    competitors: [svm_rbf]            # [] for none; default: the grid's (the paper's three)
    resources: {num_cpus: 2, cpus_per_trial: 1}

Every value is checked before Ray starts: a key's kind here (the run options' kinds are
sweeps/engine/plan/options.py's, as for their flags), a trial setting by the library (TrialConfig,
through planning.plan), the run options together by SweepOptions.validate; an error names the key
and the file. A key given twice in a file is refused (YAML would keep the last). Paths
(csv:PATH, data_dir, storage) are relative to the current directory, as on the command line.

The keys and their checks are sweep_keys.py's; the named grids, files too, grid_files.py's.
"""

import re

from sbfn_dist import catalog
from sbfn_dist.errors import ConfigError, SbfnError
from sweeps.engine.plan import options as run_options
from sweeps.engine.plan.grid_files import Grid, grid_of, image_grid, named_grid
from sweeps.engine.plan.grid_trials import SweepSpec, grid_sweep, image_sweep, smoke
from sweeps.engine.plan.planning import SweepOptions, plan
from sweeps.engine.plan.ranges import refuse_range_in_settings
from sweeps.engine.plan.sweep_keys import SWEEP_OWN, SweepFileError, checked


# The grid's shape beyond its axes: tables only (an image sweep repeats its holdout splits).
TABULAR_ONLY = ("grid", "seeds", "references", "competitors", "per_fold")
NAME_CHARS = "A-Za-z0-9_.-"        # what a sweep's name may hold (a folder's name, an id)
NAME = re.compile(rf"[A-Za-z0-9][{NAME_CHARS}]*")


def build(definition: dict, source: str, label: str | None = None,
          flags: frozenset = frozenset()) -> tuple[SweepSpec, SweepOptions]:
    """The sweep `definition` (a file's or a dict's mapping) as a spec and options, its trials
    planned and validated; `source` names it in errors, `label` names its grid when it names
    none (a file's name); `flags`: the run options a command's flags put in it (`python -m
    sweeps run FILE --gpus-per-trial 0.5`), which a refusal names as flags."""
    try:
        d = checked(definition)
        spec = _spec(d, label)
        spec = smoke(spec) if d.get("smoke") else spec
        given = {**d, **d.get("resources", {})}
        opts = sweep_options(given, default_name=_default_name(spec, label),
                             smoke=d.get("smoke", False), overrides=d.get("settings", {}),
                             command=source, given_in=_given_in(given, flags))
        opts.validate()
        plan(spec, opts)
    except ConfigError as exc:      # a check the commands share names their flag: here, the key
        field = exc.field if exc.field in _flag_names(flags) else \
            run_options.file_key_of(exc.field)
        raise SweepFileError(f"{source}: {ConfigError(field, exc.value, exc.allowed)}") from None
    except SbfnError as exc:
        raise SweepFileError(f"{source}: {exc}") from None
    return spec, opts


def _given_in(given: dict, flags: frozenset) -> dict:
    """run option -> "flag" or "file": where the run options of a definition came from."""
    return {name: "flag" if name in flags else "file"
            for name in given if name in run_options.BY_NAME}


def _flag_names(options: frozenset) -> set:
    return {run_options.BY_NAME[name].flag_name for name in options}


def _spec(d: dict, label: str | None) -> SweepSpec:
    dataset = d["dataset"]
    data = catalog.lookup(dataset)              # an unknown name lists the known ones
    task = d.get("task") or data.task
    if task not in data.tasks:
        raise ConfigError("task", task, f"one of {data.tasks} for the data set '{dataset}'")
    if data.modality == "image":
        for key in (k for k in TABULAR_ONLY if k in d):
            raise ConfigError(key, d[key], "a key of tabular sweeps; an image sweep crosses "
                              "its axes on `folds` holdout splits; leave it out")
        return image_sweep(dataset, grid_of(d, image_grid()), search=d.get("search"))
    start = named_grid(task, d["grid"]) if d.get("grid") else Grid({})
    return grid_sweep(task, dataset, d.get("grid") or label or "custom", grid_of(d, start))


def _default_name(spec: SweepSpec, label: str | None) -> str:
    """The commands' default (DATASET-GRID for tables, the data set for images), a file's
    name standing for the grid where the file names none; a path as its short name
    (catalog.short_name: folder:/data/pets -> pets)."""
    name = catalog.short_name(spec.dataset)
    if catalog.lookup(spec.dataset).modality == "image":
        return f"{name}-{label}" if label else name
    return f"{name}-{spec.grid}"


def _as_name(derived: str) -> str:
    """A default name made of a data set's name (folder:imgs/my pets -> "my pets-smoke") as a
    --name may be: each run of other characters a '-' (it was refused, naming a --name the
    user never gave)."""
    return re.sub(rf"[^{NAME_CHARS}]+", "-", derived).strip("_.-") or "sweep"


def sweep_options(given: dict, *, default_name: str, smoke: bool, overrides: dict,
                  command: str, given_in: dict | None = None) -> SweepOptions:
    """SweepOptions from a sweep's run options by name (a file's keys and resources, a command's
    flags; None or absent: the default, sweeps/engine/plan/options.py), its trial settings (`overrides`:
    --set) and data_dir, which joins them."""
    given = {k: v for k, v in given.items() if v is not None}
    for key in SWEEP_OWN.keys() & overrides.keys():
        raise SbfnError(f"--set {key}={overrides[key]} (settings.{key}): the sweep's {key} is "
                        f"its own, not a shared setting; give it as {SWEEP_OWN[key]}")
    refuse_range_in_settings("settings.{key} (--set {key}=...)", overrides)
    if "data_dir" in given:
        overrides = {**overrides, "data_dir": given["data_dir"]}
    given = {k: v for k, v in given.items() if k in run_options.DEFAULTS}
    name = given.pop("name", None) or _as_name(default_name) + ("-smoke" if smoke else "")
    if not NAME.fullmatch(name):
        raise SbfnError(f"--name '{name}' may hold only ASCII letters, digits, '.', '_' and '-', "
                        "and starts with a letter or a digit")
    # An objective not given stays "": the runner names it (planning.with_objective).
    return SweepOptions(name=name, overrides=overrides, command=command,
                        given_in=given_in or {}, **given)
