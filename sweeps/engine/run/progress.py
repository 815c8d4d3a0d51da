"""Driver-side callbacks: record the configurations that failed for good, and print one progress
line. Neither does work that grows with the sweep at each trial's end: results.parquet is merged
from the parts once, when the run ends (sweeps/engine/sweep.py), and the parts are the table
meanwhile.

    [air_quality-regression80] configurations 5/22 done, 2 running, 15 pending, 0 failed |
    folds 61/220 | best sbfn_ls_linear rmse 0.041 (n_members=10 epsilon=0.35) | 3m05s elapsed, ~8m left
"""

import logging
import sys
import time
from collections import Counter

from ray import cloudpickle
from ray.tune import Callback

from sbfn_dist import records
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan.grid_trials import setting_text
from sweeps.engine.plan.planning import folds_of, points_of, settings_of
from sweeps.engine.run.fold_means import error_line
from sweeps.engine.run.trainable import PackMatesFailed


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


class StoreKeeper(Callback):
    """Writes a `failed` row for each configuration of a trial that ran out of retries and
    misses a fold (a pack-mate that finished every fold keeps its records). `resolve`: a Tune
    config -> its planned configs (sweeps.engine.plan.planning.Planned.configs_of)."""

    def __init__(self, store: ResultStore, resolve):
        self.store, self.resolve = store, resolve

    def on_trial_error(self, iteration, trials, trial, **info):
        for config in self.resolve(trial.config):      # each configuration of the pack
            key = config["trial_id"]
            if all(self.store.has_part(key, f) for f in folds_of(config)):
                continue  # every fold is in the store: its work is done, whatever Tune says
            self.store.write_failed(key, records.failed(config, error_text(trial, key)))


def error_text(trial, key: str = "") -> str:
    """The type and last line of the trial's latest error (its traceback: error.txt); with a
    configuration's key, that configuration's own error where several of a pack failed."""
    exc = _last_error(trial)
    if exc is None:
        return f"trial failed (its traceback: {trial.path}/error.txt)"
    cause = getattr(exc, "cause", None) or exc
    if isinstance(cause, PackMatesFailed):
        return cause.errors.get(key) or str(cause)
    return error_line(cause)


def _last_error(trial):
    """The error Tune pickled for the trial: in the driver's staging directory, where it was just
    written (the copy in storage comes later, at the next sync), else the copy in storage."""
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


class StoredFolds:
    """What the store holds of the sweep, as the last progress line counts it: the folds in
    parts/ of each planned configuration (`planned`: trial key -> its folds), and of a sampled
    search's draws (`each`: a draw's folds) by the keys their trials report. Tune's own count
    can lag the store after a kill and a resume (its state was saved before the last parts were
    written: "folds 25/30" beside 27 stored, issue 48)."""

    def __init__(self, store: ResultStore, planned: dict, each: list):
        self.store, self.planned, self.each = store, planned, each

    def folds(self, keys) -> int:
        stored = self.store.stored_folds()
        return sum(len(stored.get(key, set()) & set(self.planned.get(key, self.each)))
                   for key in {*self.planned, *keys})


class ProgressLine(Callback):
    """One line at most every `every` seconds while results come in, one per failure, and one at
    the end. It counts configurations (a Tune trial trains a pack of them); `configurations` is
    how many the sweep plans (Tune creates its trials as it goes). "best" is the best CV mean of
    the sweep's `objective` model (not a competitor's or an M = 1 reference's) among the
    configurations with every fold they planned: a running mean over a lucky first fold, or an
    ASHA-stopped configuration's, is not set beside whole ones (the end table's rule)."""

    def __init__(self, name: str, total_folds: int, mode: str, configurations: int = 0,
                 objective: str = "", metric: str = "", every: float = 5.0,
                 groups: dict | None = None, stored: StoredFolds | None = None):
        self.name, self.total_folds, self.mode, self.every = name, total_folds, mode, every
        self.stored = stored            # the last line's folds: the store's (StoredFolds)
        self.configurations, self.objective, self.metric = configurations, objective, metric
        # trial key -> its configuration's id, for trials of one fold each (an image sweep's
        # splits): the best ranks configurations by their mean over all their splits.
        self.groups = groups or {}
        self.start = time.monotonic()
        self.last = 0.0
        self.folds: dict = {}
        self.computed = 0
        self.computing: set = set()     # trials that computed a fold in this run
        self.evidence = False           # a configuration finished computing in this run
        self.max_running = 0

    def setup(self, **info):
        # Also after a resume (this object is unpickled then): the rate counts this run only,
        # and its failures are told afresh.
        self.start = time.monotonic()
        self.computed, self.computing, self.evidence = 0, set(), False
        self.folds_stored = None        # counted as the run ends (on_experiment_end)
        self.told: set = set()
        QuietTrialFailures.install()

    def on_step_end(self, iteration, trials, **info):
        running = sum(t.status == "RUNNING" for t in trials)
        self.max_running = max(self.max_running, running)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self.folds[trial.trial_id] = result.get("folds_done", 0)
        if result.get("fold_computed", True):
            self.computed += 1
            self.computing.add(trial.trial_id)
        self.print(trials, force=False)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.evidence |= trial.trial_id in self.computing
        self.print(trials, force=False)

    def on_experiment_end(self, trials, **info):
        stored = getattr(self, "stored", None)      # unpickled from an older sweep's run: none
        if stored is not None:
            self.folds_stored = stored.folds(k for t in trials
                                             for k in (t.last_result or {}).get("trial_keys", ()))
        self.print(trials)

    def on_trial_error(self, iteration, trials, trial, **info):
        self.print(trials, note=self.failure(trial, "failed after its retries",
                                             f" (traceback: {trial.path}/error.txt)"))

    def on_trial_recover(self, iteration, trials, trial, **info):
        self.print(trials, note=self.failure(trial, "failed, retrying it"))

    def failure(self, trial, what: str, where: str = "") -> str:
        """The note on a failed attempt, its error whole; "" for an error already told so in
        this run: a fault every trial meets (data no machine has) came once per trial and
        retry, ~20 times. The first repeat says that the others are only counted (the
        progress line's failed, the summary's list)."""
        error = error_text(trial)
        told = self.__dict__.setdefault("told", set())    # set by setup, each run
        if (what, error) not in told:
            told.add((what, error))
            return f"trial {trial} {what}: {error}{where}"
        if ("repeat", what) in told:
            return ""
        told.add(("repeat", what))
        return (f"trial {trial} {what} with the same error (further ones are only counted; "
                "the summary lists the configurations that failed)")

    def print(self, trials, note: str = "", force: bool = True) -> None:
        if not (force or note) and time.monotonic() - self.last < self.every:
            return
        self.last = time.monotonic()
        line = self.line(trials)
        if line != getattr(self, "printed", None) or note:
            print(line + (f"\n    {note}" if note else ""), file=sys.stdout, flush=True)
        self.printed = line

    def line(self, trials) -> str:
        count = self._count(trials)
        done = getattr(self, "folds_stored", None)
        done = self._done(trials) if done is None else done
        elapsed = time.monotonic() - self.start
        # Folds read back from the store after a resume are instant: the rate counts computed
        # ones, and only once a configuration has finished here (before, the first folds carry
        # the workers' start and the rate overstates the time left many times over).
        left = elapsed / self.computed * (self.total_folds - done) \
            if self.evidence and self.computed and count["running"] + count["pending"] else None
        found = self._best(trials)
        best = "" if found is None else \
            f" | best {' '.join(filter(None, (found[1], self.metric)))} {found[0]:.4g} ({found[2]})"
        stopped = f"{count['stopped']} stopped early, " if count["stopped"] else ""
        return (f"[{self.name}] configurations {count['done']}/{count['total']} done, "
                f"{count['running']} running, {count['pending']} pending, {stopped}"
                f"{count['failed']} failed | folds {done}/{self.total_folds}{best} | "
                f"{_clock(elapsed)} elapsed"
                + (f", ~{_clock(left)} left" if left is not None else ""))

    def _count(self, trials) -> dict:
        """Configurations done (every fold), running, pending (their trial, one an
        interruption stopped before its first fold, or no trial yet), stopped before their
        last fold (by ASHA, or an interruption) and failed."""
        count = dict.fromkeys(("done", "running", "pending", "stopped", "failed"), 0)
        for trial in trials:
            size = len(points_of(trial.config))
            if trial.status == "TERMINATED" and "folds_done" not in (trial.last_result or {}):
                count["pending"] += size    # stopped before its first fold: not started
            elif trial.status in ("TERMINATED", "ERROR"):
                complete = _complete(trial, size)
                count["done"] += complete
                count["failed" if trial.status == "ERROR" else "stopped"] += size - complete
            else:
                count["running" if trial.status == "RUNNING" else "pending"] += size
        known = sum(count.values())
        count["pending"] += max(0, self.configurations - known)     # no trial made for them yet
        count["total"] = max(self.configurations, known)
        return count

    def _best(self, trials):
        """(value, model, axes) of the best configuration with every planned fold so far (a
        configuration split by fold: every split). Each trial's latest CV means; trials
        finished before a --resume report nothing in this run, so Tune's restored last_result
        speaks for them."""
        groups = getattr(self, "groups", {})     # unpickled from an older sweep's run: none
        whole: dict = {}
        for trial in trials:
            for key, summary in _summaries(trial).items():
                if (_usable(summary.get("objective")) and _whole(trial, summary) and
                        (not self.objective or summary.get("objective_model") == self.objective)):
                    whole.setdefault(groups.get(key, key), []).append((trial, key, summary))
        planned = Counter(groups.values())
        scored = [(self._pooled([s for _, _, s in members]), members[0])
                  for group, members in whole.items() if len(members) >= planned.get(group, 1)]
        if not scored:
            return None
        split = [planned.get(groups.get(key, key), 1) > 1 for _, (_, key, _) in scored]
        points = [_settings(trial, key, s) for (_, (trial, key, _)), s in zip(scored, split)]
        # ties as the end table and the report break them (records.best_position)
        at = records.best_position([v for v, _ in scored], points, self.mode == "max")
        if at is None:                           # every pooled mean NaN: none to name
            return None
        value, (trial, key, summary) = scored[at]
        return value, summary.get("objective_model", ""), _label(trial, key, split[at])

    @property
    def _pick(self):
        """The better of values by the sweep's direction: min or max."""
        return min if self.mode == "min" else max

    def _pooled(self, summaries: list) -> float:
        """The objective over the folds of one configuration's summaries (one, or one per
        split): its objective model's best setting by the mean over all of them."""
        if len(summaries) == 1:
            return summaries[0]["objective"]
        prefix = f"{self.metric}/{summaries[0]['objective_model']}/"
        weights = [s["folds_done"] for s in summaries]
        means = {k: sum(s[k] * w for s, w in zip(summaries, weights)) / sum(weights)
                 for k in summaries[0] if k.startswith(prefix)
                 and all(_usable(s.get(k)) for s in summaries)}
        return self._pick(means.values(), default=float("nan"))

    def _done(self, trials) -> int:
        return sum(self.folds.get(t.trial_id, (t.last_result or {}).get("folds_done", 0))
                   for t in trials)


def _summaries(trial) -> dict:
    """Each configuration's running summary (run/fold_means.summarise) by trial key."""
    return (trial.last_result or {}).get("configs") or {}


def _complete(trial, size: int) -> int:
    """How many of the trial's `size` configurations have every fold (a failed pack-mate, or a
    configuration stopped early, has not). A finished trial of an older sweep's run, which
    did not report the folds it planned, counts as complete."""
    result = trial.last_result or {}
    if "folds_planned" not in result:
        return size if _finished_before(trial) else 0
    return sum(_whole(trial, s, on_record=True) for s in _summaries(trial).values())


def _whole(trial, summary: dict, on_record: bool = False) -> bool:
    """Whether a configuration's summary (of the trial's last result) covers every fold it
    planned; an older sweep's run did not report them: its finished trials are whole.
    on_record: or whether the store holds every fold of it -- a trial rerun after a --resume
    reads its folds back, and ASHA may stop it at a rung though its CV is whole (its Optuna
    sample told COMPLETE before the kill: "4 stopped early" beside 3 PRUNED, issue 32); its
    running mean covers fewer folds, so the best so far still waits for one that does."""
    result = trial.last_result or {}
    if "folds_planned" not in result:
        return _finished_before(trial)
    recorded = summary.get("folds_recorded", 0) if on_record else 0
    return max(summary.get("folds_done", 0), recorded) == result["folds_planned"]


def _finished_before(trial) -> bool:
    """A trial of an older sweep's run that finished: it reported folds (every run did). A trial
    that an interruption stopped before its first result is TERMINATED too, and Tune leaves it
    a last_result of its trial_id alone."""
    return trial.status == "TERMINATED" and "folds_done" in (trial.last_result or {})


def _usable(value) -> bool:
    return value is not None and value == value      # NaN: a diverged configuration


def _label(trial, key: str, split: bool = False) -> str:
    """The settings of the configuration `key` of the trial, as the end table shows them."""
    return " ".join(f"{k}={setting_text(k, v)}" for k, v in _settings(trial, key, split).items())


def _settings(trial, key: str, split: bool = False) -> dict:
    """The settings of the configuration `key` of the trial (its planned point; without its
    fold where the configuration is `split` by fold, each split a trial)."""
    return {k: v for k, v in settings_of(_point(trial, key)).items()
            if not isinstance(v, dict) and not (split and k == "fold")}


def _point(trial, key: str) -> dict:
    """The point of the configuration `key`: by its trial_id, else (an Optuna sample, an older
    sweep's pack) by its place in the result's trial_keys, else the trial's first."""
    points = points_of(trial.config)
    keys = [p.get("trial_id") for p in points]
    if key not in keys:
        keys = (trial.last_result or {}).get("trial_keys") or []
    return points[keys.index(key)] if key in keys and len(keys) == len(points) else points[0]
