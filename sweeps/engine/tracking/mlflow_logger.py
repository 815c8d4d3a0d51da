"""The sweep's MLflow logger: a Ray Tune callback of the driver that queues each trial event's
logging operations for the one thread that applies them (mlflow_runs.py: the runs' layout, why the
driver logs and why through a queue)."""

import queue
import sys
import threading
import time

from ray.tune import Callback

from sweeps.engine.common.next_steps import python_module
from sweeps.engine.common.store import ResultStore
from sweeps.engine.tracking.mlflow_runs import (COOLDOWN_S, Ledger, SweepTracker,
                                                client_environment, describe, first_line,
                                                open_experiment)


class MLflowSweepLogger(Callback):
    """Tune's callback: queues each event's operations for one logging thread and returns.
    `resolve`: a Tune config -> its planned configs (sweeps.engine.plan.planning.Planned.configs_of),
    whose fields are the runs' params."""

    def __init__(self, tracking_uri: str, sweep: dict, resolve, store: ResultStore,
                 artifact_location: str | None = None, groups: dict | None = None):
        self.tracking_uri, self.sweep, self.store = tracking_uri, sweep, store
        self.resolve, self.groups = resolve, groups or {}
        self.artifact_location = artifact_location
        open_experiment(tracking_uri, sweep["name"], artifact_location)   # fail fast, here
        self._fresh()

    def _fresh(self) -> None:
        """What lives only in this process (Tune pickles its callbacks for resume)."""
        self.queue: queue.Queue = queue.Queue()
        self.worker: threading.Thread | None = None
        self.tracker: SweepTracker | None = None
        self.missed: list = []
        self.started: set = set()       # the Tune trials this process ran (not skipped)
        self.error = ""
        self.down_until = 0.0

    def __getstate__(self):
        keep = ("tracking_uri", "sweep", "resolve", "store", "artifact_location", "groups")
        return {k: self.__dict__[k] for k in keep}

    def __setstate__(self, state):
        self.__dict__.update({"groups": {}, **state})     # an older sweep's: no groups
        self._fresh()

    # --- Tune's hooks: queue and return ---------------------------------------------------------
    def setup(self, **info):
        self._submit(lambda: [{"op": "sweep"}])

    def on_trial_start(self, iteration, trials, trial, **info):
        self.started.add(trial.trial_id)
        self._submit(self._per_config(trial, lambda c: {"op": "start", "config": c}))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        summaries, fold = result.get("configs", {}), result.get("fold")
        stamp = int(result.get("timestamp", time.time()) * 1000)
        self._submit(self._per_config(trial, lambda c: {
            "op": "fold", "config": c, "fold": fold, "summary": summaries[c["trial_id"]],
            "stamp": stamp} if c["trial_id"] in summaries and fold is not None else None))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._submit(self._per_config(trial, lambda c: {"op": "finish", "config": c,
                                                        "status": "FINISHED"}))

    def on_trial_error(self, iteration, trials, trial, **info):
        self._submit(self._per_config(trial, lambda c: {"op": "finish", "config": c,
                                                        "status": "FAILED"}))

    def on_experiment_end(self, trials, **info):
        # A resume skips the trials Tune's saved state has done; a driver killed between a
        # trial's end and its logging left that run open (RUNNING, folds missing) or unopened.
        for trial in trials:
            if trial.status == "TERMINATED" and trial.trial_id not in self.started:
                self._submit(self._per_config(trial, lambda c: {"op": "settle", "config": c}))
        self._submit(lambda: [{"op": "end", "groups": self.groups}])
        self.queue.put(None)
        if self.worker is not None:
            self.worker.join()
        self.report(sys.stdout)

    # --- the logging thread -----------------------------------------------------------------------
    def _per_config(self, trial, make):
        """Operations for each configuration of the trial's pack, made in the thread; each
        holds its config as a plain dict (to_dict): an operation is JSON, saved where it fails."""
        params = trial.config

        def ops():
            return [op for op in map(make, (c.to_dict() for c in self.resolve(params))) if op]
        return ops

    def _submit(self, ops) -> None:
        if self.worker is None:
            self.worker = threading.Thread(target=self._work, daemon=True, name="mlflow-logger")
            self.worker.start()
        self.queue.put(ops)

    def _work(self) -> None:
        with client_environment(self.tracking_uri):
            self._drain()

    def _drain(self) -> None:
        while (ops := self.queue.get()) is not None:
            try:
                batch = ops()
            except Exception as exc:  # noqa: BLE001 - a bug here must not end the thread
                print(f"[{self.sweep['name']}] MLflow: could not make the logging operations "
                      f"of an event ({type(exc).__name__}: {exc})", flush=True)
                continue
            for op in batch:
                self._apply(op)

    def _apply(self, op: dict) -> None:
        if time.monotonic() < self.down_until:
            self.missed.append(op)
            return
        try:
            if self.tracker is None:
                self.tracker = SweepTracker(self.tracking_uri, self.sweep, self.store,
                                            self.artifact_location)
            self.tracker.apply(op)
        except Exception as exc:  # noqa: BLE001 - listed and saved; the sweep goes on
            self.missed.append(op)
            self.error = f"{type(exc).__name__}: {first_line(exc)}"
            self.down_until = time.monotonic() + COOLDOWN_S
            print(f"[{self.sweep['name']}] MLflow logging failed ({self.error}); the sweep goes "
                  f"on, retrying in {COOLDOWN_S:.0f} s; what is not logged is listed at the end",
                  flush=True)

    # --- the end --------------------------------------------------------------------------------
    def report(self, out) -> None:
        """Save what did not reach the store (with what an earlier run of this sweep missed)
        and list it with the command that logs it later."""
        if not self.missed:
            return
        ledger = Ledger(self.store)
        ops = ledger.ops() + self.missed
        ledger.write(ops, self.tracking_uri, self.sweep, self.artifact_location, self.error)
        print(f"\n[{self.sweep['name']}] MLflow: {len(self.missed)} logging operations did not "
              f"reach {self.tracking_uri} ({self.error}); not logged:\n{describe(ops)}\n"
              "  results.parquet holds every record. Once the tracking store answers, log them "
              f"with\n    {python_module('sweeps.relog', self.store.location)}\n  (the list: "
              f"{ledger.path})",
              file=out, flush=True)
