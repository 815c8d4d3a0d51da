"""A sweep run: its plan checked before Ray starts (checks.py), the results directory
claimed, the trials run through Ray Tune (tune.py), the outcome printed (summary.py).

    results/<name>/  sweep.json, parts/, results.parquet, tune/ (Ray Tune's experiment),
                     mlflow.db + mlartifacts/ (default tracking store),
                     optuna.db (--search optuna: the study, sweeps/engine/tracking/study.py)

Ray is imported only once the sweep's environment is set (common/environment.py): tune.py, the
Ray side of a run, is imported inside the claimed run. The module's other imports inside a
function are doors of the same kind (tests/test_layers.py, DOORS): tracking/study.py (Optuna, for
an Optuna sweep only) and run/estimate.py (torch, an image grid's dry run timing its members).
"""

import math
import sys
import time
import uuid

from sbfn_dist.records import metric_of
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.tasks import TASKS
from sweeps.engine.checks import (check_before_ray, dry_run_scope, print_plan,
                                  refuse_another_sweep, small_space_note, trial_count)
from sweeps.engine.common.environment import ray_environment
from sweeps.engine.common.store import RESULTS_FILE, ResultStore
from sweeps.engine.plan.grid_trials import SweepSpec
from sweeps.engine.plan.planning import (Planned, SweepOptions, folds_of, plan_sweep, result_store,
                                         shared, trial_packs, trial_slots, with_objective)
from sweeps.engine.plan.ranges import is_range, space_size
from sweeps.engine.results.keep_best import keep_only
from sweeps.engine.results.outdated import outdated_on_resume, outdated_text, set_aside_outdated
from sweeps.engine.results.ranking import best_means, best_row, trials_of
from sweeps.engine.run.claim import Claim, take_over
from sweeps.engine.run.interruption import Interruption
from sweeps.engine.summary import SweepOutcome, print_summary
from sweeps.engine.tracking.mlflow_runs import SWEEP_ID


def run_sweep(spec: SweepSpec, opts: SweepOptions, out=None) -> SweepOutcome | None:
    out = out or sys.stdout
    if opts.dry_run:
        dry_run(spec, opts, out)
        return None
    opts.validate()
    planned = plan_sweep(spec, opts)      # the one validation of every configuration
    opts = with_objective(spec, opts)
    # Ray's settings, quiet logs (sweeps/engine/common/environment.py)
    with ray_environment(opts.verbose):
        return _run(spec, opts, planned, out)


def dry_run(spec: SweepSpec, opts: SweepOptions, out=None) -> list[TrialConfig]:
    """--dry-run (and Sweep.dry_run): every check a run makes before Ray starts, then the plan
    and what was left unchecked (dry_run_scope); nothing is written. Returns the configs."""
    opts.validate()
    planned = plan_sweep(spec, opts)
    opts = with_objective(spec, opts)
    with ray_environment(opts.verbose):
        check_before_ray(planned.configs, opts, spec)
    outdated = outdated_on_resume(result_store(opts), opts, planned.configs)
    print_plan(spec, opts, planned.configs, out)
    if outdated:
        print(f"  --resume: {outdated_text(outdated)}: the run sets them aside (superseded/) "
              "and computes them again", file=out)
    if timed_on_this_cpu(planned.configs, opts):
        from sweeps.engine.run.estimate import estimate_line  # torch: an image grid's probes
        print(estimate_line(planned.configs, max(1, int(opts.cpus_per_trial)),
                            trial_slots(opts)), file=out, flush=True)
    checked, skipped = dry_run_scope(opts)
    print(f"  checked, as the run checks them before Ray starts: {', '.join(checked)}; not "
          f"checked by a dry run: {'; '.join(skipped)}", file=out)
    return planned.configs


def timed_on_this_cpu(configs: list[TrialConfig], opts: SweepOptions) -> bool:
    """Whether a dry run measures the sweep's time (run/estimate.py): an image grid whose trials
    train on this machine's CPU (no GPU share, no cluster, whose machines are others)."""
    return (opts.search == "grid" and not opts.gpus_per_trial and not opts.address
            and bool(configs) and all(c.get("ensemble") for c in configs))


def _run(spec: SweepSpec, opts: SweepOptions, planned: Planned, out) -> SweepOutcome:
    stamps = check_before_ray(planned.configs, opts, spec)
    store = result_store(opts)
    with take_over(store, opts.name, out) as held:   # one run of a sweep at a time (claim.py)
        try:
            return _claimed(spec, opts, planned, store, held, out, stamps)
        except BaseException:
            if not store.exists():      # refused (or stopped) before sweep.json, its start
                held.unmake()           # leaves none of the folders and files it made
            raise


def _claimed(spec: SweepSpec, opts: SweepOptions, planned: Planned, store: ResultStore,
             held: Claim, out, stamps: dict) -> SweepOutcome:
    configs = planned.configs
    spec_record = _check_store(store, spec, opts, configs, stamps)
    set_aside_outdated(store, opts, configs, out)
    if opts.search == "optuna":
        from sweeps.engine.tracking.study import check_study
        spec_record["study"] = check_study(store, opts.name, opts.resume, spec.axes)
    from sweeps.engine import tune  # Ray: imported only now, in the sweep's environment
    # The MLflow store's set-up overlaps ray.init.
    warm = tune.warm_tracking(opts, store, spec_record.get(SWEEP_ID))
    with Interruption() as interruption:     # SIGTERM as Ctrl-C; the old handlers come back
        try:
            where = tune.connect_ray(opts, held, interruption, store, configs)
        except BaseException:
            warm.wait()     # its store made, before a refusal takes away what the run made
            raise
        warm.join()
        store.write_spec(spec_record)   # only now: a sweep that never started leaves no claim
        store.delete(RESULTS_FILE)      # stale once trials run: parts/ is the table meanwhile
        print(f"[{opts.name}] {trial_count(opts, configs, trial_packs(opts, configs))} on "
              f"{where}; results -> {store.root}" + small_space_note(spec, opts)
              + _study_note(opts, store),
              file=out, flush=True)     # a notebook or a log file shows it before the first trial
        start = time.monotonic()
        try:
            tracking_uri, grid, progress = tune.fit(spec, opts, store, planned,
                                                trial_packs(opts, configs), interruption)
        finally:
            # Once per run, on the way out too (interrupted, failed): never per trial, which
            # grew with the sweep (docs/benchmarks.md, "Per-trial overhead").
            table = store.consolidate()
    _say_strays(store, opts, out)
    _plan_the_draws(planned, grid)
    outcome = SweepOutcome(store.root, table, tracking_uri, [r.metrics for r in grid],
                           time.monotonic() - start, progress.max_running,
                           *_finish_study(opts, store), result_grid=grid, plan=planned,
                           objective=opts.objective, task=spec.task)
    _keep_best_models(opts, outcome, store)
    print_summary(outcome, spec, opts, out)
    return outcome


def _say_strays(store: ResultStore, opts: SweepOptions, out) -> None:
    """Files in parts/ that no trial wrote, which the merge left out: said, once a run."""
    strays = store.strays()
    if strays:
        shown = ", ".join(strays[:3]) + (", ..." if len(strays) > 3 else "")
        print(f"[{opts.name}] parts/ holds {len(strays)} file{'s' if len(strays) > 1 else ''} "
              f"no trial wrote ({shown}; a trial's part is <trial>-f<fold>.parquet): left out "
              "of results.parquet", file=out)


def _keep_best_models(opts: SweepOptions, outcome: SweepOutcome, store: ResultStore) -> None:
    """--keep-models best: once per finished run (a resumed one too), every configuration's kept
    models but the best one's at its best setting are deleted, so the disk holds one
    configuration's folds."""
    if opts.keep_models != "best":
        return
    # As SweepResult.best ranks them (sweeps.engine.results.ranking), by the task's metric.
    configs = outcome.plan.configs
    means = best_means(outcome.table, outcome.objective, TASKS[outcome.task].scores, configs)
    best = means.loc[best_row(means, metric_of(outcome.task), configs)] if len(means) else None
    keep_only(store, best, trials_of(best["trial_id"], configs) if best is not None else [])


def _plan_the_draws(planned: Planned, grid) -> None:
    """A sampled sweep's draws, planned in the driver too (the workers planned them to run
    them): the outcome's plan then holds every configuration SweepResult.best may name, those
    drawn before a --resume as well (the ResultGrid holds every trial of the sweep)."""
    if planned.sampling is not None:
        for result in grid:
            planned.configs_of(result.config)


def _sweep_id(store: ResultStore, opts: SweepOptions) -> dict:
    """{SWEEP_ID: the sweep's id}: a new one for a new sweep; on --resume, the one sweep.json
    holds ({} for a sweep of an older version, whose parent run has no id either)."""
    if opts.resume:
        old = store.read_spec() or {}
        return {SWEEP_ID: old[SWEEP_ID]} if SWEEP_ID in old else {}
    return {SWEEP_ID: uuid.uuid4().hex[:16]}


def _check_store(store: ResultStore, spec: SweepSpec, opts: SweepOptions, configs,
                 stamps: dict) -> dict:
    """Refuse to overwrite another sweep or resume a different one (again: now under the
    claim); prove it is writable. `objective` and `ranges` (a range axis as its text) are for
    the report (analysis/)."""
    trials, folds = expected(configs, opts)
    record = {"name": opts.name, "grid": spec.grid, "dataset": spec.dataset, "task": spec.task,
              "search": opts.search, "n_trials_expected": trials,
              "trial_ids": [c["trial_id"] for c in configs], "n_folds_expected": folds,
              "base": shared(spec, opts), "command": _creating_command(store, opts),
              "objective": opts.objective,
              "ranges": {name: str(v) for name, v in spec.axes.items() if is_range(v)},
              **({"search_seed": opts.search_seed} if opts.search != "grid" else {}),
              **_space_points(spec, opts),
              "data": stamps, **_sweep_id(store, opts)}
    refuse_another_sweep(store, opts, record["trial_ids"], record["data"], record["base"])
    store.create()
    return record


def _creating_command(store: ResultStore, opts: SweepOptions) -> str:
    """The command that created the sweep, which a --resume keeps: sweep.json is written anew at
    each run, and a refused resume quoted the last --resume's command as the sweep's own."""
    old = store.read_spec() if opts.resume else None
    return (old or {}).get("command") or opts.command


def _space_points(spec: SweepSpec, opts: SweepOptions) -> dict:
    """{"n_points": the points of a sampled search's space} where finite: its draws repeat
    points of a small one (5 samples of a 2-point space are 2 configurations), so a finished
    sweep holds at most that many (analysis.collect.SweepInfo: "Partial: 2 of 5" before)."""
    points = space_size(spec.axes)
    return {"n_points": int(points)} if opts.search != "grid" and math.isfinite(points) else {}


def expected(configs: list[TrialConfig], opts: SweepOptions) -> tuple[int, int]:
    """(trials, folds) the sweep runs at most: a grid's configurations, or a sampled search's
    draws, each with the folds every configuration has (its configurations at the ranges'
    bounds, planned ahead, are no count of what it runs: 4 of them for 20 draws)."""
    if opts.search == "grid":
        return len(configs), sum(len(folds_of(c)) for c in configs)
    return opts.num_samples, opts.num_samples * len(folds_of(configs[0]))


def _study_note(opts: SweepOptions, store: ResultStore) -> str:
    if opts.search != "optuna":
        return ""
    from sweeps.engine.tracking.study import where_note
    return where_note(store)


def _finish_study(opts: SweepOptions, store: ResultStore) -> tuple[str | None, str | None]:
    """The study's URL and its copy beside remote results (made now), for the summary."""
    if opts.search != "optuna":
        return None, None
    from sweeps.engine.tracking.study import publish_copy, study_url
    return study_url(store), publish_copy(store)
