"""The environment a sweep gives Ray while it runs, and nowhere else: importing sweeps changes
nothing (a notebook that imports it keeps its own settings).

    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0   a local Ray binds 127.0.0.1 (Linux too), not the
                                          machine's network address
    RAY_AUTH_MODE=disabled                no auth-token notice, no ~/.ray/auth_token written
    RAY_AIR_NEW_OUTPUT=0                  Tune's legacy output, which honours verbose=0: the
                                          sweep's own progress line replaces Tune's tables
    RAY_COLOR_PREFIX=0                    only when stdout is no terminal: Ray prefixes the lines
                                          it forwards from trials with raw ANSI colour codes
    RAY_prestart_worker_first_driver=0    a local Ray starts worker processes as trials need them,
                                          not one per CPU when the driver connects: a trial is a
                                          Tune actor on a worker of its own, and the prestarted
                                          ones mostly sat idle (a one-trial-at-a-time sweep on 2
                                          CPUs started 4 workers, 2 without; 0.8 CPU-s less, the
                                          same wall time; on a 16-core laptop, 16 idle workers)

Ray reads the first when `ray` is first imported (ray._private.ray_constants), so the sweep
plans without importing Ray and sets these before it connects; a process that imported Ray
before the sweep binds wherever that import decided (set the variable yourself then). The
others are read by ray.init (the raylet it starts), Tuner.fit and the driver as it prints a
trial's line. A variable the user set is never changed.

Logs: the sweep prints its own progress and summary. Unless --verbose, the MLflow and Optuna
loggers show warnings and errors only while it runs (their INFO lines -- "Creating initial
MLflow database tables", "A new study created" -- say nothing a user acts on); their levels
are restored afterwards. A Ray the sweep starts quiets Tune's INFO lines in its workers too
(sweeps/engine/run/resources.py, QUIET_WORKERS), which Ray forwarded after the summary.
"""

import contextlib
import logging
import os
import sys


RAY_DEFAULTS = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
                "RAY_AIR_NEW_OUTPUT": "0", "RAY_prestart_worker_first_driver": "0"}
# Each library sets its own logger to INFO when first imported (so a level set earlier is
# lost): quiet_libraries() is called again by the code that imports them (tracking, study).
QUIET_LOGGERS = ("mlflow", "optuna")
_saved_levels: dict | None = None     # while a quiet sweep runs: each quieted logger's level


@contextlib.contextmanager
def ray_environment(verbose: bool = False):
    """RAY_DEFAULTS (and no colour codes into a file or pipe) while the sweep runs, and quiet
    library logs unless `verbose`. The Ray processes started inside keep the variables: they
    inherited them at start."""
    with defaults_while({**RAY_DEFAULTS, **_colour_settings()}), quiet_logs(not verbose):
        yield


def _colour_settings() -> dict:
    return {} if sys.stdout.isatty() else {"RAY_COLOR_PREFIX": "0"}


@contextlib.contextmanager
def quiet_logs(quiet: bool = True):
    """Warnings and errors only from QUIET_LOGGERS for the block (a nested block leaves it to
    the outer one); their levels are restored afterwards."""
    global _saved_levels
    if not quiet or _saved_levels is not None:
        yield
        return
    _saved_levels = {}
    quiet_libraries()
    try:
        yield
    finally:
        for name, level in _saved_levels.items():
            logging.getLogger(name).setLevel(level)
        _saved_levels = None


def quiet_libraries() -> None:
    """Inside quiet_logs: lower the chatter of the libraries imported so far (call it after
    importing one). Outside it, nothing."""
    if _saved_levels is None:
        return
    for name in QUIET_LOGGERS:
        if name in sys.modules and name not in _saved_levels:
            logger = logging.getLogger(name)
            _saved_levels[name] = logger.level
            logger.setLevel(max(logger.level, logging.WARNING))


@contextlib.contextmanager
def defaults_while(values: dict):
    """`values` for the variables not set, for the duration of the block; afterwards those the
    block set (and nothing else changed since) are removed again."""
    added = {k: v for k, v in values.items() if k not in os.environ}
    with values_while(added):
        yield


@contextlib.contextmanager
def values_while(values: dict):
    """`values` set for the duration of the block, whatever was set before; afterwards each
    variable the block changed (and nothing else changed since) is as it was."""
    before = {k: os.environ.get(k) for k, v in values.items() if os.environ.get(k) != v}
    os.environ.update({k: values[k] for k in before})
    try:
        yield
    finally:
        for key, old in before.items():
            if os.environ.get(key) != values[key]:
                continue
            if old is None:
                del os.environ[key]
            else:
                os.environ[key] = old
