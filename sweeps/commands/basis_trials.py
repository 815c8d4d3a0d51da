"""The paper's appendix "Comparison of Basis Function Strategies": its trials and centres.

y = sin(x1) + cos(x2) + noise (data set "sincos": 300 training, 1000 test points), s-BFN least
squares with K = M Gaussian units per member ("GBF", `sbfn_basis: member`) vs multivariate
units at k-means centres ("RBF-KMeans", `sbfn_basis: kmeans`), run r = seed r (new data, new
members). Every trial goes through run_trial. The units live in the members' output space R^M,
so to draw the paper's centre figure in the (x1, x2) plane each unit is placed at its
receptive-field centre, the activation-weighted mean of the training inputs (docs/analysis.md).
The command that runs it and writes the report: `python -m sweeps.appendix`.
"""

import numpy as np
import pandas as pd

from sbfn_dist.combiners.basis import make_basis
from sbfn_dist.combiners.ensembles import mlp_config
from sbfn_dist.data.preprocess import FoldScaler
from sbfn_dist.data.splits import make_splits
from sbfn_dist.data.tabular import load_tabular
from sbfn_dist.experiment import run_trial
from sbfn_dist.learners.training import train_mlp
from sbfn_dist.runtime import fold_seed
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.fields import BASES


M_VALUES = (2, 5, 10, 20, 50)
RUNS = 5
SWEEP = "appendix_basis"


def trial_config(m: int, basis: str, run: int) -> dict:
    return {"dataset": "sincos", "split": "fixed", "n_members": m, "sbfn_basis": basis,
            "combiners": ["sbfn_ls"], "seed": run, "sweep": SWEEP,
            "trial_id": f"M{m}-{basis}-run{run}"}


def run_trials(m_values, runs: int) -> pd.DataFrame:
    records = []
    for run in range(runs):
        for m in m_values:
            for basis in BASES:
                records += run_trial(trial_config(m, basis, run))
    return pd.DataFrame(records)


def centres(m: int, run: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both bases fitted on the members run_trial trains for (M, run): the same seeds give the
    same members. Each unit's receptive-field centre in input space: sum_i phi_ik x_i / sum_i phi_ik."""
    cfg = TrialConfig.from_dict(trial_config(m, "member", run))
    data = load_tabular("sincos", seed=run)
    train_idx, _ = make_splits(data, "fixed", seed=run)[0]
    X, y = data.X[train_idx], data.y[train_idx]
    scaler = FoldScaler().fit(X, y)
    members = train_mlp(scaler.transform_X(X), scaler.transform_y(y),
                        mlp_config(cfg, 0, "squared"))
    D = members.predict(scaler.transform_X(X)).double().numpy()
    rows = []
    for basis in BASES:
        phi = make_basis(basis, m, fold_seed(run, 0)).fit(D).transform(D)
        mass = phi.sum(0)
        xy = phi.T @ X / np.maximum(mass, 1e-300)[:, None]
        rows += [{"run": run, "n_members": m, "sbfn_basis": basis, "unit": k, "x1": xy[k, 0],
                  "x2": xy[k, 1], "activation_mass": mass[k]} for k in range(len(mass))]
    points = pd.DataFrame({"run": run, "x1": X[:, 0], "x2": X[:, 1], "y": y})
    return pd.DataFrame(rows), points
