"""A finished sweep read back for its export: its results directory, and each configuration's
full config as its records have it.

A configuration's full config is rebuilt from its records (each row carries the settings its
model used) and sweep.json's shared settings, and checked against the digest in its trial_id
(sweeps.engine.plan.planning.trial_key): a config that would not give the same key is refused.
"""

import itertools
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbfn_dist.errors import SbfnError
from sbfn_dist.records import COLUMNS
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.fields import BY_NAME, Int, Maybe, Real
from sbfn_dist.settings.tasks import TASKS
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan.planning import trial_key


# Settings the records carry as they ran (auto resolved to this machine's cuda, bf16, ...) where
# the planned config asked for them: the plan's value is the sweep's shared one, or the default.
RESOLVED = ("device", "precision", "step_engine", "step_compile")


class ExportError(SbfnError):
    """A sweep, configuration or fold that cannot be exported; the message names the fix."""


# ------------------------------------------------------------------------- the sweep, read back
@dataclass
class Finished:
    """A sweep's results directory as the export reads it."""
    store: ResultStore
    spec: dict               # sweep.json
    frame: pd.DataFrame      # its records (results.parquet, else the parts of a stopped run)


def read_sweep(results: str) -> Finished:
    store = ResultStore(results)
    spec = store.require_spec()
    frame = store.read_records()
    if not len(frame):
        raise ExportError(f"the sweep at {store.root} has no records yet: let it finish a fold "
                          "(or --resume it)")
    return Finished(store, spec, frame)


def tracking_store(finished: Finished) -> str | None:
    """The sweep's own MLflow store when it logged to the default one (tune._tracking_store:
    sqlite in the results directory), else None."""
    db = f"{finished.store.root}/mlflow.db"
    return f"sqlite:///{db}" if finished.store.has("mlflow.db") else None


# ------------------------------------------------------------------------- configs from records
def recorded_configs(spec: dict, frame: pd.DataFrame) -> list[TrialConfig]:
    """Every configuration's full config (with its trial_id), rebuilt from its records and the
    sweep's shared settings; in the order sweep.json lists them."""
    by_id = dict(list(frame.groupby("trial_id", sort=False)))
    scored = set(frame.loc[frame["family"].isin(("sbfn", "competitor")), "trial_id"])
    # A configuration that failed on every fold names no model: nothing of it ranks or exports.
    # Sampled ones (a search over ranges) have keys the plan did not list: after the plan's.
    keys = list(dict.fromkeys([*spec["trial_ids"], *by_id]))
    configs = [recorded_config(spec, by_id[key], key) for key in keys if key in scored]
    # As planned where the key tells (an image split's or a per-fold trial's one fold: it
    # ranks by that fold alone); else as read, for check_recorded to refuse at an export.
    return [_keyed(c, by_id[c.trial_id]) or c for c in configs]


def recorded_config(spec: dict, rows: pd.DataFrame, trial_id: str) -> TrialConfig:
    """One configuration's config: the settings its rows carry over the sweep's shared ones,
    its models, its role; validated as a config is (what does not apply is left out)."""
    base = spec.get("base", {})
    values = {name: value for name in rows.columns if _is_setting(name)
              if (value := _recorded(rows[name], name)) is not None}
    values.update({name: base.get(name) for name in RESOLVED})
    values.update(_lists(rows), **_models(rows, base, spec["task"]))
    extra = {**base.get("extra", {}), "role": _first(rows.get("role", pd.Series(dtype=object)))
             or "ensemble"}
    config = {**base, **values, "extra": extra, "sweep": spec["name"]}
    cfg = TrialConfig.from_dict({k: v for k, v in config.items() if v is not None},
                                optional=set(config))
    return cfg.with_values(trial_id=trial_id)


def _is_setting(column: str) -> bool:
    """A config field recorded as one column (lists and labels are read apart)."""
    return (column in BY_NAME and COLUMNS.get(column) is not None
            and COLUMNS[column].kind == "config" and column not in RESOLVED)


def _recorded(column: pd.Series, name: str):
    """The setting's value in the rows that carry it, as the config holds it (parquet gives
    numpy types, and integers as floats in a column with gaps)."""
    value = _first(column)
    if value is None:
        return None
    value = value.item() if isinstance(value, np.generic) else value
    integral = isinstance(value, float) and value.is_integer()
    if integral and isinstance(_unwrapped(BY_NAME[name].check), Int):
        return int(value)
    return value


def _first(column: pd.Series):
    present = column.dropna()
    return present.iloc[0] if len(present) else None


def _lists(rows: pd.DataFrame) -> dict:
    """The list settings, which records carry as JSON."""
    out = {}
    for name, column in (("lambda2", "lambda2_grid"), ("plugin_members", "plugin_members")):
        text = _first(rows[column]) if column in rows else None
        if text is not None:
            out[name] = json.loads(text)
    return out


def _models(rows: pd.DataFrame, base: dict, task: str) -> dict:
    """combiners and competitors: the models the rows name, in the order the config would list
    them (the shared settings', the task's, or the rows' own for competitors)."""
    plugins = set(_lists(rows).get("plugin_members", ()))
    order = list(dict.fromkeys([*base.get("combiners", ()), *TASKS[task].allowed]))
    combiners = sorted(_named(rows, "sbfn"), key=order.index)
    return {"combiners": combiners,
            "competitors": [c for c in _named(rows, "competitor") if c not in plugins]}


def _named(rows: pd.DataFrame, family: str) -> list:
    """The models of a family the rows name, in the order they first appear."""
    return list(dict.fromkeys(rows.loc[rows["family"] == family, "model"]))


def check_recorded(config, rows: pd.DataFrame) -> TrialConfig:
    """The config as planned, found by the configuration's own key (the digest of every setting
    it changes, sweeps.engine.plan.planning.trial_key) among what its records may stand for."""
    found = _keyed(config, rows)
    if found is not None:
        return found
    raise ExportError(f"the records of {config['trial_id']} do not give back the settings it "
                      "ran with (their digest differs from its key): it cannot be refitted "
                      "faithfully; export another configuration (--config)")


def _keyed(config, rows: pd.DataFrame) -> TrialConfig | None:
    """The reading of the records whose key is the configuration's own, or None."""
    digest = config["trial_id"].rsplit("_", 1)[-1]
    readings = (TrialConfig.trusted(c) for c in _readings(config, rows))
    return next((c for c in readings if trial_key(c, {}) == digest), None)


def _readings(config, rows: pd.DataFrame):
    """The configs the records may stand for: a per-fold trial's names its fold, and a whole
    number in a column of floats may have been planned as an integer (epsilon: [0, 0.35] in a
    sweep file), which the key's digest tells apart."""
    folds = sorted(set(rows["fold"].dropna().astype(int)))
    whole = [k for k, v in config.items() if isinstance(v, float) and v.is_integer()
             and isinstance(_unwrapped(BY_NAME[k].check), Real)]
    for fold in [config.get("fold")] + folds[:1] * (len(folds) == 1):
        for ints in itertools.product((False, True), repeat=len(whole)):
            yield {**config, "fold": fold, **{k: int(config[k]) for k, i in zip(whole, ints) if i}}


def _unwrapped(check):
    return check.inner if isinstance(check, Maybe) else check
