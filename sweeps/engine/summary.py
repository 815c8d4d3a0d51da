"""What a sweep run gives back (SweepOutcome) and the summary it prints: the configurations
ranked by their CV means, which s-BFN form won, the report's verdict against the practitioners'
combiners, the failed ones, and what to run next."""

import json
from dataclasses import dataclass

import pandas as pd

from analysis.collect import normalise
from analysis.stats import PairedTest
from analysis.verdict import comparators, verdict_lines, verdicts
from sbfn_dist.interfaces.summary import comparison_table
from sbfn_dist.records import REFERENCE_MODEL, metric_of
from sbfn_dist.settings.tasks import SBFN_FORMS
from sweeps.engine.common.next_steps import console_script, installed, python_module
from sweeps.engine.plan.grid_trials import SweepSpec, setting_text
from sweeps.engine.plan.options import PAPER_FORMS
from sweeps.engine.plan.planning import Planned, SweepOptions, result_store
from sweeps.engine.results.ranking import by_configuration, planned_folds, with_every_fold
from sweeps.engine.tracking.mlflow_runs import ui_hint


@dataclass
class SweepOutcome:
    root: str
    table: pd.DataFrame
    tracking_uri: str | None
    trials: list
    seconds: float
    max_running: int = 0
    study: str | None = None            # --search optuna: the study's URL
    study_copy: str | None = None       # and its copy beside remote results
    result_grid: object = None          # Ray Tune's ResultGrid of the run
    plan: Planned | None = None         # every configuration, as planned
    objective: str = ""                 # the model that ranks configurations
    task: str = ""


def _labelled(rows: pd.DataFrame, axes: list) -> pd.DataFrame:
    """Competitors have no M or ε; the M = 1 reference is its own model, one setting per
    learning rate (two references must never be averaged together)."""
    # Competitor rows have no M: results.parquet holds the column as floats (label 2, not 2.0).
    rows = rows.assign(**{a: rows[a].map(lambda v, a=a: setting_text(a, v)
                                         if isinstance(v, (float, str)) else v)
                          .astype(object) for a in axes})
    role = rows["role"] if "role" in rows else pd.Series("ensemble", index=rows.index)
    rows.loc[role != "ensemble", axes] = "-"
    reference = role == "reference"
    rows.loc[reference, "model"] = REFERENCE_MODEL
    if reference.any():   # an empty .loc assignment would add an all-NaN model_params column
        rows.loc[reference, "model_params"] = rows.loc[reference, "lr"].map(
            lambda lr: json.dumps({"lr": lr}))
    return rows


def failed_trials(table: pd.DataFrame) -> dict:
    """trial id -> error of each configuration that failed after its retries."""
    if not len(table) or "error" not in table:
        return {}
    rows = table[table["status"] == "failed"]
    return dict(zip(rows["trial_id"], rows["error"]))


def _by_error(failed: dict) -> dict:
    """error -> the trial ids that failed with it: a fault every configuration met (data no
    machine has) is listed once, not once per configuration."""
    grouped: dict = {}
    for trial_id, error in failed.items():
        grouped.setdefault(error, []).append(trial_id)
    return grouped


def _some(trial_ids: list, shown: int = 3) -> str:
    if len(trial_ids) == 1:
        return trial_ids[0]
    more = f" and {len(trial_ids) - shown} more" if len(trial_ids) > shown else ""
    return f"{len(trial_ids)} configurations ({', '.join(trial_ids[:shown])}{more})"


def _ranked_configurations(rows: pd.DataFrame, outcome: SweepOutcome, out) -> pd.DataFrame:
    """The rows the end table ranks: those of the configurations with every planned fold, when
    any has them (sweeps.engine.results.ranking: an ASHA-stopped configuration's mean over its first
    folds once topped the table); the others are named as left out."""
    if outcome.plan is None:
        return rows
    configs = outcome.plan.configs
    grouped = by_configuration(rows, configs)          # a per-fold grid's trials: one id
    whole = with_every_fold(grouped, planned_folds(configs))
    left_out = grouped["trial_id"].nunique() - whole["trial_id"].nunique()
    if not len(whole) or not left_out:
        return rows
    print(f"  {left_out} configurations with fewer folds than planned (stopped early by ASHA, "
          "or not finished) are left out of the table below: their means cover fewer folds "
          "(results.parquet keeps their rows)", file=out)
    return whole


def sbfn_forms(view: pd.DataFrame, metric: str, task: str, objective: str) -> str:
    """Which s-BFN form won the end table (`view`: comparison_table's, best first), the
    objective and the paper's own form named ("" with fewer than two): which wins depends on
    the data (docs/method.md, "Feature map of the closed-form s-BFN")."""
    means = view[f"{metric}_mean"]
    forms = [m for m in view.index if m in SBFN_FORMS and pd.notna(means[m])]
    if len(forms) < 2:
        return ""
    said = [f"{m} {means[m]:.4g}{_form_note(m, task, objective)}" for m in forms]
    return f"s-BFN forms by {metric}, best first: {said[0]} won; then {', '.join(said[1:])}"


def _form_note(model: str, task: str, objective: str) -> str:
    notes = ["the objective"] if model == objective else []
    if model == PAPER_FORMS[task]:
        notes.append("the paper's form" + ("" if model == objective else
                                           f": --objective {model} ranks by it"))
    return f" ({'; '.join(notes)})" if notes else ""


def verdict(rows: pd.DataFrame, task: str, objective: str, sweep: str) -> list:
    """The report's verdict (analysis.verdict) on the rows the end table ranked: the objective's
    s-BFN against the practitioners' combiners and the best single hypothesis, by the report's
    default test; no line where the sweep ran none of them."""
    ok = rows[rows["status"] == "ok"]
    if not ok["model"].isin(comparators(task)).any():
        return []
    test = PairedTest()
    return verdict_lines(verdicts(normalise(ok, sweep), test, {sweep: objective}), test)


def print_summary(outcome: SweepOutcome, spec: SweepSpec, opts: SweepOptions, out) -> None:
    table = outcome.table
    metric = metric_of(spec.task)
    # Diverged rows go in too: the table counts them (not_ok) instead of hiding the model.
    rows = table[table["status"] != "failed"] if len(table) else table
    failed = failed_trials(table)
    # A failed configuration's rows are in the table too (its `failed` row, its folds done)
    with_results = set(rows["trial_id"]) - set(failed) if len(rows) else set()
    print(f"\n[{opts.name}] finished in {outcome.seconds / 60:.1f} min: "
          f"{len(with_results)} configurations with results, {len(failed)} failed", file=out)
    for error, trial_ids in _by_error(failed).items():
        print(f"  failed: {_some(trial_ids)}: {error}", file=out)
    if len(rows) and not (rows["status"] == "ok").any():      # a table of NaN would say nothing
        print(f"  no score: every model diverged ({rows['error'].iloc[0]}): train with a smaller "
              "lr or init_scale (--set lr=... init_scale=...)", file=out)
    elif len(rows):
        rows = _ranked_configurations(rows, outcome, out)
        axes = [a for a in spec.axes if a in rows]
        view = comparison_table(_labelled(rows, axes).to_dict("records"), metric,
                                ["model_params", *axes])
        with pd.option_context("display.width", 200, "display.max_colwidth", 70):
            print(view.drop(columns=["label"]).to_string(float_format=lambda v: f"{v:.4g}"),
                  file=out)
        forms = sbfn_forms(view, metric, spec.task, outcome.objective)
        if forms:
            print(forms, file=out)
        for line in verdict(rows, spec.task, outcome.objective, opts.name):
            print(line, file=out)
    # Remote storage: the store's root is a path on its filesystem; the user needs the URI.
    where = result_store(opts).location if "://" in opts.storage else outcome.root
    print(f"\nresults:  {where}/results.parquet", file=out)
    if outcome.tracking_uri:
        print(f"MLflow:   {outcome.tracking_uri} (experiment '{opts.name}')", file=out)
        print(ui_hint(outcome.tracking_uri, opts.name), file=out)
    if outcome.study:
        copy = f"; a copy at {outcome.study_copy}" if outcome.study_copy else ""
        install = "" if installed("optuna-dashboard") else \
            f"   (install it: {python_module('pip', 'install', 'optuna-dashboard')})"
        print(f"Optuna:   {outcome.study} (study '{opts.name}'{copy})\n  open the dashboard: "
              f"{console_script('optuna-dashboard', outcome.study)}{install}", file=out)
    # Commands as they run when pasted: this interpreter, quoted paths
    # (sweeps/engine/common/next_steps.py).
    print(f"report:   {python_module('analysis.report', where)}", file=out)
