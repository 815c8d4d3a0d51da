"""Report tables for a synthetic 100k-row results table (issue 5 target: under 5 s).

Times `analysis.report.table_blocks` (every table: the verdicts, status, quartiles, (M, ε)
intervals, image accuracy with ECE and NLL, best configurations, efficiency, ε-sensitivity,
diagnostics, rankings with paired tests) plus writing the CSVs and report.md; figures are not
included. The table mixes a regression sweep (2 data sets, 9 models and the 4 practitioners'
anchors and best single, M x ε x κ x λ2 grid, 10 folds of 1000 rows) and an image sweep (3 data
sets, 3 architecture mixes, 8 combiners and the 4 anchors, 5 holdout splits, 2 seeds), 1% of
rows diverged, then a random 100k rows are kept (a partial sweep).
"""

import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.collect import Results, SweepInfo, normalise
from analysis.document import markdown, write_tables
from analysis.report import table_blocks
from benchmarks.common import cli, machine
from sbfn_dist.records import ANCHORS, BEST_SINGLE

TARGET_SECONDS = 5.0
ROWS, QUICK_ROWS = 100_000, 10_000
COMPETITORS = ["svm_rbf", "random_forest", "gradient_boosting"]


def _product(**axes) -> pd.DataFrame:
    return pd.MultiIndex.from_product(list(axes.values()), names=list(axes)).to_frame(index=False)


def regression_rows(rng) -> pd.DataFrame:
    grid = dict(dataset=["air_quality", "appliances"], n_members=[2, 5, 10, 20],
                epsilon=[0.0, 0.1, 0.2, 0.35, 0.5], width=[25, 50, 100], fold=range(10))
    ens = _product(**grid, lambda2=[0.0, 3.0, 5.0, 7.0], model=["sbfn_ls", "sbfn_ls_linear", "g1", "g2", "g3"])
    arith = _product(**grid, model=["arithmetic", *ANCHORS["regression"], BEST_SINGLE]).assign(
        lambda2=np.nan)
    comp = _product(dataset=grid["dataset"], model=COMPETITORS,
                    setting=range(12), fold=range(10))
    comp["model_params"] = '{"setting": ' + comp.pop("setting").astype(str) + "}"
    df = pd.concat([ens, arith, comp], ignore_index=True)
    df["model_params"] = df["model_params"].fillna('{"lambda2": ' + df["lambda2"].astype(str) + "}")
    df["rmse"] = 30 + 10 * rng.random(len(df)) + df["epsilon"].fillna(0) * 5
    keys = df[["dataset", "n_members", "epsilon", "width", "fold", "model_params"]]
    df["trial_id"] = pd.util.hash_pandas_object(keys.where(df["model"].isin(COMPETITORS), keys.drop(
        columns="model_params").assign(model_params="")), index=False).astype(str)
    return df.assign(task="regression", seed=0, train_seconds=rng.random(len(df)), eval_seconds=0.01,
                     split="kfold", n_train=900, n_test=100)


def image_rows(rng) -> pd.DataFrame:
    models = ["sbfn", "sbfn_stacked", "moe", "moe_stacked", "logit_mean", "logit_mean_tuned",
              "prob_mean", "base_avg", *ANCHORS["classification"], BEST_SINGLE]
    df = _product(dataset=["mnist", "fashion_mnist", "cifar10"], ensemble=["mixed", "cnn", "resnet"],
                  n_members=[3, 5, 10], epsilon=[0.0, 0.1, 0.3, 0.5, 0.8], lr_alpha=[0.01, 0.1],
                  temperature=[1.0, 3.0], lr=[1e-3, 1e-2], seed=[0, 1], fold=range(5), model=models)
    n = len(df)
    df["accuracy"] = 0.7 + 0.25 * rng.random(n)
    df["trial_id"] = pd.util.hash_pandas_object(df.drop(columns="model"), index=False).astype(str)
    for col in ("gibbs_risk", "disagreement", "mv_risk", "c_bound", "bregman_bias", "bregman_diversity"):
        df[col] = rng.random(n)
    return df.assign(task="classification", train_seconds=10 * rng.random(n), eval_seconds=0.5,
                     flops_per_example=1e6, n_params_members=3e5, member_accuracy_mean=0.7,
                     ece=0.1 * rng.random(n), nll=rng.random(n), split="holdout", n_train=4500,
                     n_val=500, n_test=1000)


def synthetic_results(n_rows: int, seed: int = 0) -> Results:
    rng = np.random.default_rng(seed)
    df = pd.concat([regression_rows(rng), image_rows(rng)], ignore_index=True)
    df = df.sample(n=min(n_rows, len(df)), random_state=seed).reset_index(drop=True)
    bad = rng.random(len(df)) < 0.01
    df["status"] = np.where(bad, "diverged", "ok")
    df.loc[bad, ["rmse", "accuracy"]] = np.nan
    df["error"] = np.where(bad, "members diverged", "")
    table = normalise(df.assign(sweep="synthetic"), "synthetic")
    info = SweepInfo("synthetic", "(memory)", len(table), table["trial_id"].nunique(),
                     status_counts=table["status"].value_counts().to_dict())
    return Results(table, [info])


def time_tables(results: Results) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        blocks = table_blocks(results)
        write_tables(blocks, Path(tmp))
        (Path(tmp) / "report.md").write_text(markdown(blocks, Path(tmp)))
        return time.perf_counter() - start


def run(quick: bool = False) -> float:
    results = synthetic_results(QUICK_ROWS if quick else ROWS)
    seconds = time_tables(results)
    n = len(results.table)
    ok = seconds < TARGET_SECONDS
    print(f"\nReport tables for a synthetic {n:,}-row results table: {seconds:.2f} s")
    print(f"TARGET report tables ({n:,} rows): {seconds:.2f} s (target < {TARGET_SECONDS:g} s) "
          f"{'PASS' if ok else 'MISS'}{' (quick size: the target is for 100k rows)' if quick else ''}")
    return seconds


if __name__ == "__main__":
    args = cli(__doc__.splitlines()[0])
    print(machine())
    run(args.quick)
