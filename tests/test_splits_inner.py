"""fixed_train_kfold: k-fold CV inside a published training part, for tuning before the one
evaluation on the published split (Candanedo et al. 2017 tuned on their training part only)."""

import numpy as np
import pytest

from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.data.splits import make_splits
from sbfn_dist.data.tabular import load_tabular
from sbfn_dist.data.splits import fixed_train_kfold_splits
from sbfn_dist.errors import DataError
from sbfn_dist.experiment import run_trial


def _assert_inner_cv_of(mask, splits, folds):
    published_train, published_test = np.flatnonzero(~mask), np.flatnonzero(mask)
    assert len(splits) == folds
    for train, val in splits:
        assert np.intersect1d(train, published_test).size == 0
        assert np.intersect1d(val, published_test).size == 0
        assert np.intersect1d(train, val).size == 0
        assert np.array_equal(np.sort(np.concatenate([train, val])), published_train)
    validated = np.sort(np.concatenate([val for _, val in splits]))
    assert np.array_equal(validated, published_train)   # every training row validated once


def test_inner_folds_partition_the_published_training_rows_only():
    data = load_tabular("sincos")
    splits = make_splits(data, "fixed_train_kfold", folds=5, seed=3)
    _assert_inner_cv_of(data.fixed_test_mask, splits, 5)


def test_inner_folds_are_seeded():
    mask = np.arange(40) % 4 == 0
    a, b = fixed_train_kfold_splits(mask, 3, seed=1), fixed_train_kfold_splits(mask, 3, seed=1)
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    assert not np.array_equal(a[0][1], fixed_train_kfold_splits(mask, 3, seed=2)[0][1])


def test_candanedo_test_rows_are_never_used(data_dir):
    data = load_tabular("appliances", data_dir=data_dir)
    splits = make_splits(data, "fixed_train_kfold", folds=10, seed=0)
    _assert_inner_cv_of(data.fixed_test_mask, splits, 10)
    assert sum(len(val) for _, val in splits) == 14803


def test_a_data_set_without_a_published_split_is_refused():
    with pytest.raises(DataError, match="no published test split for scheme='fixed_train_kfold'"):
        make_splits(load_tabular("diabetes"), "fixed_train_kfold", folds=5)


def test_run_trial_tunes_inside_the_training_part():
    cfg = {"dataset": "sincos", "split": "fixed_train_kfold", "folds": 3, "n_members": 2,
           "epochs": 1, "batch_size": 16, "combiners": ["arithmetic"]}
    records = run_trial(cfg)
    assert [r["fold"] for r in records] == [0, 1, 2]
    assert all(r["n_train"] + r["n_test"] == 300 for r in records)   # the 300 training rows
    assert all(r["split"] == "fixed_train_kfold" for r in records)
    assert TrialConfig.from_dict({**cfg, "fold": 2}).fold == 2


def test_a_sweep_trial_runs_every_inner_fold():
    from sweeps.engine.plan.planning import folds_of
    config = TrialConfig.from_dict({"dataset": "sincos", "split": "fixed_train_kfold",
                                    "folds": 4}).to_dict()
    assert folds_of(config) == [0, 1, 2, 3]
    assert folds_of({**config, "split": "fixed"}) == [0]
