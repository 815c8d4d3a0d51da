"""The one place that drives Ray Tune: a SweepSpec + options -> trials run -> results.

    results/<name>/  sweep.json, parts/, results.parquet, tune/ (Ray Tune's experiment),
                     mlflow.db + mlartifacts/ (default tracking store),
                     optuna.db (--search optuna: the study, sweeps/engine/tell/study.py)
"""

import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sbfn_dist.errors import ConfigError, SbfnError
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.records import REFERENCE_MODEL, metric_of
from sbfn_dist.settings.tasks import SBFN_FORMS, TASKS
from sbfn_dist.interfaces.summary import comparison_table
from sweeps.engine.run.claim import Claim, refuse_while_running, take_over
from sweeps.engine.plan.ranges import axis_size, has_ranges, is_range
from sweeps.engine.common.environment import ray_environment
from sweeps.engine.common.next_steps import console_script, installed, python_module
from sweeps.engine.plan.options import PAPER_FORMS
from sweeps.engine.run.mps import under_mps
from sweeps.engine.plan.packing import packs
# plan, SweepOptions and result_store are also imported from here (sweep files, the commands).
from sweeps.engine.plan.planning import (Planned, SweepOptions, folds_of, plan, plan_sweep,
                                         points_of, result_store, settings_of, shared,
                                         with_objective)
from sweeps.engine.plan.grids import SweepSpec, axis_text
from sweeps.engine.common.store import ResultStore


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


def dry_run(spec: SweepSpec, opts: SweepOptions, out=None) -> list[dict]:
    """--dry-run (and Sweep.dry_run): every check a run makes before Ray starts, then the plan
    and what was left unchecked (dry_run_scope); nothing is written. Returns the configs."""
    opts.validate()
    planned = plan_sweep(spec, opts)
    opts = with_objective(spec, opts)
    with ray_environment(opts.verbose):
        check_before_ray(planned.configs, opts)
    print_plan(spec, opts, planned.configs, out)
    checked, skipped = dry_run_scope(opts)
    print(f"  checked, as the run checks them before Ray starts: {', '.join(checked)}; not "
          f"checked by a dry run: {'; '.join(skipped)}", file=out)
    return planned.configs


def check_before_ray(configs: list[dict], opts: SweepOptions) -> None:
    """What a run refuses before Ray starts, each in one line, beyond the settings plan_sweep
    validated: a dry run makes these checks too (issue 32: it checked neither the data nor
    the networks, and listed trials every one of which the run refused). The results folder is
    only read here; a run checks it again under its claim (_check_store)."""
    store = result_store(opts)
    if opts.resume and store.read_spec() is None:
        refuse_while_running(store, opts.name)      # its first run is starting
        raise SbfnError(f"--resume: there is no sweep at {store.root} (check --name and "
                        "--storage)")
    under_mps(opts)                                 # --mps on where it cannot run
    _check_gpu_settings(configs, opts)
    _check_data(configs, opts)
    refuse_while_running(store, opts.name)
    _refuse_another_sweep(store, opts, [c["trial_id"] for c in configs])
    if opts.search == "optuna":
        from sweeps.engine.tell.study import check_study
        check_study(store, opts.name, opts.resume)


def dry_run_scope(opts: SweepOptions) -> tuple[list[str], list[str]]:
    """(what a dry run checks, what it leaves to the run): what needs Ray, a written results
    folder, or (on a cluster) the machines that hold the data and the trials' devices."""
    data = "the data and your networks"
    here = _data_checked_here(opts)
    checked = ["the settings", *([data] if here else []), "the results folder"]
    skipped = ["whether a trial's resources fit Ray's",
               "writing the results folder and the MLflow store",
               *([] if here else [f"{data} (a cluster's workers hold the data and the trials' "
                                  "devices: each trial checks them)"])]
    return checked, skipped


def _run(spec: SweepSpec, opts: SweepOptions, planned: Planned, out) -> SweepOutcome:
    check_before_ray(planned.configs, opts)
    store = result_store(opts)
    with take_over(store, opts.name, out) as held:   # one run of a sweep at a time (claim.py)
        return _claimed(spec, opts, planned, store, held, out)


def _claimed(spec: SweepSpec, opts: SweepOptions, planned: Planned, store: ResultStore,
             held: Claim, out) -> SweepOutcome:
    configs = planned.configs
    spec_record = _check_store(store, spec, opts, configs)
    if opts.search == "optuna":
        from sweeps.engine.tell.study import check_study
        spec_record["study"] = check_study(store, opts.name, opts.resume)
    warm = _warm_tracking(opts, store)   # the MLflow store's set-up overlaps ray.init
    from sweeps.engine.run.resources import Interruption
    from sweeps.engine.common.store import RESULTS_FILE
    with Interruption() as interruption:     # SIGTERM as Ctrl-C; the old handlers come back
        where = _connect(opts, held, interruption)
        warm.join()
        store.write_spec(spec_record)   # only now: a sweep that never started leaves no claim
        store.delete(RESULTS_FILE)      # stale once trials run: parts/ is the table meanwhile
        print(f"[{opts.name}] {_trial_count(opts, configs, trial_packs(opts, configs))} on "
              f"{where}; results -> {store.root}" + _small_space_note(spec, opts)
              + _study_note(opts, store),
              file=out, flush=True)     # a notebook or a log file shows it before the first trial
        start = time.monotonic()
        try:
            tracking_uri, grid, progress = _fit(spec, opts, store, planned,
                                                trial_packs(opts, configs), interruption)
        finally:
            # Once per run, on the way out too (interrupted, failed): never per trial, which
            # grew with the sweep (docs/benchmarks.md, "Per-trial overhead").
            table = store.consolidate()
    _plan_the_draws(planned, grid)
    outcome = SweepOutcome(store.root, table, tracking_uri, [r.metrics for r in grid],
                           time.monotonic() - start, progress.max_running,
                           *_finish_study(opts, store), result_grid=grid, plan=planned,
                           objective=opts.objective, task=spec.task)
    _keep_best_models(opts, outcome, store)
    print_summary(outcome, spec, opts, out)
    return outcome


def _kept_model(opts: SweepOptions) -> str:
    """The model whose fitted folds trials keep (--keep-models best): the sweep's objective,
    the one SweepResult.best ranks by; "" for none."""
    return opts.objective if opts.keep_models == "best" else ""


def _keep_best_models(opts: SweepOptions, outcome: SweepOutcome, store: ResultStore) -> None:
    """--keep-models best: once per finished run (a resumed one too), every configuration's kept
    models but the best one's at its best setting are deleted, so the disk holds one
    configuration's folds."""
    if opts.keep_models != "best":
        return
    from sweeps.engine.results.keep_best import keep_only
    from sweeps.engine.results.ranking import best_means, best_row, trials_of
    # As SweepResult.best ranks them (sweeps.engine.results.ranking), by the task's metric.
    configs = outcome.plan.configs
    means = best_means(outcome.table, outcome.objective, TASKS[outcome.task].scores, configs)
    best = means.loc[best_row(means, metric_of(outcome.task))] if len(means) else None
    keep_only(store, best, trials_of(best["trial_id"], configs) if best is not None else [])


def _plan_the_draws(planned: Planned, grid) -> None:
    """A sampled sweep's draws, planned in the driver too (the workers planned them to run
    them): the outcome's plan then holds every configuration SweepResult.best may name, those
    drawn before a --resume as well (the ResultGrid holds every trial of the sweep)."""
    if planned.sampling is not None:
        for result in grid:
            planned.configs_of(result.config)


def _check_store(store: ResultStore, spec: SweepSpec, opts: SweepOptions, configs) -> dict:
    """Refuse to overwrite another sweep or resume a different one (again: now under the
    claim); prove it is writable. `objective` and `ranges` (a range axis as its text) are for
    the report (analysis/)."""
    record = {"name": opts.name, "grid": spec.grid, "dataset": spec.dataset, "task": spec.task,
              "search": opts.search, "n_trials_expected": len(configs) if opts.search == "grid"
              else opts.num_samples, "trial_ids": [c["trial_id"] for c in configs],
              "n_folds_expected": sum(len(folds_of(c)) for c in configs),
              "base": shared(spec, opts), "command": opts.command,
              "objective": opts.objective,
              "ranges": {name: str(v) for name, v in spec.axes.items() if is_range(v)}}
    _refuse_another_sweep(store, opts, record["trial_ids"])
    store.create()
    return record


def _refuse_another_sweep(store: ResultStore, opts: SweepOptions, trial_ids: list) -> None:
    """Refuse to overwrite another sweep or resume a different one (reads sweep.json only)."""
    old = store.read_spec()
    if old and not opts.resume:
        raise SbfnError(f"{store.root} already holds the sweep '{opts.name}'. Pass --resume to "
                        "continue it, or --name to start a new one")
    if old and set(old["trial_ids"]) != set(trial_ids):   # the same trials, any order
        raise SbfnError(f"--resume: the sweep at {store.root} was created with other settings "
                        f"(its command: {old.get('command') or '?'}). Resume with the same "
                        "arguments, or pass --name for a new sweep")


def _study_note(opts: SweepOptions, store: ResultStore) -> str:
    if opts.search != "optuna":
        return ""
    from sweeps.engine.tell.study import where_note
    return where_note(store)


def _finish_study(opts: SweepOptions, store: ResultStore) -> tuple[str | None, str | None]:
    """The study's URL and its copy beside remote results (made now), for the summary."""
    if opts.search != "optuna":
        return None, None
    from sweeps.engine.tell.study import publish_copy, study_url
    return study_url(store), publish_copy(store)


def _check_gpu_settings(configs: list[dict], opts: SweepOptions) -> None:
    """A CUDA-graph step or the CUDA device needs a trial with a GPU: refused here, not in every
    trial (Ray hides the GPUs from a trial without a GPU share, on any machine)."""
    if opts.gpus_per_trial:
        return
    if any(c.get("step_engine") == "cuda_graph" for c in configs):
        raise ConfigError("step_engine", "cuda_graph", "a sweep whose trials get GPUs "
                          "(--num-gpus N), or auto (the CUDA graph wherever a trial has a GPU)")
    if any(c.get("device") == "cuda" for c in configs):
        raise ConfigError("device", "cuda", "a sweep whose trials get GPUs (--num-gpus N: "
                          "without a GPU share a trial sees no CUDA GPU), or auto (CUDA wherever "
                          "a trial has a GPU) or cpu")


def _check_data(configs: list[dict], opts: SweepOptions) -> None:
    """Load each data set once here (local runs) and make every trial's parts: a missing file,
    or data too small for the folds, stops the sweep before Ray starts, not every trial in it.
    Your networks are checked on the device each trial will have (on_trial_device)."""
    if not _data_checked_here(opts):
        return
    from sbfn_dist.folds import check_data
    # planned: trusted, not checked again
    check_data([TrialConfig(on_trial_device(c, opts)) for c in configs])


def on_trial_device(config: dict, opts: SweepOptions) -> dict:
    """The config with the device its trial resolves "auto" to, where this machine would
    resolve it otherwise: a trial without a GPU share runs on the CPU (Ray hides the GPUs from
    it), so its networks are checked there, not on a GPU the driver happens to see."""
    if not opts.gpus_per_trial and config.get("device") == "auto":
        return {**config, "device": "cpu"}
    return config


def _data_checked_here(opts: SweepOptions) -> bool:
    """On a cluster (--address) the workers, not this machine, hold the data and the devices."""
    return not opts.address


def _connect(opts: SweepOptions, held: Claim, interruption) -> str:
    from sweeps.engine.run.resources import check_trial_fits, connect
    where, session = connect(opts.address, opts.num_cpus, opts.num_gpus, opts.verbose,
                             under_mps(opts))
    interruption.arm()              # after ray.init: Ray's own SIGTERM handler dumps core
    if session:
        # what a kill leaves of it, the next run stops (sweeps/engine/run/claim.py)
        held.record_ray(session)
    wait = opts.node_wait_s if opts.node_wait_s is not None else (600 if opts.address else 0)
    check_trial_fits(opts.cpus_per_trial, opts.gpus_per_trial, wait_s=wait)
    return where


def trial_slots(opts: SweepOptions) -> int:
    """How many trials run at once: --max-concurrent, else the CPUs (of the connected Ray, or of
    this machine before it starts) over the CPUs per trial."""
    if opts.max_concurrent:
        return opts.max_concurrent
    # A Ray never imported is not initialised; importing it here (a dry run) would fix where a
    # later local Ray binds before the sweep sets its environment (sweeps/engine/common/environment.py).
    ray = sys.modules.get("ray")
    cpus = (ray.cluster_resources().get("CPU", 1) if ray and ray.is_initialized()
            else opts.num_cpus or os.cpu_count() or 1)
    return max(1, int(cpus // opts.cpus_per_trial))


def trial_packs(opts: SweepOptions, configs: list[dict]) -> list[list[int]]:
    """The configurations of each Ray trial (sweeps.engine.plan.packing); Optuna samples one at a
    time."""
    return packs(configs, opts.pack if opts.search == "grid" else "off", trial_slots(opts))


def _fit(spec: SweepSpec, opts: SweepOptions, store: ResultStore, planned: Planned,
         trial_packs_: list[list[int]], interruption):
    from ray import tune

    from sweeps.engine.common.environment import defaults_while
    from sweeps.engine.run.trainable import sweep_trainable
    # The plan goes to the object store once (with_parameters); each trial's config names its
    # configurations (sweeps.engine.plan.planning).
    trainable = tune.with_resources(
        tune.with_parameters(sweep_trainable, plan=planned, results_uri=store.location,
                             objective=opts.objective, gpu_fraction=opts.gpus_per_trial,
                             threads=max(1, int(opts.cpus_per_trial)),
                             keep_model=_kept_model(opts)),
        {"cpu": opts.cpus_per_trial, "gpu": opts.gpus_per_trial})
    callbacks, progress, tracking_uri = _callbacks(spec, opts, store, planned.configs,
                                                   planned.configs_of)
    tuner = _tuner(spec, opts, store, planned, trainable, callbacks, trial_packs_)
    # Our handler takes SIGINT (and SIGTERM) and asks Tune to stop
    # (sweeps.engine.run.resources.Interruption)
    tune_settings = {"TUNE_DISABLE_SIGINT_HANDLER": "1", **_pending_trials(opts)}
    with defaults_while(tune_settings):
        results = _fit_or_interrupted(tuner.fit, interruption)
    if opts.max_failures and _lost_to_a_dead_node(results):
        # Ray Tune can count one node's death twice (the trial's pending result and its actor
        # fail separately; the second failure finds the trial already recovering and ends it
        # with retries left: seen with Cluster.remove_node). Finished folds are in the parts,
        # so one resume of the errored trials finishes them without recomputing anything.
        print(f"[{opts.name}] a node died under a trial: resuming the errored trials once",
              flush=True)
        tuner = tune.Tuner.restore(_tune_dir(store), trainable=trainable, resume_errored=True)
        with defaults_while(tune_settings):
            results = _fit_or_interrupted(tuner.fit, interruption)
    return tracking_uri, results, progress


def _fit_or_interrupted(fit, interruption):
    """Tune's results, or KeyboardInterrupt if a signal stopped it: Tune then returns as if it
    had finished (or fails, if the signal stopped Ray's processes too)."""
    try:
        results = fit()
    except Exception:
        if interruption.received:
            raise KeyboardInterrupt from None
        raise
    interruption.check()
    return results


def _pending_trials(opts: SweepOptions) -> dict:
    """Tune keeps one trial of a searcher waiting at a time unless a concurrency limit is set;
    while that one's worker starts, a finished trial's worker takes it (cancelling the start)
    and one trial runs at a time. A slot's worth waiting (Optuna) leaves a trial for the free
    worker (sweeps.engine.run.resources.filling_slots); the grid's planned trials wait as Tune's
    own grid search keeps them (at least 200, 1.1 per CPU: an autoscaler sees the demand)."""
    if opts.max_concurrent:
        return {}
    if opts.search == "grid":
        import ray
        return {"TUNE_MAX_PENDING_TRIALS_PG": str(max(200, int(1.1 * ray.cluster_resources()
                                                                .get("CPU", 1))))}
    return {"TUNE_MAX_PENDING_TRIALS_PG": str(trial_slots(opts))}


def _lost_to_a_dead_node(results) -> bool:
    from ray.exceptions import RayActorError
    return any(isinstance(getattr(e, "cause", None) or e, RayActorError)
               or "node has died" in str(e) for e in results.errors)


def _tune_dir(store: ResultStore) -> str:
    return f"{store.location.rstrip('/')}/tune"


def _tracking_store(opts: SweepOptions, store: ResultStore) -> tuple[str, str | None]:
    """(tracking URI, artifact location): --mlflow-uri, or sqlite + files in the results dir."""
    if opts.mlflow_uri:
        return opts.mlflow_uri, None
    return f"sqlite:///{store.root}/mlflow.db", Path(store.root, "mlartifacts").as_uri()


def _warm_tracking(opts: SweepOptions, store: ResultStore) -> threading.Thread:
    """Create the MLflow store and experiment in the background: a new sqlite store runs its
    schema migrations (~5 s), which then overlap ray.init."""
    def warm():
        if not opts.mlflow:
            return
        from sweeps.engine.tell.tracking import open_experiment
        uri, artifacts = _tracking_store(opts, store)
        try:
            open_experiment(uri, opts.name, artifacts)
        except SbfnError:
            pass  # reported when the logger opens the store for real

    thread = threading.Thread(target=warm, daemon=True)
    thread.start()
    return thread


def _callbacks(spec, opts, store, configs, resolve):
    from sweeps.engine.run.progress import ProgressLine, StoreKeeper
    from sweeps.engine.results.ranking import configuration_ids
    from sweeps.engine.tell.tracking import MLflowSweepLogger
    total = sum(len(folds_of(c)) for c in configs) if opts.search == "grid" else \
        opts.num_samples * len(folds_of(configs[0]))
    progress = ProgressLine(opts.name, total, spec.mode, configurations=len(configs) if
                            opts.search == "grid" else opts.num_samples,
                            objective=opts.objective, metric=metric_of(spec.task),
                            groups=configuration_ids(configs))
    callbacks = [StoreKeeper(store, resolve), progress]
    tracking_uri = None
    if opts.mlflow:
        tracking_uri, artifacts = _tracking_store(opts, store)
        sweep = {"name": opts.name, "grid": spec.grid, "dataset": spec.dataset, "task": spec.task}
        callbacks.append(MLflowSweepLogger(tracking_uri, sweep, resolve, store, artifacts,
                                           configuration_ids(configs)))
    return callbacks, progress, tracking_uri


def _tuner(spec, opts, store, planned, trainable, callbacks, trial_packs_):
    from ray import tune
    tune_dir = _tune_dir(store)
    if opts.resume and tune.Tuner.can_restore(tune_dir):
        # Tune keeps its own trial states and searcher; finished folds are in the parts anyway.
        restored = _restored_tuner(tune_dir, trainable, opts)
        if restored is not None:
            return restored
    run_config = tune.RunConfig(
        name="tune", storage_path=store.location,
        failure_config=tune.FailureConfig(max_failures=opts.max_failures),
        # Keep every (tiny) checkpoint: after a killed driver, Tune's last saved experiment
        # state may point at a checkpoint that num_to_keep would already have deleted.
        checkpoint_config=tune.CheckpointConfig(num_to_keep=None),
        # verbose=0 never calls a reporter, but in a notebook Tune would make its Jupyter one,
        # which clears the cell's output as it starts (the plan and first lines vanished).
        # --verbose: Tune's own status tables too.
        progress_reporter=tune.CLIReporter(), callbacks=callbacks, verbose=int(opts.verbose))
    tune_config, space = _search(spec, opts, store, planned, trial_packs_)
    from sweeps.engine.run.resources import filling_slots
    tune_config.scheduler = filling_slots(tune_config.scheduler)   # every slot gets a trial
    return tune.Tuner(trainable, param_space=space, tune_config=tune_config, run_config=run_config)


def _restored_tuner(tune_dir: str, trainable, opts: SweepOptions):
    """Tune's saved state of the sweep, or None where an older version of sweeps saved it: its
    pickles name modules and classes that have moved or gone (sweeps.runner before the engine
    moved, the grid's copy-free list before plans were shared; issue 22). A grid's trials then
    start again under a new state, each finished fold read back from parts/ by its trial id."""
    from ray import tune
    try:
        return tune.Tuner.restore(tune_dir, trainable=trainable, resume_unfinished=True,
                                  resume_errored=True)
    except (ImportError, AttributeError) as exc:
        if opts.search != "grid":     # a new searcher would draw the sweep's budget again
            raise SbfnError(f"--resume: Tune's saved state of this sweep was written by an older "
                            f"version of sweeps ({exc}), and its {opts.search} search cannot go "
                            "on; pass --name for a new sweep") from None
        print(f"[{opts.name}] Tune's saved state of this sweep is from an older version of "
              f"sweeps ({exc}): its trials start again, every finished fold read back",
              flush=True)
        return None


def _search(spec: SweepSpec, opts: SweepOptions, store: ResultStore, planned: Planned,
            trial_packs_: list):
    from ray import tune
    # A random search's generator takes --max-concurrent itself (search.random_search).
    common = dict(metric="objective", mode=spec.mode, reuse_actors=True,
                  max_concurrent_trials=None if opts.search == "random" else opts.max_concurrent,
                  trial_name_creator=_trial_name, trial_dirname_creator=_trial_name)
    if opts.search == "grid":
        from sweeps.engine.run.search import PlannedSearch
        points = [planned.tune_config(pack) for pack in trial_packs_]
        return tune.TuneConfig(**common, search_alg=PlannedSearch(points),
                               num_samples=len(points)), {}
    from ray.tune.schedulers import ASHAScheduler

    from sweeps.engine.run.search import sampled_space
    space = sampled_space(spec.axes, {k: v[0] for k, v in spec.repeat_axis.items()})
    folds = len(folds_of(planned.configs[0]))
    # ASHA's rungs are folds here: a configuration whose running CV mean is in the bottom
    # part after `grace_period` folds stops early (docs/sweeps.md).
    scheduler = ASHAScheduler(time_attr="training_iteration", max_t=folds,
                              grace_period=min(2, folds), reduction_factor=3) if folds > 2 else None
    return tune.TuneConfig(**common, search_alg=_searcher(spec, opts, store, folds),
                           scheduler=scheduler, num_samples=opts.num_samples), space


def _searcher(spec: SweepSpec, opts: SweepOptions, store: ResultStore, folds: int):
    """OptunaSearch with a seeded TPE on the sweep's study file (sweeps/engine/tell/study.py), or
    Tune's seeded random generator (--search random)."""
    if opts.search == "random":
        from sweeps.engine.run.search import random_search
        return random_search(opts.search_seed, opts.max_concurrent)
    from sweeps.engine.tell.study import open_study, searcher
    labels = {"sweep": opts.name, "dataset": spec.dataset, "grid": spec.grid,
              "objective": f"CV mean {metric_of(spec.task)} of "
                           f"{opts.objective or 'the best model'}"}
    storage = open_study(store, opts.name, spec.mode, opts.resume, labels)
    return searcher(storage, opts.name, opts.search_seed, folds)


def _trial_name(trial) -> str:
    """The trial id, the size of its pack and the first configuration's axes."""
    pack = points_of(trial.config)
    label = "_".join(f"{k}={v}" for k, v in settings_of(pack[0]).items()
                     if not isinstance(v, (list, dict)))
    size = f"{len(pack)}cfg_" if len(pack) > 1 else ""
    return f"{trial.trial_id}_{size}{label}"[:100]


# What draws a sampled search's configurations, as its lines name it.
SAMPLERS = {"optuna": "Optuna", "random": "random"}


def _trial_count(opts: SweepOptions, configs: list[dict], trial_packs_: list) -> str:
    if opts.search != "grid":
        # Only the grid axes are searched: the competitors and the M = 1 reference are grid trials.
        return (f"{opts.num_samples} {SAMPLERS[opts.search]} trials (no competitors or M = 1 "
                "reference)")
    if len(trial_packs_) < len(configs):
        return f"{len(configs)} configurations in {len(trial_packs_)} trials (--pack {opts.pack})"
    return f"{len(configs)} configurations"


def _small_space_note(spec: SweepSpec, opts: SweepOptions) -> str:
    """TPE and random draws repeat points of a small space (computed once, but the budget is
    spent). Seen for real: 8 samples over 12 points hit 5. A space with a uniform or loguniform
    range has no end of points (size inf): never small."""
    points = math.prod(axis_size(v) for v in spec.axes.values())
    if opts.search == "grid" or 2 * opts.num_samples < points:
        return ""
    listed = " (its ranges given as lists)" if has_ranges(spec.axes) else ""
    return (f"\n  note: {opts.num_samples} {SAMPLERS[opts.search]} samples over a {points}-point "
            f"space will repeat points; --search grid evaluates all {points}{listed}")


def _drawn_axes(spec: SweepSpec) -> str:
    """A sampled search's axes as the plan prints them: epsilon from uniform(0, 1), M in [5, 2]."""
    return ", ".join(f"{k} from {v}" if is_range(v) else f"{k} in {list(v)}"
                     for k, v in spec.axes.items())


def print_plan(spec: SweepSpec, opts: SweepOptions, configs: list[dict], out) -> None:
    folds = sum(len(folds_of(c)) for c in configs)
    per_trial = f"{opts.cpus_per_trial:g} CPU" + (f" + {opts.gpus_per_trial:g} GPU"
                                                  if opts.gpus_per_trial else "") \
        + (" (GPUs shared under CUDA MPS)" if under_mps(opts) else "")
    print(f"sweep '{opts.name}': grid {spec.grid} on {spec.dataset}, search {opts.search}",
          file=out)
    trial_packs_ = trial_packs(opts, configs)
    if opts.search != "grid":
        how = "TPE" if opts.search == "optuna" else "Tune's random generator"
        print(f"  {_trial_count(opts, configs, trial_packs_)}: {how} (seed {opts.search_seed}) "
              f"draws {_drawn_axes(spec)}" + _small_space_note(spec, opts), file=out)
        if has_ranges(spec.axes):
            print(f"  planned now: {len(configs)} configurations, each range at its bounds "
                  "(every draw between them is then valid); each draw is planned as it "
                  "arrives, its trial id from its exact values", file=out)
    else:
        print(f"  {_trial_count(opts, configs, trial_packs_)}, {folds} folds/splits in all",
              file=out)
        for n, pack in enumerate(trial_packs_):
            for i in pack:
                c = configs[i]
                role = c["extra"].get("role")
                what = "" if role == "competitors" else \
                    f"M={c['n_members']} eps={axis_text(c['epsilon'])} " \
                    + (f"lr={c['lr']:g} " if role == "reference" else "")
                print(f"    trial {n:>3}  {c['trial_id']:<42} folds {len(folds_of(c)):>2}  "
                      f"{what}role={role}", file=out)
    concurrent = opts.max_concurrent or "as many as fit"
    print(f"  resources per trial: {per_trial}; concurrent trials: {concurrent}", file=out)
    print(f"  results -> {opts.storage.rstrip('/')}/{opts.name}", file=out)


def _labelled(rows: pd.DataFrame, axes: list) -> pd.DataFrame:
    """Competitors have no M or ε; the M = 1 reference is its own model, one setting per
    learning rate (two references must never be averaged together)."""
    # Competitor rows have no M: results.parquet holds the column as floats (label 2, not 2.0).
    rows = rows.assign(**{a: rows[a].map(lambda v: axis_text(v) if isinstance(v, float) else v)
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


def _ranked_configurations(rows: pd.DataFrame, outcome: SweepOutcome, out) -> pd.DataFrame:
    """The rows the end table ranks: those of the configurations with every planned fold, when
    any has them (sweeps.engine.results.ranking: an ASHA-stopped configuration's mean over its first
    folds once topped the table); the others are named as left out."""
    if outcome.plan is None:
        return rows
    from sweeps.engine.results.ranking import by_configuration, planned_folds, with_every_fold
    configs = outcome.plan.configs
    whole = with_every_fold(by_configuration(rows, configs), planned_folds(configs))
    left_out = rows["trial_id"].nunique() - whole["trial_id"].nunique()
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


def print_summary(outcome: SweepOutcome, spec: SweepSpec, opts: SweepOptions, out) -> None:
    table = outcome.table
    metric = metric_of(spec.task)
    # Diverged rows go in too: the table counts them (not_ok) instead of hiding the model.
    rows = table[table["status"] != "failed"] if len(table) else table
    failed = failed_trials(table)
    print(f"\n[{opts.name}] finished in {outcome.seconds / 60:.1f} min: "
          f"{table['trial_id'].nunique() if len(table) else 0} configurations with results, "
          f"{len(failed)} failed", file=out)
    for trial_id, error in failed.items():
        print(f"  failed: {trial_id}: {error}", file=out)
    if len(rows):
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
    # Remote storage: the store's root is a path on its filesystem; the user needs the URI.
    where = result_store(opts).location if "://" in opts.storage else outcome.root
    print(f"\nresults:  {where}/results.parquet", file=out)
    if outcome.tracking_uri:
        print(f"MLflow:   {outcome.tracking_uri} (experiment '{opts.name}')", file=out)
        from sweeps.engine.tell.tracking import ui_hint
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

