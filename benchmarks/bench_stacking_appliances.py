"""SBFNStackingRegressor against scikit-learn's StackingRegressor on the Appliances Candanedo
et al. 2017 split (issue 24): the same four regressors, the same inner folds, one test evaluation.

    python -m benchmarks.bench_stacking_appliances [--data-dir DIR] [--out FILE] [--quick]

The four regressors are extra trees, a random forest, histogram gradient boosting and k-NN at
the settings the heterogeneous grid's inner CV chose on this split (docs/results/README.md,
"Heterogeneous s-BFN"), with fewer trees so that the benchmark takes minutes: 150 extra trees
(300 there), 60 forest trees (100), 300 boosting iterations (500). Both stacks get the same
standardised X (StackingRegressor behind a StandardScaler: the s-BFN estimator standardises X
itself) and the same 5 shuffled out-of-fold folds. The s-BFN estimator fits the regressors on
the standardised target, as a sweep's fold does; on Appliances' whole-Wh target the trees break
ties of equal split gains differently on standardised and raw y, so StackingRegressor is run
twice: as a practitioner runs it (raw y), and inside TransformedTargetRegressor(StandardScaler)
-- there its four columns are the s-BFN's to the bit and only the final combiner differs.

The s-BFN's own settings (lambda2, whether 10 epsilon-MLP members join, epsilon = 0.5 as the
heterogeneous grid) are chosen by GridSearchCV (3 shuffled folds of the training rows, RMSE);
StackingRegressor's RidgeCV chooses its alpha by leave-one-out. Both are then evaluated once on
the 4,932 published test rows. The report (--out, Markdown) holds the test RMSEs, the grid's
inner-CV scores, the CPU (lscpu) and the runtime.
"""

import argparse
import os
import subprocess
import time

import numpy as np
import torch
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import (ExtraTreesRegressor, HistGradientBoostingRegressor,
                              RandomForestRegressor, StackingRegressor)
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sbfn_dist import SBFNStackingRegressor
from sbfn_dist.data.tabular import load_tabular

SEED = 0
# Full run / --quick (a smoke test on 2,000 training rows, seconds to a minute).
SIZES = {"full": {"et": 150, "rf": 60, "hgb": 300, "rows": None},
         "quick": {"et": 10, "rf": 10, "hgb": 30, "rows": 2000}}
GRID = {"full": [{"lambda2": [0.0, 10.0], "n_members": [0, 10]}],
        "quick": [{"lambda2": [0.0, 10.0], "n_members": [0]}]}
STACK_FOLDS, SEARCH_FOLDS = 5, 3
MEMBERS = {"epsilon": 0.5}      # the heterogeneous grid's epsilon (inner CV on this split)
JOBS = 2                        # the two cores: candidates of the search, or the stacks' folds


def estimators(size: dict) -> list:
    """The four regressors, seeded (both stacks clone them)."""
    return [("extra_trees", ExtraTreesRegressor(n_estimators=size["et"], max_features=0.33,
                                                random_state=SEED)),
            ("random_forest", RandomForestRegressor(n_estimators=size["rf"], max_features=0.33,
                                                    random_state=SEED)),
            ("hist_gradient_boosting", HistGradientBoostingRegressor(
                max_iter=size["hgb"], learning_rate=0.1, early_stopping=False,
                random_state=SEED)),
            ("knn", KNeighborsRegressor(n_neighbors=5, weights="distance"))]


def stack_folds() -> KFold:
    return KFold(STACK_FOLDS, shuffle=True, random_state=SEED)


def candanedo_split(data_dir: str, rows: int | None):
    """(X_train, y_train, X_test, y_test) of the published split; `rows`: a seeded subset of the
    training rows (--quick)."""
    data = load_tabular("appliances", data_dir=data_dir)
    test = data.fixed_test_mask
    if test is None:
        raise SystemExit("the Candanedo test dates are not in the data dir (docs/data.md)")
    X, y = data.X[~test], data.y[~test]
    if rows:
        keep = np.sort(np.random.default_rng(SEED).choice(len(y), rows, replace=False))
        X, y = X[keep], y[keep]
    return X, y, data.X[test], data.y[test]


def rmse(y, pred) -> float:
    return float(np.sqrt(np.mean((np.asarray(pred) - y) ** 2)))


def fit_sbfn(X, y, size: dict, grid: list) -> tuple:
    """GridSearchCV over the s-BFN's settings on the training rows; its refit on all of them."""
    est = SBFNStackingRegressor(estimators=estimators(size), cv=stack_folds(), random_state=SEED,
                                **MEMBERS)
    search = GridSearchCV(est, grid, cv=KFold(SEARCH_FOLDS, shuffle=True, random_state=SEED),
                          scoring="neg_root_mean_squared_error", n_jobs=JOBS)
    start = time.perf_counter()
    search.fit(X, y)
    return search, time.perf_counter() - start


def fit_sklearn(X, y, size: dict, scaled_y: bool) -> tuple:
    """StandardScaler -> StackingRegressor (RidgeCV final), on raw or standardised y."""
    stack = StackingRegressor(estimators(size), final_estimator=RidgeCV(), cv=stack_folds(),
                              n_jobs=JOBS)
    if scaled_y:
        stack = TransformedTargetRegressor(stack, transformer=StandardScaler())
    pipe = make_pipeline(StandardScaler(), stack)
    start = time.perf_counter()
    pipe.fit(X, y)
    return pipe, time.perf_counter() - start


def stacking_of(pipe) -> StackingRegressor:
    last = pipe[-1]
    return last.regressor_ if isinstance(last, TransformedTargetRegressor) else last


def base_rmse(search, pipe, X_test, y_test) -> list:
    """(name, test RMSE inside the s-BFN stack, inside StackingRegressor on raw y) per
    regressor, each refitted on every training row."""
    sbfn = search.best_estimator_
    x_ours = sbfn.scaler_.transform_X(X_test)
    x_theirs = pipe[0].transform(X_test)
    stack = stacking_of(pipe)
    return [(name, rmse(y_test, sbfn.scaler_.inverse_y(model.predict(x_ours))),
             rmse(y_test, stack.named_estimators_[name].predict(x_theirs)))
            for name, model in sbfn.named_estimators_.items()]


def cpu_name() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    names = [line.split(":", 1)[1].strip() for line in out.splitlines()
             if line.startswith("Model name")]
    return f"{names[0] if names else 'unknown CPU'}, {os.cpu_count()} cores"


def report(r: dict) -> str:
    """The Markdown of docs/results/stacking_appliances.md."""
    gap = r["sbfn"] - r["sklearn"]
    verdict = ("met" if gap <= 0 else "missed") + f": s-BFN {r['sbfn']:.2f} Wh vs " \
              f"StackingRegressor {r['sklearn']:.2f} Wh ({gap:+.2f} Wh)"
    lines = [
        "# SBFNStackingRegressor vs StackingRegressor: Appliances, Candanedo et al. 2017 split",
        "",
        f"`python -m benchmarks.bench_stacking_appliances{' --quick' if r['quick'] else ''}` "
        f"(benchmarks/bench_stacking_appliances.py) on {r['cpu']}, shared with other jobs; "
        f"runtime {r['total'] / 60:.1f} min (s-BFN grid search and refit {r['t_sbfn']:.0f} s, "
        f"StackingRegressor {r['t_sklearn']:.0f} s + {r['t_sklearn_scaled']:.0f} s). "
        f"{r['n_train']} training rows, "
        f"{r['n_test']} published test rows, evaluated once.",
        "",
        f"**Target (issue 24: s-BFN at or below StackingRegressor) {verdict}.**",
        "",
        "| model | test RMSE (Wh) | chosen on the training rows |",
        "|---|---:|---|",
        f"| SBFNStackingRegressor (s-BFN over the four) | {r['sbfn']:.2f} | {r['best']} "
        "(GridSearchCV, 3 folds) |",
        f"| StackingRegressor, RidgeCV final (same four, same folds) | {r['sklearn']:.2f} | "
        f"alpha = {r['alpha']:g} (RidgeCV) |",
        f"| the same on standardised y (its columns = the s-BFN's) | {r['sklearn_scaled']:.2f} "
        f"| alpha = {r['alpha_scaled']:g} (RidgeCV) |",
    ]
    lines += [f"| {name} alone (ours / inside StackingRegressor) | {a:.2f} / {b:.2f} | fixed |"
              for name, a, b in r["bases"]]
    lines += ["", "Inner CV of the s-BFN's settings (RMSE in Wh, mean over the 3 folds of the "
              "training rows; the lowest was refitted on all of them):", "",
              "| setting | inner-CV RMSE (Wh) |", "|---|---:|"]
    lines += [f"| {p} | {s:.2f} |" for p, s in r["grid"]]
    lines += ["", r["settings"], ""]
    return "\n".join(lines)


def run(data_dir: str, quick: bool) -> dict:
    mode = "quick" if quick else "full"
    size = SIZES[mode]
    X, y, X_test, y_test = candanedo_split(data_dir, size["rows"])
    start = time.perf_counter()
    search, t_sbfn = fit_sbfn(X, y, size, GRID[mode])
    pipe, t_sklearn = fit_sklearn(X, y, size, scaled_y=False)
    scaled, t_scaled = fit_sklearn(X, y, size, scaled_y=True)
    scores = search.cv_results_
    return {"quick": quick, "cpu": cpu_name(), "n_train": len(y), "n_test": len(y_test),
            "sbfn": rmse(y_test, search.predict(X_test)),
            "sklearn": rmse(y_test, pipe.predict(X_test)),
            "sklearn_scaled": rmse(y_test, scaled.predict(X_test)),
            "best": ", ".join(f"{k} = {v}" for k, v in sorted(search.best_params_.items())),
            "alpha": float(stacking_of(pipe).final_estimator_.alpha_),
            "alpha_scaled": float(stacking_of(scaled).final_estimator_.alpha_),
            "bases": base_rmse(search, pipe, X_test, y_test),
            "grid": [(", ".join(f"{k} = {v}" for k, v in sorted(p.items())), -s)
                     for p, s in zip(scores["params"], scores["mean_test_score"])],
            "t_sbfn": t_sbfn, "t_sklearn": t_sklearn, "t_sklearn_scaled": t_scaled,
            "total": time.perf_counter() - start,
            "settings": settings_text(size)}


def settings_text(size: dict) -> str:
    return (f"Regressors (both stacks): ExtraTrees({size['et']} trees, max_features 0.33), "
            f"RandomForest({size['rf']} trees, max_features 0.33), HistGradientBoosting("
            f"{size['hgb']} iterations, rate 0.1, no early stopping), k-NN (k = 5, distance "
            f"weights), random_state {SEED}; fewer trees than the heterogeneous grid's choice "
            "(300 extra trees, 100 forest trees, 500 iterations) to keep the run in minutes. "
            f"Out-of-fold columns: KFold({STACK_FOLDS}, shuffle, seed {SEED}) in both. s-BFN: "
            "sbfn_ls_linear (one Gaussian unit per hypothesis, the raw hypotheses and an "
            "intercept; paper Eq. \"weights\"), members (when n_members = 10) epsilon = 0.5 "
            "with SBFNRegressor's other defaults. One thread per process, two processes.")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=os.environ.get("SBFN_DATA_DIR"),
                   help="where uci_appliances_energy/ is (default: SBFN_DATA_DIR)")
    p.add_argument("--out", help="write the Markdown report here")
    p.add_argument("--quick", action="store_true", help="2,000 training rows, tiny models")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    with threadpool_limits(1):      # OpenMP boosting and BLAS: the processes share two cores
        text = report(run(args.data_dir, args.quick))
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
