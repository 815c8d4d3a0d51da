"""The paper's competitors through scikit-learn: SVM-RBF, random forest, gradient boosting, each
as a regressor or a classifier for the task.

Each has a small documented grid ("small": 4 configurations) so that its quartiles across
configurations mean something, and a single default ("default") for quick runs and plug-ins.
The models see the same standardised folds as the s-BFN; regression predictions are mapped back
to target units by the caller. Grids are justified in docs/method.md.
"""

from itertools import product

from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.svm import SVC, SVR


def _grid(**axes) -> list[dict]:
    keys = list(axes)
    return [dict(zip(keys, values)) for values in product(*axes.values())]


# Per name: the model of each task, and its settings. SVR's epsilon-tube has no classifier
# counterpart, so the classifier's settings drop it. SVC's probabilities (for NLL and ECE) are
# Platt's sigmoid fitted on 5 internal folds, then one SVC on all rows: what SVC(probability=True)
# did, in the form scikit-learn 1.9 asks for.
COMPETITORS = {
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
}
# Settings a task's model does not take, left out of its records (they were not used).
UNUSED = {("svm_rbf", "classification"): ("epsilon",)}


def competitor_configs(name: str, grid: str, task: str = "regression") -> list[dict]:
    spec = COMPETITORS[name]
    drop = UNUSED.get((name, task), ())
    configs = [spec["default"]] if grid == "default" else spec[grid]
    return [{k: v for k, v in c.items() if k not in drop} for c in configs]


def build_competitor(name: str, params: dict, seed: int, task: str = "regression"):
    return COMPETITORS[name][task](seed, **params)
