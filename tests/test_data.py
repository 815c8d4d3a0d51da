"""Specification of sbfn_dist.data: data sets, file resolution, splits and fold-local scaling."""

from __future__ import annotations

import functools
import http.server
import os
import pathlib
import shutil
import threading
import zipfile

import numpy as np
import pytest

from sbfn_dist.data.preprocess import FoldScaler
from sbfn_dist.data.splits import kfold_splits, make_splits
from sbfn_dist.data.tabular import KNOWN_TABULAR, load_tabular
from sbfn_dist.data import sources
from sbfn_dist.data.splits import fixed_split, holdout_splits
from sbfn_dist.errors import ConfigError, DataError

REPO = pathlib.Path(__file__).resolve().parents[1]
# Read before any test's monkeypatching touches the environment.
REAL_DATA_DIR = pathlib.Path(os.environ.get("SBFN_DATA_DIR") or REPO.parent / "shared" / "data")
DEAD_URL = "http://127.0.0.1:9/"  # discard port: nothing listens, so the connection is refused at once

AIR_FEATURES = ("CO(GT)", "PT08.S1(CO)", "C6H6(GT)", "PT08.S2(NMHC)", "NOx(GT)", "PT08.S3(NOx)",
                "NO2(GT)", "PT08.S4(NO2)", "PT08.S5(O3)", "T", "RH")
DOW = tuple(f"dow_{d}" for d in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"))


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    """Every test: an empty private cache, no SBFN_DATA_DIR, and every download address dead."""
    monkeypatch.setenv("SBFN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SBFN_DATA_DIR", raising=False)
    for relative in list(sources.URLS):
        monkeypatch.setitem(sources.URLS, relative, DEAD_URL)


@pytest.fixture(scope="module")
def data_dir() -> str:
    if not (REAL_DATA_DIR / sources.AIR_QUALITY_FILE).is_file():
        pytest.skip(f"real UCI files not found under {REAL_DATA_DIR} (set SBFN_DATA_DIR to the shared data dir)")
    return str(REAL_DATA_DIR)


@functools.cache
def _load_real(name: str, include_random_vars: bool = False):
    # Loading is pure, so share one load per configuration to keep the file fast.
    return load_tabular(name, data_dir=str(REAL_DATA_DIR), include_random_vars=include_random_vars)


# ---------------------------------------------------------------- real data sets

def test_air_quality_rows_features_and_missing_values(data_dir):
    d = _load_real("air_quality")
    assert d.X.shape == (8991, 11)  # 9357 rows read, 366 with missing AH dropped
    assert d.feature_names == AIR_FEATURES
    assert (d.target_name, d.target_unit) == ("AH", "g/m^3")
    assert not np.isnan(d.y).any() and (d.y > 0).all()
    assert not (d.X == -200).any()
    assert np.isnan(d.X).any()  # the -200 codes became NaN, imputed later per fold
    assert "9357 rows read" in d.notes and "dropped 366" in d.notes
    assert d.fixed_test_mask is None and d.X.dtype == np.float64


def test_appliances_features_and_candanedo_split(data_dir):
    d = _load_real("appliances")
    assert d.X.shape == (19735, 34) and (d.target_name, d.target_unit) == ("Appliances", "Wh")
    assert {"lights", "T1", "RH_9", "Tdewpoint", "NSM", "WeekStatus", *DOW} <= set(d.feature_names)
    assert "rv1" not in d.feature_names and "rv2" not in d.feature_names
    assert int(d.fixed_test_mask.sum()) == 4932 and int((~d.fixed_test_mask).sum()) == 14803
    col = {name: d.X[:, i] for i, name in enumerate(d.feature_names)}
    assert col["NSM"][0] == 17 * 3600  # first row: 2016-01-11 17:00:00, a Monday
    assert col["dow_Monday"][0] == 1 and col["WeekStatus"][0] == 0
    dummies = np.stack([col[c] for c in DOW], axis=1)
    assert (dummies.sum(axis=1) == 1).all()
    assert np.array_equal(col["WeekStatus"], col["dow_Saturday"] + col["dow_Sunday"])


def test_appliances_random_vars_only_with_flag(data_dir):
    d = _load_real("appliances", include_random_vars=True)
    assert d.feature_names[-2:] == ("rv1", "rv2") and d.X.shape == (19735, 36)


def test_appliances_without_dates_file_has_no_fixed_split(data_dir, tmp_path):
    local = tmp_path / "data" / "uci_appliances_energy"
    local.mkdir(parents=True)
    shutil.copy(REAL_DATA_DIR / "uci_appliances_energy" / "energydata_complete.csv.gz", local)
    d = load_tabular("appliances", data_dir=str(tmp_path / "data"))
    assert d.fixed_test_mask is None and "no published split" in d.notes
    with pytest.raises(DataError, match="no published test split.*appliances, sincos"):
        make_splits(d, "fixed")


def test_diabetes_is_offline():
    d = load_tabular("diabetes", data_dir="/nonexistent")  # bundled: the data dir is never consulted
    assert d.X.shape == (442, 10) and d.y.shape == (442,) and d.target_unit == ""


def test_sincos_shapes_noise_and_determinism():
    d = load_tabular("sincos", seed=3)
    assert d.X.shape == (1300, 2) and d.fixed_test_mask[-1000:].all() and not d.fixed_test_mask[:300].any()
    assert np.abs(d.X).max() <= 3
    noise = d.y - np.sin(d.X[:, 0]) - np.cos(d.X[:, 1])
    assert abs(noise.std() - 0.1) < 0.01  # 0.1 is the noise standard deviation
    assert np.array_equal(d.X, load_tabular("sincos", seed=3).X)
    assert not np.array_equal(d.X, load_tabular("sincos", seed=4).X)
    small = load_tabular("sincos", n_samples=130)
    assert small.X.shape == (130, 2) and small.fixed_test_mask.sum() == 100


def test_friedman1_is_friedmans_function_with_unit_noise_and_one_data_set_for_every_seed():
    d = load_tabular("friedman1", seed=3)
    assert d.X.shape == (2000, 10) and d.fixed_test_mask is None
    assert 0 <= d.X.min() and d.X.max() <= 1
    x = d.X.T
    signal = 10 * np.sin(np.pi * x[0] * x[1]) + 20 * (x[2] - 0.5) ** 2 + 10 * x[3] + 5 * x[4]
    noise = d.y - signal
    # 2,000 draws of N(0, 1): the sample sd is within 0.05 of 1 (its own sd is ~0.016).
    assert abs(noise.std() - 1.0) < 0.05 and abs(noise.mean()) < 0.1
    # The trial's seed re-splits the folds, never the rows (a repeated CV of one data set).
    assert np.array_equal(d.y, load_tabular("friedman1", seed=4).y)
    assert load_tabular("friedman1", n_samples=300).X.shape == (300, 10)


def test_n_samples_takes_a_seeded_subset_of_real_rows():
    a, b = (load_tabular("diabetes", n_samples=50, seed=1) for _ in range(2))
    assert a.X.shape == (50, 10) and np.array_equal(a.y, b.y) and "subset of 50 of 442" in a.notes
    with pytest.raises(DataError, match="n_samples=1 is too small"):
        load_tabular("diabetes", n_samples=1)


def test_unknown_dataset_lists_known_names():
    with pytest.raises(DataError) as err:
        load_tabular("boston")
    assert all(name in str(err.value) for name in KNOWN_TABULAR) and "csv:PATH" in str(err.value)


def test_builtin_target_cannot_be_changed():
    with pytest.raises(DataError, match="fixed target 'disease progression'.*csv:PATH"):
        load_tabular("diabetes", target="bmi")


# ---------------------------------------------------------------- user CSV files

def test_csv_missing_features_become_nan_and_missing_targets_are_dropped(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n1,,1.5\n2,3,\n4,5,2.5\n")
    d = load_tabular(f"csv:{path}", target="y")
    assert d.name == f"csv:{path}" and d.feature_names == ("a", "b") and d.y.tolist() == [1.5, 2.5]
    assert np.isnan(d.X[0, 1]) and "dropped 1 rows with missing target" in d.notes


@pytest.mark.parametrize("content, target, message", [
    (None, "y", "does not exist"),
    ("", "y", "is empty"),
    ("a,y\n", "y", "no data rows"),
    ("a,y\n1,2\n", None, "no target column given.*target=.COLUMN.*a, y"),
    ("a,b\n1,2\n", "y", "'y' is not in .*pick one of: a, b"),
    ("a,city,y\n1,Rome,2\n2,Oslo,3\n", "y", r"non-numeric feature columns \['city'\].*encode.*or drop"),
    ("a,y\n1,5\n2,5\n", "y", "is constant.*pick another target"),
    ("a,y\n1,5\n2,high\n", "y", "not numeric.*'high'"),
    ("y\n1\n2\n", "y", "only the target column"),
    ("a,y\n1,\n2,\n", "y", "every row .* missing target"),
])
def test_csv_errors_name_problem_and_fix(tmp_path, content, target, message):
    path = tmp_path / "bad.csv"
    if content is not None:
        path.write_text(content)
    with pytest.raises(DataError, match=message):
        load_tabular(f"csv:{path}", target=target)


# ---------------------------------------------------------------- file resolution

def test_missing_file_message_names_both_fixes(tmp_path):
    empty = tmp_path / "empty_data"
    empty.mkdir()
    with pytest.raises(DataError) as err:
        load_tabular("air_quality", data_dir=str(empty))
    msg = str(err.value)
    for part in ("'air_quality'", sources.AIR_QUALITY_FILE, "--data-dir DIR", "SBFN_DATA_DIR=DIR",
                 str(tmp_path / "cache"), "could not be downloaded", DEAD_URL,
                 # offline, the tables of its task that need no file (once: where to put it, alone)
                 "; or sweep one that needs no file: --dataset diabetes (or sincos, friedman1)"):
        assert part in msg


def test_the_sets_offered_offline_are_the_bundled_ones_of_the_kind():
    from sbfn_dist.catalog import offline_instead
    assert offline_instead("mnist") == "; or sweep one that needs no file: --dataset digits"
    assert "breast_cancer" not in offline_instead("appliances")     # another task
    assert offline_instead("csv:/x.csv") == ""                       # a user's own: none


def test_nonexistent_data_dir_is_reported(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        sources.resolve_data_file("air_quality", sources.AIR_QUALITY_FILE, str(tmp_path / "nope"))


def test_env_data_dir_is_used(data_dir, monkeypatch):
    monkeypatch.setenv("SBFN_DATA_DIR", data_dir)
    found = sources.resolve_data_file("appliances", sources.APPLIANCES_FILE)
    assert found == REAL_DATA_DIR / (sources.APPLIANCES_FILE + ".gz")  # gzipped copy accepted


def test_cache_is_used_without_download(tmp_path):
    cached = tmp_path / "cache" / sources.AIR_QUALITY_FILE
    cached.parent.mkdir(parents=True)
    cached.write_text("placeholder")
    # The URL is dead, so returning the path proves no download was attempted.
    assert sources.resolve_data_file("air_quality", sources.AIR_QUALITY_FILE) == cached


@pytest.fixture
def local_server(tmp_path):
    """A real HTTP server on loopback serving tmp_path/served: (folder, base URL)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_lands_in_cache_atomically(tmp_path, monkeypatch, local_server):
    served, base = local_server
    with zipfile.ZipFile(served / "air.zip", "w") as archive:
        archive.writestr("inner/AirQualityUCI.csv", "Date;AH\n")
    monkeypatch.setitem(sources.URLS, sources.AIR_QUALITY_FILE, f"{base}/air.zip")
    found = sources.resolve_data_file("air_quality", sources.AIR_QUALITY_FILE)
    assert found == tmp_path / "cache" / sources.AIR_QUALITY_FILE and found.read_text() == "Date;AH\n"
    assert [p.name for p in found.parent.iterdir()] == ["AirQualityUCI.csv"]  # no partial files left


def test_candanedo_dates_are_derived_from_the_authors_testing_csv(tmp_path, monkeypatch, local_server):
    served, base = local_server
    (served / "testing.csv").write_text('"date","Appliances"\n"2016-01-11 17:30:00","  50"\n'
                                        '"2016-01-12 00:50:00"," 380"\n')
    monkeypatch.setitem(sources.URLS, sources.APPLIANCES_TEST_DATES_FILE, f"{base}/testing.csv")
    found = sources.resolve_data_file("appliances", sources.APPLIANCES_TEST_DATES_FILE)
    assert found.read_text().splitlines() == ["2016-01-11 17:30:00", "2016-01-12 00:50:00"]


# ---------------------------------------------------------------- splits

def test_kfold_partitions_every_row_once():
    splits = kfold_splits(103, 10, seed=0)
    tests = np.concatenate([test for _, test in splits])
    assert len(splits) == 10 and np.array_equal(np.sort(tests), np.arange(103))
    for train, test in splits:
        assert np.intersect1d(train, test).size == 0 and train.size + test.size == 103


def test_kfold_is_seeded():
    same = zip(kfold_splits(50, 5, seed=7), kfold_splits(50, 5, seed=7))
    assert all(np.array_equal(a[1], b[1]) for a, b in same)
    assert not np.array_equal(kfold_splits(50, 5, seed=7)[0][1], kfold_splits(50, 5, seed=8)[0][1])


def test_split_errors():
    with pytest.raises(DataError, match="too few rows for the folds: 4 rows .* 5 test folds.*folds <= 4"):
        kfold_splits(4, 5, seed=0)
    with pytest.raises(ConfigError, match="folds"):
        kfold_splits(10, 1, seed=0)
    with pytest.raises(ConfigError, match="kfold, holdout, fixed"):
        make_splits(load_tabular("diabetes"), "bootstrap")
    with pytest.raises(DataError, match="no published test split"):
        make_splits(load_tabular("diabetes"), "fixed")
    with pytest.raises(DataError, match="both the training and the test set"):
        fixed_split(np.zeros(5, dtype=bool))


def test_fixed_and_holdout_splits():
    d = load_tabular("sincos")
    [(train, test)] = make_splits(d, "fixed")
    assert np.array_equal(train, np.arange(300)) and np.array_equal(test, np.arange(300, 1300))
    holdouts = holdout_splits(100, 3, 0.2, seed=1)
    assert len(holdouts) == 3 and all(t.size == 20 and r.size == 80 for r, t in holdouts)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(holdouts, make_splits(
        load_tabular("diabetes", n_samples=100), "holdout", folds=3, seed=1)))


# ---------------------------------------------------------------- fold-local scaling

def test_fold_scaler_uses_training_statistics_only():
    rng = np.random.default_rng(0)
    X_train, y_train = rng.normal(5, 2, (40, 3)), rng.normal(10, 3, 40)
    X_test = rng.normal(5, 2, (5, 3))
    scaler = FoldScaler().fit(X_train, y_train)
    z = scaler.transform_X(X_train)
    assert np.allclose(z.mean(axis=0), 0) and np.allclose(z.std(axis=0), 1)
    before = scaler.transform_X(X_test)[:1]
    X_test[1:] = 1e9  # an outlier in other test rows must not move the first row's transform
    assert np.array_equal(scaler.transform_X(X_test)[:1], before)
    assert np.allclose(scaler.inverse_y(scaler.transform_y(y_train)), y_train)


def test_fold_scaler_imputes_with_training_medians():
    X_train = np.array([[1.0, np.nan, 7.0], [3.0, np.nan, 7.0], [np.nan, np.nan, 7.0], [100.0, np.nan, 7.0]])
    scaler = FoldScaler().fit(X_train, np.array([1.0, 2.0, 3.0, 4.0]))
    out = scaler.transform_X(np.array([[np.nan, 5.0, 9.0]]))
    assert out[0, 0] == pytest.approx((3.0 - scaler.mean_[0]) / scaler.std_[0])  # median of 1, 3, 100
    assert out[0, 1] == 0.0  # all-NaN in training: kept, zeroed
    assert out[0, 2] == 2.0  # constant training column: std 1, so 9 - 7
    assert np.isfinite(scaler.transform_X(X_train)).all()


def test_fold_scaler_rejects_constant_target():
    with pytest.raises(DataError, match="training target is constant"):
        FoldScaler().fit(np.ones((3, 1)), np.array([2.0, 2.0, 2.0]))


def test_fold_scaler_refuses_values_whose_squares_overflow():
    """Their std was inf, and the model predicted NaN (a target) or a constant (a feature)
    after a fit that raised nothing but numpy's RuntimeWarning."""
    X, y = np.arange(12.0).reshape(6, 2), np.arange(6.0)
    with pytest.raises(DataError, match=r"X_train column 1 holds values up to 1.1e\+155, too "
                                        "large to standardise in float64"):
        FoldScaler().fit(X * [1.0, 1e154], y)
    with pytest.raises(DataError, match=r"the training target holds values up to 5e\+155"):
        FoldScaler().fit(X, y * 1e155)
    scaler = FoldScaler().fit(X * 1e150, y * 1e150)       # large, and still standardised
    assert np.isfinite(scaler.transform_X(X * 1e150)).all()


# ---------------------------------------------------------------- classification tables

@pytest.mark.parametrize("name,shape,n_classes", [("breast_cancer", (569, 30), 2),
                                                  ("wine", (178, 13), 3), ("iris", (150, 4), 3)])
def test_bundled_classification_sets_load_offline_with_class_codes(name, shape, n_classes):
    data = load_tabular(name)
    assert data.X.shape == shape and data.y.dtype == np.int64 and len(data.classes) == n_classes
    assert set(data.y) == set(range(n_classes))


def test_stratified_folds_keep_every_class_share():
    data = load_tabular("wine")
    shares = np.bincount(data.y) / len(data.y)
    for train, test in make_splits(data, "kfold", folds=5, seed=0):
        assert np.abs(np.bincount(data.y[test], minlength=3) / len(test) - shares).max() < 0.05
        assert np.intersect1d(train, test).size == 0
    holdout = make_splits(data, "holdout", folds=2, seed=0, test_fraction=0.3)
    assert all(set(data.y[test]) == {0, 1, 2} for _, test in holdout)


def test_stratified_folds_need_enough_rows_of_every_class():
    data = load_tabular("iris", n_samples=20, seed=0)
    with pytest.raises(DataError, match="a class has only .* rows, fewer than the 10 folds"):
        make_splits(data, "kfold", folds=10)


def test_csv_class_labels_become_codes_in_sorted_order(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,kind\n1,b\n2,a\n3,b\n4,\n5,c\n")
    data = load_tabular(f"csv:{path}", target="kind", task="classification")
    assert data.classes == ("a", "b", "c") and data.y.tolist() == [1, 0, 1, 2]
    assert "dropped 1 rows with missing target" in data.notes
    path.write_text("x,kind\n1,b\n2,b\n")
    with pytest.raises(DataError, match="one class"):
        load_tabular(f"csv:{path}", target="kind", task="classification")


def test_fold_scaler_of_features_only_keeps_class_targets_unscaled():
    X = np.array([[1.0, 5.0], [3.0, 5.0], [np.nan, 8.0]])
    scaler = FoldScaler().fit(X)
    assert np.allclose(scaler.transform_X(X).mean(0), 0)
    with pytest.raises(RuntimeError, match="no target statistics"):
        scaler.inverse_y(np.zeros(2))
