"""A sweep planned once, in the driver: its run options, every configuration validated, and the
stable key (trial_id) of each. Nothing after this validates a configuration again: Tune's trials,
the workers, the MLflow logger and the progress line read the plan.

    points    what each configuration sets itself (its grid point, as the user varied it) and
              its trial_id: what Ray Tune shows as a trial's config --
              {"n_members": 5, "epsilon": 0.35, "seed": 0, "trial_id": "M5_eps0.35_s0_1a2b3c4d"}
              for a trial of one configuration, {"pack": [point, point, ...]} for a pack
    configs   each configuration's TrialConfig, its trial_id one of its fields (trial_config),
              which the workers run as they are: typed and trusted from here to the trainer

Workers get the plan once per process (`Planned.__reduce__`: the one crossing of a Ray process
boundary between the plan and the trial, a blob that a worker unpacks once, however many trials
it runs; the TrialConfigs in it come back unchecked) and look their configurations up by
trial_id; a Tune config without one (an Optuna sample, a trial of a sweep started before plans
were shared) by its settings. Whatever needs a plain dict of a configuration (sweep.json,
MLflow's params and config.json, the records) asks for it where it writes one: to_dict().

A sweep with a range axis (uniform(0, 1), ...: sweeps/engine/plan/ranges.py) cannot list its
configurations ahead: it plans those at the ranges' bounds (every value in between is then
allowed too, each setting's constraint being an interval), and a drawn configuration when it
arrives, by the same trial_config and trial_id as any, once in each process that meets it (the
worker that runs it, the driver that logs and ranks it) -- `Sampling`.
"""

import hashlib
import json
import os
import pickle
import sys
import threading
import uuid
from dataclasses import dataclass, field, replace

from sbfn_dist.errors import ConfigError, SbfnError
from sbfn_dist.settings.config import TrialConfig, absolute_paths
from sbfn_dist.settings.fields import field as config_field
from sweeps.engine.common.store import ResultStore
from sweeps.engine.common.tracking_uri import check_tracking_uri, hide, mask
from sweeps.engine.plan.grid_trials import SweepSpec, axis_text
from sweeps.engine.plan.model_names import check_model_names, check_objective, distinct_trials
from sweeps.engine.plan.options import (DEFAULTS as DEFAULT, MPS_MODES, SEARCHES, cuda_gpus,
                                        gpu_share, named, spelt)
from sweeps.engine.plan.packing import PACK_MODES, packs
from sweeps.engine.plan.ranges import has_ranges, is_range


@dataclass
class SweepOptions:
    name: str
    # Defaults: the table of run options (sweeps/engine/plan/options.py), where each is declared once.
    storage: str = DEFAULT["storage"]       # parent directory or URI: results in <storage>/<name>
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
    pack: str = DEFAULT["pack"]             # configurations training together (engine/packing.py)
    mps: str = DEFAULT["mps"]               # trials sharing a GPU under CUDA MPS (engine/mps.py)
    keep_models: str = DEFAULT["keep_models"]   # best: trials keep fitted models (model_export.py)
    node_wait_s: float | None = DEFAULT["node_wait_s"]  # for a node that fits a trial; None: 0
                                        # locally, 600 s on a cluster (its autoscaler may start
                                        # from no worker)
    dry_run: bool = DEFAULT["dry_run"]
    verbose: bool = DEFAULT["verbose"]      # Ray's, MLflow's and Optuna's INFO lines too
    command: str = ""
    overrides: dict = field(default_factory=dict)
    given_in: dict = field(default_factory=dict)    # run option -> "file" or "flag": where the
                                        # user gave it (a command's: all flags), for refusals

    def __post_init__(self) -> None:
        # As ray.init reads it (a job that `ray job submit` started has it): without it, a
        # local Ray given --num-cpus would be refused by Ray with a traceback.
        self.address = self.address or os.environ.get("RAY_ADDRESS") or None
        self.gpus_per_trial = gpu_share(self.gpus_per_trial, self.num_gpus)
        # A password in --mlflow-uri stays in this process (sweeps/engine/common/tracking_uri.py): what
        # the sweep prints and stores -- sweep.json, Tune's state, MLflow's params -- never has it.
        self.mlflow_uri = hide(self.mlflow_uri)
        self.command = mask(self.command)
        # `--storage=~/x` and a sweep file's `storage: ~/x` reach us unexpanded (no shell).
        if "://" not in self.storage:
            self.storage = os.path.expanduser(self.storage)

    def in_file(self, name: str, like: str | None = None) -> bool:
        """Whether a refusal names the run option `name` by its sweep-file key: a file gave it,
        or (`like`: the option whose refusal asks for it) not given, a file gave that one."""
        return (self.given_in.get(name) or self.given_in.get(like)) == "file"

    def said(self, name: str, like: str | None = None) -> str:
        """The run option `name` as a refusal names it, where the user gave it (in_file)."""
        return named(name, self.in_file(name, like))

    def validate(self) -> None:
        """Every run option (the model names a sweep was given: `plan`)."""
        share = self.said("gpus_per_trial")
        if not 0 <= self.gpus_per_trial <= 1 or (self.num_gpus and self.gpus_per_trial == 0):
            raise ConfigError(share, self.gpus_per_trial, "a fraction in (0, 1] when "
                              f"{self.said('num_gpus', like='gpus_per_trial')} > 0 (0.25 packs "
                              "4 trials on a GPU), or 0 for CPU-only sweeps")
        if self.gpus_per_trial and not (self.num_gpus or self.address):
            self._refuse_a_share_without_gpus()
        if self.cpus_per_trial <= 0:
            raise ConfigError("--cpus-per-trial", self.cpus_per_trial, "a positive number")
        if self.search not in SEARCHES:
            raise ConfigError("--search", self.search, f"one of {', '.join(SEARCHES)}")
        if self.pack not in PACK_MODES:
            raise ConfigError("--pack", self.pack, f"one of {PACK_MODES}")
        if self.mps not in MPS_MODES:
            raise ConfigError("--mps", self.mps, f"one of {MPS_MODES}")
        if not self.storage.strip():        # "/<name>": the filesystem's root
            raise ConfigError("--storage", self.storage, "a directory or a URI (s3://..., "
                              "gs://...); was a variable in it unset?")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ConfigError("--max-concurrent", self.max_concurrent, "an integer >= 1")
        if "://" in self.storage and self.mlflow and not self.mlflow_uri:
            raise ConfigError("--mlflow-uri", None, "a tracking server URI when --storage is "
                              "remote (e.g. http://127.0.0.1:5050 on the head node), or "
                              "--no-mlflow")
        if self.mlflow and self.mlflow_uri:
            check_tracking_uri(self.mlflow_uri)


    def _refuse_a_share_without_gpus(self) -> None:
        """A GPU share with no GPUs to share: it blamed --num-gpus = 0.0, a flag never typed."""
        share = spelt("gpus_per_trial", f"{self.gpus_per_trial:g}", self.in_file("gpus_per_trial"))
        gpus = spelt("num_gpus", "N", self.in_file("num_gpus", like="gpus_per_trial"))
        raise SbfnError(f"{share} needs GPUs: give {gpus} (this machine has {cuda_gpus()} CUDA "
                        f"GPUs), or leave {self.said('gpus_per_trial')} out to train on the CPU")


def result_store(opts: SweepOptions) -> ResultStore:
    """The sweep's results directory, <storage>/<name>."""
    return ResultStore(f"{opts.storage.rstrip('/')}/{opts.name}")


def with_objective(spec: SweepSpec, opts: SweepOptions) -> SweepOptions:
    """`opts` naming the model that ranks the configurations: --objective; else, on --resume,
    the one the sweep started with (sweep.json), so that a default changed since (sbfn_ls ->
    sbfn_ls_linear) never ranks half a sweep, or half its Optuna study, by another model; else
    the task's (options.OBJECTIVES). A --resume naming another than the sweep's is refused."""
    recorded = (result_store(opts).read_spec() or {}).get("objective") if opts.resume else None
    if opts.objective and recorded and opts.objective != recorded:
        raise SbfnError(f"--resume --objective {opts.objective}: the sweep '{opts.name}' ranks "
                        f"its configurations by {recorded}, its objective since it started (its "
                        "Optuna study's values and its best so far); resume without "
                        f"--objective, or pass --name for a new sweep ranked by {opts.objective}")
    return replace(opts, objective=opts.objective or recorded or spec.objective)


# ------------------------------------------------------------------ one configuration
# Labels a trial override may carry that are not TrialConfig fields; they go to `extra`.
LABELS = ("role",)
# A trial_id's label: display-only shorthand of the settings a trial sets (eps for epsilon, M for
# n_members), made here only. Each setting has one name from its flag to the trainer; these
# short forms are no names of it, but they stay as they are: trial ids are --resume's keys and
# a records column, and a changed label would key every finished trial anew.
SHORT = {"n_members": "M", "epsilon": "eps", "seed": "s", "fold": "split", "ensemble": "",
         "width": "k", "lr": "lr", "init_scale": "chi", "lambda1": "l1", "role": ""}
# Where a trial runs, not what it computes: kept out of its key.
UNKEYED = ("trial_id", "data_dir", "device")


def trial_config(override: dict, base: dict, sweep: str) -> TrialConfig:
    """The full config of one trial (validated: the one check of a sweep's configuration), its
    stable key its trial_id.

    The sweep's shared settings (`base`) are dropped where they do not apply to this trial (a
    competitor trial trains no members); the trial's own settings must apply."""
    fields = {k: v for k, v in override.items() if k not in LABELS}
    extra = {"role": "ensemble", **{k: override[k] for k in LABELS if k in override}}
    config = {**base, **fields, "sweep": sweep, "extra": {**base.get("extra", {}), **extra}}
    cfg = TrialConfig.from_dict(config, optional=set(base) - set(fields))
    return cfg.with_values(trial_id=trial_key(cfg, override))


def trial_key(cfg: TrialConfig, override: dict) -> str:
    """Readable from the trial's own axes, unique by a hash of what differs from the defaults."""
    # Only fields off their defaults: a new config field (with its default) added to the
    # library later leaves every existing key, and so --resume, intact.
    stable = {k: v for k, v in cfg.non_default().items() if k not in UNKEYED}
    digest = hashlib.sha1(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:8]
    label = "_".join(f"{SHORT.get(k, k)}{axis_text(v)}" if not isinstance(v, (list, tuple))
                     else "+".join(v) for k, v in override.items()
                     if k == "competitors" or not isinstance(v, (list, tuple, dict)))
    return f"{label}_{digest}" if label else digest


def folds_of(config) -> list:
    """The folds a configuration runs: a planned one's fold_indices(), or (a plain dict of one,
    as a reader holds it) those of its values, trusted as they are."""
    return TrialConfig.trusted(config).fold_indices()


# ------------------------------------------------------------------ the sweep's plan
@dataclass(frozen=True)
class Sampling:
    """How a sweep with a range axis plans a drawn configuration when it arrives: trial_config
    with the sweep's shared settings (`base`) and name, its settings in the order of the sweep's
    axes (`names`: a trial_id's label reads them in that order, whatever order a searcher hands
    them in)."""
    base: dict
    sweep: str
    names: tuple

    def settings(self, point: dict) -> dict:
        given = settings_of(point)
        return {**{n: given[n] for n in self.names if n in given}, **given}


class Planned:
    """Every configuration of a sweep: its point (Tune's config) and its TrialConfig, by
    trial_id. Planned ahead, except a sampled sweep's draws, which join as they arrive
    (`sampling`; None: every configuration is planned ahead)."""

    def __init__(self, points: list[dict], configs: list[TrialConfig],
                 sampling: Sampling | None = None):
        # Planned configs, or their values as a reader holds them (trusted: planned before).
        self.points, self.sampling = points, sampling
        self.configs = [TrialConfig.trusted(c) for c in configs]
        self.token = uuid.uuid4().hex        # names this plan in a worker's cache (_unpacked)
        self._blob: bytes | None = None
        self._by_id: dict | None = None
        self._by_point: dict | None = None
        self._lock = threading.Lock()        # the driver's callbacks look draws up in threads

    def tune_config(self, pack: list[int]) -> dict:
        """What Tune shows as the config of the trial of these configurations (by index)."""
        points = [self.points[i] for i in pack]
        return dict(points[0]) if len(points) == 1 else {"pack": points}

    def configs_of(self, tune_config: dict) -> list[TrialConfig]:
        """The planned configs of a Tune trial, as planned (nothing is validated here)."""
        return [self.config(point) for point in points_of(tune_config)]

    def config(self, point: dict) -> TrialConfig:
        """The planned config of one point: by its trial_id, else (an Optuna sample, an older
        sweep's trial) by its settings; a sampled sweep's draw is planned now (`_draw`)."""
        with self._lock:
            if self._by_id is None:
                self._by_id = {c.trial_id: c for c in self.configs}
                self._by_point = {point_key(p): p["trial_id"] for p in self.points}
            key = point.get("trial_id") or self._by_point.get(point_key(point))
            if key in self._by_id:
                return self._by_id[key]
            if self.sampling is None:
                raise SbfnError(f"the trial {key or repr(point)} is not in this sweep's plan: "
                                "resume a sweep with the arguments it was started with")
            return self._draw(point)

    def _draw(self, point: dict) -> TrialConfig:
        """A draw of the sweep's ranges, planned as every configuration is (trial_config:
        validated, keyed by its exact values) and kept with the planned ones: points and
        configs then hold it for whoever ranks or logs it (SweepResult.best, MLflow)."""
        settings = self.sampling.settings(point)
        config = trial_config(settings, self.sampling.base, self.sampling.sweep)
        key = config.trial_id
        self.points.append({**settings, "trial_id": key})
        self.configs.append(config)
        self._by_id[key] = config
        self._by_point[point_key(settings)] = key
        return config

    def __reduce__(self):
        # The one crossing between the plan and a trial: one blob, pickled once here, unpacked
        # once per worker process (Tune hands every trial the plan from the object store, and
        # reused workers run many trials); its TrialConfigs come back as planned, unchecked
        # (TrialConfig.__reduce__). Draws made later are planned again by each process that
        # meets them.
        if self._blob is None:
            self._blob = pickle.dumps((self.points, self.configs, self.sampling),
                                      pickle.HIGHEST_PROTOCOL)
        return _unpacked, (self.token, self._blob)


_latest: dict = {}      # token -> Planned: the plan this process unpacked last


def _unpacked(token: str, blob: bytes) -> Planned:
    if token not in _latest:
        _latest.clear()          # one sweep at a time: an older plan is not kept alive
        planned = Planned(*pickle.loads(blob))
        planned.token, planned._blob = token, blob
        _latest[token] = planned
    return _latest[token]


def points_of(tune_config: dict) -> list[dict]:
    """The points of a Tune trial's config: a pack's, its one, or (a sweep started before
    plans were shared) the overrides under "trial"."""
    if "pack" in tune_config:
        return tune_config["pack"]
    if "trial" in tune_config:
        return tune_config["trial"]["pack"]
    return [tune_config]


def point_key(point: dict) -> str:
    """A point's settings as text, whatever their order (an Optuna sample's follows its space)."""
    return json.dumps(settings_of(point), sort_keys=True, default=str)


def settings_of(point: dict) -> dict:
    """What a point sets, without its key."""
    return {k: v for k, v in point.items() if k != "trial_id"}


def shared(spec: SweepSpec, opts: SweepOptions) -> dict:
    """The settings every trial starts from: the grid's base and the user's --set, with paths
    made absolute here, in the driver (a trial runs in Ray Tune's working directory)."""
    return absolute_paths({**spec.base, **opts.overrides})


def planned_trials(spec: SweepSpec, base: dict, sweep: str) -> tuple[list[dict],
                                                                     list[TrialConfig]]:
    """(overrides, full configs) of every trial, in the grid's order."""
    trials = spec.trials(base)
    configs = [trial_config(t, base, sweep) for t in trials]
    if spec.per_fold:      # one trial per fold, known only once --set (e.g. split) applied
        trials = [{**t, "fold": k} for t, c in zip(trials, configs) for k in c.fold_indices()]
        configs = [trial_config(t, base, sweep) for t in trials]
    return trials, configs


def plan(spec: SweepSpec, opts: SweepOptions) -> list[TrialConfig]:
    """Every trial's full config, validated now (`plan_sweep`)."""
    return plan_sweep(spec, opts).configs


def plan_sweep(spec: SweepSpec, opts: SweepOptions) -> Planned:
    """The sweep's plan, every configuration validated once, here: a bad value stops the sweep
    before Ray starts and before its results directory is made."""
    _refuse_sampling_per_fold(spec, opts)
    _refuse_seeds_in_a_search(spec, opts)
    _refuse_a_grid_of_ranges(spec, opts)
    bounds = at_bounds(spec)        # a sampled sweep's configurations planned ahead
    _note_a_large_grid(bounds, opts)
    base = shared(spec, opts)
    _refuse_repeated_values(spec)
    check_axis_values(bounds, base, opts.name)
    check_model_names(bounds, base)
    trials, configs = planned_trials(bounds, base, opts.name)
    check_objective(opts.objective, spec.objective,
                    [configs[i] for i in distinct_trials(trials, base)])
    _refuse_unused(opts.overrides, trials, configs, spec.kind)
    keys = [c.trial_id for c in configs]
    if len(set(keys)) != len(keys):
        raise SbfnError(f"the grid repeats a trial: {_repetition(spec)}")
    sampling = Sampling(base, opts.name, (*spec.axes, *spec.repeat_axis)) \
        if has_ranges(spec.axes) else None
    return Planned([{**t, "trial_id": key} for t, key in zip(trials, keys)], configs, sampling)


def _refuse_repeated_values(spec: SweepSpec) -> None:
    """An axis that lists a value twice (`--epsilons 0.1 0.1`, `epsilon: [0, -0.0]`: one
    value, written two ways, keyed apart, so two trials of identical results), before the
    grid is crossed. Numbers equal as numbers are one key (hash(-0.0) == hash(0))."""
    for name, values in spec.axes.items():
        if is_range(values):
            continue
        seen: dict = {}
        for value in values:
            key = json.dumps(value, sort_keys=True) if isinstance(value, (list, tuple, dict)) \
                else value
            if key in seen:
                first = seen[key]
                written = "" if axis_text(first) == axis_text(value) else \
                    f" (as {axis_text(first)} and {axis_text(value)})"
                raise SbfnError(f"the grid repeats a trial: {name} lists {axis_text(first)} "
                                f"twice{written}; give each value once")
            seen[key] = value


def check_axis_values(spec: SweepSpec, base: dict, sweep: str) -> None:
    """Each value of each axis of a large grid validated before the grid is crossed: on the
    grid's first trial with that one value changed, itself a trial of the grid. A bad value
    stops the plan in seconds, not after every configuration was listed (a 10^7 one: 111 s
    and 5.7 GB before its first value was checked). A grid listed in a second, or one barely
    larger than its values (one long axis: 60,005 configurations of 30,002 values), is not
    checked twice: planned_trials validates each configuration once."""
    size = spec.size()
    if size < LARGE_GRID or 10 * sum(len(values) for values in spec.axes.values()) > size:
        return
    first = spec.first_point()
    for name, values in spec.axes.items():
        for value in values:
            trial_config({**first, name: value}, base, sweep)


def _repetition(spec: SweepSpec) -> str:
    """What makes two trials one where no axis lists a value twice (_refuse_repeated_values):
    a competitor listed twice, else values that differ in writing only."""
    extra = spec.extra_trials
    again = [t for i, t in enumerate(extra) if t in extra[:i] and t.get("competitors")]
    if again:
        return (f"the competitors list {', '.join(again[0]['competitors'])} twice; give each "
                "once")
    return "two of its settings plan the same configuration; check the axis values for duplicates"


def at_bounds(spec: SweepSpec) -> SweepSpec:
    """`spec` with each range axis as the lowest and highest value it draws: the configurations
    planned (validated) before Ray starts. Each setting's constraint is an interval
    (sbfn_dist/settings/fields.py), so every draw between two valid bounds is valid too."""
    return replace(spec, axes={name: values.bounds() if is_range(values) else values
                               for name, values in spec.axes.items()})


def _refuse_seeds_in_a_search(spec: SweepSpec, opts: SweepOptions) -> None:
    """A sampled search draws the axes' points and runs each with seed 0: more seeds asked of
    it were dropped without a word (an image sweep's --splits is refused alike, grid_trials.py)."""
    seeds = spec.repeat_axis.get("seed", ())
    if opts.search != "grid" and len(seeds) > 1:
        raise ConfigError("--seeds", len(seeds), f"1 with --search {opts.search} (a sampled "
                          "search runs each configuration it draws with seed 0 only); leave "
                          "it out, or run every seed with --search grid")


def _refuse_sampling_per_fold(spec: SweepSpec, opts: SweepOptions) -> None:
    """A sampled search (optuna, random) draws whole configurations (every fold, ASHA's rungs);
    a per-fold grid's configurations are single folds, so no draw would be one of them."""
    if opts.search != "grid" and spec.per_fold:
        raise ConfigError("--search", opts.search, "grid for a grid of one trial per fold "
                          "(per_fold): a sampled search draws whole configurations, all folds "
                          "each")


def _refuse_a_grid_of_ranges(spec: SweepSpec, opts: SweepOptions) -> None:
    """A grid lists its points, and a range has none to list."""
    ranges = [f"axes.{name} = {values}" for name, values in spec.axes.items() if is_range(values)]
    if opts.search == "grid" and ranges:
        raise SbfnError(f"{ranges[0]} is a range, which a grid cannot list: draw from it with "
                        "--search optuna or --search random (a sweep file's `search: optuna` "
                        "or `search: random`) and --num-samples N, or give the axis as a list")


# A grid this large is worth a word before it is planned: each configuration is validated here,
# once (about 0.2 ms each on this machine: 3,845 in 0.75 s), and Ray Tune is then handed its
# points one trial at a time (sweeps/engine/run/search.py; its grid generator used to copy the whole
# grid once per trial, quadratic: issue 21).
LARGE_GRID = 2_000
_noted: set = set()       # (sweep, size): planned again at the run, said once


def _note_a_large_grid(spec: SweepSpec, opts: SweepOptions) -> None:
    size = spec.size()
    if size < LARGE_GRID or (opts.name, size) in _noted:
        return
    _noted.add((opts.name, size))
    print(f"[{opts.name}] planning {size:,} configurations{' per fold' if spec.per_fold else ''}"
          f" (Ctrl-C stops it): a grid this large takes minutes to plan and start; --dry-run "
          "lists its trials without starting, and --search optuna --num-samples N tries N "
          "points of the same axes", file=sys.stderr, flush=True)


def _refuse_unused(overrides: dict, trials: list[dict], configs: list[TrialConfig],
                   kind: str) -> None:
    """A --set (or --data-dir) that no trial uses would change nothing, yet look as if it had:
    refuse it. A trial uses it where it applies and the trial sets no value of its own."""
    for key, value in overrides.items():
        applies = [key not in t for t, c in zip(trials, configs) if c.has(key)]
        if any(applies):
            continue
        if applies:
            raise ConfigError(key, value, "a setting some trial of this sweep takes from the "
                              "shared settings, but every trial it applies to sets its own (a "
                              "grid axis, the seeds, the reference); change the grid instead "
                              "(--members, --epsilons, --ensembles, --seeds, --splits, or a sweep "
                              "file's axes)")
        # said as what is wrong: "a setting that applies to some trial" read as if it did
        raise ConfigError(key, value, f"it applies to no trial of this sweep ({kind}), only to "
                          f"{config_field(key).where}; leave it out")


def trial_slots(opts: SweepOptions) -> int:
    """How many trials run at once: --max-concurrent, else the CPUs (of the connected Ray, or of
    this machine before it starts) over the CPUs per trial."""
    if opts.max_concurrent:
        return opts.max_concurrent
    ray = ray_of_this_process()
    cpus = ray.cluster_resources().get("CPU", 1) if ray else opts.num_cpus or os.cpu_count() or 1
    return max(1, int(cpus // opts.cpus_per_trial))


def ray_of_this_process():
    """The ray module where this process has initialised Ray (a notebook's, the suite's), else
    None. A Ray never imported is not initialised; importing it here (a dry run) would fix where
    a later local Ray binds before the sweep sets its environment
    (sweeps/engine/common/environment.py)."""
    ray = sys.modules.get("ray")
    return ray if ray is not None and ray.is_initialized() else None


def trial_packs(opts: SweepOptions, configs: list[TrialConfig]) -> list[list[int]]:
    """The configurations of each Ray trial (sweeps.engine.plan.packing); Optuna samples one at a
    time."""
    return packs(configs, opts.pack if opts.search == "grid" else "off", trial_slots(opts))


def kept_model(opts: SweepOptions) -> str:
    """The model whose fitted folds trials keep (--keep-models best): the sweep's objective,
    the one SweepResult.best ranks by; "" for none."""
    return opts.objective if opts.keep_models == "best" else ""
