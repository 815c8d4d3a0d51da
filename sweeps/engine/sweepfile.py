"""A sweep as data: a sweep file (YAML) or a dict, checked key by key, and the one translation of
a sweep's settings -- from a file, a dict or a command's flags -- into a SweepSpec and
SweepOptions (docs/sweeps.md, "Python API and sweep files").

    name: diabetes-width              # default DATASET-GRID (GRID: `grid`, else the file's name)
    dataset: diabetes                 # required; task: the data set's first unless `task`
    grid: demo                        # optional: a built-in grid to start from
    axes: {n_members: [2, 5], width: [20, 50]}    # any trial setting: a list of values,
    #     or a range for --search optuna|random: {epsilon: uniform(0, 1)} (distributions.py)
    preset: {width: 100}              # the grid's own settings: --set and --smoke replace them
    settings: {epochs: 10}            # as --set: every trial they apply to
    folds: 5
    competitors: [svm_rbf]            # [] for none; default: the grid's (the paper's three)
    resources: {num_cpus: 2, cpus_per_trial: 1}

Every value is checked before Ray starts: a key's kind here (the run options' kinds are
sweeps/engine/options.py's, as for their flags), a trial setting by the library (TrialConfig,
through runner.plan), the run options together by SweepOptions.validate; an error names the key
and the file. A key given twice in a file is refused (YAML would keep the last). Paths
(csv:PATH, data_dir, storage) are relative to the current directory, as on the command line.

The named grids are such files too, shipped in sweeps/grids/<folder>/ (GRID_FOLDERS): the one
source of each grid. A command's `--grid NAME` and a file's `grid: NAME` take a grid file's
grid keys (GRID_KEYS); its data set and run options are for running the file itself
(`python -m sweeps run NAME`).
"""

import re
from dataclasses import replace
from importlib import resources as package_files
from pathlib import Path

import numpy as np
import yaml

from sbfn_dist.settings import catalog
from sbfn_dist.errors import ConfigError, SbfnError
from sbfn_dist.errors import did_you_mean
from sbfn_dist.settings.fields import MEMBER_SEPARATOR
from sweeps.engine import options as run_options
from sweeps.engine.distributions import (RANGES, Range, parse_range, refuse_range_in_list,
                                         refuse_range_in_settings)
from sweeps.engine.options import COUNT, FLAG, INTEGER, MAPPING, TEXT, Kind
from sweeps.engine.runner import SweepOptions, plan
from sweeps.engine.spaces import Grid, SweepSpec, grid_sweep, image_sweep, smoke


class SweepFileError(SbfnError):
    """A sweep file or dict that cannot define a sweep; the message names the file and key."""


def _names(value) -> list:
    if not isinstance(value, list):
        raise ValueError
    return value


# The keys that shape the trials (the commands' grid flags); the run options' keys are
# sweeps/engine/options.py's, under the top level or `resources` (docs/sweeps.md has the table).
SPEC_KEYS = {
    "dataset": TEXT, "task": TEXT, "grid": TEXT, "axes": MAPPING, "preset": MAPPING,
    "folds": INTEGER, "seeds": COUNT, "references": FLAG, "per_fold": FLAG,
    "competitors": Kind("a list of model names ([] for none)", _names),
}
# What a grid is: the keys a command's --grid and a file's `grid:` take from a grid file.
GRID_KEYS = ("axes", "preset", "folds", "seeds", "references", "competitors", "per_fold")
SWEEP_KEYS = {**SPEC_KEYS, **run_options.file_keys(""), "resources": MAPPING}
RESOURCE_KEYS = run_options.file_keys("resources")
# The grid's shape beyond its axes: tables only (an image sweep repeats its holdout splits).
TABULAR_ONLY = ("grid", "seeds", "references", "competitors", "per_fold")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# What every model of a sweep is scored on -- its data, rows and folds -- is one for the whole
# sweep: its end table ranks all models together, so an axis over one of these would rank
# ensembles scored on other data or folds than the competitors and the reference. The way to
# vary each instead:
NOT_AN_AXIS = {
    "dataset": "run one sweep per data set (its `dataset` key)",
    "task": "run one sweep per task (its `task` key)",
    "target": "run one sweep per target (settings: {target: COLUMN})",
    "data_dir": "set it once (the `data_dir` key)",
    "folds": "set `folds: K` once, for every model (one sweep per K)",
    "fold": "leave it out: each trial runs every fold (`per_fold: true` makes each fold a "
            "trial of its own)",
    "split": "set it once (settings: {split: ...}), one sweep per split",
    "test_fraction": "set it once (settings: {test_fraction: ...}), one sweep per value",
    "seed": "use `seeds: N`: every trial, the competitors and references too, repeats with "
            "seeds 0..N-1",
    "n_samples": "set it once (settings: {n_samples: N}), one sweep per value",
    "n_train": "set it once (settings: {n_train: N}), one sweep per value",
    "n_test": "set it once (settings: {n_test: N}), one sweep per value",
}
# Trial settings that are the sweep's own keys: given as shared settings (--set), they would
# change every trial's data set or task while the sweep's plan and table name the other.
SWEEP_OWN = {"dataset": "--dataset, or a sweep file's `dataset` key",
             "task": "the command (sweeps.regression, sweeps.classification), or a sweep "
                     "file's `task` key"}


class _DuplicateKey(Exception):
    pass


class _UniqueKeys(yaml.SafeLoader):
    """YAML's loader, refusing a mapping that repeats a key (YAML would keep the last)."""

    def construct_mapping(self, node, deep=False):
        lines = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue                        # `<<: *base` merges: its keys may be replaced
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = lines.setdefault(key, line)
            except TypeError:
                continue                        # an unhashable key: refused by the checks
            if first != line:
                raise _DuplicateKey(f"key '{key}' is given twice (lines {first} and {line}); "
                                    "YAML would silently keep the last: keep one")
        return super().construct_mapping(node, deep)


def load(path) -> dict:
    """The sweep file's mapping, as written (checked by `build`)."""
    path = Path(path)
    try:
        definition = yaml.load(path.read_text(), Loader=_UniqueKeys)
    except OSError as exc:
        raise SweepFileError(f"{path}: cannot read the sweep file ({exc.strerror or exc})"
                             ) from None
    except _DuplicateKey as exc:
        raise SweepFileError(f"{path}: {exc}") from None
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
                             default_name=_default_name(spec, label),
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
    mean' for a near miss). Values are kept as Python's own (a path-like as text, numpy
    numbers as ints and floats)."""
    if not isinstance(definition, dict):
        given = "None" if definition is None else \
            f"a {type(definition).__name__} ({definition!r:.60})"
        raise SbfnError(f"a sweep is a mapping of keys (dataset: ..., axes: ...), not {given}; "
                        "see docs/sweeps.md")
    d = _known(definition, SWEEP_KEYS, "")
    if "resources" in d:
        d["resources"] = _known(d["resources"], RESOURCE_KEYS, "resources.")
    if "dataset" not in d:
        raise SbfnError("'dataset' is missing: name the data set to sweep (one of "
                        f"{', '.join(catalog.CATALOG)}, a table as csv:PATH, or your images: "
                        f"{catalog.own_data('image')})")
    d["axes"] = {axis: _axis(axis, values) for axis, values in d.get("axes", {}).items()}
    d["settings"] = plain(d.get("settings", {}))
    d["preset"] = plain(d.get("preset", {}))
    refuse_range_in_settings("preset.{key}", d["preset"])
    for key in SWEEP_OWN.keys() & d["preset"].keys():
        raise SbfnError(f"preset.{key}: the sweep's {key} is its own, not a setting of its "
                        f"grid; give it as {SWEEP_OWN[key]}")
    return d


def _axis(axis, values) -> list | Range:
    """An axis' values, checked: a non-empty list, or a range as text (uniform(0, 1), ...:
    sweeps/engine/distributions.py), of a setting the models may differ in."""
    if axis in NOT_AN_AXIS:
        raise SbfnError(f"axes.{axis}: every model of a sweep is scored on the same data and "
                        f"folds (its end table ranks them together), so {axis} cannot be an "
                        f"axis; {NOT_AN_AXIS[axis]}")
    if isinstance(values, str):
        return parse_range(axis, values)
    if not isinstance(values, list) or not values:
        raise SbfnError(f"axes.{axis} = {values!r}: an axis is a non-empty list of values, or "
                        f"a range: {RANGES}")
    values = plain(values)
    refuse_range_in_list(axis, values)
    if axis == "ensemble":      # a mix given as a list: the text `--ensembles a+b` gives too
        values = [MEMBER_SEPARATOR.join(map(str, v)) if isinstance(v, list) else v
                  for v in values]
    if axis == "n_members" and not all(_allowed(COUNT, m) for m in values):
        raise SbfnError(f"axes.n_members = {values!r}: ensemble sizes are integers >= 1")
    return values


def _allowed(kind: Kind, value) -> bool:
    try:
        kind.check(value)
    except ValueError:
        return False
    return True


def plain(value):
    """`value` with numpy scalars as Python's (np.int64(2) -> 2), in lists and mappings too:
    the trials' ids and records are JSON."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def _known(given: dict, known: dict, prefix: str) -> dict:
    if not isinstance(given, dict):
        raise SbfnError(f"{prefix.rstrip('.')} = {given!r} is not allowed: a mapping (key: value)")
    out = {}
    for key, value in given.items():
        if key not in known:
            raise SbfnError(f"unknown key '{prefix}{key}'{did_you_mean(str(key), known)}; the "
                            f"known ones: {', '.join(known)} (docs/sweeps.md)")
        if value is None:
            continue
        try:
            out[key] = known[key].check(value)
        except ValueError:
            raise SbfnError(f"{prefix}{key} = {value!r} is not allowed: {known[key].text}"
                            ) from None
    return out


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


def grid_of(d: dict, start: Grid) -> Grid:
    """`start` with a checked sweep's grid keys: its axes and preset join the start's (a value
    given replaces the start's), its other grid keys replace the start's."""
    grid = replace(start, axes={**start.axes, **d.get("axes", {})},
                   preset={**start.preset, **d.get("preset", {})},
                   **{k: d[k] for k in GRID_KEYS if k in d and k not in ("axes", "preset")})
    for key in sorted(grid.preset.keys() & grid.axes.keys()):
        raise SbfnError(f"preset.{key}: every trial takes {key} from the grid's axis, so this "
                        f"value would be ignored; give it as axes: {{{key}: [VALUE]}}")
    return grid


# The shipped grids (package data), one folder per command that takes them: sweeps.regression's
# and sweeps.classification's --grid, and the image grid every image sweep starts from. A
# shipped file's name is looked up in this order: `demo` is regression's, `classification/demo`
# the other.
GRIDS = package_files.files("sweeps") / "grids"
GRID_FOLDERS = ("regression", "classification", "images")
# Every image data set's grid, shipped as MNIST's sweep on one GPU (python -m sweeps run mnist).
IMAGE_GRID = "images/mnist"
# Keys of a sweep file that a grid file may not hold: the commands' --grid would leave them out.
NOT_IN_A_GRID = {
    "settings": "a grid file holds its settings under `preset` (the grid's own, which --set "
                "and --smoke replace), not `settings` (a file's --set, which --grid leaves out)",
    "grid": "a grid file is a whole grid, not one started from another (`grid`)",
}


def grid_names(folder: str) -> tuple:
    """The grids shipped in sweeps/grids/<folder>/, by name."""
    return tuple(sorted(p.name.removesuffix(".yaml") for p in (GRIDS / folder).iterdir()
                        if p.name.endswith(".yaml")))


def named_grid(task: str, name: str) -> Grid:
    """A tabular task's named grid: sweeps/grids/<task>/<name>.yaml."""
    known = grid_names(task)
    if name not in known:
        raise ConfigError("grid", name, f"one of {known} for {task} data sets"
                          f"{did_you_mean(str(name), known)}")
    return _grid_in(GRIDS / task / f"{name}.yaml")


def image_grid() -> Grid:
    """The grid every image sweep starts from (IMAGE_GRID)."""
    return _grid_in(grid_file(IMAGE_GRID))


def _grid_in(path) -> Grid:
    """A grid file's grid keys (GRID_KEYS), checked as any sweep file's."""
    d = load(path)
    try:
        d = checked(d)
    except SbfnError as exc:
        raise SweepFileError(f"{path}: {exc}") from None
    for key in (k for k in NOT_IN_A_GRID if d.get(k)):
        raise SweepFileError(f"{path}: {NOT_IN_A_GRID[key]}")
    return grid_of(d, Grid({}))


def grid_file(name: str):
    """A shipped sweep file by name: NAME (the first folder of GRID_FOLDERS holding it) or
    FOLDER/NAME."""
    wanted = [name] if "/" in name else [f"{folder}/{name}" for folder in GRID_FOLDERS]
    for qualified in wanted:
        folder, _, stem = qualified.partition("/")
        if folder in GRID_FOLDERS and stem in grid_names(folder):
            return GRIDS / folder / f"{stem}.yaml"
    known = shipped_names()
    raise SweepFileError(f"no shipped sweep file '{name}'{did_you_mean(name, known)}; known: "
                         f"{known}")


def shipped_names() -> list:
    """The shipped files as `python -m sweeps run` takes them: a name two folders share is
    qualified in the second (classification/demo)."""
    names = []
    for folder in GRID_FOLDERS:
        names += [n if n not in names else f"{folder}/{n}" for n in grid_names(folder)]
    return names


def _default_name(spec: SweepSpec, label: str | None) -> str:
    """The commands' default (DATASET-GRID for tables, the data set for images), a file's
    name standing for the grid where the file names none; a path as its short name
    (catalog.short_name: folder:/data/pets -> pets)."""
    name = catalog.short_name(spec.dataset)
    if catalog.lookup(spec.dataset).modality == "image":
        return f"{name}-{label}" if label else name
    return f"{name}-{spec.grid}"


def sweep_options(given: dict, *, default_name: str, smoke: bool, overrides: dict,
                  command: str) -> SweepOptions:
    """SweepOptions from a sweep's run options by name (a file's keys and resources, a command's
    flags; None or absent: the default, sweeps/engine/options.py), its trial settings (`overrides`:
    --set) and data_dir, which joins them."""
    given = {k: v for k, v in given.items() if v is not None}
    for key in SWEEP_OWN.keys() & overrides.keys():
        raise SbfnError(f"--set {key}={overrides[key]} (settings.{key}): the sweep's {key} is "
                        f"its own, not a shared setting; give it as {SWEEP_OWN[key]}")
    refuse_range_in_settings("settings.{key} (--set {key}=...)", overrides)
    if "data_dir" in given:
        overrides = {**overrides, "data_dir": given["data_dir"]}
    given = {k: v for k, v in given.items() if k in run_options.DEFAULTS}
    name = given.pop("name", None) or default_name + ("-smoke" if smoke else "")
    if not NAME.fullmatch(name):
        raise SbfnError(f"--name '{name}' may hold only letters, digits, '.', '_' and '-'")
    # An objective not given stays "": the runner names it (planning.with_objective).
    return SweepOptions(name=name, overrides=overrides, command=command, **given)
