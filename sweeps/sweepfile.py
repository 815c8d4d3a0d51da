"""A sweep as data: a sweep file (YAML) or a dict, checked key by key, and the one translation of
a sweep's settings -- from a file, a dict or a command's flags -- into a SweepSpec and
SweepOptions (docs/sweeps.md, "Python API and sweep files").

    name: diabetes-width              # default DATASET-GRID (GRID: `grid`, else the file's name)
    dataset: diabetes                 # required; task: the data set's first unless `task`
    grid: demo                        # optional: a built-in grid to start from
    axes: {n_members: [2, 5], width: [20, 50]}    # any trial setting: a list of values
    settings: {epochs: 10}            # as --set: every trial they apply to
    folds: 5
    competitors: [svm_rbf]            # [] for none; default: the grid's (the paper's three)
    resources: {num_cpus: 2, cpus_per_trial: 1}

Every value is checked before Ray starts: a key's type here, a trial setting by the library
(TrialConfig, through runner.plan), the run options by SweepOptions.validate; an error names the
key and the file. Paths (csv:PATH, data_dir, storage) are relative to the current directory, as
on the command line.
"""

import re
from dataclasses import fields, replace
from numbers import Real
from pathlib import Path

import yaml

from sbfn_dist.data import catalog
from sbfn_dist.errors import ConfigError, SbfnError
from sbfn_dist.usage import did_you_mean
from sweeps.runner import SweepOptions, plan
from sweeps.spaces import Grid, SweepSpec, grid_sweep, image_sweep, named_grid, smoke


class SweepFileError(SbfnError):
    """A sweep file or dict that cannot define a sweep; the message names the file and key."""


def _kind(types: tuple, text: str, least=None):
    """A check of one key's value: one of `types` (a bool is no number here), at least `least`,
    described by text."""
    def ok(value) -> bool:
        return (isinstance(value, types) and (bool in types or not isinstance(value, bool))
                and (least is None or value >= least))
    ok.text = text
    return ok


_INT, _COUNT = _kind((int,), "an integer"), _kind((int,), "an integer >= 1", least=1)
_NUMBER, _TEXT = _kind((Real,), "a number"), _kind((str,), "text")
_FLAG, _MAPPING = _kind((bool,), "true or false"), _kind((dict,), "a mapping (key: value)")

# The keys a sweep file takes (docs/sweeps.md has the table); the run options are SweepOptions'.
SWEEP_KEYS = {
    "name": _TEXT, "dataset": _TEXT, "task": _TEXT, "grid": _TEXT, "data_dir": _TEXT,
    "axes": _MAPPING, "settings": _MAPPING, "folds": _INT, "seeds": _COUNT, "references": _FLAG,
    "competitors": _kind((list,), "a list of model names ([] for none)"), "per_fold": _FLAG,
    "smoke": _FLAG, "storage": _TEXT, "search": _TEXT,
    "num_samples": _COUNT, "search_seed": _INT,
    "objective": _TEXT, "mlflow": _FLAG, "mlflow_uri": _TEXT, "resources": _MAPPING,
}
RESOURCE_KEYS = {
    "address": _TEXT, "num_cpus": _COUNT, "num_gpus": _NUMBER, "cpus_per_trial": _NUMBER,
    "gpus_per_trial": _NUMBER, "max_concurrent": _COUNT, "max_failures": _INT, "pack": _TEXT,
    "node_wait_s": _NUMBER,
}
# The grid's shape beyond its axes: tables only (an image sweep repeats its holdout splits).
TABULAR_ONLY = ("grid", "seeds", "references", "competitors", "per_fold")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
OPTION_NAMES = {f.name for f in fields(SweepOptions)}


def load(path) -> dict:
    """The sweep file's mapping, as written (checked by `build`)."""
    path = Path(path)
    try:
        definition = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise SweepFileError(f"{path}: cannot read the sweep file ({exc.strerror or exc})"
                             ) from None
    except yaml.YAMLError as exc:
        raise SweepFileError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(definition, dict):
        raise SweepFileError(f"{path}: a sweep file is a mapping of keys (dataset: ..., axes: "
                             "...); see docs/sweeps.md")
    return definition


def build(definition: dict, source: str, label: str | None = None
          ) -> tuple[SweepSpec, SweepOptions]:
    """The sweep `definition` (a file's or a dict's mapping) as a spec and options, its trials
    planned and validated; `source` names it in errors, `label` names its grid when it names
    none (a file's name)."""
    try:
        d = checked(definition)
        spec = _spec(d, label)
        spec = smoke(spec) if d.get("smoke") else spec
        opts = sweep_options({**d, **d.get("resources", {})},
                             default_name=_default_name(spec, label), objective=spec.objective,
                             smoke=d.get("smoke", False), overrides=d.get("settings", {}),
                             command=source)
        opts.validate()
        plan(spec, opts)
    except SbfnError as exc:
        raise SweepFileError(f"{source}: {exc}") from None
    return spec, opts


def checked(definition: dict) -> dict:
    """`definition` without its empty keys (`key:` with no value: the default), if every key is
    known and every value of the right kind, else an error that names the key (with 'did you
    mean' for a near miss)."""
    d = _known(definition, SWEEP_KEYS, "")
    if "resources" in d:
        d["resources"] = _known(d["resources"], RESOURCE_KEYS, "resources.")
    if "dataset" not in d:
        raise SbfnError("'dataset' is missing: name the data set to sweep (one of "
                        f"{', '.join(catalog.CATALOG)}, or csv:PATH)")
    for axis, values in d.get("axes", {}).items():
        if not isinstance(values, list) or not values:
            raise SbfnError(f"axes.{axis} = {values!r}: an axis is a non-empty list of values")
    members = d.get("axes", {}).get("n_members", [])
    if not all(_COUNT(m) for m in members):     # sorted (largest first) before trials are checked
        raise SbfnError(f"axes.n_members = {members!r}: ensemble sizes are integers >= 1")
    return d


def _known(given: dict, known: dict, prefix: str) -> dict:
    for key, value in given.items():
        if key not in known:
            raise SbfnError(f"unknown key '{prefix}{key}'{did_you_mean(str(key), known)}; the "
                            f"known ones: {', '.join(known)} (docs/sweeps.md)")
        if value is not None and not known[key](value):
            raise SbfnError(f"{prefix}{key} = {value!r} is not allowed: {known[key].text}")
    return {k: v for k, v in given.items() if v is not None}


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
        return image_sweep(dataset, splits=d.get("folds"), axes=d.get("axes"))
    start = named_grid(task, d["grid"]) if d.get("grid") else Grid({})
    grid = replace(start, axes={**start.axes, **d.get("axes", {})},
                   **{k: d[k] for k in ("references", "per_fold") if k in d})
    return grid_sweep(task, dataset, d.get("grid") or label or "custom", grid,
                      folds=d.get("folds"), seeds=d.get("seeds", 1),
                      competitors=d.get("competitors"))


def dataset_label(dataset: str) -> str:
    """A data set as a name: csv:/data/runs.csv -> runs."""
    return dataset.rsplit("/", 1)[-1].removeprefix(catalog.CSV_PREFIX).removesuffix(".csv")


def _default_name(spec: SweepSpec, label: str | None) -> str:
    """The commands' default (DATASET-GRID for tables, the data set for images), a file's
    name standing for the grid where the file names none."""
    if catalog.lookup(spec.dataset).modality == "image":
        return f"{spec.dataset}-{label}" if label else spec.dataset
    return f"{dataset_label(spec.dataset)}-{spec.grid}"


def sweep_options(given: dict, *, default_name: str, objective: str, smoke: bool,
                  overrides: dict, command: str) -> SweepOptions:
    """SweepOptions from a sweep's run settings under SweepOptions' names (a file's keys and
    resources, a command's flags; None or absent: the default), its trial settings
    (`overrides`: --set) and data_dir, which joins them."""
    given = {k: v for k, v in given.items() if v is not None}
    if "data_dir" in given:
        overrides = {**overrides, "data_dir": given["data_dir"]}
    given = {k: v for k, v in given.items() if k in OPTION_NAMES - {"overrides", "command"}}
    name = given.pop("name", None) or default_name + ("-smoke" if smoke else "")
    if not NAME.fullmatch(name):
        raise SbfnError(f"--name '{name}' may hold only letters, digits, '.', '_' and '-'")
    # With GPUs and no fraction given, 4 trials share a card (small members leave it idle).
    given.setdefault("gpus_per_trial", 0.25 if given.get("num_gpus") else 0.0)
    return SweepOptions(name=name, objective=given.pop("objective", None) or objective,
                        overrides=overrides, command=command, **given)
