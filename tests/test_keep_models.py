"""--keep-models best|none (sweeps/engine/run/trainable.py, sweeps/engine/model_export.py,
docs/models.md): a tiny sweep keeps every configuration's fitted folds while it runs and ends with
only the best configuration's, at its best setting; `sweeps.export --fold K` saves that fold's model
without refitting, and its predictions on fold K's test rows give the record's score bit for bit; a
configuration whose models were deleted is refitted, and says so; a bad value is one line.
Classification trials (tables and images, without a sweep: the fold loop's `keep` as a trial calls
it) keep their members, head and scaling, and export with the classes' names. With none (the
default) nothing is kept: tests/test_export_serve.py, on its sweep."""

import argparse
import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from sbfn_dist.evaluation.metrics import regression_metrics
from sbfn_dist.experiment import run_trials
from sbfn_dist.interfaces import saved
from sbfn_dist.interfaces.estimators import SBFNClassifier, SBFNRegressor
from sbfn_dist.settings.config import TrialConfig
from sweeps import Sweep
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan.options import add_flags
from sweeps.engine.plan.sweep_keys import SweepFileError
from sweeps.engine.results.refit import refit
from sweeps.engine.run.kept import KEPT, kept_dir
from sweeps.engine.run.trial import keeper
from tests.sweep_helpers import a_ray
from tests.test_export_serve import TINY, export, fold_part, manifest, planned, recorded, table

pytestmark = pytest.mark.timeout(900)


def run_tiny(storage: Path, **options):
    """The tiny sweep of test_export_serve without MLflow: (the Sweep, its SweepResult, root)."""
    sweep = Sweep.from_dict({**TINY, "mlflow": False, "storage": str(storage), **options})
    with a_ray(), contextlib.redirect_stdout(io.StringIO()):
        result = sweep.run()
    return sweep, result, Path(result.path)


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    return run_tiny(tmp_path_factory.mktemp("keep"), keep_models="best")


def kept_files(root: Path) -> set:
    """Every saved model under <results>/models/, relative to the results directory."""
    return {str(m.parent.relative_to(root)) for m in (root / KEPT).rglob("manifest.json")}


def test_only_the_best_configuration_s_folds_remain(kept):
    sweep, result, root = kept
    best = result.best()
    assert len({c["trial_id"] for c in sweep.trials() if c.get("combiners")}) > 1
    assert kept_files(root) == {kept_dir(best.trial_id, k, best.model, best.model_params)
                                for k in (0, 1)}
    assert [p.name for p in (root / KEPT).iterdir()] == [best.trial_id]


def test_fold_k_s_kept_model_is_exported_and_scores_as_recorded_exactly(kept, tmp_path):
    sweep, result, root = kept
    best = result.best()
    code, out, err = export(root, "--fold", 1, "--out", tmp_path / "m", "--no-mlflow")
    assert code == 0, err
    assert "kept from the sweep (no refit)" in out
    assert manifest(tmp_path / "m")["source"]["how"] == "kept"
    model = SBFNRegressor.load(tmp_path / "m")
    data, train, test = fold_part(planned(sweep)[best.trial_id], 1)
    rmse = regression_metrics(data.y[test], model.predict(table(data, test)))["rmse"]
    # The trial's own members and combiner on the trial's own test rows: the same bits.
    assert rmse == recorded(root, best, 1)["rmse"]


def test_a_configuration_whose_models_were_deleted_is_refitted(kept, tmp_path):
    sweep, result, root = kept
    best = result.best()
    other = next(c["trial_id"] for c in sweep.trials() if c.get("combiners")
                 and c["extra"].get("role") == "ensemble" and c["trial_id"] != best.trial_id)
    code, out, err = export(root, "--config", other, "--fold", 0, "--out", tmp_path / "m",
                            "--no-mlflow")
    assert code == 0, err
    assert f"exported {other}" in out and "refitted on fold 0" in out
    assert manifest(tmp_path / "m")["source"]["how"] == "refitted"


def test_a_bad_value_is_one_line(capsys):
    with pytest.raises(SweepFileError, match="keep_models.*one of best, none"):
        Sweep.from_dict({**TINY, "keep_models": "all"})
    parser = argparse.ArgumentParser()
    add_flags(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--keep-models", "all"])
    [line] = capsys.readouterr().err.strip().splitlines()[-1:]
    assert "--keep-models: 'all' is not one of best, none" in line



# ------------------------------------------------------------------------- classification
# A float32 head run in float64 (a float64 classifier's head runs in its members' dtype, as
# fit leaves it) moves a score by float32 rounding, carried through a few dozen operations.
HEAD_ROUNDING = 64 * float(np.finfo(np.float32).eps)


def kept_and_exported(tmp_path, model: str, **settings) -> list:
    """Each fold's (record of `model`, the export of the model the trial kept of that fold)."""
    config = TrialConfig.from_dict(dict(seed=1, device="cpu", trial_id="t", sweep="s",
                                        **settings)).to_dict()
    store = ResultStore(str(tmp_path / "results"))
    [records] = run_trials([config], keep=keeper(store, model))
    return [(next(r for r in records if r["fold"] == k and r["model"] == model),
             refit(config, model, {}, k, store)) for k in (0, 1)]


@pytest.mark.parametrize("dtype,combiners", [("float32", ["sbfn", "logit_mean_tuned"]),
                                             ("float64", ["sbfn_stacked", "moe"])])
def test_a_table_classifier_s_kept_fold_scores_as_recorded(tmp_path, dtype, combiners):
    """On-the-fly and stacked heads and a tuned temperature; float32 gives the same bits."""
    for record, made in kept_and_exported(tmp_path, combiners[0], dataset="iris", folds=3,
                                          n_members=3, epochs=3, dtype=dtype,
                                          combiners=combiners):
        assert made.how == "kept" and isinstance(made.estimator, SBFNClassifier)
        assert list(made.estimator.classes_) == ["setosa", "versicolor", "virginica"]
        assert made.scores["accuracy"] == record["accuracy"]
        rel = 0 if dtype == "float32" else HEAD_ROUNDING
        assert made.scores["nll"] == pytest.approx(record["nll"], rel=rel)


def test_an_image_classifier_s_kept_split_scores_as_recorded(tmp_path):
    """Members from a factory the configuration names (loaded trusting that factory alone),
    the trial's per-channel moments, the images' shape; the model answers with class names."""
    X, y = load_digits(return_X_y=True)
    np.savez(tmp_path / "digits.npz", x=(X[:300].reshape(-1, 8, 8) * 16).astype(np.uint8),
             y=y[:300])
    for record, made in kept_and_exported(
            tmp_path, "logit_mean", dataset=f"npz:{tmp_path / 'digits.npz'}", folds=2,
            n_test=60, n_members=2, epochs=2, ensemble="tests.nets_for_tests:simple_cnn",
            combiners=["logit_mean", "sbfn_stacked"]):
        assert made.how == "kept" and made.estimator.image_shape_ == (1, 8, 8)
        assert set(made.estimator.classes_) == set(range(10))      # the npz's own labels
        assert made.scores["accuracy"] == record["accuracy"] > 0.2      # learnt, not chance
        assert made.scores["nll"] == pytest.approx(record["nll"], rel=HEAD_ROUNDING)


def test_a_kept_model_naming_other_code_than_its_configuration_is_refused(tmp_path):
    """The export trusts the member factories its configuration names (a refit imports them
    too), no other: a kept model whose members name another factory is refused in one line."""
    X, y = load_digits(return_X_y=True)
    np.savez(tmp_path / "d.npz", x=(X[:100].reshape(-1, 8, 8) * 16).astype(np.uint8), y=y[:100])
    named, other = "tests.nets_for_tests:simple_cnn", "tests.nets_for_tests:small_bn_net"
    config = TrialConfig.from_dict(dict(
        dataset=f"npz:{tmp_path / 'd.npz'}", folds=1, n_test=20, n_members=2, epochs=1,
        ensemble=named, combiners=["logit_mean"], seed=1, device="cpu", trial_id="t",
        sweep="s")).to_dict()
    store = ResultStore(str(tmp_path / "results"))
    run_trials([config], keep=keeper(store, "logit_mean"))
    assert refit(config, "logit_mean", {}, 0, store).how == "kept"
    manifest = tmp_path / "results" / kept_dir("t", 0, "logit_mean", {}) / saved.MANIFEST
    manifest.write_text(manifest.read_text().replace(named, other))
    with pytest.raises(saved.SavedModelError, match=f"{other}.*trust_plugins=True"):
        refit(config, "logit_mean", {}, 0, store)
