"""The paper's tabular competitors through scikit-learn: SVM-RBF, random forest, gradient boosting.

Each has a small documented grid ("small": 4 configurations) so that its quartiles across
configurations mean something, and a single default ("default") for quick runs. The models
see the same standardised folds as the s-BFN; predictions are mapped back to target units
by the caller. Grids are justified in docs/method.md.
"""

from itertools import product

from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.svm import SVR


def _grid(**axes) -> list[dict]:
    keys = list(axes)
    return [dict(zip(keys, values)) for values in product(*axes.values())]


COMPETITORS = {
    "svm_rbf": {
        "build": lambda seed, **p: SVR(kernel="rbf", **p),
        "default": {"C": 1.0, "gamma": "scale", "epsilon": 0.1},
        "small": _grid(C=[1.0, 10.0], gamma=["scale", 0.02], epsilon=[0.1]),
    },
    "random_forest": {
        "build": lambda seed, **p: RandomForestRegressor(random_state=seed, n_jobs=1, **p),
        "default": {"n_estimators": 100, "max_features": 1.0, "min_samples_leaf": 1},
        "small": _grid(n_estimators=[100], max_features=[1.0, 0.33], min_samples_leaf=[1, 5]),
    },
    "gradient_boosting": {
        "build": lambda seed, **p: GradientBoostingRegressor(random_state=seed, **p),
        "default": {"n_estimators": 100, "learning_rate": 0.1, "max_depth": 3},
        "small": _grid(n_estimators=[200], learning_rate=[0.05, 0.1], max_depth=[3, 5]),
    },
}
COMPETITOR_GRIDS = ("default", "small")


def competitor_configs(name: str, grid: str) -> list[dict]:
    spec = COMPETITORS[name]
    return [spec["default"]] if grid == "default" else spec[grid]


def build_competitor(name: str, params: dict, seed: int):
    return COMPETITORS[name]["build"](seed, **params)
