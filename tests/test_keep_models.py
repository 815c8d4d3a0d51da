"""--keep-models best|none (sweeps/engine/trainable.py, sweeps/engine/export.py, docs/models.md):
a tiny sweep keeps every configuration's fitted folds while it runs and ends with only the best
configuration's, at its best setting; `sweeps.export --fold K` saves that fold's model without
refitting, and its predictions on fold K's test rows give the record's score bit for bit; a
configuration whose models were deleted is refitted, and says so; a bad value is one line.
With none (the default) nothing is kept: tests/test_export_serve.py, on its sweep."""

import argparse
import contextlib
import io
from pathlib import Path

import pytest

from sbfn_dist.evaluation.metrics import regression_metrics
from sbfn_dist.interfaces.estimators import SBFNRegressor
from sweeps import Sweep
from sweeps.engine.options import add_flags
from sweeps.engine.sweepfile import SweepFileError
from sweeps.engine.trainable import KEPT, kept_dir
from tests.conftest import a_ray
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

