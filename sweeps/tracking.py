"""MLflow logging from the driver: one experiment per sweep, one run per configuration (a Ray
trial that trains a pack of configurations logs one run for each).

Why the driver (a Tune callback) and not the workers: workers then need no route to the
tracking server (cluster GPU nodes stay private), the sqlite store has a single writer, and a
trial that crashes cannot leave a run half-logged. Ray's MLflowLoggerCallback does the same,
but keys runs by in-memory Trial objects, so a resumed sweep would open a second run per
trial; here runs are found again by the `trial_id` tag.
"""

import json
import os
import subprocess
import tempfile
import warnings

from ray.tune import Callback

from sbfn_dist import __version__
from sbfn_dist.errors import SbfnError
from sbfn_dist.records import metric_of
from sweeps.store import ResultStore
from sweeps.trainable import folds_of

MLFLOW_PARAM_CHUNK = 100          # MlflowClient.log_batch accepts at most 100 params per call
NUMERIC = (int, float)


class TrackingError(SbfnError):
    pass


def code_version() -> str:
    """The package version plus the git commit this code came from, when known."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=5, cwd=os.path.dirname(__file__)).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{__version__}+{commit}" if commit else __version__


def open_experiment(tracking_uri: str, name: str, artifact_location: str | None):
    """Connect (fail fast if unreachable) and get or create the sweep's experiment."""
    from mlflow import MlflowClient
    client = MlflowClient(tracking_uri)
    try:
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            return client, client.create_experiment(name, artifact_location=artifact_location)
    except Exception as exc:  # mlflow raises MlflowException, requests errors, sqlite errors
        raise TrackingError(f"cannot use the MLflow tracking store '{tracking_uri}': "
                            f"{str(exc).splitlines()[0][:300]}. Check --mlflow-uri (a running "
                            "server, or sqlite:///ABSOLUTE/PATH.db), or pass --no-mlflow") from None
    return client, experiment.experiment_id


def flat_params(config: dict) -> dict:
    """The fields the trial's config holds (those that apply to it) as MLflow params (lists as
    JSON, dicts as dotted names)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in flat_params(value).items()})
        else:
            out[key] = json.dumps(value) if isinstance(value, (list, tuple)) else str(value)
    return out


class MLflowSweepLogger(Callback):
    def __init__(self, tracking_uri: str, sweep: dict, resolve, store: ResultStore,
                 artifact_location: str | None = None):
        self.tracking_uri, self.sweep, self.resolve, self.store = tracking_uri, sweep, resolve, store
        self.artifact_location = artifact_location
        self._client, self.experiment_id = open_experiment(tracking_uri, sweep["name"],
                                                           artifact_location)
        self.tags = {"sweep": sweep["name"], "grid": sweep["grid"], "dataset": sweep["dataset"],
                     "code_version": code_version()}
        self.metric_prefix = f"{metric_of(sweep['task'])}/"    # summarise's metric names
        self.runs: dict = {}
        self.warned = False

    def __getstate__(self):
        # Tune pickles its callbacks with the experiment (for resume); clients reconnect.
        return {**self.__dict__, "_client": None, "runs": {}}

    @property
    def client(self):
        if self._client is None:
            self._client, self.experiment_id = open_experiment(
                self.tracking_uri, self.sweep["name"], self.artifact_location)
        return self._client

    def run_ids(self, trial) -> dict:
        """The MLflow run of each configuration of the trial's pack, by configuration key."""
        if trial.trial_id not in self.runs:
            self.runs[trial.trial_id] = {c["trial_id"]: self._find_or_start(c)
                                         for c in self.resolve(trial.config)}
        return self.runs[trial.trial_id]

    def _find_or_start(self, config: dict) -> str:
        key = config["trial_id"]
        found = self.client.search_runs([self.experiment_id], f"tags.trial_id = '{key}'",
                                        max_results=1)
        if found:
            self.client.update_run(found[0].info.run_id, status="RUNNING")
            return found[0].info.run_id
        tags = {**self.tags, "trial_id": key, "role": config["extra"].get("role", ""),
                "task": config["task"]}
        run = self.client.create_run(self.experiment_id, tags=tags, run_name=key)
        from mlflow.entities import Param
        params = [Param(k, v[:6000]) for k, v in flat_params(config).items()]
        for i in range(0, len(params), MLFLOW_PARAM_CHUNK):
            self.client.log_batch(run.info.run_id, params=params[i:i + MLFLOW_PARAM_CHUNK])
        return run.info.run_id

    def on_trial_start(self, iteration, trials, trial, **info):
        self._safely(self.run_ids, trial)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self._safely(self._log_metrics, trial, result)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._safely(self._finish, trial, "FINISHED")

    def on_trial_error(self, iteration, trials, trial, **info):
        self._safely(self._finish, trial, "FAILED")

    def _log_metrics(self, trial, result: dict) -> None:
        """Each configuration's running summary (sweeps.trainable.summarise_pack) to its run,
        as steps of folds done."""
        from mlflow.entities import Metric
        stamp = int(result.get("timestamp", 0) * 1000)
        runs = self.run_ids(trial)
        for key, summary in result.get("configs", {}).items():
            step = int(summary.get("folds_done", 0))
            metrics = [Metric(k, float(v), stamp, step) for k, v in summary.items()
                       if (k.startswith(self.metric_prefix)
                           or k in ("objective", "folds_done", "not_ok"))
                       and isinstance(v, NUMERIC) and not isinstance(v, bool)]
            self.client.log_batch(runs[key], metrics=metrics)

    def _finish(self, trial, status: str) -> None:
        """Each run gets its records as artifacts; a failed trial fails only the runs whose
        configuration misses a fold (the others finished in the store)."""
        for config in self.resolve(trial.config):
            key = config["trial_id"]
            mine = self.store.read_parts(key)
            if len(mine):
                with tempfile.TemporaryDirectory() as d:
                    mine.to_parquet(os.path.join(d, "records.parquet"), index=False)
                    mine.to_csv(os.path.join(d, "records.csv"), index=False)
                    self.client.log_artifacts(self.run_ids(trial)[key], d)
            complete = all(self.store.has_part(key, f) for f in folds_of(config))
            self.client.set_terminated(self.run_ids(trial)[key],
                                       "FINISHED" if complete else status)

    def _safely(self, fn, *args) -> None:
        """A tracking hiccup must not stop the sweep: results are in results.parquet anyway."""
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - logged, never fatal mid-sweep
            if not self.warned:
                warnings.warn(f"MLflow logging failed ({type(exc).__name__}: {exc}); the sweep "
                              "goes on and results.parquet keeps every record", stacklevel=1)
                self.warned = True
