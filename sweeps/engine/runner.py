"""The one place that drives Ray Tune: a SweepSpec + options -> trials run -> results.

    results/<name>/  sweep.json, parts/, results.parquet, tune/ (Ray Tune's experiment),
                     mlflow.db + mlartifacts/ (default tracking store),
                     optuna.db (--search optuna: the study, sweeps/engine/study.py)
"""

import functools
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sbfn_dist.settings.config import absolute_paths
from sbfn_dist.errors import ConfigError, SbfnError
from sbfn_dist.settings.fields import field as config_field
from sbfn_dist.settings.records import REFERENCE_MODEL, metric_of
from sbfn_dist.interfaces.summary import comparison_table
from sweeps.engine.claim import Claim, take_over
from sweeps.engine.environment import ray_environment
from sweeps.engine.model_names import check_model_names
from sweeps.engine.next_steps import console_script, installed, python_module
from sweeps.engine.options import DEFAULTS as DEFAULT, gpu_share
from sweeps.engine.packing import PACK_MODES, packs
from sweeps.engine.spaces import SweepSpec, axis_text
from sweeps.engine.store import ResultStore
from sweeps.engine.tracking_uri import check_tracking_uri, hide, mask
from sweeps.engine.trainable import folds_of, resolve_trial, sweep_trainable, trial_config


@dataclass
class SweepOptions:
    name: str
    # Defaults: the table of run options (sweeps/engine/options.py), where each is declared once.
    storage: str = DEFAULT["storage"]       # parent directory or URI; results go to <storage>/<name>
    address: str | None = DEFAULT["address"]
    num_cpus: int | None = DEFAULT["num_cpus"]      # local Ray only (None: all cores)
    num_gpus: float = DEFAULT["num_gpus"]
    cpus_per_trial: float = DEFAULT["cpus_per_trial"]
    gpus_per_trial: float | None = DEFAULT["gpus_per_trial"]   # None: options.gpu_share
    max_concurrent: int | None = DEFAULT["max_concurrent"]
    mlflow_uri: str | None = DEFAULT["mlflow_uri"]
    mlflow: bool = DEFAULT["mlflow"]
    resume: bool = DEFAULT["resume"]
    search: str = DEFAULT["search"]
    num_samples: int = DEFAULT["num_samples"]
    search_seed: int = DEFAULT["search_seed"]
    objective: str = DEFAULT["objective"]   # model whose score search and "best" use
    max_failures: int = DEFAULT["max_failures"]
    pack: str = DEFAULT["pack"]             # sweeps.engine.packing: configurations training together
    node_wait_s: float | None = DEFAULT["node_wait_s"]  # for a node that fits a trial; None: 0
                                        # locally, 600 s on a cluster (its autoscaler may start
                                        # from no worker)
    dry_run: bool = DEFAULT["dry_run"]
    verbose: bool = DEFAULT["verbose"]      # Ray's, MLflow's and Optuna's INFO lines too
    command: str = ""
    overrides: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # As ray.init reads it (a job that `ray job submit` started has it): without it, a
        # local Ray given --num-cpus would be refused by Ray with a traceback.
        self.address = self.address or os.environ.get("RAY_ADDRESS") or None
        self.gpus_per_trial = gpu_share(self.gpus_per_trial, self.num_gpus)
        # A password in --mlflow-uri stays in this process (sweeps/engine/tracking_uri.py): what the
        # sweep prints and stores -- sweep.json, Tune's state, MLflow's params -- never has it.
        self.mlflow_uri = hide(self.mlflow_uri)
        self.command = mask(self.command)

    def validate(self) -> None:
        """Every run option (the model names a sweep was given: `plan`)."""
        if not 0 <= self.gpus_per_trial <= 1 or (self.num_gpus and self.gpus_per_trial == 0):
            raise ConfigError("--gpus-per-trial", self.gpus_per_trial,
                              "a fraction in (0, 1] when --num-gpus > 0 (0.25 packs 4 trials "
                              "on a GPU), or 0 for CPU-only sweeps")
        if self.gpus_per_trial and not (self.num_gpus or self.address):
            raise ConfigError("--num-gpus", self.num_gpus, "> 0 when --gpus-per-trial is set")
        if self.cpus_per_trial <= 0:
            raise ConfigError("--cpus-per-trial", self.cpus_per_trial, "a positive number")
        if self.search not in ("grid", "optuna"):
            raise ConfigError("--search", self.search, "grid or optuna")
        if self.pack not in PACK_MODES:
            raise ConfigError("--pack", self.pack, f"one of {PACK_MODES}")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ConfigError("--max-concurrent", self.max_concurrent, "an integer >= 1")
        if "://" in self.storage and self.mlflow and not self.mlflow_uri:
            raise ConfigError("--mlflow-uri", None, "a tracking server URI when --storage is "
                              "remote (e.g. http://127.0.0.1:5000 on the head node), or --no-mlflow")
        if self.mlflow and self.mlflow_uri:
            check_tracking_uri(self.mlflow_uri)


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


def shared(spec: SweepSpec, opts: SweepOptions) -> dict:
    """The settings every trial starts from: the grid's base and the user's --set, with paths
    made absolute here, in the driver (a trial runs in Ray Tune's working directory)."""
    return absolute_paths({**spec.base, **opts.overrides})


def planned_trials(spec: SweepSpec, opts: SweepOptions) -> tuple[list[dict], list[dict]]:
    """(overrides, full configs) of every trial, in the grid's order."""
    base = shared(spec, opts)
    trials = spec.trials(base)
    configs = [trial_config(t, base, opts.name) for t in trials]
    if spec.per_fold:      # one trial per fold, known only once --set (e.g. split) applied
        trials = [{**t, "fold": k} for t, c in zip(trials, configs) for k in folds_of(c)]
        configs = [trial_config(t, base, opts.name) for t in trials]
    return trials, configs


def plan(spec: SweepSpec, opts: SweepOptions) -> list[dict]:
    """Every trial's full config, validated now so a bad value stops the sweep before Ray
    starts and before its results directory is made (a --resume of no sweep too)."""
    if opts.resume and result_store(opts).read_spec() is None:
        raise SbfnError(f"--resume: there is no sweep at {result_store(opts).root} (check --name "
                        "and --storage)")
    _note_a_large_grid(spec, opts)
    check_model_names(spec, shared(spec, opts), opts.name, opts.objective)
    trials, configs = planned_trials(spec, opts)
    _refuse_unused(opts.overrides, trials, configs, spec.kind)
    keys = [c["trial_id"] for c in configs]
    if len(set(keys)) != len(keys):
        raise SbfnError("the grid repeats a trial; check the axis values for duplicates")
    return configs


# A grid this large is worth a word before it is planned: each configuration is validated here
# (about 0.5 ms each on this machine, more than once per run), and Ray Tune's grid generator
# copies the whole grid once per Ray trial -- 20 s at 2,000 trials, quadratic beyond (measured
# with ray 2.60's generate_variants; issue 21).
LARGE_GRID = 2_000
_noted: set = set()       # (sweep, size): planned again at the run, said once


def _note_a_large_grid(spec: SweepSpec, opts: SweepOptions) -> None:
    size = len(spec.trials())
    if size < LARGE_GRID or (opts.name, size) in _noted:
        return
    _noted.add((opts.name, size))
    print(f"[{opts.name}] planning {size:,} configurations{' per fold' if spec.per_fold else ''}"
          f" (Ctrl-C stops it): a grid this large takes minutes to plan and start; --dry-run "
          "lists its trials without starting, and --search optuna --num-samples N tries N "
          "points of the same axes", file=sys.stderr, flush=True)


def _refuse_unused(overrides: dict, trials: list[dict], configs: list[dict], kind: str) -> None:
    """A --set (or --data-dir) that no trial uses would change nothing, yet look as if it had:
    refuse it. A trial uses it where it applies and the trial sets no value of its own."""
    for key, value in overrides.items():
        applies = [key not in t for t, c in zip(trials, configs) if key in c]
        if any(applies):
            continue
        if applies:
            raise ConfigError(key, value, "a setting some trial of this sweep takes from the "
                              "shared settings, but every trial it applies to sets its own (a "
                              "grid axis, the seeds, the reference); change the grid instead "
                              "(e.g. --members, --epsilons, --seeds, --splits)")
        raise ConfigError(key, value, f"a setting that applies to some trial of this sweep; it "
                          f"applies only to {config_field(key).where} (this sweep: {kind}); "
                          "leave it out")


def run_sweep(spec: SweepSpec, opts: SweepOptions, out=None) -> SweepOutcome | None:
    out = out or sys.stdout
    opts.validate()
    configs = plan(spec, opts)
    if opts.dry_run:
        print_plan(spec, opts, configs, out)
        return None
    with ray_environment(opts.verbose):   # Ray's settings, quiet logs (sweeps/engine/environment.py)
        return _run(spec, opts, configs, out)


def result_store(opts: SweepOptions) -> ResultStore:
    """The sweep's results directory, <storage>/<name>."""
    return ResultStore(f"{opts.storage.rstrip('/')}/{opts.name}")


def _run(spec: SweepSpec, opts: SweepOptions, configs: list[dict], out) -> SweepOutcome:
    _check_gpu_settings(configs, opts)
    _check_data(configs, opts)
    store = result_store(opts)
    with take_over(store, opts.name, out) as held:   # one run of a sweep at a time (claim.py)
        return _claimed(spec, opts, configs, store, held, out)


def _claimed(spec: SweepSpec, opts: SweepOptions, configs: list[dict], store: ResultStore,
             held: Claim, out) -> SweepOutcome:
    spec_record = _check_store(store, spec, opts, configs)
    if opts.search == "optuna":
        from sweeps.engine.study import check_study
        spec_record["study"] = check_study(store, opts.name, opts.resume)
    warm = _warm_tracking(opts, store)   # the MLflow store's set-up overlaps ray.init
    from sweeps.engine.resources import Interruption
    from sweeps.engine.store import RESULTS_FILE
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
            tracking_uri, grid, progress = _fit(spec, opts, store, configs,
                                                trial_packs(opts, configs), interruption)
        finally:
            # Once per run, on the way out too (interrupted, failed): never per trial, which
            # grew with the sweep (docs/benchmarks.md, "Per-trial overhead").
            table = store.consolidate()
    outcome = SweepOutcome(store.root, table, tracking_uri, [r.metrics for r in grid],
                           time.monotonic() - start, progress.max_running,
                           *_finish_study(opts, store), result_grid=grid)
    print_summary(outcome, spec, opts, out)
    return outcome


def _check_store(store: ResultStore, spec: SweepSpec, opts: SweepOptions, configs) -> dict:
    """Refuse to overwrite another sweep or resume a different one; prove it is writable."""
    record = {"name": opts.name, "grid": spec.grid, "dataset": spec.dataset, "task": spec.task,
              "search": opts.search, "n_trials_expected": len(configs) if opts.search == "grid"
              else opts.num_samples, "trial_ids": [c["trial_id"] for c in configs],
              "n_folds_expected": sum(len(folds_of(c)) for c in configs),
              "base": shared(spec, opts), "command": opts.command}
    old = store.read_spec()
    if old and not opts.resume:
        raise SbfnError(f"{store.root} already holds the sweep '{opts.name}'. Pass --resume to "
                        "continue it, or --name to start a new one")
    if old and set(old["trial_ids"]) != set(record["trial_ids"]):   # the same trials, any order
        raise SbfnError(f"--resume: the sweep at {store.root} was created with other settings "
                        f"(its command: {old.get('command') or '?'}). Resume with the same "
                        "arguments, or pass --name for a new sweep")
    store.create()
    return record


def _study_note(opts: SweepOptions, store: ResultStore) -> str:
    if opts.search != "optuna":
        return ""
    from sweeps.engine.study import where_note
    return where_note(store)


def _finish_study(opts: SweepOptions, store: ResultStore) -> tuple[str | None, str | None]:
    """The study's URL and its copy beside remote results (made now), for the summary."""
    if opts.search != "optuna":
        return None, None
    from sweeps.engine.study import publish_copy, study_url
    return study_url(store), publish_copy(store)


def _check_gpu_settings(configs: list[dict], opts: SweepOptions) -> None:
    """A CUDA-graph step needs a trial with a GPU: refused here, not in every trial."""
    if opts.gpus_per_trial == 0 and any(c.get("step_engine") == "cuda_graph" for c in configs):
        raise ConfigError("step_engine", "cuda_graph", "a sweep whose trials get GPUs "
                          "(--num-gpus N), or auto (the CUDA graph wherever a trial has a GPU)")


def _check_data(configs: list[dict], opts: SweepOptions) -> None:
    """Load each data set once here (local runs) and make every trial's parts: a missing file,
    or data too small for the folds, stops the sweep before Ray starts, not every trial in it."""
    if opts.address:
        return  # the workers, not this machine, hold the data on a cluster
    from sbfn_dist.experiment import check_data
    check_data(configs)


def _connect(opts: SweepOptions, held: Claim, interruption) -> str:
    from sweeps.engine.resources import check_trial_fits, connect
    where, session = connect(opts.address, opts.num_cpus, opts.num_gpus, opts.verbose)
    interruption.arm()              # after ray.init: Ray's own SIGTERM handler dumps core
    if session:
        held.record_ray(session)    # what a kill leaves of it, the next run stops (sweeps/engine/claim.py)
    wait = opts.node_wait_s if opts.node_wait_s is not None else (600 if opts.address else 0)
    check_trial_fits(opts.cpus_per_trial, opts.gpus_per_trial, wait_s=wait)
    return where


def trial_slots(opts: SweepOptions) -> int:
    """How many trials run at once: --max-concurrent, else the CPUs (of the connected Ray, or of
    this machine before it starts) over the CPUs per trial."""
    if opts.max_concurrent:
        return opts.max_concurrent
    # A Ray never imported is not initialised; importing it here (a dry run) would fix where a
    # later local Ray binds before the sweep sets its environment (sweeps/engine/environment.py).
    ray = sys.modules.get("ray")
    cpus = (ray.cluster_resources().get("CPU", 1) if ray and ray.is_initialized()
            else opts.num_cpus or os.cpu_count() or 1)
    return max(1, int(cpus // opts.cpus_per_trial))


def trial_packs(opts: SweepOptions, configs: list[dict]) -> list[list[int]]:
    """The configurations of each Ray trial (sweeps.engine.packing); Optuna samples one at a time."""
    return packs(configs, opts.pack if opts.search == "grid" else "off", trial_slots(opts))


def _fit(spec: SweepSpec, opts: SweepOptions, store: ResultStore, configs: list[dict],
         trial_packs_: list[list[int]], interruption):
    from ray import tune

    from sweeps.engine.environment import defaults_while
    base = shared(spec, opts)
    resolve = functools.partial(resolve_trial, base=base, sweep=opts.name)
    trainable = tune.with_resources(
        tune.with_parameters(sweep_trainable, base=base, sweep=opts.name, results_uri=store.location,
                             objective=opts.objective, gpu_fraction=opts.gpus_per_trial,
                             threads=max(1, int(opts.cpus_per_trial))),
        {"cpu": opts.cpus_per_trial, "gpu": opts.gpus_per_trial})
    callbacks, progress, tracking_uri = _callbacks(spec, opts, store, configs, resolve)
    tuner = _tuner(spec, opts, store, configs, trainable, callbacks, trial_packs_)
    # Our handler takes SIGINT (and SIGTERM) and asks Tune to stop (sweeps.engine.resources.Interruption)
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
    """Tune keeps one trial of a searcher (Optuna) waiting at a time unless a concurrency limit
    is set; while that one's worker starts, a finished trial's worker takes it (cancelling the
    start) and one trial runs at a time. A slot's worth waiting leaves a trial for the free
    worker (sweeps.engine.resources.filling_slots). Grid search keeps up to 200 waiting already."""
    if opts.search == "grid" or opts.max_concurrent:
        return {}
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
        from sweeps.engine.tracking import open_experiment
        uri, artifacts = _tracking_store(opts, store)
        try:
            open_experiment(uri, opts.name, artifacts)
        except SbfnError:
            pass  # reported when the logger opens the store for real

    thread = threading.Thread(target=warm, daemon=True)
    thread.start()
    return thread


def _callbacks(spec, opts, store, configs, resolve):
    from sweeps.engine.progress import ProgressLine, StoreKeeper
    from sweeps.engine.tracking import MLflowSweepLogger
    total = sum(len(folds_of(c)) for c in configs) if opts.search == "grid" else \
        opts.num_samples * len(folds_of(configs[0]))
    progress = ProgressLine(opts.name, total, spec.mode, configurations=len(configs) if
                            opts.search == "grid" else opts.num_samples,
                            objective=opts.objective or spec.objective, metric=metric_of(spec.task))
    callbacks = [StoreKeeper(store, resolve), progress]
    tracking_uri = None
    if opts.mlflow:
        tracking_uri, artifacts = _tracking_store(opts, store)
        sweep = {"name": opts.name, "grid": spec.grid, "dataset": spec.dataset, "task": spec.task}
        callbacks.append(MLflowSweepLogger(tracking_uri, sweep, resolve, store, artifacts))
    return callbacks, progress, tracking_uri


def _tuner(spec, opts, store, configs, trainable, callbacks, trial_packs_):
    from ray import tune
    tune_dir = _tune_dir(store)
    if opts.resume and tune.Tuner.can_restore(tune_dir):
        # Tune keeps its own trial states and searcher; finished folds are in the parts anyway.
        return tune.Tuner.restore(tune_dir, trainable=trainable, resume_unfinished=True,
                                  resume_errored=True)
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
    tune_config, space = _search(spec, opts, store, configs, trial_packs_)
    from sweeps.engine.resources import filling_slots
    tune_config.scheduler = filling_slots(tune_config.scheduler)   # every slot gets a trial
    return tune.Tuner(trainable, param_space=space, tune_config=tune_config, run_config=run_config)


def _search(spec: SweepSpec, opts: SweepOptions, store: ResultStore, configs: list[dict],
            trial_packs_: list):
    from ray import tune
    common = dict(metric="objective", mode=spec.mode, reuse_actors=True,
                  max_concurrent_trials=opts.max_concurrent, trial_name_creator=_trial_name,
                  trial_dirname_creator=_trial_name)
    if opts.search == "grid":
        overrides, _ = planned_trials(spec, opts)
        space = _Shared({"pack": [overrides[i] for i in pack]} for pack in trial_packs_)
        return tune.TuneConfig(**common), {"trial": tune.grid_search(space)}
    from ray.tune.schedulers import ASHAScheduler
    space = {name: tune.choice(list(values)) for name, values in spec.axes.items()}
    space.update({k: v[0] for k, v in spec.repeat_axis.items()})
    folds = len(folds_of(configs[0]))
    # ASHA's rungs are folds here: a configuration whose running CV mean is in the bottom
    # part after `grace_period` folds stops early (docs/sweeps.md).
    scheduler = ASHAScheduler(time_attr="training_iteration", max_t=folds,
                              grace_period=min(2, folds), reduction_factor=3) if folds > 2 else None
    return tune.TuneConfig(**common, search_alg=_searcher(spec, opts, store, folds),
                           scheduler=scheduler, num_samples=opts.num_samples), space


class _Shared(list):
    """The grid's list of packs, never copied: Tune's variant generator deep-copies the grid
    spec once per trial it emits, n^2 work (about 5 us x n^2: 20 s at 2,000 trials, hours at
    30,000, and Tune's Ctrl-C handler is not reached in between). The list is only read."""

    def __deepcopy__(self, memo):
        return self


def _searcher(spec: SweepSpec, opts: SweepOptions, store: ResultStore, folds: int):
    """OptunaSearch with a seeded TPE on the sweep's study file (sweeps/engine/study.py)."""
    from sweeps.engine.study import open_study, searcher
    labels = {"sweep": opts.name, "dataset": spec.dataset, "grid": spec.grid,
              "objective": f"CV mean {metric_of(spec.task)} of {opts.objective or 'the best model'}"}
    storage = open_study(store, opts.name, spec.mode, opts.resume, labels)
    return searcher(storage, opts.name, opts.search_seed, folds)


def _trial_name(trial) -> str:
    """The trial id, the size of its pack and the first configuration's axes."""
    pack = trial.config["trial"]["pack"] if "trial" in trial.config else [trial.config]
    label = "_".join(f"{k}={v}" for k, v in pack[0].items() if not isinstance(v, (list, dict)))
    size = f"{len(pack)}cfg_" if len(pack) > 1 else ""
    return f"{trial.trial_id}_{size}{label}"[:100]


def _trial_count(opts: SweepOptions, configs: list[dict], trial_packs_: list) -> str:
    if opts.search == "optuna":
        # Only the grid axes are searched: the competitors and the M = 1 reference are grid trials.
        return f"{opts.num_samples} Optuna trials (no competitors or M = 1 reference)"
    if len(trial_packs_) < len(configs):
        return f"{len(configs)} configurations in {len(trial_packs_)} trials (--pack {opts.pack})"
    return f"{len(configs)} configurations"


def _small_space_note(spec: SweepSpec, opts: SweepOptions) -> str:
    """TPE samples with replacement: on a small space many samples repeat a point (computed
    once, but the budget is spent). Seen for real: 8 samples over 12 points hit 5."""
    points = math.prod(len(v) for v in spec.axes.values())
    if opts.search != "optuna" or 2 * opts.num_samples < points:
        return ""
    return (f"\n  note: {opts.num_samples} Optuna samples over a {points}-point space will repeat "
            f"points; --search grid evaluates all {points}")


def print_plan(spec: SweepSpec, opts: SweepOptions, configs: list[dict], out) -> None:
    folds = sum(len(folds_of(c)) for c in configs)
    per_trial = f"{opts.cpus_per_trial:g} CPU" + (f" + {opts.gpus_per_trial:g} GPU"
                                                  if opts.gpus_per_trial else "")
    print(f"sweep '{opts.name}': grid {spec.grid} on {spec.dataset}, search {opts.search}", file=out)
    trial_packs_ = trial_packs(opts, configs)
    if opts.search == "optuna":
        print(f"  {_trial_count(opts, configs, trial_packs_)}: TPE (seed {opts.search_seed}) samples "
              + ", ".join(f"{k} in {list(v)}" for k, v in spec.axes.items())
              + _small_space_note(spec, opts), file=out)
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
        axes = [a for a in spec.axes if a in rows]
        view = comparison_table(_labelled(rows, axes).to_dict("records"), metric,
                                ["model_params", *axes])
        with pd.option_context("display.width", 200, "display.max_colwidth", 70):
            print(view.drop(columns=["label"]).to_string(float_format=lambda v: f"{v:.4g}"), file=out)
    # Remote storage: the store's root is a path on its filesystem; the user needs the URI.
    where = result_store(opts).location if "://" in opts.storage else outcome.root
    print(f"\nresults:  {where}/results.parquet", file=out)
    if outcome.tracking_uri:
        print(f"MLflow:   {outcome.tracking_uri} (experiment '{opts.name}')", file=out)
        from sweeps.engine.tracking import ui_hint
        print(ui_hint(outcome.tracking_uri, opts.name), file=out)
    if outcome.study:
        copy = f"; a copy at {outcome.study_copy}" if outcome.study_copy else ""
        install = "" if installed("optuna-dashboard") else \
            f"   (install it: {python_module('pip', 'install', 'optuna-dashboard')})"
        print(f"Optuna:   {outcome.study} (study '{opts.name}'{copy})\n  open the dashboard: "
              f"{console_script('optuna-dashboard', outcome.study)}{install}", file=out)
    # Commands as they run when pasted: this interpreter, quoted paths (sweeps/engine/next_steps.py).
    print(f"report:   {python_module('analysis.report', where)}", file=out)

