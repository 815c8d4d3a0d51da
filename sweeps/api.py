"""Sweeps from Python: define one (a sweep file, a dict, a built-in grid), list its trials, run
it, resume it; the results come back as a pandas DataFrame and Ray Tune's ResultGrid.

    from sweeps import Sweep
    sweep = Sweep.from_yaml("my-sweep.yaml")       # or Sweep.from_dict({...}), or
    sweep = Sweep.builtin("regression", "air_quality", "regression80")
    sweep.dry_run()                                # prints the plan, returns the trials' configs
    result = sweep.run(num_cpus=4)                 # run options replace the file's
    result.frame                                   # results.parquet: one row per trial, fold, model
    result.result_grid                             # Ray Tune's ResultGrid, one result per trial
    result.best()                                  # the best configuration: settings, CV scores
    result.best_model()                            # it, refitted: an SBFNRegressor / SBFNClassifier
    result.export("best-model")                    # saved (and logged to the sweep's MLflow run)
    sweep.resume()                                 # after an interruption: finished folds kept
    SweepResult.open("results/NAME")               # a finished sweep read back from its directory

The same code runs `python -m sweeps run FILE` and the commands (sweeps/engine/plan/sweepfile.py
translates all three). Everything is checked when the Sweep is made, before Ray starts; a bad
key or value raises SweepFileError naming the file and the key. docs/sweeps.md, "Python API and
sweep files"; models from a sweep: docs/models.md (sweeps/engine/model_export.py).
"""

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from sbfn_dist import catalog
from sbfn_dist.errors import SbfnError, did_you_mean
from sbfn_dist.records import metric_of
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.tasks import TASKS
from sweeps.commands.tabular import DEFAULT_DATASET, DEFAULT_GRID
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan import sweepfile
from sweeps.engine.plan.grid_files import grid_file
from sweeps.engine.plan.grid_trials import SweepSpec
from sweeps.engine.plan.model_names import own_trials
from sweeps.engine.plan.options import OBJECTIVES, OPTIONS, into_definition
from sweeps.engine.plan.planning import Planned, SweepOptions, plan, result_store, settings_of
from sweeps.engine.plan.sweep_keys import SweepFileError, load
from sweeps.engine.results.ranking import (best_means, best_row as _best_row, by_configuration,
                                           cv_means, learned_models, planned_folds, ranked_rows,
                                           trials_of)
from sweeps.engine.results.recorded import (ExportError, read_sweep, recorded_configs,
                                            tracking_store)
from sweeps.engine.summary import SweepOutcome
from sweeps.engine.sweep import dry_run, run_sweep


@dataclass(frozen=True)
class BestConfiguration:
    """A sweep's best configuration (SweepResult.best): what it set, and its CV scores."""
    trial_id: str
    settings: dict              # the hyper-parameters its grid point set (n_members, epsilon, ...)
    model: str                  # the model it is ranked by: the sweep's objective
    model_params: dict          # that model's best setting in it (e.g. {"lambda2": 3.0})
    metric: str
    score: float                # the CV mean of `metric` over its folds, at that setting
    scores: dict                # the CV mean of each of the task's scores, at that setting
    folds: int
    config: TrialConfig = field(repr=False)   # its full config: run_trial(config) trains it
                                              # again (to_dict(): as a plain dict)
    # its model did not beat the constant guess on some fold (ranked last: ranking.learned_rows)
    uninformative: bool = False


@dataclass
class SweepResult:
    """A finished sweep: where it is, its records, and Ray Tune's view of its trials."""
    path: str                                          # <storage>/<name> (a path or a URI)
    frame: pd.DataFrame = field(repr=False)            # results.parquet (empty: no records)
    result_grid: object = field(repr=False)            # ray.tune.ResultGrid
    tracking_uri: str | None = None                    # the MLflow store (None: --no-mlflow)
    study: str | None = None                           # search optuna: the study's URL
    plan: object = field(default=None, repr=False)     # sweeps.engine.plan.planning.Planned
    objective: str = ""                                # the model that ranks configurations
    task: str = ""

    @classmethod
    def of(cls, outcome: SweepOutcome, options: SweepOptions) -> "SweepResult":
        store = result_store(options)
        return cls(store.location, store.read_records(), outcome.result_grid, outcome.tracking_uri,
                   outcome.study, outcome.plan, outcome.objective, outcome.task)

    def best(self, metric: str | None = None) -> BestConfiguration | None:
        """The configuration whose objective model (`objective`: sbfn_ls_linear, sbfn,
        --objective) has the best CV mean of `metric` (the task's: rmse lowest, accuracy
        highest) at its best setting, over every fold the configuration planned (an image
        sweep's: every split, each split's trial its fold; sweeps.engine.results.ranking). Failed and
        diverged rows do not count, so a configuration missing a fold (stopped early by ASHA,
        interrupted, failed, diverged on one) is not ranked; nor are the M = 1 reference and
        the competitors. One whose model did not beat the constant guess on a fold ranks below
        every one that did (`uninformative` says it won for want of any). None when no
        configuration qualifies."""
        metric = metric or metric_of(self.task)
        _check_score(metric, self.task)
        means = best_means(self.frame, self.objective, TASKS[self.task].scores,
                           self.plan.configs)
        if not len(means):
            return None
        return self._described(means.loc[_best_row(means, metric, self.plan.configs)], metric)

    @classmethod
    def open(cls, path, objective: str | None = None) -> "SweepResult":
        """A finished (or stopped) sweep read back from its results directory: its records and
        its configurations as they give them back (sweeps/engine/results/recorded.py); result_grid is
        None. objective: the model that ranks configurations (default: the sweep's own, as
        its sweep.json records it, else the task's: sbfn_ls_linear or sbfn)."""
        finished = read_sweep(str(path))
        models = sorted(set(finished.frame["model"]) - {""})
        if objective and objective not in models:
            raise ExportError(f"--objective {objective}: the sweep has no record of the model "
                              f"{objective}{did_you_mean(objective, models)}; its models: "
                              f"{', '.join(models)}")
        # Else the ranking would fall back to every model (ranked_rows) and say nothing.
        ranking = sorted(set(ranked_rows(finished.frame, "")["model"]))
        if objective and objective not in ranking:
            raise ExportError(f"--objective {objective}: {own_trials(objective)}, not an "
                              f"ensemble's combiner, and ranks no configuration; rank by one of "
                              f"{', '.join(ranking)}")
        configs = recorded_configs(finished.spec, finished.frame)
        task = finished.spec["task"]
        return cls(finished.store.location, finished.frame, None, tracking_store(finished),
                   plan=Planned(_points(configs), configs), objective=objective or
                   finished.spec.get("objective") or OBJECTIVES[task], task=task)

    def configuration(self, trial_id: str, metric: str | None = None) -> BestConfiguration:
        """The configuration `trial_id` at the best setting of its objective model (as best()
        describes the best one); refused where it has no model with every fold ok."""
        from sweeps.engine.results.refit import check_ensemble  # torch: image kinds
        self._rows_of(trial_id)          # an unknown id: one line naming the sweep's
        metric = metric or metric_of(self.task)
        _check_score(metric, self.task)
        configs = self.plan.configs
        # Any split's trial names its configuration (all its splits rank it).
        rows = by_configuration(self.frame[self.frame["trial_id"].isin(
            trials_of(trial_id, configs))], configs)
        planned = {c["trial_id"] for c in configs}
        if trial_id in planned:      # not: it failed on every fold, and names no model
            check_ensemble(self.plan.config({"trial_id": trial_id}))
            rows = ranked_rows(rows, self.objective)
        means = cv_means(rows[rows["trial_id"].isin(planned)], TASKS[self.task].scores,
                         planned_folds(configs))
        if not len(means):
            raise ExportError(f"{trial_id} has no model with every fold ok "
                              f"({_why_not(self._rows_of(trial_id))}): choose another "
                              "configuration (--config)")
        return self._described(means.loc[_best_row(means, metric, self.plan.configs)], metric)

    def _rows_of(self, trial_id: str) -> pd.DataFrame:
        rows = self.frame[self.frame["trial_id"] == trial_id]
        if not len(rows):
            keys = list(dict.fromkeys(self.frame["trial_id"]))
            raise ExportError(f"unknown configuration {trial_id!r}"
                              f"{did_you_mean(str(trial_id), keys)}; the sweep's: "
                              f"{', '.join(keys[:8])}{' ...' if len(keys) > 8 else ''}")
        return rows

    def export(self, out, *, config: str | None = None, fold: int | None = None,
               metric: str | None = None, mlflow: bool = True, mlflow_uri: str | None = None):
        """Save the best configuration (or `config`, a trial_id) refitted (best_model) to the
        directory `out`, and log it as an MLflow model under the sweep's run where the sweep
        had tracking (or to `mlflow_uri`). Returns sweeps.engine.model_export.Exported;
        docs/models.md."""
        from sweeps.engine import model_export as engine
        chosen = self._chosen(config, metric)
        store = ResultStore(self.path)
        exported = engine.export(engine.Finished(store, store.read_spec(), self.frame),
                                 self._on_fold(chosen, fold), chosen.model, chosen.model_params,
                                 out, fold, mlflow_uri or self.tracking_uri, mlflow)
        if chosen.uninformative:     # the best of none that learned: its report says so
            exported.uninformative = True
            exported.learned_instead = learned_models(self.frame, chosen.model)
        return exported

    def best_model(self, save_to=None, *, config: str | None = None, fold: int | None = None,
                   metric: str | None = None, mlflow: bool = True, mlflow_uri: str | None = None):
        """The best configuration (best(); or `config`, a trial_id) as a fitted estimator
        (SBFNRegressor / SBFNClassifier): its recorded settings, its objective model at its best
        setting as the combiner, refitted on all rows of a cross-validation (the final model)
        or on the training part of a held-out split or of `fold` -- or, where the sweep kept
        that fold's model (--keep-models best), that model itself (sweeps/engine/results/refit.py).
        save_to: also save it there and log it to MLflow (export), printing where."""
        from sweeps.engine.model_export import report
        from sweeps.engine.results.refit import refit
        if save_to is not None:
            exported = self.export(save_to, config=config, fold=fold, metric=metric,
                                   mlflow=mlflow, mlflow_uri=mlflow_uri)
            print("\n".join(report(exported)), flush=True)
            return exported.refit.estimator
        chosen = self._chosen(config, metric)
        return refit(self._on_fold(chosen, fold), chosen.model, chosen.model_params, fold,
                     ResultStore(self.path)).estimator

    def _on_fold(self, chosen: BestConfiguration, fold: int | None) -> TrialConfig:
        """The config of the configuration's trial that ran `fold` (an image sweep's split K is
        a trial of its own), else its own config (the export refuses a fold it did not run)."""
        if fold is None or chosen.config.get("fold") in (None, fold):
            return chosen.config
        configs = [self.plan.config({"trial_id": t})
                   for t in trials_of(chosen.trial_id, self.plan.configs)]
        return next((c for c in configs if c["fold"] == fold), chosen.config)

    def _chosen(self, config: str | None, metric: str | None) -> BestConfiguration:
        if config is not None:
            return self.configuration(config, metric)
        best = self.best(metric)
        if best is None:
                raise ExportError("no configuration of this sweep has every fold ok, so none is "
                              "the best: name one with --config (config=...)")
        return best

    def _described(self, row: pd.Series, metric: str) -> BestConfiguration:
        point = next(p for p in self.plan.points if p["trial_id"] == row["trial_id"])
        scores = {s: float(row[s]) for s in TASKS[self.task].scores if s in row}
        settings = settings_of(point)
        if len(trials_of(row["trial_id"], self.plan.configs)) > 1:
            settings.pop("fold", None)          # its splits are its folds
        return BestConfiguration(row["trial_id"], settings, row["model"],
                                 json.loads(row["model_params"] or "{}"), metric,
                                 float(row[metric]), scores, int(row["folds"]),
                                 self.plan.config(point), bool(row.get("uninformative", False)))


def _why_not(rows: pd.DataFrame) -> str:
    """Why a configuration's rows rank nothing: what is not ok, in a few words."""
    bad = rows[rows["status"] != "ok"]
    if not len(bad):
        return "a fold is missing"
    row = bad.iloc[0]
    where = f" on fold {int(row['fold'])}" if pd.notna(row["fold"]) else ""
    return f"{row['status']}{where}: {str(row.get('error', ''))[:160]}"


def _points(configs: list[TrialConfig]) -> list[dict]:
    """Each configuration's point as a plan holds it: the settings that differ between the
    sweep's ensembles (its axes, as the records give them back) and the seed."""
    ensembles = [c for c in configs if c["extra"].get("role") == "ensemble"] or configs
    axes = [k for k in ensembles[0] if k not in ("trial_id", "sweep", "extra")
            and len({json.dumps(c.get(k), default=str) for c in ensembles}) > 1]
    return [{**{k: c[k] for k in (*axes, "seed") if k in c}, "trial_id": c["trial_id"]}
            for c in configs]


def _check_score(metric: str, task: str) -> None:
    scores = TASKS[task].scores
    if metric not in scores:
        raise SbfnError(f"unknown metric {metric!r}"
                         f"{did_you_mean(str(metric), scores)}; a {task} sweep's scores: "
                         f"{', '.join(scores)}")


@dataclass(frozen=True)
class Sweep:
    """A checked sweep: its trials (spec) and how it runs (options), from a definition."""
    spec: SweepSpec
    options: SweepOptions
    definition: dict = field(repr=False)
    source: str = "a sweep definition"
    label: str | None = None

    @classmethod
    def from_dict(cls, definition: dict, *, source: str = "the sweep definition",
                  label: str | None = None, flags: frozenset = frozenset()) -> "Sweep":
        """A sweep from the keys of a sweep file; `source` names it in errors, `label` names its
        grid where `grid` is not given; `flags`: the run options a command's flags set in it
        (named as flags in its refusals)."""
        spec, options = sweepfile.build(definition, source, label, flags)
        return cls(spec, options, dict(definition), source, label)

    @classmethod
    def from_yaml(cls, path, **changes) -> "Sweep":
        """A sweep file; `changes` replace its top-level keys (e.g. storage=..., smoke=True)."""
        definition = {**load(path), **changes}
        return cls.from_dict(definition, source=str(path), label=Path(path).stem)

    @classmethod
    def builtin(cls, task: str, dataset: str | None = None, grid: str | None = None,
                **changes) -> "Sweep":
        """A built-in grid: the same trials (and trial ids) as `python -m sweeps.<task>
        --dataset DATASET --grid GRID`; an image data set takes no grid."""
        if task not in DEFAULT_DATASET:
            raise SweepFileError(
                f"Sweep.builtin: unknown task {task!r}{did_you_mean(str(task), DEFAULT_DATASET)}"
                f"; the built-in grids are per task: {', '.join(DEFAULT_DATASET)}, e.g. "
                "Sweep.builtin('regression', 'diabetes', 'demo')")
        dataset = dataset or DEFAULT_DATASET[task]
        image = catalog.lookup(dataset).modality == "image"
        grid = None if image else grid or DEFAULT_GRID[task]
        definition = {"task": task, "dataset": dataset, "grid": grid, **changes}
        return cls.from_dict(definition, source=f"the built-in grid {grid or dataset}")

    @classmethod
    def example(cls, name: str, **changes) -> "Sweep":
        """A sweep file shipped with the package: a named grid, sweeps/grids/*/NAME.yaml
        (`classification/demo` where two folders hold the name; grid_files.grid_file)."""
        return cls.from_yaml(grid_file(name), **changes)

    def trials(self) -> list[TrialConfig]:
        """Every trial's full config (validated), in the order they are submitted."""
        return plan(self.spec, self.options)

    def dry_run(self, out=None) -> list[TrialConfig]:
        """Check what a run checks before Ray starts (the data, your networks), then print the
        trials, their packs and resources, as `--dry-run` does; run nothing."""
        return dry_run(self.spec, self.options, out)

    def run(self, **options) -> SweepResult:
        """Run the sweep (a local Ray on 127.0.0.1 unless options name an address); prints
        one progress line per finished fold, then the comparison table. `options` are run
        options by their sweep-file names (num_cpus=4, gpus_per_trial=0.5, storage=...,
        verbose=True; sweeps/engine/plan/options.py) and replace the file's."""
        options = self._options(options)
        return SweepResult.of(run_sweep(self.spec, options), options)

    def resume(self, **options) -> SweepResult:
        """Continue this sweep after an interruption: finished folds are read back, not rerun."""
        options = replace(self._options(options), resume=True)
        return SweepResult.of(run_sweep(self.spec, options), options)

    def _options(self, changes: dict) -> SweepOptions:
        if not changes:
            return self.options
        known = [o.name for o in OPTIONS if o.file_key]
        for name in (n for n in changes if n not in known):
            raise SweepFileError(
                f"{self.source}: unknown run option '{name}'{did_you_mean(str(name), known)}; "
                f"the known ones: {', '.join(known)} (docs/sweeps.md)")
        definition = into_definition(self.definition, changes)
        return sweepfile.build(definition, self.source, self.label)[1]

