"""What a sweep checks and says before Ray starts -- the run and its dry run alike: each check
refuses in one line (the results folder is only read here; a run checks it again under its
claim), then the plan as the dry run prints it."""

import json

from sbfn_dist import catalog
from sbfn_dist.errors import ConfigError, DataError, SbfnError
from sbfn_dist.folds import check_data
from sbfn_dist.settings.config import TrialConfig
from sweeps.engine.common.store import ResultStore
from sweeps.engine.common.tracking_uri import own_store, sqlite_content_problem, sqlite_path
from sweeps.engine.plan.grid_trials import SweepSpec, setting_text
from sweeps.engine.plan.options import cuda_gpus, spelt
from sweeps.engine.plan.planning import (SweepOptions, folds_of, ray_of_this_process,
                                         result_store, shared, trial_packs)
from sweeps.engine.plan.ranges import has_ranges, is_range, space_size
from sweeps.engine.run.claim import refuse_while_running
from sweeps.engine.run.mps import under_mps


def check_before_ray(configs: list[TrialConfig], opts: SweepOptions, spec: SweepSpec) -> dict:
    """What a run refuses before Ray starts, each in one line, beyond the settings plan_sweep
    validated (`spec`: the sweep's, whose axes a resumed study was drawn over): a dry run makes
    these checks too (issue 32: it checked neither the data nor the networks, and listed trials
    every one of which the run refused). The results folder is
    only read here; a run checks it again under its claim (_check_store). Returns the data's
    stamps (data_stamps), for sweep.json: a file is read once a run."""
    store = result_store(opts)
    if opts.resume and store.read_spec() is None:
        refuse_while_running(store, opts.name)      # its first run is starting
        raise SbfnError(f"--resume: there is no sweep at {store.root} (check --name and "
                        "--storage)")
    if opts.resume:
        store.check_parts()         # a cut part failed the merge at the end, after the trials
    _check_own_tracking_store(store, opts)
    under_mps(opts)                                 # --mps on where it cannot run
    _check_local_gpus(opts)
    _check_gpu_settings(configs, opts)
    _check_data(configs, opts)
    refuse_while_running(store, opts.name)
    stamps = data_stamps(configs)
    refuse_another_sweep(store, opts, [c.trial_id for c in configs], stamps, shared(spec, opts))
    if opts.search == "optuna":
        from sweeps.engine.tracking.study import check_study
        check_study(store, opts.name, opts.resume, spec.axes)
    return stamps


def _check_own_tracking_store(store: ResultStore, opts: SweepOptions) -> None:
    """The sweep's own MLflow store (mlflow.db in its folder: a resumed sweep's, or one left
    there) that MLflow could not open: refused here, not in a traceback once Ray runs. Nothing
    of it is touched: its runs may be worth restoring. (A folder that cannot be written is the
    claim's to refuse: claim.claim.)"""
    if not opts.mlflow or opts.mlflow_uri or "://" in store.uri:
        return
    problem = sqlite_content_problem(sqlite_path(own_store(store.root)))
    if problem:
        raise SbfnError(f"the sweep's MLflow store: {problem}. Restore it from a copy, or move "
                        "it aside (the sweep then logs to a new one, without the runs logged "
                        "before), or pass --no-mlflow; results.parquet keeps every record "
                        "either way")


def dry_run_scope(opts: SweepOptions) -> tuple[list[str], list[str]]:
    """(what a dry run checks, what it leaves to the run): what needs Ray, a written results
    folder, or (on a cluster) the machines that hold the data and the trials' devices."""
    data = "the data and your networks" + (" as this machine reads them (on the CPU)"
                                            if opts.address else "")
    here = _data_checked_here(opts)
    checked = ["the settings", *([data] if here else []), "the results folder"]
    skipped = ["whether a trial's resources fit Ray's",
               "writing the results folder and the MLflow store",
               *(["the data as another of the cluster's machines reads it (the run asks one "
                  "once it has joined the cluster), and the trials' devices"]
                 if opts.address else [])]
    return checked, skipped


def _check_local_gpus(opts: SweepOptions) -> None:
    """--num-gpus beyond this machine's CUDA GPUs, for the Ray the sweep starts here: refused
    before the results folder is claimed. A cluster's GPUs are its nodes' (check_trial_fits
    asks Ray), and a Ray already initialised in this process has the GPUs it was given."""
    if not opts.num_gpus or opts.address or ray_of_this_process():
        return
    present = cuda_gpus()
    if opts.num_gpus > present:
        in_file = opts.in_file("num_gpus")
        raise SbfnError(f"{spelt('num_gpus', f'{opts.num_gpus:g}', in_file)} asked, but this "
                        f"machine has {present} CUDA GPU(s). Use {spelt('num_gpus', 0, in_file)} "
                        "to train on the CPU, or run on a GPU machine or cluster "
                        f"({opts.said('address', like='num_gpus')})")


def _check_gpu_settings(configs: list[TrialConfig], opts: SweepOptions) -> None:
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


def _check_data(configs: list[TrialConfig], opts: SweepOptions) -> None:
    """Load each data set once here and make every trial's parts: a missing file, or data too
    small for the folds, stops the sweep before Ray starts, not every trial in it. On a
    cluster this machine is one of its nodes (the head, under `ray exec`), whose trials read
    the data where the others do; one other node checks it once the run has joined
    (cluster_data_problem)."""
    if not _data_checked_here(opts):
        return
    try:
        check_data(data_check_configs(configs, opts))
    except DataError as exc:
        raise on_the_cluster(exc, opts, "this machine") from None   # the library's own line


def data_check_configs(configs: list[TrialConfig], opts: SweepOptions) -> list[TrialConfig]:
    """The configurations as a data check runs them: your networks on the device each trial
    will have (on_trial_device); on a cluster on the CPU, as any machine can (the GPUs, if any,
    are the workers', and each trial checks its own). Planned: trusted, not checked again."""
    return [_on_cpu(c) if opts.address else on_trial_device(c, opts) for c in configs]


# A configuration's device choices as any machine can check them
CPU_CHECK = {"device": "cpu", "precision": "auto", "step_engine": "auto", "step_compile": "auto"}


def _on_cpu(config: TrialConfig) -> TrialConfig:
    return config.with_values(**{k: v for k, v in CPU_CHECK.items() if config.has(k)})


def cluster_data_problem(configs: list[TrialConfig]) -> SbfnError | None:
    """What check_data refuses where this runs (a task on another of the cluster's nodes:
    sweeps.engine.run.resources.on_another_node), returned, not raised: Ray would wrap a raised
    one in its traceback. None if nothing."""
    try:
        check_data(configs)
    except SbfnError as exc:
        return exc
    return None


def on_the_cluster(exc: SbfnError, opts: SweepOptions, machine: str) -> SbfnError:
    """A data refusal, on a cluster said with where it was found and where the data must be:
    each trial reads it on its own node. Other refusals as they are."""
    if not (opts.address and isinstance(exc, DataError)):
        return exc
    return SbfnError(f"the data as {machine} of the cluster reads it: {str(exc).rstrip('.')}. "
                     "On a cluster every machine reads the data itself: put the files in a "
                     "directory on the shared file system (as --storage is) and pass --data-dir "
                     "that directory (docs/cluster.md, \"A lab's machines, step by step\", step 9)")


def on_trial_device(config: TrialConfig, opts: SweepOptions) -> TrialConfig:
    """The config with the device its trial resolves "auto" to, where this machine would
    resolve it otherwise: a trial without a GPU share runs on the CPU (Ray hides the GPUs from
    it), so its networks are checked there, not on a GPU the driver happens to see."""
    if not opts.gpus_per_trial and config.get("device") == "auto":
        return TrialConfig.trusted(config).with_values(device="cpu")
    return config


def _data_checked_here(opts: SweepOptions) -> bool:
    """Everywhere but under a Ray Client (ray://): its driver runs on no node of the cluster,
    and reads the data of none."""
    return not (opts.address or "").startswith("ray://")


def data_stamps(configs: list[TrialConfig]) -> dict:
    """{data set: contents_stamp} of the sweep's data sets given as paths (csv:, npz:,
    folder:), for sweep.json: a resume compares them."""
    names = dict.fromkeys(c["dataset"] for c in configs if catalog.prefix_of(c["dataset"]))
    return {name: stamp for name in names if (stamp := catalog.contents_stamp(name))}


def refuse_another_sweep(store: ResultStore, opts: SweepOptions, trial_ids: list,
                         stamps: dict, base: dict | None = None) -> None:
    """Refuse to overwrite another sweep or resume a different one (reads sweep.json only), or
    resume on data whose contents changed (`stamps`: data_stamps): its finished folds would
    mix with folds of other data, and the table rank the mixture. `base`: the settings every
    trial now shares (planning.shared), which the refusal compares with the sweep's."""
    old = store.read_spec()
    if old and not opts.resume:
        raise SbfnError(f"{store.root} already holds the sweep '{opts.name}'. Pass --resume to "
                        "continue it, or --name to start a new one")
    for name, stamp in (old or {}).get("data", {}).items():
        # not here (a cluster's data): not compared; an older kind of stamp: made again so
        if stamps.get(name, stamp) != stamp and catalog.contents_stamp(name, stamp) != stamp:
            raise SbfnError(f"--resume: {name} has changed since the sweep at {store.root} was "
                            "created: its finished folds were computed on the old contents. "
                            "Restore them, or pass --name for a new sweep on the new data")
    changed = _changed_search(old, opts) if old else ""
    if old and (changed or set(old["trial_ids"]) != set(trial_ids)):   # any order
        changed = changed or _changed_trials(old, base, trial_ids)
        raise SbfnError(f"--resume: the sweep at {store.root} was created with other settings "
                        f"({changed}its command: {old.get('command') or '?'}). Resume with the "
                        "same arguments, or pass --name for a new sweep")


CHANGES_SHOWN = 3       # a refusal names the first few; one setting changes many trial ids


def _changed_trials(old: dict, base: dict | None, trial_ids: list) -> str:
    """What a resume changes ("epochs 3, not 2; "): the settings every trial shares (sweep.json's
    `base`), else its trials (an axis' values: the ids planned now and not then, and back). It
    said "other settings" alone, and the user had to guess which."""
    now, was = set(trial_ids), set(old["trial_ids"])
    said = _changed_base(old.get("base"), base) or [
        *_some_ids("trials planned now, not in the sweep", now - was),
        *_some_ids("in the sweep, not planned now", was - now)]
    more = f" and {len(said) - CHANGES_SHOWN} more" if len(said) > CHANGES_SHOWN else ""
    return "; ".join(said[:CHANGES_SHOWN]) + more + "; "


def _changed_base(was: dict | None, now: dict | None) -> list:
    """Each shared setting that differs, "epochs 3, not 2", as sweep.json holds them (JSON)."""
    if was is None or now is None:
        return []
    now = json.loads(json.dumps(now, default=str))
    unset = "unset"     # a setting one of the two leaves to the library's default
    return [f"{k} {setting_text(k, now.get(k, unset))}, not {setting_text(k, was.get(k, unset))}"
            for k in sorted(was.keys() | now.keys()) if was.get(k, unset) != now.get(k, unset)]


def _some_ids(what: str, ids: set) -> list:
    if not ids:
        return []
    first = sorted(ids)[:2]
    more = f" and {len(ids) - len(first)} more" if len(ids) > len(first) else ""
    return [f"{what}: {', '.join(first)}{more}"]


def _changed_search(old: dict, opts: SweepOptions) -> str:
    """The search options a resume changes ("--num-samples 5, not 3; "): the trials are
    Tune's saved ones, so a changed search would be ignored, and sweep.json rewritten to say
    it ran. (A sweep.json without search_seed is older: its seed is not compared.)"""
    was = {"--search": old.get("search", "grid")}
    now = {"--search": opts.search}
    if opts.search != "grid" and was["--search"] == opts.search:
        was |= {"--num-samples": old.get("n_trials_expected"),
                "--search-seed": old.get("search_seed", opts.search_seed)}
        now |= {"--num-samples": opts.num_samples, "--search-seed": opts.search_seed}
    return "".join(f"{flag} {now[flag]}, not {was[flag]}; " for flag in was
                   if now[flag] != was[flag])


SAMPLERS = {"optuna": "Optuna", "random": "random"}


def trial_count(opts: SweepOptions, configs: list[TrialConfig], trial_packs_: list) -> str:
    if opts.search != "grid":
        # Only the grid axes are searched: the competitors and the M = 1 reference are grid trials.
        return (f"{opts.num_samples} {SAMPLERS[opts.search]} trials (no competitors or M = 1 "
                "reference)")
    if len(trial_packs_) < len(configs):
        return f"{len(configs)} configurations in {len(trial_packs_)} trials (--pack {opts.pack})"
    return f"{len(configs)} configurations"


def small_space_note(spec: SweepSpec, opts: SweepOptions) -> str:
    """TPE and random draws repeat points of a small space (computed once, but the budget is
    spent). Seen for real: 8 samples over 12 points hit 5. A space with a uniform or loguniform
    range has no end of points (size inf): never small."""
    points = space_size(spec.axes)
    if opts.search == "grid" or 2 * opts.num_samples < points:
        return ""
    listed = " (its ranges given as lists)" if has_ranges(spec.axes) else ""
    return (f"\n  note: {opts.num_samples} {SAMPLERS[opts.search]} samples over a {points}-point "
            f"space will repeat points; --search grid evaluates all {points}{listed}")


def _drawn_axes(spec: SweepSpec) -> str:
    """A sampled search's axes as the plan prints them: epsilon from uniform(0, 1), M in [5, 2]."""
    return ", ".join(f"{k} from {v}" if is_range(v) else f"{k} in {list(v)}"
                     for k, v in spec.axes.items())


def _trial_text(c: TrialConfig, axes) -> str:
    """A trial's settings in a plan line, as a command takes them: the sweep's axes where they
    apply to it (ε not to a trial of plug-ins alone), a reference's lr, the plug-ins of a trial
    that trains no member, then its role. It printed M and ε whatever the axes: ε where it was
    no axis, and never a real one such as width."""
    role = c.extra.get("role")
    shown = {} if role == "competitors" else {k: c[k] for k in axes if c.has(k)}
    if role == "reference":
        shown["lr"] = c.lr
    if c.get("n_members") == 0 and "plugin_members" not in shown:
        shown["plug-ins"] = ",".join(c.get("plugin_members", []))
    return " ".join(f"{k}={setting_text(k, v)}" for k, v in {**shown, "role": role}.items())


def print_plan(spec: SweepSpec, opts: SweepOptions, configs: list[TrialConfig], out) -> None:
    folds = sum(len(folds_of(c)) for c in configs)
    per_trial = f"{opts.cpus_per_trial:g} CPU" + (f" + {opts.gpus_per_trial:g} GPU"
                                                  if opts.gpus_per_trial else "") \
        + (" (GPUs shared under CUDA MPS)" if under_mps(opts) else "")
    print(f"sweep '{opts.name}': grid {spec.grid} on {spec.dataset}, search {opts.search}",
          file=out)
    trial_packs_ = trial_packs(opts, configs)
    if opts.search != "grid":
        how = "TPE" if opts.search == "optuna" else "Tune's random generator"
        print(f"  {trial_count(opts, configs, trial_packs_)}: {how} (seed {opts.search_seed}) "
              f"draws {_drawn_axes(spec)}" + small_space_note(spec, opts), file=out)
        if has_ranges(spec.axes):
            print(f"  planned now: {len(configs)} configurations, each range at its bounds "
                  "(every draw between them is then valid); each draw is planned as it "
                  "arrives, its trial id from its exact values", file=out)
    else:
        print(f"  {trial_count(opts, configs, trial_packs_)}, {folds} folds/splits in all",
              file=out)
        width = max(len(c.trial_id) for c in configs)       # the ids' column, aligned
        for n, pack in enumerate(trial_packs_):
            for i in pack:
                c = configs[i]
                print(f"    trial {n:>3}  {c.trial_id:<{width}}  folds {len(c.fold_indices()):>2}"
                      f"  {_trial_text(c, spec.axes)}", file=out)
    concurrent = opts.max_concurrent or "as many as fit"
    print(f"  resources per trial: {per_trial}; concurrent trials: {concurrent}", file=out)
    print(f"  results -> {opts.storage.rstrip('/')}/{opts.name}", file=out)
