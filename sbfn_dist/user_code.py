"""The import paths a setting may name: a user's scikit-learn model (`package.module.ClassName`:
competitors, plug-in hypotheses) and a user's member network factory (`package.module:build`,
the `ensemble` setting). Imported (and a model built) once when the setting is checked, so a typo
or an unusable object is refused, with the import's own error in one line, before any work
starts. Importing a path runs the user's code, trusted as any Python import is. scikit-learn is
imported only when a model path is given (the settings stay free of it and of torch). A room of
the library's floor 0: settings/fields.py checks a path with it, learners/ builds from it."""

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
    cls, why = imported(module, attr)
    if why:
        return None, why
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


def is_factory_path(name: str) -> bool:
    """A member factory is named as package.module:build: the colon sets it apart from the
    built-in architecture names (and from a model's dotted class path)."""
    return ":" in name


def import_factory(path: str):
    """(the function at `path` = package.module:build, "") if it is callable, else (None, why
    not): the error its import raised, in one line. What it builds is checked on a dummy batch
    where the data's shape is known (sbfn_dist.learners.factories.check_factory)."""
    module, _, attr = path.partition(":")
    if not module or not attr:
        return None, f"'{path}' is no factory path (package.module:build)"
    build, why = imported(module, attr)
    if why:
        return None, why
    if not callable(build):
        return None, (f"{path} is not callable (its type: {type(build).__name__}): a factory "
                      "is a function build(in_channels, n_classes)")
    return build, ""


def imported(module: str, attr: str):
    """(module.attr, "") or (None, why the import failed): the error named as Python named it,
    its first line only (a refusal is one line)."""
    try:
        found = getattr(importlib.import_module(module), attr)
    except AttributeError:
        return None, f"module {module} has no {attr!r}"
    except SystemExit as exc:     # a script, not a library: it must not end the sweep
        return None, f"importing {module} called sys.exit({exc.code!r})"
    except ImportError as exc:
        return None, (f"importing {module} failed: {named_error(exc)} (install it, or put its "
                      "folder on PYTHONPATH: here and on every Ray worker)")
    except Exception as exc:
        return None, f"importing {module} failed: {named_error(exc)}"
    return found, ""


def named_error(exc: BaseException) -> str:
    """The exception as 'TypeError: its message', its first line only."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"
