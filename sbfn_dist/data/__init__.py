"""Tabular data sets, train/test splits and fold-local preprocessing (numpy/pandas/sklearn only)."""

from sbfn_dist.data.preprocess import FoldScaler
from sbfn_dist.data.splits import fixed_split, holdout_splits, kfold_splits, make_splits
from sbfn_dist.data.tabular import KNOWN_TABULAR, TabularData, load_tabular

__all__ = ["TabularData", "load_tabular", "KNOWN_TABULAR", "make_splits", "kfold_splits",
           "fixed_split", "holdout_splits", "FoldScaler"]
