"""MLflow logging from the driver, laid out as MLflow's users expect it:

    experiment <sweep>            tagged mlflow.experimentKind = custom_model_development, so
                                  the UI opens on its runs table (not the GenAI overview)
      run <sweep>                 the parent (tag role = sweep): grid, data set, command, the
                                  shared settings; at the end each model's best CV mean
        run <configuration key>   nested (mlflow.parentRunId): as params the settings the
                                  sweep's configurations differ in (compared_settings), as
                                  metrics each model's CV mean <metric>/<model> (step: folds
                                  done) and its folds' scores <metric>/<model>/by_fold (step:
                                  the fold), its full config and records as artifacts

Metric names: a configuration-level name is the first of the names holding it (the MLflow UI
lists a run's metrics sorted, and offers the ones holding what was typed): every other name
starts with it. `fold/rmse/sbfn_ls_linear` once came before `rmse/sbfn_ls_linear` in the
Parallel coordinates chart's list, and 33 params and 73 metrics per run hid the few that a
comparison of configurations reads ("Show more columns (99 total)").

The Tune callback that feeds it is mlflow_logger.py (Ray's side). Why the driver (a Tune
callback) and not the workers: workers then need no route to the
tracking server (cluster GPU nodes stay private), the sqlite store has a single writer, and a
trial that crashes cannot leave a run half-logged. Ray's MLflowLoggerCallback does the same,
but keys runs by in-memory Trial objects, so a resumed sweep would open a second run per
trial; here runs are found again by tags (`trial_id`, and role = sweep for the parent).

Why a queue and a thread: Tune calls its callbacks inside its scheduling loop, so a tracking
server that stops answering stopped the whole sweep (MLflow's client retried for ~7 minutes
per call). The callback only queues; one thread applies each logging operation (a plain dict,
`SweepTracker.apply`) with bounded HTTP retries; after a failure it stops trying for
COOLDOWN_S. Operations that did not reach the store are saved in the results directory
(mlflow-unlogged.json), listed at the end of the sweep, and `python -m sweeps.relog` applies
them later: results.parquet holds every record either way.

Every tracking URI here is the public one, without a password (what the callback pickles into
Tune's state, the ledger saves and the sweep prints); MLflow's client alone gets the credentials,
at the moment it is made and while it works (sweeps/engine/common/tracking_uri.py, client_environment).
"""

import contextlib
import json
import math
import os
import re
import subprocess
import tempfile
import time

from sbfn_dist import __version__
from sbfn_dist.errors import SbfnError
from sbfn_dist.records import REFERENCE_MODEL, metric_of
from sbfn_dist.settings.tasks import TASKS
from sweeps.engine.common.environment import defaults_while, quiet_libraries, values_while
from sweeps.engine.common.next_steps import console_script
from sweeps.engine.common.store import ResultStore
from sweeps.engine.common.tracking_uri import first_words, login, mask
from sweeps.engine.plan.planning import folds_of
from sweeps.engine.results.ranking import relabelled
from sweeps.engine.run.fold_means import summarise


MLFLOW_PARAM_CHUNK = 100          # MlflowClient.log_batch accepts at most 100 params per call
MLFLOW_PARAM_CHARS = 6000         # and values up to 6000 characters
NUMERIC = (int, float)
# Without these MLflow's client retries a dead server 7 times with doubling back-off and
# 120 s timeouts (minutes per call); with them a refused connection fails in 2.4-5.6 s
# (measured, the back-off has jitter).
# The last one stops a "View run ... at" line (and one more request) per finished run.
# A user's own settings of these variables win; they hold only while the sweep (or the
# logging thread, or sweeps.relog) runs (sweeps/engine/common/environment.py).
CLIENT_SETTINGS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
                   "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
                   "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "1"}
COOLDOWN_S = 30.0                 # after a failed operation, the next ones go straight to the list
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}   # the UI's runs table
PARENT = "mlflow.parentRunId"     # MLflow's nesting tag (what start_run(nested=True) sets)
SWEEP_ROLE = "sweep"              # the parent run's `role` tag (configurations: ensemble, ...)
# sweep.json's key and the parent run's tag that tell two sweeps of one name apart (in one
# store: two storages, or a sweep deleted and run again); kept on --resume, wherever the
# sweep's folder has moved.
SWEEP_ID = "sweep_id"


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


@contextlib.contextmanager
def client_environment(tracking_uri: str):
    """What MLflow's client reads from the environment while it works for the sweep: the
    bounded retries (CLIENT_SETTINGS, unless the user set them) and the credentials taken out
    of --mlflow-uri (sweeps/engine/common/tracking_uri.py), which MLflow reads at each request."""
    with defaults_while(CLIENT_SETTINGS), values_while(login(tracking_uri).env):
        yield


def open_experiment(tracking_uri: str, name: str, artifact_location: str | None,
                    otherwise: str = "pass --no-mlflow"):
    """Connect (fail fast if unreachable), get or create the sweep's experiment and tag it as
    model training. `tracking_uri` is the public one: the client gets the one that logs in.
    `otherwise`: the fix besides another --mlflow-uri, in the command's own words."""
    from mlflow import MlflowClient
    quiet_libraries()       # no "Creating initial MLflow database tables" unless --verbose
    try:
        # Inside: the client opens a sqlite store (its migrations) as it is made
        client = MlflowClient(login(tracking_uri).uri)
        with client_environment(tracking_uri):
            experiment = client.get_experiment_by_name(name)
            if experiment is None:
                return client, client.create_experiment(name, artifact_location=artifact_location,
                                                        tags=EXPERIMENT_KIND)
            for key, value in EXPERIMENT_KIND.items():
                if key not in experiment.tags:     # a sweep logged before the tag existed
                    client.set_experiment_tag(experiment.experiment_id, key, value)
    except Exception as exc:  # mlflow raises MlflowException, requests errors, sqlite errors
        raise unusable(tracking_uri, exc, otherwise) from None
    return client, experiment.experiment_id


def unusable(tracking_uri: str, exc: Exception, otherwise: str = "pass --no-mlflow"
             ) -> TrackingError:
    """The store's own error (MlflowException, requests', sqlite's) in one line, and the fix."""
    return TrackingError(f"cannot use the MLflow tracking store '{tracking_uri}': "
                         f"{first_line(exc)}. Check --mlflow-uri (a running server, or "
                         f"sqlite:///ABSOLUTE/PATH.db), or {otherwise}")


def parent_runs(client, experiment_id: str) -> list:
    """The experiment's sweep runs (one a sweep, normally)."""
    return client.search_runs([experiment_id], f"tags.role = '{SWEEP_ROLE}'")


def refuse_another_sweeps_runs(tracking_uri: str, client, experiment_id: str, name: str,
                               sweep_id: str | None) -> None:
    """A sweep run of another sweep of this name in the experiment (another storage's, or a
    deleted sweep's): this sweep's runs would nest under it, and its summary be overwritten."""
    with client_environment(tracking_uri):
        try:
            runs = parent_runs(client, experiment_id)
        except Exception as exc:  # noqa: BLE001 - as open_experiment's
            raise unusable(tracking_uri, exc) from None
    for run in runs:
        if run.data.tags.get(SWEEP_ID) != sweep_id:
            note = run.data.tags.get("mlflow.note.content", "")
            where = note.partition("records in ")[2].partition(";")[0] or "elsewhere"
            raise TrackingError(f"the MLflow store '{tracking_uri}' holds another sweep named "
                                f"'{name}' (its records: {where}): pass --name to name this one "
                                "apart, or log it to another store (--mlflow-uri)")


def first_line(exc: Exception) -> str:
    """The error in a few words: the OS's reason when a connection failed (MLflow wraps it in
    a long retry message), else the first line."""
    text = mask(str(exc).strip())      # a database's error may quote its URI
    reason = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if reason:
        return reason.group(1).strip()
    return first_words(exc)[:300]


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


# The settings a run records as params and never compares by: its models (the metrics name
# them) and bookkeeping.
NOT_COMPARED = ("trial_id", "sweep", "extra", "combiners", "competitors")
PER_FOLD = "by_fold"              # <metric>/<model>/by_fold: fold k's score at step k


def compared_settings(configs: list) -> list:
    """The settings whose values differ among the sweep's planned configurations that hold
    them (their axes, a reference's lr, the seeds, a per-fold grid's fold; a competitor trial
    holds no member setting): the params a comparison reads. A sampled sweep's are planned at
    their ranges' bounds, so its drawn axes differ too."""
    names = dict.fromkeys(k for c in configs for k in c if k not in NOT_COMPARED)
    return [k for k in names if len({json.dumps(c[k], sort_keys=True, default=str)
                                     for c in configs if k in c}) > 1]


def numeric_metrics(values: dict, keep, stamp: int, step: int) -> list:
    from mlflow.entities import Metric
    return [Metric(k, float(v), stamp, step) for k, v in values.items()
            if keep(k) and isinstance(v, NUMERIC) and not isinstance(v, bool)]


class SweepTracker:
    """Applies logging operations to the sweep's experiment, synchronously. An operation is a
    plain dict (JSON), so one that fails can be saved and applied again later:

        {"op": "sweep"}                                  find or open the parent run
        {"op": "start", "config": c}                     find or open c's run
        {"op": "fold", "config": c, "fold": k, "summary": s, "stamp": ms}
        {"op": "finish", "config": c, "status": "FINISHED" | "FAILED"}
        {"op": "settle", "config": c}                    c's stored folds its run lacks, and
                                                         its end, if it is still open
        {"op": "end", "groups": g}                       the parent's summary, from the records
                                                         (g: trial id -> configuration id,
                                                         sweeps.engine.results.ranking.configuration_ids)
    """

    def __init__(self, tracking_uri: str, sweep: dict, store: ResultStore,
                 artifact_location: str | None = None, otherwise: str = "pass --no-mlflow"):
        self.client, self.experiment_id = open_experiment(tracking_uri, sweep["name"],
                                                          artifact_location, otherwise)
        self.sweep, self.store = sweep, store
        self.metric = metric_of(sweep["task"])
        self.tags = {"sweep": sweep["name"], "grid": sweep["grid"], "dataset": sweep["dataset"],
                     "task": sweep["task"], "code_version": code_version()}
        self.runs: dict = {}
        self.logged: dict = {}          # trial id -> the folds its run holds (logged once each)
        self._parent: str | None = None
        self._known: dict | None = None     # trial id -> (run id, status): _sweep_runs

    def apply(self, op: dict) -> None:
        kind, args = op["op"], {k: v for k, v in op.items() if k != "op"}
        {"sweep": self._sweep, "start": self.run_id, "fold": self._fold,
         "finish": self._finish, "settle": self._settle, "end": self._end}[kind](**args)

    # --- runs ---------------------------------------------------------------------------------
    def _search(self, tag: str, value: str) -> str | None:
        found = self.client.search_runs([self.experiment_id], f"tags.{tag} = '{value}'",
                                        max_results=1)
        return found[0].info.run_id if found else None

    def _own_parent(self) -> str | None:
        """This sweep's parent run: the sweep run whose sweep_id tag is the one sweep.json
        holds (a sweep of an older version: neither has one)."""
        ours = (self.store.read_spec() or {}).get(SWEEP_ID)
        runs = parent_runs(self.client, self.experiment_id)
        return next((r.info.run_id for r in runs if r.data.tags.get(SWEEP_ID) == ours), None)

    def _sweep(self) -> None:
        self.client.update_run(self.parent_id, status="RUNNING")

    @property
    def parent_id(self) -> str:
        """The sweep's own run, found again on --resume by its role tag."""
        if self._parent is None:
            self._parent = self._own_parent() or self._open_parent()
        return self._parent

    def _open_parent(self) -> str:
        spec = self.store.read_spec() or {}
        note = (f"Sweep `{self.sweep['name']}`: grid {self.sweep['grid']} on "
                f"{self.sweep['dataset']}; records in {self.store.root}/results.parquet; "
                f"command: `{spec.get('command') or '?'}`")
        tags = {**self.tags, "role": SWEEP_ROLE, "mlflow.note.content": note,
                **({SWEEP_ID: spec[SWEEP_ID]} if spec.get(SWEEP_ID) else {})}
        run = self.client.create_run(self.experiment_id, tags=tags, run_name=self.sweep["name"])
        params = {**flat_params(spec.get("base", {})), "grid": self.sweep["grid"],
                  "search": spec.get("search", ""), "command": spec.get("command", ""),
                  "configurations": str(spec.get("n_trials_expected", "")),
                  "folds_expected": str(spec.get("n_folds_expected", ""))}
        self._log_params(run.info.run_id, params)
        return run.info.run_id

    def run_id(self, config: dict) -> str:
        """The configuration's run (nested in the sweep's), found again by its trial_id tag."""
        key = config["trial_id"]
        if key not in self.runs:
            found = self._search("trial_id", key)
            if found:      # also nests a run logged before sweeps had a parent run
                self.client.set_tag(found, PARENT, self.parent_id)
            self.runs[key] = found or self._open_run(config)
            self.logged[key] = self._logged_folds(found) if found else set()
        return self.runs[key]

    def _logged_folds(self, run_id: str) -> set:
        """The folds a run found again holds (a resumed sweep's, or one relogged): the steps of
        its per-fold scores, which each fold logs together (`fold/<metric>/...` before issue 48)."""
        scores = [k for k in self.client.get_run(run_id).data.metrics
                  if k.endswith(f"/{PER_FOLD}") or k.startswith(f"fold/{self.metric}/")]
        return {m.step for m in self.client.get_metric_history(run_id, scores[0])} \
            if scores else set()

    def _open_run(self, config: dict) -> str:
        tags = {**self.tags, "trial_id": config["trial_id"], "task": config["task"],
                "role": config["extra"].get("role", ""), PARENT: self.parent_id}
        run = self.client.create_run(self.experiment_id, tags=tags, run_name=config["trial_id"])
        self._log_params(run.info.run_id, flat_params(self._compared(config)))
        self.client.log_text(run.info.run_id, json.dumps(config, indent=1, default=str),
                             "config.json")
        return run.info.run_id

    def _compared(self, config: dict) -> dict:
        """The config's settings a comparison reads (the sweep's `compared`; all of them for a
        sweep whose saved logging operations predate it: sweeps.relog)."""
        names = self.sweep.get("compared")
        return config if names is None else {k: config[k] for k in names if k in config}

    def _log_params(self, run_id: str, params: dict) -> None:
        from mlflow.entities import Param
        items = [Param(k, v[:MLFLOW_PARAM_CHARS]) for k, v in params.items()]
        for i in range(0, len(items), MLFLOW_PARAM_CHUNK):
            self.client.log_batch(run_id, params=items[i:i + MLFLOW_PARAM_CHUNK])

    # --- metrics ------------------------------------------------------------------------------
    def _fold(self, config: dict, fold, summary: dict, stamp: int) -> None:
        """Each model's running CV mean at its best setting (sweeps.engine.run.fold_means.summarise)
        as `<metric>/<model>` at step = folds done, the value the runs table shows, and fold k's
        own score of it as `<metric>/<model>/by_fold` at step k. Once per fold: a trial run again
        (a lost node's, a resumed sweep's) reports the folds it reads back from the store as
        well, and each would be a second point in the run's charts."""
        run = self.run_id(config)
        if int(fold) in self.logged[config["trial_id"]]:
            return
        running = numeric_metrics(summary, self._summary_metric, stamp,
                                  int(summary.get("folds_done", 0)))
        part = self.store.read_part(config["trial_id"], fold) or []
        scores = summarise(part, "") if part else {}
        per_fold = numeric_metrics({f"{k}/{PER_FOLD}": v for k, v in scores.items()
                                    if self._model_metric(k)}, lambda k: True, stamp, int(fold))
        self.client.log_batch(run, metrics=running + per_fold)
        self.logged[config["trial_id"]].add(int(fold))

    def _summary_metric(self, name: str) -> bool:
        return self._model_metric(name) or name in ("folds_done", "not_ok")

    def _model_metric(self, name: str) -> bool:
        """A model's score at its best setting, `<metric>/<model>` (a setting's own,
        `<metric>/<model>/<setting>`, stays in the records: a comparison of configurations
        reads each model at its best)."""
        return name.startswith(f"{self.metric}/") and name.count("/") == 1

    def _finish(self, config: dict, status: str) -> None:
        """Records as artifacts; a failed trial fails only the runs whose configuration misses
        a fold (the others finished in the store)."""
        key, run = config["trial_id"], self.run_id(config)
        mine = self.store.read_parts(key)
        if len(mine):
            with tempfile.TemporaryDirectory() as d:
                mine.to_parquet(os.path.join(d, "records.parquet"), index=False)
                mine.to_csv(os.path.join(d, "records.csv"), index=False)
                self.client.log_artifacts(run, d)
        complete = all(self.store.has_part(key, f) for f in folds_of(config))
        self.client.set_terminated(run, "FINISHED" if complete else status)

    def _settle(self, config: dict) -> None:
        """A configuration an earlier driver finished but was killed before it had logged all
        of it (its last fold and end, or all of it: the logging thread lags the trials): Tune's
        saved state has the trial done, so a resumed sweep skips it and no other operation
        would reach its run, left RUNNING or never opened. Logs the folds the store holds that
        the run lacks, each with its running means, then ends it; a run already ended is left
        as it is."""
        key = config["trial_id"]
        known = self._sweep_runs().pop(key, None)
        if known and known[1] != "RUNNING":
            return
        records = self.store.read_parts(key).to_dict("records")
        stamp = int(time.time() * 1000)
        for fold in sorted({int(r["fold"]) for r in records}):    # _fold's run_id: found/opened
            upto = [r for r in records if int(r["fold"]) <= fold]
            self._fold(config, fold, summarise(upto, ""), stamp)
        self._finish(config, "FINISHED")

    def _sweep_runs(self) -> dict:
        """trial id -> (run id, status) of this sweep's configuration runs, by one search: a
        resume of 250 finished trials would otherwise ask the server for each (the few left
        open are then found again by run_id)."""
        if self._known is None:
            from mlflow.store.tracking import SEARCH_MAX_RESULTS_THRESHOLD    # a page of them all
            found = self.client.search_runs([self.experiment_id],
                                            max_results=SEARCH_MAX_RESULTS_THRESHOLD)
            self._known = {r.data.tags["trial_id"]: (r.info.run_id, r.info.status) for r in found
                           if r.data.tags.get(PARENT) == self.parent_id
                           and "trial_id" in r.data.tags}
        return self._known

    def _end(self, groups: dict | None = None) -> None:
        """The parent's summary from the records: each model's best CV mean over the
        configurations (the runs table's column of that metric; an image configuration's over
        all its splits' trials, `groups`), and what finished."""
        table = relabelled(self.store.read_parts(), groups or {})
        ok = table[table["status"] != "failed"] if len(table) else table
        failed = table[table["status"] == "failed"]["trial_id"].nunique() if len(table) else 0
        metrics = {"configurations": ok["trial_id"].nunique() if len(ok) else 0,
                   "configurations_failed": failed,
                   "folds_done": len(ok.drop_duplicates(["trial_id", "fold"])) if len(ok) else 0,
                   **self._best_means(ok)}
        stamp = int(time.time() * 1000)
        self.client.log_batch(self.parent_id,
                              metrics=numeric_metrics(metrics, lambda k: True, stamp, 0))
        self.client.set_terminated(self.parent_id, "FAILED" if failed else "FINISHED")

    def _best_means(self, ok) -> dict:
        sign = TASKS[self.sweep["task"]].sign()
        best: dict = {}
        if not len(ok):
            return best
        for _, rows in ok.groupby("trial_id"):
            if "role" in rows and (rows["role"] == "reference").all():   # M = 1 is its own
                rows = rows.assign(model=REFERENCE_MODEL)    # model, as in the sweep's table
            for name, value in summarise(rows.to_dict("records"), "").items():
                if name.startswith(f"{self.metric}/") and name.count("/") == 1 \
                        and not math.isnan(value) \
                        and (name not in best or sign * value < sign * best[name]):
                    best[name] = value
        return best


def ui_hint(tracking_uri: str, name: str) -> str:
    """Where the sweep's runs table is in the MLflow UI."""
    if tracking_uri.startswith("sqlite"):
        ui = console_script("mlflow", "ui", "--backend-store-uri", tracking_uri, "--host",
                            "127.0.0.1", "--port", "5000")
        return f"  open the UI: {ui}\n    then http://127.0.0.1:5000{runs_page(tracking_uri, name)}"
    if tracking_uri.startswith("http"):
        return f"  runs table: {tracking_uri.rstrip('/')}{runs_page(tracking_uri, name)}"
    return f"  runs table: the experiment '{name}' (sidebar switch: Model training)"


def runs_page(tracking_uri: str, name: str) -> str:
    """The experiment's runs table. MLflow 3.17's UI ignores mlflow.experimentKind: its
    sidebar switch (GenAI by default, remembered by the browser) or ?workflowType= decides."""
    try:
        experiment = open_experiment(tracking_uri, name, None)[1]
    except TrackingError:      # the store is gone (a killed server)
        return f"/#/experiments (open '{name}'; sidebar switch: Model training)"
    return f"/#/experiments/{experiment}/runs?workflowType=machine_learning"


def describe(ops: list[dict], limit: int = 12) -> str:
    """One line per run: what of it is missing (`run`, folds, records/status, summary)."""
    what: dict = {}
    for op in ops:
        run = op["config"]["trial_id"] if "config" in op else "the sweep's run"
        label = {"sweep": "run", "start": "run", "end": "summary and status",
                 "finish": "records and status",
                 "settle": "folds, records and status"}.get(op["op"]) or f"fold {op['fold']}"
        what.setdefault(run, [])
        if label not in what[run]:
            what[run].append(label)
    lines = [f"    {run}: {', '.join(labels)}" for run, labels in what.items()]
    more = [f"    ... and {len(lines) - limit} more runs"] if len(lines) > limit else []
    return "\n".join(lines[:limit] + more)


class Ledger:
    """mlflow-unlogged.json in the results directory: the operations to apply again."""

    NAME = "mlflow-unlogged.json"
    # A copy or a full disk can cut it: what it listed is then lost to MLflow, not to the records
    FIX = ("put back a good copy of it, or delete it: what it listed is then not logged to "
           "MLflow (results.parquet keeps every record)")

    def __init__(self, store: ResultStore):
        self.store, self.path = store, f"{store.root}/{self.NAME}"

    def read(self) -> dict:
        return self.store.read_json(self.NAME, self.FIX) or {}

    def ops(self) -> list[dict]:
        return self.read().get("ops", [])

    def write(self, ops: list[dict], tracking_uri: str, sweep: dict,
              artifact_location: str | None, error: str) -> None:
        if not ops:
            self.store.delete(self.NAME)
            return
        self.store.write_json(self.NAME, {"tracking_uri": tracking_uri, "sweep": sweep,
                                          "artifact_location": artifact_location,
                                          "error": error, "ops": ops})
