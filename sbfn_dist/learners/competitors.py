"""The estimators registry: scikit-learn models that run beside the s-BFN, as competitor rows
and as plug-in hypotheses (columns of D, sbfn_dist.combiners.plugins), each as a regressor or a
classifier for the task.

The paper's three competitors (SVM-RBF, random forest, gradient boosting) and five more a
practitioner would bring. Each has a single default ("default") and a small documented grid
("small", 2 to 6 settings): a competitor trial runs every setting of its grid (so its quartiles
mean something); a plug-in chooses one of them by inner CV on the training part
(`plugin_tuning='inner_cv'`). Any other scikit-learn-compatible estimator is named by its
import path (`package.module.ClassName`) and runs at its own defaults. The models see the same
standardised folds as the s-BFN; regression predictions are mapped back to target units by the
caller. The grids are justified in docs/method.md ("The estimators registry").
"""

import inspect
from itertools import product

from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor,
                              GradientBoostingClassifier, GradientBoostingRegressor,
                              HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.svm import SVC, SVR

from sbfn_dist.settings.tasks import ESTIMATORS
from sbfn_dist.user_code import estimator_class


def _grid(**axes) -> list[dict]:
    keys = list(axes)
    return [dict(zip(keys, values)) for values in product(*axes.values())]


def _logistic(seed, alpha):
    """The classification counterpart of ridge: L2-penalised logistic regression, C = 1/alpha."""
    return LogisticRegression(C=1.0 / alpha, max_iter=1000)


# Per name: the model of each task, and its settings. SVR's epsilon-tube has no classifier
# counterpart, so the classifier's settings drop it. SVC's probabilities (for NLL and ECE) are
# Platt's sigmoid fitted on 5 internal folds, then one SVC on all rows: what SVC(probability=True)
# did, in the form scikit-learn 1.9 asks for. Histogram boosting runs without early stopping:
# its internal validation split would make the model depend on the row count's threshold.
REGISTRY = {
    "svm_rbf": {
        "regression": lambda seed, **p: SVR(kernel="rbf", **p),
        "classification": lambda seed, **p: CalibratedClassifierCV(SVC(kernel="rbf", **p),
                                                                   ensemble=False),
        "default": {"C": 1.0, "gamma": "scale", "epsilon": 0.1},
        "small": _grid(C=[1.0, 10.0], gamma=["scale", 0.02], epsilon=[0.1]),
    },
    "random_forest": {
        "regression": lambda seed, **p: RandomForestRegressor(random_state=seed, n_jobs=1, **p),
        "classification": lambda seed, **p: RandomForestClassifier(random_state=seed, n_jobs=1,
                                                                   **p),
        "default": {"n_estimators": 100, "max_features": 1.0, "min_samples_leaf": 1},
        "small": _grid(n_estimators=[100], max_features=[1.0, 0.33], min_samples_leaf=[1, 5]),
    },
    "gradient_boosting": {
        "regression": lambda seed, **p: GradientBoostingRegressor(random_state=seed, **p),
        "classification": lambda seed, **p: GradientBoostingClassifier(random_state=seed, **p),
        "default": {"n_estimators": 100, "learning_rate": 0.1, "max_depth": 3},
        "small": _grid(n_estimators=[200], learning_rate=[0.05, 0.1], max_depth=[3, 5]),
    },
    # Geurts et al. 2006 use all features for regression; p/3 is the forests' classic
    # regression heuristic: the grid holds both.
    "extra_trees": {
        "regression": lambda seed, **p: ExtraTreesRegressor(random_state=seed, n_jobs=1, **p),
        "classification": lambda seed, **p: ExtraTreesClassifier(random_state=seed, n_jobs=1,
                                                                 **p),
        "default": {"n_estimators": 100, "max_features": 1.0},
        "small": _grid(n_estimators=[300], max_features=[1.0, 0.33]),
    },
    "hist_gradient_boosting": {
        "regression": lambda seed, **p: HistGradientBoostingRegressor(
            random_state=seed, early_stopping=False, **p),
        "classification": lambda seed, **p: HistGradientBoostingClassifier(
            random_state=seed, early_stopping=False, **p),
        "default": {"max_iter": 100, "learning_rate": 0.1},
        "small": _grid(max_iter=[500], learning_rate=[0.05, 0.1]),
    },
    "knn": {
        "regression": lambda seed, **p: KNeighborsRegressor(**p),
        "classification": lambda seed, **p: KNeighborsClassifier(**p),
        "default": {"n_neighbors": 5, "weights": "uniform"},
        "small": _grid(n_neighbors=[5, 10, 20], weights=["uniform", "distance"]),
    },
    "ridge": {
        "regression": lambda seed, **p: Ridge(**p),
        "classification": _logistic,
        "default": {"alpha": 1.0},
        "small": _grid(alpha=[0.1, 1.0, 10.0, 100.0]),
    },
    # One hidden layer of 100 (scikit-learn's default) with early stopping on 10% of the rows;
    # the grid is its L2 penalty.
    "mlp": {
        "regression": lambda seed, **p: MLPRegressor(random_state=seed, early_stopping=True,
                                                     max_iter=300, **p),
        "classification": lambda seed, **p: MLPClassifier(random_state=seed, early_stopping=True,
                                                          max_iter=300, **p),
        "default": {"hidden_layer_sizes": [100], "alpha": 1e-4},
        "small": _grid(hidden_layer_sizes=[[100]], alpha=[1e-4, 1e-2]),
    },
}
assert tuple(REGISTRY) == ESTIMATORS, \
    "sbfn_dist.settings.tasks.ESTIMATORS lists the registry's names"
# Settings a task's model does not take, left out of its records (they were not used).
UNUSED = {("svm_rbf", "classification"): ("epsilon",)}


def competitor_configs(name: str, grid: str, task: str = "regression") -> list[dict]:
    """The settings of `name` in `grid` ("default" or "small"); an import path has one: {}."""
    if name not in REGISTRY:
        return [{}]
    spec = REGISTRY[name]
    drop = UNUSED.get((name, task), ())
    configs = [spec["default"]] if grid == "default" else spec[grid]
    return [{k: v for k, v in c.items() if k not in drop} for c in configs]


def build_competitor(name: str, params: dict, seed: int, task: str = "regression"):
    if name in REGISTRY:
        return REGISTRY[name][task](seed, **_tuples(params))
    cls = estimator_class(name, task)
    seeded = "random_state" in inspect.signature(cls).parameters
    return cls(**params, **({"random_state": seed} if seeded else {}))


def _tuples(params: dict) -> dict:
    """Lists in a setting (JSON-friendly in records) become the tuples scikit-learn expects."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
