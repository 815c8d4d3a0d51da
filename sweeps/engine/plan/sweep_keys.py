"""A sweep as data: the keys a sweep file (YAML) or a dict may hold, read and checked key by key
(docs/sweeps.md, "Python API and sweep files"). sweepfile.py turns a checked sweep into a
SweepSpec and SweepOptions; grid_files.py reads the named grids, which are such files too.
"""

import re
from pathlib import Path

import numpy as np
import yaml

from sbfn_dist import catalog
from sbfn_dist.errors import SbfnError, did_you_mean
from sbfn_dist.settings.fields import LIST_FIELDS_COMMAND, MEMBER_SEPARATOR, TRIAL_FIELDS, field
from sweeps.engine.common.yaml_text import load_error
from sweeps.engine.plan import options as run_options
from sweeps.engine.plan.options import COUNT, FLAG, INTEGER, MAPPING, SEEDS, TEXT, Kind
from sweeps.engine.plan.ranges import (RANGES, Range, parse_range, refuse_range_in_list,
                                       refuse_range_in_settings)


class SweepFileError(SbfnError):
    """A sweep file or dict that cannot define a sweep; the message names the file and key."""


def _names(value) -> list:
    if not isinstance(value, list):
        raise ValueError
    return value


# The keys that shape the trials (the commands' grid flags); the run options' keys are
# sweeps/engine/plan/options.py's, under the top level or `resources` (docs/sweeps.md has the table).
SPEC_KEYS = {
    "dataset": TEXT, "task": TEXT, "grid": TEXT, "axes": MAPPING, "preset": MAPPING,
    "folds": INTEGER, "seeds": SEEDS, "references": FLAG, "per_fold": FLAG,
    "competitors": Kind("a list of model names ([] for none)", _names),
}
SWEEP_KEYS = {**SPEC_KEYS, **run_options.file_keys(""), "resources": MAPPING}
RESOURCE_KEYS = run_options.file_keys("resources")
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
            if key_node.tag == "tag:yaml.org,2002:bool":
                # YAML 1.1 reads `yes:`, `on:`, `no:` as a boolean; every key here is a name,
                # as YAML 1.2 reads it (`yes: 1` was told "unknown key 'True'")
                key_node.tag = "tag:yaml.org,2002:str"
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


# YAML 1.2's numbers without a point, as `--set lr=1e-3` reads them: PyYAML follows YAML 1.1,
# whose floats need one, and read `lr: [1e-3]` as the text '1e-3' (refused as no number).
_UniqueKeys.add_implicit_resolver("tag:yaml.org,2002:float",
                                  re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"),
                                  list("-+0123456789"))


def load(path) -> dict:
    """The sweep file's mapping, as written (checked by `build`)."""
    path = Path(path)
    try:
        # Bytes: YAML's reader tells UTF-8 from UTF-16 (sweeps/engine/common/yaml_text.py)
        definition = yaml.load(path.read_bytes(), Loader=_UniqueKeys)
    except OSError as exc:
        raise SweepFileError(f"{path}: cannot read the sweep file ({exc.strerror or exc})"
                             ) from None
    except _DuplicateKey as exc:
        raise SweepFileError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise SweepFileError(f"{path}: {load_error(exc)}") from None
    if not isinstance(definition, dict):
        raise SweepFileError(f"{path}: a sweep file is a mapping of keys (dataset: ..., axes: "
                             "...); see docs/sweeps.md")
    return definition


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
    sweeps/engine/plan/ranges.py), of a setting the models may differ in."""
    if axis in NOT_AN_AXIS:
        raise SbfnError(f"axes.{axis}: every model of a sweep is scored on the same data and "
                        f"folds (its end table ranks them together), so {axis} cannot be an "
                        f"axis; {NOT_AN_AXIS[axis]}")
    if axis not in TRIAL_FIELDS:    # else planning names its first value as the field's
        raise SbfnError(f"axes.{axis}: no trial setting of this name"
                        f"{did_you_mean(str(axis), TRIAL_FIELDS)}; the settings an axis may "
                        f"vary, their defaults and where they apply: {LIST_FIELDS_COMMAND}")
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
    sizes = field("n_members").check     # 0 needs plug-ins: each trial's config says so
    wrong = [m for m in values if not sizes.ok(m, None)] if axis == "n_members" else []
    if wrong:
        why = sizes.why(wrong[0], None)     # beyond the records' integers
        lead = f"{why}; " if why else ""
        raise SbfnError(f"axes.n_members = {values!r}: {lead}ensemble sizes are "
                        f"{sizes.text(None)}")
    return values


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
