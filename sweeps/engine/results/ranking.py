"""How a sweep's configurations rank: the one ranking SweepResult.best (sweeps/api.py), the
end of a --keep-models best run and the table a run prints at its end (sweeps/engine/summary.py)
use. A configuration ranks only once it has every fold it planned: a mean over fewer folds
(ASHA stopped it, or the run was interrupted) is not comparable with one over all of them.

A configuration is one trial, or the trials of one setting split by fold (an image sweep runs
each holdout split as a trial of its own, a per-fold grid each fold): those rank together, by
their mean over every split, under the id of the lowest fold's trial (configuration_ids)."""

import json

import pandas as pd

from sbfn_dist.records import best_position
from sbfn_dist.settings.tasks import HIGHER_IS_BETTER
from sweeps.engine.plan.planning import folds_of


def best_row(means: pd.DataFrame, metric: str, configs: list = ()):
    """The index of the best CV mean of `metric` (lowest error, highest accuracy or R^2) among
    the rows that learned something (learned_rows): an uninformative combiner wins only where
    every one is. Ties by records.best_position's rule over each row's configuration (its
    planned settings among `configs`) and model_params, as the end table breaks them."""
    rows = learned_rows(means)
    planned = {c["trial_id"]: c for c in configs}
    settings = [{**{k: v for k, v in planned.get(t, {}).items() if k != "trial_id"},
                 "model_params": p} for t, p in zip(rows["trial_id"], rows["model_params"])]
    return rows.index[best_position(rows[metric], settings, metric in HIGHER_IS_BETTER)]


def learned_rows(means: pd.DataFrame) -> pd.DataFrame:
    """The CV means (cv_means) of the settings that beat the constant guess on every fold, when
    any did; else all of them. An uninformative classifier was right on no more of the rows it
    was fitted on than their majority class: a 1-epoch head at near-uniform probabilities once
    won the image tutorial's sweep by answering one class for 116 of 120 images."""
    flagged = means["uninformative"] if "uninformative" in means else pd.Series(False, means.index)
    return means[~flagged] if not flagged.all() else means


def ranked_rows(frame: pd.DataFrame, objective: str) -> pd.DataFrame:
    """The scored rows that rank configurations: the ensembles' (a sweep of competitors only:
    theirs), of the objective model where they have it (else every model, as the trials'
    running means fall back to their best)."""
    if not len(frame):
        return frame
    rows = frame[frame["status"] == "ok"]
    if "role" in rows and (rows["role"] == "ensemble").any():
        rows = rows[rows["role"] == "ensemble"]
    return rows[rows["model"] == objective] if (rows["model"] == objective).any() else rows


def learned_models(frame: pd.DataFrame, but: str) -> list:
    """The ensembles' models other than `but` with an ok row that beat the constant guess (what
    an export of an uninformative objective suggests ranking by instead)."""
    if "uninformative" not in frame:
        return []
    rows = ranked_rows(frame, "")
    return sorted(set(rows.loc[rows["uninformative"].eq(False), "model"]) - {but})


def configuration_ids(configs: list) -> dict:
    """trial_id -> the id of the configuration it belongs to: its own, or for a trial of one
    fold (`fold` set) the id of the lowest fold's trial among those that differ from it in
    `fold` alone."""
    groups: dict = {}
    for c in configs:
        if c.get("fold") is not None:
            setting = {k: v for k, v in c.items() if k not in ("fold", "trial_id")}
            groups.setdefault(json.dumps(setting, sort_keys=True, default=str), []).append(c)
    ids = {c["trial_id"]: c["trial_id"] for c in configs}
    for trials in groups.values():
        first = min(trials, key=lambda c: c["fold"])["trial_id"]
        ids.update({c["trial_id"]: first for c in trials})
    return ids


def trials_of(configuration: str, configs: list) -> list:
    """The trial ids of a configuration (configuration_ids), or of the one a trial belongs to."""
    ids = configuration_ids(configs)
    return [t for t, c in ids.items() if c == ids.get(configuration, configuration)]


def by_configuration(rows: pd.DataFrame, configs: list) -> pd.DataFrame:
    """The rows under their configuration's id (a trial the plan does not know keeps its own)."""
    return relabelled(rows, configuration_ids(configs))


def relabelled(rows: pd.DataFrame, ids: dict) -> pd.DataFrame:
    """The rows under the ids `ids` gives their trial ids (configuration_ids), else their own."""
    if not len(rows) or not ids:
        return rows
    return rows.assign(trial_id=rows["trial_id"].map(lambda t: ids.get(t, t)))


def planned_folds(configs: list) -> dict:
    """configuration id -> how many folds it planned (over its trials)."""
    ids, out = configuration_ids(configs), {}
    for c in configs:
        out[ids[c["trial_id"]]] = out.get(ids[c["trial_id"]], 0) + len(folds_of(c))
    return out


def best_means(frame: pd.DataFrame, objective: str, scores: tuple, configs: list) -> pd.DataFrame:
    """The CV means that rank the configurations (cv_means of their ranked rows)."""
    return cv_means(ranked_rows(by_configuration(frame, configs), objective), scores,
                    planned_folds(configs))


def with_every_fold(rows: pd.DataFrame, planned: dict) -> pd.DataFrame:
    """The rows of the configurations that have every fold they planned (trial_id -> folds)."""
    folds = rows.groupby("trial_id")["fold"].nunique()
    whole = folds.index[folds.to_numpy() == folds.index.map(planned).to_numpy()]
    return rows[rows["trial_id"].isin(whole)]


def cv_means(rows: pd.DataFrame, scores: tuple, planned: dict) -> pd.DataFrame:
    """The mean of each score over the folds of each (configuration, model, setting) that has
    every fold its configuration planned (trial_id -> folds); `folds`: how many;
    `uninformative`: whether it failed to beat the constant guess on any fold."""
    if not len(rows):
        return pd.DataFrame()
    rows = rows.assign(uninformative=rows["uninformative"].eq(True)
                       if "uninformative" in rows else False)
    grouped = rows.groupby(["trial_id", "model", "model_params"])
    means = grouped[[s for s in scores if s in rows]].mean()
    means["folds"] = grouped["fold"].nunique()
    means["uninformative"] = grouped["uninformative"].any()
    means = means.reset_index()
    return means[means["folds"] == means["trial_id"].map(planned)]
