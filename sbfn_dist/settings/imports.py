"""The import path of a user's scikit-learn model (`package.module.ClassName`), as a setting may
name one (competitors, plug-in hypotheses): imported and built once when the setting is checked,
so a typo or an unusable class is refused, with the import's own error, before any work starts.
scikit-learn is imported only when a path is given (the settings stay free of it)."""

import importlib
import inspect


def estimator_class(path: str, task: str):
    """The class at the import path `package.module.ClassName` if it is a scikit-learn model of
    `task` (a regressor, or a classifier with predict_proba) that builds with no arguments,
    else None (import_estimator says why)."""
    return import_estimator(path, task)[0]


def import_estimator(path: str, task: str) -> tuple[type | None, str]:
    """(the class at `path`, "") if it is a usable model of `task`, else (None, why not): the
    error its import or its construction raised, named as Python named it."""
    module, _, attr = path.rpartition(".")
    if not module:
        return None, f"'{path}' is no import path (package.module.ClassName)"
    try:
        cls = getattr(importlib.import_module(module), attr)
    except AttributeError:
        return None, f"module {module} has no {attr!r}"
    except SystemExit as exc:     # a script, not a library: it must not end the sweep
        return None, f"importing {module} called sys.exit({exc.code!r})"
    except ImportError as exc:
        return None, (f"importing {module} failed: {type(exc).__name__}: {exc} (install it, or "
                      "put its folder on PYTHONPATH: here and on every Ray worker)")
    except Exception as exc:
        return None, f"importing {module} failed: {type(exc).__name__}: {exc}"
    if not inspect.isclass(cls):
        return None, f"{path} is a {type(cls).__name__}, not a class"
    try:
        probe = cls()
    except (Exception, SystemExit) as exc:
        return None, f"{attr}() failed: {type(exc).__name__}: {exc} (a plug-in builds with no " \
                     "arguments)"
    why = _unusable(probe, attr, task)
    return (None if why else cls), why


def _unusable(probe, name: str, task: str) -> str:
    """Why an instance cannot serve `task` ("" if it can)."""
    from sklearn.base import is_classifier, is_regressor    # scikit-learn only for a path
    try:
        regressor, classifier = is_regressor(probe), is_classifier(probe)
    except (AttributeError, TypeError):   # scikit-learn's tags need BaseEstimator
        regressor = classifier = None
    if regressor is None or not hasattr(probe, "fit"):
        return (f"{name} is not a scikit-learn estimator (no fit, or no estimator tags: "
                "derive it from sklearn.base.BaseEstimator and RegressorMixin or ClassifierMixin)")
    if task == "regression":
        return "" if regressor else f"{name} is not a regressor"
    # classifiers are scored by their probabilities (NLL, ECE)
    if not (classifier and hasattr(probe, "predict_proba")):
        return f"{name} is not a classifier with predict_proba"
    return ""
