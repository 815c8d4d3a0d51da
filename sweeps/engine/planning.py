"""A sweep planned once, in the driver: its run options, every configuration validated, and the
stable key (trial_id) of each. Nothing after this validates a configuration again: Tune's trials,
the workers, the MLflow logger and the progress line read the plan.

    points    what each configuration sets itself (its grid point, as the user varied it) and
              its trial_id: what Ray Tune shows as a trial's config --
              {"n_members": 5, "epsilon": 0.35, "seed": 0, "trial_id": "M5_eps0.35_s0_1a2b3c4d"}
              for a trial of one configuration, {"pack": [point, point, ...]} for a pack
    configs   each configuration's full config (TrialConfig.to_dict() with its trial_id), which
              the workers run as they are (a TrialConfig of them is trusted, not re-checked)

Workers get the plan once per process (`Planned` pickles as one blob that a worker unpacks once,
however many trials it runs) and look their configurations up by trial_id; a Tune config without
one (an Optuna sample, a trial of a sweep started before plans were shared) by its settings.
"""

import hashlib
import json
import os
import pickle
import sys
import uuid
from dataclasses import dataclass, field

from sbfn_dist.errors import ConfigError, SbfnError
from sbfn_dist.settings.config import TrialConfig, absolute_paths
from sbfn_dist.settings.fields import field as config_field
from sweeps.engine.model_names import check_model_names, check_objective, distinct_trials
from sweeps.engine.options import DEFAULTS as DEFAULT, gpu_share
from sweeps.engine.packing import PACK_MODES
from sweeps.engine.spaces import SweepSpec, axis_text
from sweeps.engine.store import ResultStore
from sweeps.engine.tracking_uri import check_tracking_uri, hide, mask


@dataclass
class SweepOptions:
    name: str
    # Defaults: the table of run options (sweeps/engine/options.py), where each is declared once.
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
        # A password in --mlflow-uri stays in this process (sweeps/engine/tracking_uri.py): what
        # the sweep prints and stores -- sweep.json, Tune's state, MLflow's params -- never has it.
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
                              "remote (e.g. http://127.0.0.1:5000 on the head node), or "
                              "--no-mlflow")
        if self.mlflow and self.mlflow_uri:
            check_tracking_uri(self.mlflow_uri)


def result_store(opts: SweepOptions) -> ResultStore:
    """The sweep's results directory, <storage>/<name>."""
    return ResultStore(f"{opts.storage.rstrip('/')}/{opts.name}")


# ------------------------------------------------------------------ one configuration
# Labels a trial override may carry that are not TrialConfig fields; they go to `extra`.
LABELS = ("role",)
SHORT = {"n_members": "M", "epsilon": "eps", "seed": "s", "fold": "split", "ensemble": "",
         "width": "k", "lr": "lr", "init_scale": "chi", "lambda1": "l1", "role": ""}
# Where a trial runs, not what it computes: kept out of its key.
UNKEYED = ("trial_id", "data_dir", "device")


def trial_config(override: dict, base: dict, sweep: str) -> dict:
    """The full config of one trial (validated), with its stable key as trial_id.

    The sweep's shared settings (`base`) are dropped where they do not apply to this trial (a
    competitor trial trains no members); the trial's own settings must apply."""
    fields = {k: v for k, v in override.items() if k not in LABELS}
    extra = {"role": "ensemble", **{k: override[k] for k in LABELS if k in override}}
    config = {**base, **fields, "sweep": sweep, "extra": {**base.get("extra", {}), **extra}}
    cfg = TrialConfig.from_dict(config, optional=set(base) - set(fields))
    return {**cfg.to_dict(), "trial_id": trial_key(cfg, override)}


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


def folds_of(config: dict) -> list:
    """The folds a planned configuration runs (its config, from trial_config, is already valid)."""
    return TrialConfig(config).fold_indices()


# ------------------------------------------------------------------ the sweep's plan
class Planned:
    """Every configuration of a sweep: its point (Tune's config) and its full config, by
    trial_id. Read-only once made."""

    def __init__(self, points: list[dict], configs: list[dict]):
        self.points, self.configs = points, configs
        self.token = uuid.uuid4().hex        # names this plan in a worker's cache (_unpacked)
        self._blob: bytes | None = None
        self._by_id: dict | None = None
        self._by_point: dict | None = None

    def tune_config(self, pack: list[int]) -> dict:
        """What Tune shows as the config of the trial of these configurations (by index)."""
        points = [self.points[i] for i in pack]
        return dict(points[0]) if len(points) == 1 else {"pack": points}

    def configs_of(self, tune_config: dict) -> list[dict]:
        """The planned configs of a Tune trial, as planned (nothing is validated here)."""
        return [self.config(point) for point in points_of(tune_config)]

    def config(self, point: dict) -> dict:
        """The planned config of one point: by its trial_id, else by its settings."""
        if self._by_id is None:
            self._by_id = {c["trial_id"]: c for c in self.configs}
        key = point.get("trial_id") or self._trial_id(point)
        if key not in self._by_id:
            raise SbfnError(f"the trial {key} is not in this sweep's plan: resume a sweep with "
                            "the arguments it was started with")
        return self._by_id[key]

    def _trial_id(self, point: dict) -> str:
        """An Optuna sample's (or an older sweep's trial's) key, by the settings it sets."""
        if self._by_point is None:
            self._by_point = {point_key(p): p["trial_id"] for p in self.points}
        return self._by_point.get(point_key(point), repr(point))

    def __reduce__(self):
        # One blob: pickled once here, unpacked once per worker process (Tune hands every
        # trial the plan from the object store, and reused workers run many trials).
        if self._blob is None:
            self._blob = pickle.dumps((self.points, self.configs), pickle.HIGHEST_PROTOCOL)
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


def planned_trials(spec: SweepSpec, base: dict, sweep: str) -> tuple[list[dict], list[dict]]:
    """(overrides, full configs) of every trial, in the grid's order."""
    trials = spec.trials(base)
    configs = [trial_config(t, base, sweep) for t in trials]
    if spec.per_fold:      # one trial per fold, known only once --set (e.g. split) applied
        trials = [{**t, "fold": k} for t, c in zip(trials, configs) for k in folds_of(c)]
        configs = [trial_config(t, base, sweep) for t in trials]
    return trials, configs


def plan(spec: SweepSpec, opts: SweepOptions) -> list[dict]:
    """Every trial's full config, validated now (`plan_sweep`)."""
    return plan_sweep(spec, opts).configs


def plan_sweep(spec: SweepSpec, opts: SweepOptions) -> Planned:
    """The sweep's plan, every configuration validated once, here: a bad value stops the sweep
    before Ray starts and before its results directory is made (a --resume of no sweep too)."""
    if opts.resume and result_store(opts).read_spec() is None:
        raise SbfnError(f"--resume: there is no sweep at {result_store(opts).root} (check --name "
                        "and --storage)")
    _refuse_optuna_per_fold(spec, opts)
    _note_a_large_grid(spec, opts)
    base = shared(spec, opts)
    check_model_names(spec, base)
    trials, configs = planned_trials(spec, base, opts.name)
    check_objective(opts.objective, spec.objective,
                    [configs[i] for i in distinct_trials(trials, base)])
    _refuse_unused(opts.overrides, trials, configs, spec.kind)
    keys = [c["trial_id"] for c in configs]
    if len(set(keys)) != len(keys):
        raise SbfnError("the grid repeats a trial; check the axis values for duplicates")
    return Planned([{**t, "trial_id": key} for t, key in zip(trials, keys)], configs)


def _refuse_optuna_per_fold(spec: SweepSpec, opts: SweepOptions) -> None:
    """Optuna samples a whole configuration (every fold, ASHA's rungs); a per-fold grid's
    configurations are single folds, so no sample would be one of its planned configurations."""
    if opts.search == "optuna" and spec.per_fold:
        raise ConfigError("--search", "optuna", "grid for a grid of one trial per fold "
                          "(per_fold): Optuna samples whole configurations, all folds each")


# A grid this large is worth a word before it is planned: each configuration is validated here,
# once (about 0.2 ms each on this machine: 3,845 in 0.75 s), and Ray Tune is then handed its
# points one trial at a time (sweeps/engine/search.py; its grid generator used to copy the whole
# grid once per trial, quadratic: issue 21).
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
