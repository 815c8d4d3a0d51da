"""Ray Tune sweeps over sbfn_dist trials (docs/sweeps.md). This folder holds what users call by
name -- the commands (`python -m sweeps.regression`, `sweeps.cifar10`, `sweeps run FILE`, ...)
and the Python API (api.py), the house's top floor (8); sweeps/commands/ holds what the
commands share (7), sweeps/engine/ everything they call (2 to 6; docs/design.md).

    from sweeps import Sweep
    result = Sweep.from_yaml("my-sweep.yaml").run()    # .frame, .result_grid, .path

Importing the package changes no global state (environment, logging, warnings) and imports
neither torch nor Ray: a sweep sets Ray's environment when it runs (sweeps/engine/common/environment.py),
and the API's names load on first use.
"""

_EXPORTS = {"Sweep": "sweeps.api", "SweepResult": "sweeps.api",
            "SweepFileError": "sweeps.engine.plan.sweep_keys"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sweeps' has no attribute {name!r}")
