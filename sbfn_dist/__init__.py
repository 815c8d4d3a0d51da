"""sbfn-dist: Structured Basis Function Networks (s-BFN) -- the library layer.

One trial, start to finish: data, splits, epsilon-modulated multi-hypothesis training,
combiners, competitors and tidy result records. No Ray and no MLflow in this package.

    from sbfn_dist import run_trial, TrialConfig, SBFNRegressor, SBFNClassifier
    from sbfn_dist import SBFNStackingRegressor, SBFNStackingClassifier   # over your own models
    sbfn_dist.load("my-model")          # any estimator saved with .save (docs/models.md)

The names load on first use, so that `import sbfn_dist.records` (what the analysis layer
reads) does not import torch.
"""

__version__ = "0.2.0"

_EXPORTS = {"run_trial": "sbfn_dist.experiment", "TrialConfig": "sbfn_dist.settings.config",
            "SBFNRegressor": "sbfn_dist.interfaces.estimators",
            "SBFNClassifier": "sbfn_dist.interfaces.estimators",
            "SBFNStackingRegressor": "sbfn_dist.interfaces.stacking_estimators",
            "SBFNStackingClassifier": "sbfn_dist.interfaces.stacking_estimators",
            "load": "sbfn_dist.interfaces.saved"}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sbfn_dist' has no attribute {name!r}")
