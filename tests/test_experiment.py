"""run_trial: one regression experiment, start to finish, as tidy records."""

import math

import pytest

from sbfn_dist.config import TrialConfig
from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.experiment import run_trial

ALL_MODELS = {"sbfn_ls", "sbfn_ls_linear", "g1", "g2", "g3", "arithmetic",
              "svm_rbf", "random_forest", "gradient_boosting"}
QUICK = {"n_members": 3, "epsilon": 0.35, "width": 16, "epochs": 2, "batch_size": 8,
         "lambda2": [0.0, 3.0], "competitors": ["svm_rbf", "random_forest", "gradient_boosting"],
         "competitor_grid": "default"}


def by_model(records):
    return {(r["model"], r["lambda2"] if not math.isnan(r["lambda2"]) else None): r for r in records}


def test_every_combiner_and_competitor_gives_a_record_per_fold_and_setting():
    records = run_trial(dict(QUICK, dataset="diabetes", folds=3))
    assert {r["model"] for r in records} == ALL_MODELS
    # 5 lambda-dependent combiners x 2 lambda2 + arithmetic + 3 competitors, for 3 folds
    assert len(records) == 3 * (5 * 2 + 1 + 3)
    assert all(r["status"] == "ok" and r["rmse"] > 0 for r in records)
    assert {r["fold"] for r in records} == {0, 1, 2}


def test_records_carry_the_config_timings_and_sizes():
    rec = run_trial(dict(QUICK, dataset="diabetes", folds=3, fold=1, competitors=[]))[0]
    for field in ("dataset", "n_members", "epsilon", "width", "lr", "seed", "fold", "model",
                  "lambda2", "rmse", "mae", "r2", "train_seconds", "eval_seconds", "n_params",
                  "status", "package_version", "task", "target_unit"):
        assert field in rec
    assert rec["fold"] == 1 and rec["train_seconds"] > 0 and rec["n_params"] > 0


def test_hypotheses_are_shared_by_all_combiners_of_a_fold():
    records = run_trial(dict(QUICK, dataset="diabetes", folds=3, fold=0, competitors=[]))
    assert len({r["members_train_seconds"] for r in records}) == 1
    assert len({r["member_rmse_mean"] for r in records}) == 1


def test_a_trial_reruns_exactly():
    cfg = dict(QUICK, dataset="diabetes", folds=3, fold=2)
    first, second = run_trial(cfg), run_trial(cfg)
    assert [r["rmse"] for r in first] == [r["rmse"] for r in second]


def test_divergence_is_a_status_not_a_crash():
    records = run_trial(dict(QUICK, dataset="diabetes", folds=3, fold=0, competitors=[],
                             lr=1e4, init_scale=50.0, batch_size=1))
    assert {r["status"] for r in records} == {"diverged"}
    assert all(math.isnan(r["rmse"]) for r in records)
    assert "non-finite" in records[0]["error"]


def test_air_quality_real_file_gives_finite_rmse_for_every_model(data_dir):
    records = run_trial(dict(QUICK, dataset="air_quality", data_dir=data_dir, fold=0))
    assert {r["model"] for r in records} == ALL_MODELS
    assert all(r["status"] == "ok" and 0 < r["rmse"] < 1.5 for r in records)  # AH in g/m^3
    assert records[0]["n_train"] + records[0]["n_test"] == 8991


def test_appliances_candanedo_split_gives_finite_rmse_for_every_model(data_dir):
    records = run_trial(dict(QUICK, dataset="appliances", data_dir=data_dir, split="fixed",
                             fold=0))
    assert {r["model"] for r in records} == ALL_MODELS
    assert all(r["status"] == "ok" and 30 < r["rmse"] < 150 for r in records)  # Wh
    assert records[0]["n_test"] == 4932


@pytest.mark.parametrize("field,value,message", [
    ("epsilon", 1.5, "epsilon"), ("epsilon", -0.1, "epsilon"), ("n_members", 0, "n_members"),
    ("lambda2", [-1.0], "lambda2"), ("combiners", ["nope"], "combiners"),
    ("competitors", ["xgboost"], "competitors"), ("batch_size", 0, "batch_size"),
    ("split", "loo", "split"), ("colour", "red", "known fields"),
])
def test_bad_config_values_are_clear_errors(field, value, message):
    with pytest.raises(ConfigError, match=message):
        TrialConfig.from_dict({field: value})


def test_unknown_dataset_lists_the_known_ones():
    with pytest.raises(DataError, match="air_quality.*appliances"):
        run_trial({"dataset": "iris"})


def test_missing_file_names_both_ways_to_provide_it(tmp_path):
    with pytest.raises(DataError, match="SBFN_DATA_DIR"):
        run_trial({"dataset": "air_quality", "data_dir": str(tmp_path)})


def test_bad_csv_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    with pytest.raises(DataError, match="target"):
        run_trial({"dataset": f"csv:{path}"})
