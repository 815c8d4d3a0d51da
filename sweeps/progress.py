"""Driver-side callbacks: keep results.parquet current and print one progress line.

    [air_quality-regression80] trials 5/22 done, 2 running, 15 pending, 0 failed | folds 61/220 |
    best rmse 0.312 (sbfn_ls, M10_eps0.35_s0) | 3m05s elapsed, ~8m left
"""

import logging
import sys
import time

from ray.tune import Callback

from sbfn_dist import records
from sweeps.spaces import axis_text
from sweeps.store import ResultStore
from sweeps.trainable import folds_of


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


class StoreKeeper(Callback):
    """Rewrites results.parquet from the parts (at most every `every` s, and at each trial's
    end); writes a `failed` row for each configuration of a trial that ran out of retries."""

    def __init__(self, store: ResultStore, resolve, every: float = 10.0):
        self.store, self.resolve, self.every = store, resolve, every
        self.last = 0.0

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if time.monotonic() - self.last > self.every:
            self._consolidate()

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._consolidate()

    def on_trial_error(self, iteration, trials, trial, **info):
        for config in self.resolve(trial.config):      # each configuration of the pack
            if all(self.store.has_part(config["trial_id"], f) for f in folds_of(config)):
                continue  # every fold is in the store: its work is done, whatever Tune says
            self.store.write_failed(config["trial_id"], records.failed(config, error_text(trial)))
        self._consolidate()

    def on_experiment_end(self, trials, **info):
        self._consolidate()

    def _consolidate(self):
        self.store.consolidate()
        self.last = time.monotonic()


def error_text(trial) -> str:
    """The type and last line of the trial's latest error (its traceback: error.txt)."""
    exc = _last_error(trial)
    if exc is not None:
        cause = getattr(exc, "cause", None) or exc
        return f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1][:500]}"
    return f"trial failed (its traceback: {trial.path}/error.txt)"


def _last_error(trial):
    """The error Tune pickled for the trial: in the driver's staging directory, where it was just
    written (the copy in storage comes later, at the next sync), else the copy in storage."""
    from ray import cloudpickle     # what Tune pickled the error with
    try:
        with open(trial.pickled_error_file, "rb") as f:
            return cloudpickle.load(f)
    except Exception:  # noqa: BLE001 - gone, or unreadable here: the copy in storage may remain
        pass
    try:
        return trial.get_pickled_error()
    except Exception:  # noqa: BLE001 - the error file may be gone; the text one may remain
        return None


class QuietTrialFailures(logging.Filter):
    """Tune logs each failed attempt of a trial with the worker's whole traceback, and the trials
    that never finished at the end. ProgressLine reports each failure (its error's type and
    message, and where its traceback is) and the summary lists the trials that failed for good,
    so these records are dropped and the tracebacks stay in the trials' error.txt."""

    LOGGERS = ("ray.tune.execution.tune_controller", "ray.tune.tune")
    MESSAGES = ("Trial task failed for trial", "Trials did not complete")

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.MESSAGES)

    @classmethod
    def install(cls) -> None:
        for name in cls.LOGGERS:
            logger = logging.getLogger(name)
            if not any(isinstance(f, cls) for f in logger.filters):
                logger.addFilter(cls())


class ProgressLine(Callback):
    """One line per finished fold (at most every `every` seconds) and per finished trial."""

    def __init__(self, name: str, total_folds: int, mode: str, every: float = 5.0):
        self.name, self.total_folds, self.mode, self.every = name, total_folds, mode, every
        self.start = time.monotonic()
        self.last = 0.0
        self.folds: dict = {}
        self.computed = 0
        self.max_running = 0

    def setup(self, **info):
        # Also after a resume (this object is unpickled then): the rate counts this run only.
        self.start = time.monotonic()
        self.computed = 0
        QuietTrialFailures.install()

    def on_step_end(self, iteration, trials, **info):
        running = sum(t.status == "RUNNING" for t in trials)
        self.max_running = max(self.max_running, running)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.folds[trial.trial_id] = result.get("folds_done", 0)
        self.computed += bool(result.get("fold_computed", True))
        if time.monotonic() - self.last > self.every:
            self.print(trials)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.print(trials)

    def on_experiment_end(self, trials, **info):
        self.print(trials)

    def on_trial_error(self, iteration, trials, trial, **info):
        self.print(trials, note=f"trial {trial} failed after its retries: {error_text(trial)} "
                                f"(traceback: {trial.path}/error.txt)")

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.print(trials, note=f"trial {trial} failed, retrying it: {error_text(trial)}")

    def _best(self, trials):
        # Each trial's latest (running CV) objective; trials finished before a --resume report
        # nothing in this run, so Tune's restored last_result speaks for them.
        scored = [(v, t) for t in trials if (v := _objective(t)) is not None]
        if not scored:
            return None
        pick = min if self.mode == "min" else max
        value, trial = pick(scored, key=lambda vt: vt[0])
        return value, trial.last_result.get("objective_model", ""), _label(trial)

    def _done(self, trials) -> int:
        return sum(self.folds.get(t.trial_id, (t.last_result or {}).get("folds_done", 0))
                   for t in trials)

    def print(self, trials, note: str = "") -> None:
        self.last = time.monotonic()
        line = self.line(trials)
        if line != getattr(self, "printed", None) or note:
            print(line + (f"\n    {note}" if note else ""), file=sys.stdout, flush=True)
        self.printed = line

    def line(self, trials) -> str:
        count = lambda *s: sum(t.status in s for t in trials)  # noqa: E731
        done = self._done(trials)
        elapsed = time.monotonic() - self.start
        # Folds read back from the store after a resume are instant: the rate counts computed ones.
        left = elapsed / self.computed * (self.total_folds - done) \
            if self.computed and count("RUNNING", "PENDING") else None   # ASHA may stop early
        best, found = "", self._best(trials)
        if found:
            best = f" | best {found[0]:.4g} ({found[1]}, {found[2]})"
        return (f"[{self.name}] trials {count('TERMINATED')}/{len(trials)} done, "
                f"{count('RUNNING')} running, {count('PENDING')} pending, {count('ERROR')} failed"
                f" | folds {done}/{self.total_folds}{best} | {_clock(elapsed)} elapsed"
                + (f", ~{_clock(left)} left" if left is not None else ""))


def _objective(trial):
    value = (trial.last_result or {}).get("objective")
    return None if value is None or value != value else value   # NaN: a diverged trial


def _label(trial) -> str:
    """The axes of the trial's best configuration: the pack member named by its result's
    objective_key, else the trial's only (or Optuna's sampled) configuration."""
    params = trial.config.get("trial", {}).get("pack") or [trial.config]
    keys = (trial.last_result or {}).get("trial_keys") or []
    best = (trial.last_result or {}).get("objective_key")
    config = params[keys.index(best)] if best in keys and len(keys) == len(params) else params[0]
    return " ".join(f"{k}={axis_text(v)}" for k, v in config.items()
                    if not isinstance(v, (list, dict)))
