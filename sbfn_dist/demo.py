"""The demo: one regression experiment on embedded data, offline, a few minutes on 2 cores.

scikit-learn's diabetes data (442 patients, 10 features), 5-fold CV: M = 10 hypotheses trained
online (Algorithm 1) with epsilon = 0.35, every combiner and lambda2 on the same hypotheses,
and the three competitors on the same folds. Prints the comparison table.
"""

import argparse
import time

import pandas as pd

from sbfn_dist.experiment import run_trial
from sbfn_dist.summary import comparison_table

DEMO_CONFIG = {
    "dataset": "diabetes", "folds": 5, "seed": 0,
    "n_members": 10, "epsilon": 0.35, "width": 50, "init_scale": 0.1, "lr": 0.03,
    "epochs": 20, "batch_size": 1, "lambda2": [0.0, 3.0, 5.0, 7.0],
    "competitors": ["svm_rbf", "random_forest", "gradient_boosting"], "competitor_grid": "small",
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--folds", type=int, default=DEMO_CONFIG["folds"])
    args = parser.parse_args(argv)
    config = dict(DEMO_CONFIG, folds=args.folds)
    start = time.perf_counter()
    records = run_trial(config)
    table = comparison_table(records)
    with pd.option_context("display.width", 160, "display.max_colwidth", 60):
        print(f"\nDiabetes (sklearn), {config['folds']}-fold CV, test RMSE in target units; "
              f"M={config['n_members']}, eps={config['epsilon']}, online b=1, "
              f"{config['epochs']} epochs\n")
        print(table.drop(columns=["label"]).to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"\n{len(records)} records in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
