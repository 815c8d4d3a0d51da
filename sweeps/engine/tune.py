"""The Ray side of a sweep run: Ray started or joined, the plan's trials handed to Ray Tune
(the trainable, its searcher and scheduler, the driver's callbacks: progress, MLflow), and
Tune's results. Imported by sweep.py once the sweep's environment is set: Ray binds where
that environment says when it is first imported."""

import threading

import ray
from ray import tune
from ray.exceptions import RayActorError
from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback
from ray.tune.schedulers import ASHAScheduler

from sbfn_dist.errors import SbfnError
from sbfn_dist.records import metric_of
from sbfn_dist.settings.config import TrialConfig
from sweeps.engine.checks import cluster_data_problem, data_check_configs, on_the_cluster
from sweeps.engine.common.environment import defaults_while
from sweeps.engine.common.store import FULL, SUPERSEDED, TUNE_DIR, ResultStore, StorageError
from sweeps.engine.common.tracking_uri import artifacts_beside, own_store
from sweeps.engine.plan.grid_trials import SweepSpec, setting_text
from sweeps.engine.plan.planning import (Planned, SweepOptions, folds_of, kept_model, points_of,
                                         settings_of, trial_slots)
from sweeps.engine.results.ranking import configuration_ids
from sweeps.engine.run.claim import Claim
from sweeps.engine.run.mps import under_mps
from sweeps.engine.run.progress import ProgressLine, StoredFolds, StoreKeeper
from sweeps.engine.run.resources import (check_trial_fits, connect, filling_slots,
                                         on_another_node, other_nodes_see)
from sweeps.engine.run.search import PlannedSearch, random_search, sampled_space
from sweeps.engine.run.trainable import sweep_trainable
from sweeps.engine.tracking.mlflow_logger import MLflowSweepLogger
from sweeps.engine.tracking.mlflow_runs import (compared_settings, open_experiment,
                                                refuse_another_sweeps_runs)


def connect_ray(opts: SweepOptions, held: Claim, interruption, store: ResultStore,
                configs: list[TrialConfig]) -> str:
    """Ray started or joined (with an MPS daemon where trials share a GPU), then armed against
    signals, and a trial's resources, the results storage and (on a cluster) the data checked
    against the nodes."""
    where, session = connect(opts.address, opts.num_cpus, opts.num_gpus, opts.verbose,
                             under_mps(opts))
    interruption.arm()              # after ray.init: Ray's own SIGTERM handler dumps core
    if session:
        # what a kill leaves of it, the next run stops (sweeps/engine/run/claim.py)
        held.record_ray(session)
    wait = opts.node_wait_s if opts.node_wait_s is not None else (600 if opts.address else 0)
    check_trial_fits(opts.cpus_per_trial, opts.gpus_per_trial, wait_s=wait)
    store.check_shared(other_nodes_see)     # before any trial: a node-local --storage
    if opts.address:
        _check_data_elsewhere(configs, opts)
    return where


def _check_data_elsewhere(configs: list[TrialConfig], opts: SweepOptions) -> None:
    """The data checked on another of the cluster's machines, as before Ray here
    (checks.py): data of the head's disk alone fails every trial on the others, each
    retry, each with the same long error."""
    answer = on_another_node(cluster_data_problem, data_check_configs(configs, opts))
    if answer is None:          # a cluster of one machine; or no answer: the trials check it
        return
    node, problem = answer
    if problem is not None:
        raise on_the_cluster(problem, opts, f"the machine {node}")


def fit(spec: SweepSpec, opts: SweepOptions, store: ResultStore, planned: Planned,
         trial_packs_: list[list[int]], interruption):

    # The plan goes to the object store once (with_parameters); each trial's config names its
    # configurations (sweeps.engine.plan.planning).
    trainable = tune.with_resources(
        tune.with_parameters(sweep_trainable, plan=planned, results_uri=store.location,
                             objective=opts.objective, gpu_fraction=opts.gpus_per_trial,
                             threads=max(1, int(opts.cpus_per_trial)),
                             keep_model=kept_model(opts)),
        {"cpu": opts.cpus_per_trial, "gpu": opts.gpus_per_trial})
    callbacks, progress, tracking_uri = _callbacks(spec, opts, store, planned.configs,
                                                   planned.configs_of)
    tuner = _tuner(spec, opts, store, planned, trainable, callbacks, trial_packs_)
    # Our handler takes SIGINT (and SIGTERM) and asks Tune to stop
    # (sweeps.engine.run.interruption.Interruption); Tune's loggers are ours (_callbacks).
    tune_settings = {"TUNE_DISABLE_SIGINT_HANDLER": "1", "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",
                     **_pending_trials(opts)}
    with defaults_while(tune_settings):
        results = _fit_or_interrupted(tuner.fit, interruption, store)
    if opts.max_failures and _lost_to_a_dead_node(results):
        # Ray Tune can count one node's death twice (the trial's pending result and its actor
        # fail separately; the second failure finds the trial already recovering and ends it
        # with retries left: seen with Cluster.remove_node). Finished folds are in the parts,
        # so one resume of the errored trials finishes them without recomputing anything.
        print(f"[{opts.name}] a node died under a trial: resuming the errored trials once",
              flush=True)
        tuner = tune.Tuner.restore(_tune_dir(store), trainable=trainable, resume_errored=True)
        with defaults_while(tune_settings):
            results = _fit_or_interrupted(tuner.fit, interruption, store)
    return tracking_uri, results, progress


def _fit_or_interrupted(fit, interruption, store: ResultStore):
    """Tune's results, or KeyboardInterrupt if a signal stopped it: Tune then returns as if it
    had finished (or fails, if the signal stopped Ray's processes too); a full disk under the
    results directory in its one line (_storage_problem)."""
    try:
        results = fit()
    except Exception as exc:
        if interruption.received:
            raise KeyboardInterrupt from None
        problem = _storage_problem(exc, store)
        if problem is not None:
            raise problem from None
        raise
    interruption.check()
    return results


def _storage_problem(exc: BaseException | None, store: ResultStore) -> StorageError | None:
    """The store's error (StorageError), or a full disk (a Tune writer's OSError), in the chain
    of what fit() raised: Tune raises a callback's error (the driver writing a failed trial's
    part) as a TuneError whose text is the traceback and whose context is the error."""
    while exc is not None:
        if isinstance(exc, StorageError):
            return exc
        if isinstance(exc, OSError) and exc.errno in FULL:
            # Tune writes its state under the results directory and Ray its logs under its
            # session folder; its error names neither.
            return StorageError(
                f"no space left on a disk Ray Tune writes to ([Errno {exc.errno}]): the results "
                f"storage '{store.uri}' or Ray's session folder (/tmp/ray): free space there, "
                "then continue with the same command plus --resume (every fold already written "
                "is kept)")
        exc = exc.__cause__ or exc.__context__
    return None


def _pending_trials(opts: SweepOptions) -> dict:
    """Tune keeps one trial of a searcher waiting at a time unless a concurrency limit is set;
    while that one's worker starts, a finished trial's worker takes it (cancelling the start)
    and one trial runs at a time. A slot's worth waiting (Optuna) leaves a trial for the free
    worker (sweeps.engine.run.resources.filling_slots); the grid's planned trials wait as Tune's
    own grid search keeps them (at least 200, 1.1 per CPU: an autoscaler sees the demand)."""
    if opts.max_concurrent:
        return {}
    if opts.search == "grid":
        return {"TUNE_MAX_PENDING_TRIALS_PG": str(max(200, int(1.1 * ray.cluster_resources()
                                                                .get("CPU", 1))))}
    return {"TUNE_MAX_PENDING_TRIALS_PG": str(trial_slots(opts))}


def _lost_to_a_dead_node(results) -> bool:
    return any(isinstance(getattr(e, "cause", None) or e, RayActorError)
               or "node has died" in str(e) for e in results.errors)


def _tune_dir(store: ResultStore) -> str:
    return f"{store.location.rstrip('/')}/{TUNE_DIR}"


def _tracking_store(opts: SweepOptions, store: ResultStore) -> tuple[str, str | None]:
    """(tracking URI, artifact location): --mlflow-uri, or sqlite in the results dir."""
    uri = opts.mlflow_uri or own_store(store.root)
    return uri, artifacts_beside(uri)


class _Warming(threading.Thread):
    """warm_tracking's thread: join() raises what opening the store raised (SbfnError);
    wait() only waits."""
    error: SbfnError | None = None

    def join(self, timeout=None) -> None:
        super().join(timeout)
        if self.error is not None:
            raise self.error

    def wait(self) -> None:
        super().join()


def warm_tracking(opts: SweepOptions, store: ResultStore, sweep_id: str | None) -> _Warming:
    """Create the MLflow store and experiment in the background: a new sqlite store runs its
    schema migrations (~5 s), which then overlap ray.init. A store it cannot open (a server
    that is down) is refused at join(), before the run writes sweep.json: a rerun with the
    store fixed, or --no-mlflow, is then a new run, not "already holds the sweep"; so is
    a store that holds another sweep of the name (not `sweep_id`, sweep.json's)."""
    def warm():
        if not opts.mlflow:
            return
        uri, artifacts = _tracking_store(opts, store)
        try:
            client, experiment = open_experiment(uri, opts.name, artifacts)
            refuse_another_sweeps_runs(uri, client, experiment, opts.name, sweep_id)
        except SbfnError as exc:
            thread.error = exc

    thread = _Warming(target=warm, daemon=True)
    thread.start()
    return thread


def _callbacks(spec, opts, store, configs, resolve):
    # A sampled search's configurations planned ahead (at the ranges' bounds) are not run.
    planned = {c["trial_id"]: folds_of(c) for c in configs} if opts.search == "grid" else {}
    each = folds_of(configs[0])
    total = sum(map(len, planned.values())) if planned else opts.num_samples * len(each)
    progress = ProgressLine(opts.name, total, spec.mode, configurations=len(configs) if
                            opts.search == "grid" else opts.num_samples,
                            objective=opts.objective, metric=metric_of(spec.task),
                            groups=configuration_ids(configs),
                            stored=StoredFolds(store, planned, each))
    # Tune's own records of each trial's reports (result.json, progress.csv), as Tune would add
    # them, but not its TensorBoard logger: it loaded tensorboardX and with it torch into the
    # driver (~3 CPU-s a sweep, docs/benchmarks.md §11.4) for event files nothing reads.
    callbacks = [StoreKeeper(store, resolve), progress, CSVLoggerCallback(),
                 JsonLoggerCallback()]
    tracking_uri = None
    if opts.mlflow:
        tracking_uri, artifacts = _tracking_store(opts, store)
        sweep = {"name": opts.name, "grid": spec.grid, "dataset": spec.dataset, "task": spec.task,
                 "compared": compared_settings(configs)}
        callbacks.append(MLflowSweepLogger(tracking_uri, sweep, resolve, store, artifacts,
                                           configuration_ids(configs)))
    return callbacks, progress, tracking_uri


def _tuner(spec, opts, store, planned, trainable, callbacks, trial_packs_):
    tune_dir = _tune_dir(store)
    if opts.resume and tune.Tuner.can_restore(tune_dir):
        # Tune keeps its own trial states and searcher; finished folds are in the parts anyway.
        restored = _restored_tuner(tune_dir, trainable, opts, store)
        if restored is not None:
            return restored
    run_config = tune.RunConfig(
        name=TUNE_DIR, storage_path=store.location,
        failure_config=tune.FailureConfig(max_failures=opts.max_failures),
        # Keep every (tiny) checkpoint: after a killed driver, Tune's last saved experiment
        # state may point at a checkpoint that num_to_keep would already have deleted.
        checkpoint_config=tune.CheckpointConfig(num_to_keep=None),
        # verbose=0 never calls a reporter, but in a notebook Tune would make its Jupyter one,
        # which clears the cell's output as it starts (the plan and first lines vanished).
        # --verbose: Tune's own status tables too.
        progress_reporter=tune.CLIReporter(), callbacks=callbacks, verbose=int(opts.verbose))
    tune_config, space = _search(spec, opts, store, planned, trial_packs_)
    tune_config.scheduler = filling_slots(tune_config.scheduler)   # every slot gets a trial
    return tune.Tuner(trainable, param_space=space, tune_config=tune_config, run_config=run_config)


def _lost_folds(tune_dir: str, store: ResultStore) -> dict:
    """trial key -> how many of the folds Tune's saved state has it report done are not in
    parts/ (a part deleted, or lost with a disk): Tune would never run its finished trial
    again, and the sweep would call every fold done (issue 48). {} where the state cannot be
    read (an older version's: _restored_tuner says so)."""
    try:
        trials = tune.ExperimentAnalysis(tune_dir).trials
    except (ImportError, AttributeError):
        return {}
    stored = store.stored_folds()
    reported = {key: summary.get("folds_done", 0) for trial in trials
                if trial.status == "TERMINATED"
                for key, summary in ((trial.last_result or {}).get("configs") or {}).items()}
    return {key: n - len(stored.get(key, ())) for key, n in reported.items()
            if n > len(stored.get(key, ()))}


def _not_set_aside(lost: dict, store: ResultStore) -> dict:
    """Of the folds lost from parts/ (_lost_folds: trial key -> how many), those not in
    superseded/parts/, where a resume sets an earlier version's aside."""
    aside = store.stored_folds(SUPERSEDED)
    return {key: n - len(aside.get(key, ())) for key, n in lost.items()
            if n > len(aside.get(key, ()))}


def _restored_tuner(tune_dir: str, trainable, opts: SweepOptions, store: ResultStore):
    """Tune's saved state of the sweep, or None where it cannot be read back: cut by a full
    disk (store.tune_state_problem), or saved by an older version of sweeps, whose pickles
    name modules and classes that have moved or gone (sweeps.runner before the engine moved,
    the grid's copy-free list before plans were shared; issue 22). A grid's trials then start
    again under a new state, each finished fold read back from parts/ by its trial id.
    Folds lost from parts/ (_lost_folds): a grid's finished trials run again too, each
    reading back what is stored and computing the rest; a sampled search cannot draw a
    finished trial again, and is refused."""
    damaged = store.tune_state_problem()
    if damaged:
        return _start_again(opts, f"cannot be read back: {damaged}")
    lost = _lost_folds(tune_dir, store)
    deleted = _not_set_aside(lost, store)     # the others were said (results/outdated.py)
    if deleted and opts.search != "grid":
        raise SbfnError(f"--resume: parts/ lacks {_lost_text(deleted)} that the {opts.search} "
                        "search recorded as done (deleted?); a sampled search cannot run a "
                        "finished draw again: put the parts back, or pass --name for a new "
                        "sweep")
    if deleted:
        print(f"[{opts.name}] parts/ lacks {_lost_text(deleted)} that Tune's saved state has "
              "done (deleted?): the finished trials run again, reading back every stored "
              "fold and computing the missing ones", flush=True)
    # Tune's finished trials are skipped (SKIP) unless folds were lost: then resumed too.
    again = tune.ResumeConfig.ResumeType.RESUME
    resume = tune.ResumeConfig(finished=again if lost else tune.ResumeConfig.ResumeType.SKIP,
                               unfinished=again, errored=again)
    try:
        return tune.Tuner.restore(tune_dir, trainable=trainable, _resume_config=resume)
    except (ImportError, AttributeError) as exc:
        return _start_again(opts, f"was written by an older version of sweeps ({exc})")


def _start_again(opts: SweepOptions, why: str) -> None:
    """None (the grid's trials start again), said; a sampled search is refused, since a new
    searcher would draw the sweep's budget again."""
    if opts.search != "grid":
        raise SbfnError(f"--resume: Tune's saved state of this sweep {why}, and its "
                        f"{opts.search} search cannot go on; pass --name for a new sweep")
    print(f"[{opts.name}] Tune's saved state of this sweep {why}: its trials start again, "
          "every finished fold read back", flush=True)
    return None


def _lost_text(lost: dict) -> str:
    """'1 fold of M2_eps0_s0_78ad324e', '3 folds of 2 configurations (A, B)'."""
    folds = sum(lost.values())
    keys = sorted(lost)
    which = keys[0] if len(keys) == 1 else \
        f"{len(keys)} configurations ({', '.join(keys[:3])}{', ...' if len(keys) > 3 else ''})"
    return f"{folds} fold{'s' if folds > 1 else ''} of {which}"


def _search(spec: SweepSpec, opts: SweepOptions, store: ResultStore, planned: Planned,
            trial_packs_: list):
    # A random search's generator takes --max-concurrent itself (search.random_search).
    common = dict(metric="objective", mode=spec.mode, reuse_actors=True,
                  max_concurrent_trials=None if opts.search == "random" else opts.max_concurrent,
                  trial_name_creator=_trial_name, trial_dirname_creator=_trial_name)
    if opts.search == "grid":
        points = [planned.tune_config(pack) for pack in trial_packs_]
        return tune.TuneConfig(**common, search_alg=PlannedSearch(points),
                               num_samples=len(points)), {}

    space = sampled_space(spec.axes, {k: v[0] for k, v in spec.repeat_axis.items()})
    folds = len(folds_of(planned.configs[0]))
    # ASHA's rungs are folds here: a configuration whose running CV mean is in the bottom
    # part after `grace_period` folds stops early (docs/sweeps.md).
    scheduler = ASHAScheduler(time_attr="training_iteration", max_t=folds,
                              grace_period=min(2, folds), reduction_factor=3) if folds > 2 else None
    return tune.TuneConfig(**common, search_alg=_searcher(spec, opts, store, folds),
                           scheduler=scheduler, num_samples=opts.num_samples), space


def _searcher(spec: SweepSpec, opts: SweepOptions, store: ResultStore, folds: int):
    """OptunaSearch with a seeded TPE on the sweep's study file (engine/tracking/study.py), or
    Tune's seeded random generator (--search random)."""
    if opts.search == "random":
        return random_search(opts.search_seed, opts.max_concurrent)
    from sweeps.engine.tracking.study import open_study, searcher
    labels = {"sweep": opts.name, "dataset": spec.dataset, "grid": spec.grid,
              "objective": f"CV mean {metric_of(spec.task)} of "
                           f"{opts.objective or 'the best model'}"}
    storage = open_study(store, opts.name, spec.mode, opts.resume, labels)
    return searcher(storage, opts.name, opts.search_seed, folds)


def _trial_name(trial) -> str:
    """The trial id, the size of its pack and the first configuration's axes, each as the
    sweep's other lines show it (setting_text: a mix as --ensembles takes it, a+b)."""
    pack = points_of(trial.config)
    label = "_".join(f"{k}={setting_text(k, v)}" for k, v in settings_of(pack[0]).items()
                     if not isinstance(v, (list, dict)))
    size = f"{len(pack)}cfg_" if len(pack) > 1 else ""
    return f"{trial.trial_id}_{size}{label}"[:100]


# What draws a sampled search's configurations, as its lines name it.
