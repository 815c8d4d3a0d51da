"""Ray Tune sweeps over sbfn_dist trials: spaces, trainable, runner, the commands, and the Python
API (docs/sweeps.md).

    from sweeps import Sweep
    result = Sweep.from_yaml("my-sweep.yaml").run()    # .frame, .result_grid, .path

Importing the package changes no global state (environment, logging, warnings) and imports
neither torch nor Ray: a sweep sets Ray's environment when it runs (sweeps/environment.py), and
the API's names load on first use.
"""

_EXPORTS = {"Sweep": "sweeps.api", "SweepResult": "sweeps.api",
            "SweepFileError": "sweeps.sweepfile"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sweeps' has no attribute {name!r}")
