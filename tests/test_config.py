"""TrialConfig: validated from the one settings table (sbfn_dist.settings.fields); a field that does
not apply to the trial is refused, never silently ignored and recorded as if used."""

import pickle

import pytest

from sbfn_dist.settings import fields
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.experiment import run_trial


@pytest.mark.parametrize("field,value,message", [
    ("epsilon", 1.5, "epsilon"), ("epsilon", -0.1, "epsilon"), ("n_members", 0, "n_members"),
    ("lambda2", [-1.0], "lambda2"), ("combiners", ["nope"], "combiners"),
    ("competitors", ["xgboost"], "competitors"), ("batch_size", 0, "batch_size"),
    ("split", "loo", "split"), ("colour", "red", "known fields"), ("epochs", 0, "epochs"),
    ("combiners", ["g1", "g1"], "at most once"), ("seed", -1, "seed"),
])
def test_bad_values_are_clear_errors(field, value, message):
    with pytest.raises(ConfigError, match=message):
        TrialConfig.from_dict({field: value})


@pytest.mark.parametrize("config,field,where", [
    # image settings on a table, table settings on images
    ({"dataset": "diabetes", "ensemble": "cnn"}, "ensemble", "image data sets"),
    ({"dataset": "digits", "split": "kfold"}, "split", "holdout"),
    ({"dataset": "digits", "dtype": "float64"}, "dtype", "tabular data sets"),
    ({"dataset": "digits", "lambda1": 0.1}, "lambda1", "tabular data sets"),
    # a combiner's setting without that combiner
    ({"dataset": "diabetes", "combiners": ["sbfn_ls"], "lr_alpha": 0.1}, "lr_alpha", "g1"),
    ({"dataset": "diabetes", "combiners": ["g1"], "window": 50}, "window", "g2 and g3"),
    ({"dataset": "diabetes", "combiners": ["arithmetic"], "lambda2": [1.0]}, "lambda2",
     "regression combiners"),
    ({"dataset": "diabetes", "temperature": 2.0}, "temperature", "classification heads"),
    ({"dataset": "iris", "combiners": ["logit_mean"], "val_fraction": 0.3}, "val_fraction",
     "stacked"),
    ({"dataset": "digits", "optimizer": "adam", "momentum": 0.5}, "momentum", "sgd"),
    # settings of what the trial does not run
    ({"dataset": "diabetes", "competitor_grid": "small"}, "competitor_grid", "competitors"),
    ({"dataset": "diabetes", "combiners": [], "competitors": ["svm_rbf"], "n_members": 3},
     "n_members", "train members"),
    ({"dataset": "diabetes", "plugin_folds": 3}, "plugin_folds", "plugin_members"),
    # data settings of other data sets
    ({"dataset": "diabetes", "target": "age"}, "target", "csv:PATH"),
    ({"dataset": "diabetes", "data_dir": "/tmp"}, "data_dir", "read from files"),
    ({"dataset": "air_quality", "include_random_vars": True}, "include_random_vars", "appliances"),
    ({"dataset": "diabetes", "split": "kfold", "test_fraction": 0.3}, "test_fraction", "holdout"),
])
def test_a_field_that_does_not_apply_is_refused_naming_where_it_does(config, field, where):
    with pytest.raises(ConfigError, match=field) as err:
        TrialConfig.from_dict(config)
    assert where in str(err.value)


def test_the_refusal_comes_before_any_data_is_read():
    with pytest.raises(ConfigError, match="dtype"):
        run_trial({"dataset": "cifar10", "data_dir": "/nonexistent", "dtype": "float64"})


def test_a_shared_optional_setting_is_dropped_where_it_does_not_apply():
    config = {"dataset": "diabetes", "combiners": [], "competitors": ["svm_rbf"],
              "n_members": 3, "epsilon": 0.2}
    cfg = TrialConfig.from_dict(config, optional=["n_members", "epsilon"])
    assert not cfg.has("n_members") and cfg.competitors == ("svm_rbf",)


def test_reading_a_field_that_does_not_apply_is_an_error_not_a_default():
    cfg = TrialConfig.from_dict({"dataset": "diabetes", "combiners": ["sbfn_ls"]})
    with pytest.raises(ConfigError, match="does not apply"):
        cfg.lr_alpha
    assert cfg.get("lr_alpha") is None and cfg.sbfn_basis == "member"


def test_to_dict_holds_only_applicable_fields_and_round_trips():
    cfg = TrialConfig.from_dict({"dataset": "digits", "n_members": 3})
    values = cfg.to_dict()
    assert "width" not in values and "dtype" not in values and values["ensemble"] == "mixed"
    assert TrialConfig.from_dict(values) == cfg
    assert pickle.loads(pickle.dumps(cfg)) == cfg          # Ray ships configs between processes
    assert cfg.non_default() == {"dataset": "digits", "n_members": 3}


@pytest.mark.parametrize("dataset,task,expected", [
    ("diabetes", "regression", {"epsilon": 0.1, "lr": 0.03, "batch_size": 1, "folds": 10}),
    ("iris", "classification", {"epsilon": 0.5, "lr": 0.1, "batch_size": 16, "init_scale": 1.0}),
    ("digits", "classification", {"epsilon": 0.5, "lr": 1e-3, "batch_size": 128, "folds": 5}),
])
def test_defaults_come_from_the_one_table_by_task_and_data(dataset, task, expected):
    cfg = TrialConfig.from_dict({"dataset": dataset})
    assert cfg.task == task and cfg.modality == fields.Ctx({"dataset": dataset}).data.modality
    assert {k: cfg.get(k) for k in expected} == expected


def test_none_means_not_set():
    assert TrialConfig.from_dict({"dataset": "diabetes", "epsilon": None}).epsilon == 0.1


def test_the_task_must_fit_the_data():
    with pytest.raises(ConfigError, match="task.*regression data set"):
        TrialConfig.from_dict({"dataset": "diabetes", "task": "classification"})
    with pytest.raises(ConfigError, match="task"):
        TrialConfig.from_dict({"dataset": "digits", "task": "regression"})


def test_a_task_the_data_cannot_take_names_both_fixes():
    """It said "a table with a class column is csv:PATH with task='classification'", also to a
    regression asked of breast_cancer."""
    with pytest.raises(ConfigError, match=r"'breast_cancer' is a classification data set: leave "
                                          r"task out \(the data set's own\), or name a "
                                          r"regression data set: air_quality, .*friedman1, or "
                                          r"csv:PATH with target=COLUMN$"):
        TrialConfig.from_dict({"dataset": "breast_cancer", "task": "regression"})
    with pytest.raises(ConfigError, match=r"'diabetes' is a regression data set: .* name a "
                                          r"classification data set: breast_cancer, wine, iris, "
                                          r"or csv:PATH"):
        TrialConfig.from_dict({"dataset": "diabetes", "task": "classification"})
    with pytest.raises(ConfigError, match=r"'digits' is a classification data set: leave task "
                                          r"out \(the data set's own\), or name a regression "):
        TrialConfig.from_dict({"dataset": "digits", "task": "regresion"})
    assert TrialConfig.from_dict({"dataset": "csv:x.csv", "task": "classification"})


def test_split_and_folds_are_checked_together():
    with pytest.raises(ConfigError, match="folds.*>= 2"):
        TrialConfig.from_dict({"dataset": "diabetes", "folds": 1})
    assert TrialConfig.from_dict({"dataset": "diabetes", "split": "holdout", "folds": 1}).folds == 1
    with pytest.raises(ConfigError, match="fold"):
        TrialConfig.from_dict({"dataset": "diabetes", "folds": 3, "fold": 3})
    with pytest.raises(ConfigError, match="no published test split"):
        TrialConfig.from_dict({"dataset": "diabetes", "split": "fixed"})
    with pytest.raises(ConfigError, match="folds.*does not apply"):
        TrialConfig.from_dict({"dataset": "sincos", "split": "fixed", "folds": 5})


def test_unknown_dataset_lists_the_known_ones():
    with pytest.raises(DataError, match="air_quality.*appliances.*iris"):
        TrialConfig.from_dict({"dataset": "mushrooms"})


def test_missing_file_names_both_ways_to_provide_it(tmp_path):
    with pytest.raises(DataError, match="SBFN_DATA_DIR"):
        run_trial({"dataset": "air_quality", "data_dir": str(tmp_path)})


def test_bad_csv_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    with pytest.raises(DataError, match="target"):
        run_trial({"dataset": f"csv:{path}"})
    with pytest.raises(DataError, match="task='classification'"):
        run_trial({"dataset": f"csv:{path}", "target": "b"})


def test_paths_become_absolute_so_a_trial_may_run_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = TrialConfig.from_dict({"dataset": "csv:data/t.csv", "target": "y",
                                 "data_dir": "../shared"})
    assert cfg.dataset == f"csv:{tmp_path / 'data' / 't.csv'}"
    assert cfg.data_dir == str(tmp_path.parent / "shared")
