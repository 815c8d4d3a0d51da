"""Do published results reproduce to the bit across a refactor? Capture, then compare.

    python -m benchmarks.bit_check capture FILE     # before the change: every case's numbers
    python -m benchmarks.bit_check compare FILE     # after it: the same numbers, bit for bit

A restructuring (issue 22: the library's floor plan, the estimators on the trial loop, a sweep
planned once) must change no number. The cases (issue 22's targets): the demo sweep's records
through Ray Tune, 15 `run_trial` configurations across tasks and data kinds, a packed
regression80 fold, image trials, and estimator predictions in 10 cases. Each case's numbers are
kept as their float64 bit patterns (`float.hex`); run-dependent fields (seconds, versions, the
sweep's timing) are left out. Cases whose data are not in SBFN_DATA_DIR are skipped, said so.
Runs on a CPU in a few minutes; compare on the same CPU (another CPU rounds float32 GEMMs of
other shapes differently: docs/benchmarks.md).
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile

import numpy as np

# Fields that differ between two runs of the same computation, never compared.
VOLATILE = ("seconds", "package_version", "sweep", "time", "duration", "trial_id", "device")
TABULAR = {"n_members": 3, "epsilon": 0.35, "width": 16, "epochs": 2, "batch_size": 8,
           "lambda2": [0.0, 3.0]}
COMPETING = {"competitors": ["svm_rbf", "random_forest", "gradient_boosting"],
             "competitor_grid": "default"}
IMAGE = {"n_members": 2, "epochs": 1, "batch_size": 64, "n_train": 600, "n_val": 200,
         "n_test": 300, "folds": 1}


def data_dir() -> str | None:
    d = os.environ.get("SBFN_DATA_DIR")
    return d if d and pathlib.Path(d).is_dir() else None


def csv_file(tmp: pathlib.Path) -> str:
    """A generated regression CSV (the csv:PATH data kind), the same bytes on every run."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((120, 3))
    y = x @ [0.5, -1.0, 0.25] + 0.1 * rng.standard_normal(120)
    path = tmp / "gen.csv"
    path.write_text("a,b,c,y\n" + "".join(f"{a!r},{b!r},{c!r},{t!r}\n"
                                          for (a, b, c), t in zip(x.tolist(), y.tolist())))
    return str(path)


def trial_cases(tmp: pathlib.Path) -> dict:
    """name -> run_trial config; the ones needing data files only when SBFN_DATA_DIR has them."""
    cases = {
        "diabetes": dict(TABULAR, **COMPETING, dataset="diabetes", folds=3),
        "diabetes_fold1_all": {"dataset": "diabetes", "folds": 3, "fold": 1, "n_members": 4,
                               "epsilon": 0.5, "width": 8, "epochs": 3},
        "diabetes_b4": dict(TABULAR, dataset="diabetes", folds=5, fold=0, epochs=10,
                            batch_size=4, competitors=[]),
        "diabetes_b1_float64": {"dataset": "diabetes", "folds": 3, "fold": 2, "n_members": 2,
                                "epochs": 1, "batch_size": 1, "dtype": "float64",
                                "competitors": []},
        "diabetes_reference": {"dataset": "diabetes", "folds": 3, "fold": 0, "n_members": 1,
                               "epsilon": 0.0, "lr": 0.003, "combiners": ["arithmetic"],
                               "competitors": []},
        "diabetes_plugins": dict(TABULAR, dataset="diabetes", folds=3, fold=0, competitors=[],
                                 plugin_members=["gradient_boosting", "random_forest"]),
        "iris": {"dataset": "iris", "folds": 3, "n_members": 3, "epsilon": 0.35, "epochs": 3,
                 "competitors": ["knn"], "competitor_grid": "default"},
        "breast_cancer": {"dataset": "breast_cancer", "folds": 3, "fold": 1, "n_members": 2,
                          "epochs": 2},
        "wine_sbfn_rbf": {"dataset": "wine", "folds": 3, "fold": 0, "n_members": 3,
                          "epochs": 2, "competitors": []},
        "csv": {"dataset": f"csv:{csv_file(tmp)}", "target": "y", "folds": 3, "fold": 0, "n_members": 3,
                "epochs": 3, "competitors": ["ridge"], "competitor_grid": "default"},
        "digits_cnn": dict(IMAGE, dataset="digits", ensemble="cnn"),
        "digits_mixed": dict(IMAGE, dataset="digits", ensemble="mixed", n_members=3,
                             epsilon=0.5),
    }
    if data_dir():
        d = data_dir()
        cases.update({
            "air_quality": dict(TABULAR, **COMPETING, dataset="air_quality", data_dir=d, fold=0),
            "appliances_fixed": dict(TABULAR, dataset="appliances", data_dir=d, split="fixed",
                                     competitors=[]),
            "mnist": dict(IMAGE, dataset="mnist", data_dir=d, ensemble="mixed"),
            "cifar10": dict(IMAGE, dataset="cifar10", data_dir=d, ensemble="resnet"),
        })
    return cases


def numbers(records: list[dict]) -> list[dict]:
    """Each record's fields, floats as their bit patterns, run-dependent fields left out."""
    def keep(key):
        return not any(v in key for v in VOLATILE)

    def bits(value):
        if isinstance(value, (float, np.floating)):
            return float(value).hex()
        if isinstance(value, (list, tuple)):
            return [bits(v) for v in value]
        if isinstance(value, np.ndarray):
            return [bits(v) for v in value.tolist()]
        if isinstance(value, (np.integer, np.bool_)):
            return value.item()
        return value
    return [{k: bits(v) for k, v in sorted(r.items()) if keep(k)} for r in records]


def packed_fold() -> list:
    """Fold 0 of the regression80 grid on diabetes: its first 20 ensemble configurations (as
    the sweep plans them) run as one pack, as a sweep's trial runs them."""
    from sbfn_dist.experiment import run_trials
    from sweeps.engine.plan.planning import SweepOptions, plan
    from sweeps.engine.plan.grid_trials import tabular_sweep
    spec = tabular_sweep("regression", "diabetes", "regression80")
    configs = plan(spec, SweepOptions(name="bitcheck", mlflow=False))
    ensembles = [c for c in configs if c["extra"].get("role") == "ensemble"][:20]
    return [numbers(recs) for recs in run_trials([{**c, "fold": 0} for c in ensembles])]


def estimator_cases() -> dict:
    """name -> predictions (as bit patterns) of a fitted estimator."""
    from sklearn.datasets import load_diabetes, load_digits, load_iris
    from sbfn_dist.interfaces.estimators import SBFNClassifier, SBFNRegressor
    xr, yr = load_diabetes(return_X_y=True)
    xi, yi = load_iris(return_X_y=True)
    xd, yd = load_digits(return_X_y=True)
    xd = xd.reshape(-1, 1, 8, 8)[:600]
    yd = yd[:600]
    fast = {"n_members": 3, "epochs": 3, "random_state": 0}
    cases = {f"regressor_{c}": (SBFNRegressor(combiner=c, **fast), xr, yr)
             for c in ("sbfn_ls", "sbfn_ls_linear", "arithmetic", "g1", "g3")}
    cases.update({f"classifier_tab_{c}": (SBFNClassifier(combiner=c, **fast), xi, yi)
                  for c in ("sbfn", "logit_mean")})
    cases.update({f"classifier_img_{c}": (SBFNClassifier(combiner=c, n_members=2, epochs=1,
                                                         random_state=0), xd, yd)
                  for c in ("sbfn", "sbfn_stacked", "moe")})
    out = {}
    for name, (est, x, y) in cases.items():
        est.fit(x, y)
        pred = est.predict_proba(x[:50]) if hasattr(est, "predict_proba") else est.predict(x[:50])
        out[name] = [float(v).hex() for v in np.asarray(pred, dtype=np.float64).ravel()]
    return out


def demo_records(tmp: pathlib.Path) -> list:
    """The demo sweep (sweeps.demo's grid) through Ray Tune, its records sorted."""
    import pandas as pd
    from sweeps.demo import main as demo_main
    storage = tmp / "demo"
    code = demo_main(["--storage", str(storage), "--name", "bitcheck", "--no-mlflow",
                      "--num-cpus", "2"])
    if code:
        raise SystemExit(f"the demo sweep failed (exit {code})")
    table = pd.read_parquet(storage / "bitcheck" / "results.parquet")
    rows = numbers(table.to_dict("records"))
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def capture() -> dict:
    from sbfn_dist.experiment import run_trial
    # The generated CSV's path is part of its records (dataset "csv:PATH"): the same every run.
    fixed = pathlib.Path(tempfile.gettempdir()) / "sbfn-bit-check"
    fixed.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = {"trials": {name: numbers(run_trial(cfg)) for name, cfg in trial_cases(fixed).items()}}
        tmp = pathlib.Path(tmp)
        out["packed_regression80_fold"] = packed_fold()
        out["estimators"] = estimator_cases()
        out["demo"] = demo_records(tmp)
    return out


def differences(old: dict, new: dict, where: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        found = [f"{where}/{k}: only before" for k in old.keys() - new.keys()]
        found += [f"{where}/{k}: only after" for k in new.keys() - old.keys()]
        for k in old.keys() & new.keys():
            found += differences(old[k], new[k], f"{where}/{k}")
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, f"{where}[{i}]")]
    return [] if old == new else [f"{where}: {str(old)[:80]} -> {str(new)[:80]}"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("action", choices=("capture", "compare"))
    p.add_argument("file")
    args = p.parse_args(argv)
    now = json.loads(json.dumps(capture(), default=str))
    if args.action == "capture":
        pathlib.Path(args.file).write_text(json.dumps(now))
        print(f"captured {sum(len(v) for v in now.values())} cases into {args.file}")
        return 0
    before = json.loads(pathlib.Path(args.file).read_text())
    found = differences(before, now)
    for line in found[:50]:
        print(line)
    print(f"{len(found)} differences" if found else "every number equal to the bit")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
