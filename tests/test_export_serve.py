"""Models from a sweep (sweeps/engine/model_export.py, docs/models.md): a tiny finished sweep's
configurations read back from its records exactly as planned; its best one exported, refitted
on all rows or on fold K, whose test score is the record's; logged to the sweep's MLflow run,
opened by mlflow.pyfunc and served by `mlflow models serve`, whose HTTP answers are the
in-process estimator's; bad input is one line naming the fix."""

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes, load_digits

from sbfn_dist.evaluation.metrics import regression_metrics
from sbfn_dist.experiment import run_trial
from sbfn_dist.folds import load_data, make_parts
from sbfn_dist.interfaces.estimators import SBFNRegressor
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.tasks import PRACTITIONERS
from sweeps import Sweep, SweepResult
from sweeps.engine.plan.planning import trial_key
from sweeps.engine.results.recorded import check_recorded, read_sweep, recorded_configs
from sweeps.engine.results.refit import refit
from sweeps.engine.tracking.mlflow_model import factory_code
from sweeps.engine.tracking.serving import SavedSBFN
from sweeps.export import main as export_main
from sweeps.tools.mlflow_server import healthy
from tests.sweep_helpers import a_ray, free_port

pytestmark = pytest.mark.timeout(900)

# Bundled diabetes, 80 rows, 2 folds, 1 epoch of M = 2 (epsilon 0 and 0.35) and the M = 1
# references, trained as one pack (one trial at a time: tests/sweep_helpers.py, ONE_AT_A_TIME),
# and ridge as a competitor, logged to the sweep's sqlite store.
# float64 members: a pack equals its sets trained alone to ~1e-15 (float32: ~1e-7).
TINY = {"name": "tiny", "dataset": "diabetes", "folds": 2, "competitors": ["ridge"],
        "axes": {"n_members": [2], "epsilon": [0.0, 0.35]},
        "settings": {"n_samples": 80, "epochs": 1, "dtype": "float64"},
        "resources": {"num_cpus": 2, "max_concurrent": 1}}
EXACT = 1e-9          # relative: float64 rounding, far below what another fold's rows change
HEAD_ROUNDING = 64 * float(np.finfo(np.float32).eps)   # a float32 head's, over a few dozen ops


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """(the Sweep, its SweepResult, its results directory)."""
    sweep = Sweep.from_dict({**TINY, "storage": str(tmp_path_factory.mktemp("export"))})
    with a_ray(), contextlib.redirect_stdout(io.StringIO()):
        result = sweep.run()
    return sweep, result, Path(result.path)


def export(*argv) -> tuple[int, str, str]:
    """python -m sweeps.export ARGV, in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = export_main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def planned(sweep) -> dict:
    return {c["trial_id"]: c for c in sweep.trials()}


def fold_part(config: dict, fold: int):
    """(the data, fold's training rows, its test rows), by the trial's own loader and splitter."""
    cfg = TrialConfig(config)
    data = load_data(cfg)
    train, test = make_parts(cfg, data)[fold]
    return data, train, test


def table(data, rows) -> pd.DataFrame:
    return pd.DataFrame(data.X[rows], columns=list(data.feature_names))


def recorded(root: Path, best, fold: int) -> dict:
    """The record of the best configuration's model and setting on `fold`."""
    t = pd.read_parquet(root / "results.parquet")
    row = t[(t["trial_id"] == best.trial_id) & (t["fold"] == fold) & (t["model"] == best.model)
            & (t["model_params"] == json.dumps(best.model_params))]
    [record] = row.to_dict("records")
    return record


def manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


# ------------------------------------------------------------------------- configs and refits
def test_the_records_give_back_every_configuration_as_planned(finished):
    sweep, result, root = finished
    found = read_sweep(str(root))
    rebuilt = {c["trial_id"]: c for c in recorded_configs(found.spec, found.frame)}
    assert rebuilt == planned(sweep)


def test_a_sweep_keeps_no_model_by_default(finished):
    """--keep-models none, the default: nothing under models/ (tests/test_keep_models.py)."""
    from sweeps.engine.run.kept import KEPT
    sweep, _, root = finished
    assert sweep.options.keep_models == "none"
    assert (root / "results.parquet").exists() and not (root / KEPT).exists()


def test_fold_k_s_export_scores_fold_k_s_test_rows_as_recorded(finished, tmp_path):
    sweep, result, root = finished
    best = result.best()
    code, out, err = export(root, "--fold", 1, "--out", tmp_path / "m", "--no-mlflow")
    assert code == 0, err
    model = SBFNRegressor.load(tmp_path / "m")
    source = manifest(tmp_path / "m")["source"]
    assert (source["trial_id"], source["model"], source["fold"]) == (best.trial_id, best.model, 1)
    data, train, test = fold_part(planned(sweep)[best.trial_id], 1)
    assert source["n_rows"] == len(train)
    rmse = regression_metrics(data.y[test], model.predict(table(data, test)))["rmse"]
    assert rmse == pytest.approx(recorded(root, best, 1)["rmse"], rel=EXACT)
    assert f"(recorded {recorded(root, best, 1)['rmse']:.6g})" in out


def test_the_default_export_is_the_best_configuration_on_all_rows(finished, tmp_path):
    sweep, result, root = finished
    best = result.best()
    code, out, err = export(root, "--out", tmp_path / "m", "--no-mlflow")
    assert code == 0, err
    source = manifest(tmp_path / "m")["source"]
    assert (source["trial_id"], source["model"], source["model_params"], source["fold"]) == \
        (best.trial_id, best.model, best.model_params, None)
    assert source["n_rows"] == TINY["settings"]["n_samples"]
    data, _, test = fold_part(planned(sweep)[best.trial_id], 0)
    exported = SBFNRegressor.load(tmp_path / "m").predict(table(data, test))
    assert np.array_equal(result.best_model().predict(table(data, test)), exported)
    assert SweepResult.open(root).best().trial_id == best.trial_id


def test_the_m1_reference_exports_as_its_one_network(finished, tmp_path):
    """A configuration named by --config: the M = 1 reference's model is the arithmetic
    combiner, which has no lambda2 (its config holds the sweep's path of them)."""
    sweep, _, root = finished
    reference = next(k for k, c in planned(sweep).items() if c["extra"]["role"] == "reference")
    code, _, err = export(root, "--config", reference, "--out", tmp_path / "m", "--no-mlflow")
    assert code == 0, err
    model = SBFNRegressor.load(tmp_path / "m")
    assert (model.n_members, model.combiner) == (1, "arithmetic")


def test_a_whole_number_planned_as_an_integer_is_read_back_by_the_key(finished):
    """Records hold epsilon 0 as 0.0 when the column has other floats; the trial_id's digest
    says whether the plan had the integer (epsilon: [0, 0.35] in a sweep file)."""
    sweep, result, root = finished
    config = next(c for c in planned(sweep).values() if c.get("epsilon") == 0.0
                  and c["extra"]["role"] == "ensemble")
    key = trial_key(TrialConfig({**config, "epsilon": 0}), {})
    rows = result.frame[result.frame["trial_id"] == config["trial_id"]]
    found = check_recorded({**config, "trial_id": f"M2_eps0_s0_{key}"}, rows)
    assert found["epsilon"] == 0 and type(found["epsilon"]) is int
    assert type(check_recorded(config, rows)["epsilon"]) is float


def test_a_classification_fold_is_refitted_as_its_trial_ran():
    """No sweep needed: a trial's fold and the export's refit of each of its combiners, on iris.
    The trial held out a validation part for its stacked combiners (the head, the
    practitioners' ones): the members and the other combiners trained without it, the stacked
    ones on it (the estimator draws the same rows).
    The classes come back by name."""
    config = TrialConfig.from_dict(dict(
        dataset="iris", folds=3, fold=1, seed=1, n_members=3, epochs=2, dtype="float64",
        combiners=["sbfn", "sbfn_stacked", "logit_mean", *PRACTITIONERS["classification"]],
        device="cpu", trial_id="t",
        sweep="s")).to_dict()
    records = {r["model"]: r for r in run_trial(config)}
    refits = {model: refit(config, model, {}, 1) for model in records}
    for model, made in refits.items():
        assert made.scores["accuracy"] == records[model]["accuracy"], model
        # A head trains in float32 and runs in the float64 members' dtype in an estimator.
        assert made.scores["nll"] == pytest.approx(records[model]["nll"], rel=HEAD_ROUNDING)
    assert refits["sbfn_stacked"].n_rows == 100                  # 2 of iris' 3 folds
    made = refits["logit_mean"]
    assert made.n_rows == 100 - 20 and "less the validation part" in made.what
    assert list(made.estimator.classes_) == ["setosa", "versicolor", "virginica"]
    pyfunc = SavedSBFN()           # what the MLflow model answers: the label and each class's p
    pyfunc.model = made.estimator
    answer = pyfunc.predict(None, made.example)
    assert list(answer.columns) == ["label", "p_setosa", "p_versicolor", "p_virginica"]
    assert list(answer["label"]) == list(made.estimator.predict(made.example))


def test_a_csv_s_integer_classes_come_back_as_integers(tmp_path):
    """A CSV whose labels are numbers: the exported model answers in the file's own labels, so
    that its predictions compare equal to the file's column (they were the strings '3', '5',
    '7': no prediction equal to the column, and score() refused the mix)."""
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    frame = pd.DataFrame(X, columns=list("abcd")).assign(label=np.array([3, 5, 7])[y])
    frame.to_csv(tmp_path / "flowers.csv", index=False)
    config = TrialConfig.from_dict(dict(
        dataset=f"csv:{tmp_path / 'flowers.csv'}", target="label", task="classification",
        folds=3, fold=0, n_members=2, epochs=2, combiners=["logit_mean"], device="cpu",
        trial_id="t", sweep="s")).to_dict()
    made = refit(config, "logit_mean", {}, 0)
    assert made.estimator.classes_.tolist() == [3, 5, 7]
    predicted = made.estimator.predict(frame[list("abcd")])
    assert (predicted == frame["label"]).mean() > 0.5
    assert made.estimator.score(frame[list("abcd")], frame["label"]) > 0.5


def test_a_csv_s_integer_columns_are_what_the_logged_model_takes(tmp_path):
    """The MLflow signature is inferred from the example rows: a CSV's integer columns are
    integers there, so the model takes the frame pd.read_csv gives (its float64 signature
    refused it in Python: "Can not safely convert int64 to float64")."""
    from mlflow.models import infer_signature
    from mlflow.models.utils import _enforce_schema      # what pyfunc's predict runs first
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    frame = X.assign(age=(X["age"] * 1000).round().astype(int), y=y).iloc[:120]
    frame.to_csv(tmp_path / "mine.csv", index=False)
    config = TrialConfig.from_dict(dict(
        dataset=f"csv:{tmp_path / 'mine.csv'}", target="y", folds=3, fold=0, n_members=2,
        epochs=1, combiners=["sbfn_ls_linear"], device="cpu", trial_id="t",
        sweep="s")).to_dict()
    made = refit(config, "sbfn_ls_linear", {}, 0)
    read = pd.read_csv(tmp_path / "mine.csv").drop(columns="y")
    assert made.example.dtypes.to_dict() == read.dtypes.to_dict()
    signature = infer_signature(made.example)
    taken = _enforce_schema(read, signature.inputs)
    np.testing.assert_array_equal(made.estimator.predict(taken), made.estimator.predict(read))


def test_an_image_split_trains_on_its_training_and_validation_images(tmp_path):
    """Image trials hold out a test part per split; the export trains on the rest."""
    X, y = load_digits(return_X_y=True)
    np.savez(tmp_path / "digits.npz", x=(X[:300].reshape(-1, 8, 8) * 16).astype(np.uint8),
             y=y[:300])
    config = TrialConfig.from_dict(dict(
        dataset=f"npz:{tmp_path / 'digits.npz'}", folds=2, n_test=60, n_members=2, epochs=1,
        ensemble="cnn", combiners=["sbfn_stacked"], device="cpu", trial_id="t")).to_dict()
    made = refit(config, "sbfn_stacked", {}, None)
    split = make_parts(TrialConfig(config), load_data(TrialConfig(config)))[0]
    assert made.fold == 0 and made.n_rows == len(split.train) + len(split.val) == 240
    assert set(made.estimator.classes_) == set(range(10))      # the npz's own labels


# ------------------------------------------------------------------------- MLflow and serving
def test_an_mlflow_model_carries_your_factories_code_not_installed_packages(tmp_path,
                                                                            monkeypatch):
    """code_paths: a module of your own, a package's folder; an installed package is a
    requirement (torchvision's resnet18 would be one), never copied."""
    (tmp_path / "mine.py").write_text("")
    (tmp_path / "pkg" / "nets").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "nets" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = factory_code(["mine:build", "pkg.nets:build", "pkg.nets:other",
                          "torchvision.models:resnet18"])
    assert found == [str((tmp_path / "mine.py").resolve()), str((tmp_path / "pkg").resolve())]


@contextlib.contextmanager
def served(uri: str, tracking_uri: str, log: Path):
    """`mlflow models serve` of `uri` on a free port of 127.0.0.1 until the block ends; yields
    the port once /health answers."""
    port = free_port()
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "MLFLOW_TRACKING_URI": tracking_uri,
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}   # uvicorn, by name
    command = [str(bin_dir / "mlflow"), "models", "serve", "-m", uri, "--env-manager", "local",
               "-h", "127.0.0.1", "-p", str(port)]
    with open(log, "w") as out:
        server = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not healthy(port) and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert healthy(port), f"the model server did not come up:\n{log.read_text()[-3000:]}"
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)      # its own session: mlflow and its uvicorn
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def invocations(port: int, frame: pd.DataFrame) -> np.ndarray:
    status, answer = asked(port, frame)
    assert status == 200, answer
    return np.asarray(answer["predictions"], dtype=float)


def asked(port: int, frame: pd.DataFrame) -> tuple[int, dict]:
    """(HTTP status, the JSON answer) of the server for `frame`'s rows (null for NaN)."""
    data = frame.astype(object).where(frame.notna(), None).to_numpy().tolist()
    body = json.dumps({"dataframe_split": {"columns": list(frame.columns), "data": data}})
    request = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", body.encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def with_cell(frame: pd.DataFrame, row: int, column: str, value) -> pd.DataFrame:
    out = frame.astype(float).copy()
    out.loc[out.index[row], column] = value
    return out


def test_the_logged_model_is_served_with_the_estimator_s_and_the_record_s_answers(
        finished, tmp_path, monkeypatch):
    import mlflow
    sweep, result, root = finished
    best = result.best()
    code, out, err = export(root, "--fold", 1, "--out", tmp_path / "m")
    assert code == 0, err
    [uri] = [w.rstrip(",") for w in out.split() if w.startswith("models:/")][:1]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", result.tracking_uri)

    client = mlflow.MlflowClient()
    experiment = client.get_experiment_by_name("tiny")
    [parent] = client.search_runs([experiment.experiment_id], "tags.role = 'sweep'")
    logged = client.get_logged_model(uri.removeprefix("models:/"))
    assert (logged.experiment_id, logged.source_run_id) == (experiment.experiment_id,
                                                           parent.info.run_id)
    assert logged.model_id in [m.model_id for m in client.get_run(
        parent.info.run_id).outputs.model_outputs]
    assert parent.info.status == "FINISHED"          # the sweep's run, left as it was

    data, _, test = fold_part(planned(sweep)[best.trial_id], 1)
    rows = table(data, test)
    estimator = SBFNRegressor.load(tmp_path / "m")
    pyfunc = mlflow.pyfunc.load_model(uri)
    assert pyfunc.metadata.get_input_schema().input_names() == list(data.feature_names)
    assert np.array_equal(pyfunc.predict(rows), estimator.predict(rows))

    with served(uri, result.tracking_uri, tmp_path / "serve.log") as port:
        answered = invocations(port, rows)
        # Refused in one line with HTTP 400 (before issue 32: NaN with 200 for 1e300, MLflow's
        # "unexpected error" and a stack trace for an empty cell or no rows). These members are
        # float64: the largest float overflows their standardised input (diabetes' features
        # have std ~0.05); float32 members overflow at 1e300 already (the test above).
        largest = float(np.finfo(np.float64).max)
        refused = {"overflow": asked(port, rows.iloc[:2].map(lambda v: largest)),
                   "empty cell": asked(port, with_cell(rows.iloc[:2], 1, "bmi", np.nan)),
                   "no rows": asked(port, rows.iloc[:0])}
    for case, (status, answer) in refused.items():
        assert status == 400 and answer["error_code"] == "INVALID_PARAMETER_VALUE", (case, answer)
        assert "stack_trace" not in answer and "Traceback" not in answer["message"], case
    assert "the model's answer for rows [0, 1] is not a finite number" in refused["overflow"][1][
        "message"]
    assert "column 'bmi' holds an empty cell (null or NaN) in row 1" in refused["empty cell"][1][
        "message"]
    assert "no rows: send at least one row of the columns age, sex, bmi" in refused["no rows"][1][
        "message"]
    assert answered == pytest.approx(estimator.predict(rows), rel=1e-15)   # JSON: exact repr
    rmse = regression_metrics(data.y[test], answered)["rmse"]
    assert rmse == pytest.approx(recorded(root, best, 1)["rmse"], rel=EXACT)


def test_the_code_of_a_model_logged_under_an_old_module_path_still_loads():
    """A logged model's code (serving.MODEL_CODE, run where it loads) names the module of its
    day: sweeps.engine.export before 2026-11-28, sweeps.engine.tell.serving until issue 49's
    renames. Both still give the one pyfunc_model; no other old name loads, so an older sweep's
    pickled Tune state still starts again in one line (tune.py, _restored_tuner)."""
    code = ("import sweeps.engine.tracking.serving as now\n"
            "from sweeps.engine.export import pyfunc_model as first\n"
            "from sweeps.engine.tell.serving import pyfunc_model as then\n"
            "assert first is then is now.pyfunc_model\n"
            "print(type(then()()).__mro__[1].__name__)\n"
            "import importlib\n"
            "for gone in ('sweeps.engine.tell.mlflow_logger', 'sweeps.engine.run.summaries'):\n"
            "    try:\n"
            "        importlib.import_module(gone)\n"
            "    except ModuleNotFoundError:\n"
            "        print('gone', gone)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:3] == ["SavedSBFN", "gone sweeps.engine.tell.mlflow_logger",
                                           "gone sweeps.engine.run.summaries"]


def test_the_served_model_refuses_what_it_cannot_answer_in_one_line():
    """SavedSBFN.predict, as `mlflow models serve` calls it: an MlflowException with
    INVALID_PARAMETER_VALUE (HTTP 400, its message as the body's) naming what to send; columns
    are taken by name in any order, extra ones ignored (as MLflow's signature does)."""
    from mlflow.exceptions import MlflowException
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    pyfunc = SavedSBFN()
    pyfunc.model = SBFNRegressor(n_members=2, epochs=1, dtype="float32").fit(X[:80], y[:80])
    rows = X.iloc[:3]
    expected = pyfunc.model.predict(rows)
    assert np.array_equal(pyfunc.predict(None, rows[rows.columns[::-1]].assign(extra=1.0)),
                          expected)
    cases = {"the model's answer for row [0] is not a finite number: its values lie too far "
             "outside the training data for the networks (row 0: column ": rows.assign(
                 **{c: [1e300, 0.0, 0.0] for c in rows}),
             "column 'bmi' holds an empty cell (null or NaN) in row 2 (1 such cells in all): "
             "send a finite number in every cell": with_cell(rows, 2, "bmi", np.nan),
             "column 's1' holds inf in row 0": with_cell(rows, 0, "s1", np.inf),
             "column 'bp' holds 'x' in row 1, which is no number": rows.astype(object).assign(
                 bp=[0.0, "x", 0.0]),
             "no rows: send at least one row of the columns age, sex, bmi": rows.iloc[:0],
             "missing columns ['bmi']: send every column the model was trained on: age, sex, "
             "bmi": rows.drop(columns="bmi")}
    for message, frame in cases.items():
        with pytest.raises(MlflowException) as refused:
            pyfunc.predict(None, frame)
        assert refused.value.error_code == "INVALID_PARAMETER_VALUE"
        assert message in refused.value.message and "\n" not in refused.value.message


# ------------------------------------------------------------------------- refusals
def a_copy(root: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("tune", "mlartifacts"))
    return copy


def diverge(root: Path, trial_id: str, fold: int) -> None:
    """Mark a configuration's rows of one fold diverged, as a member divergence writes them."""
    t = pd.read_parquet(root / "results.parquet")
    mine = (t["trial_id"] == trial_id) & (t["fold"] == fold)
    t.loc[mine, ["status", "error"]] = ["diverged", "nan loss"]
    t.loc[mine, "rmse"] = np.nan
    t.to_parquet(root / "results.parquet")


def test_bad_input_is_one_line_naming_the_fix(finished, tmp_path):
    sweep, result, root = finished
    best = result.best()
    competitor = next(k for k in planned(sweep) if k.startswith("ridge"))
    copy = a_copy(root, tmp_path)
    diverge(copy, best.trial_id, 1)
    cases = {(tmp_path / "nothing",): "holds no sweep (no sweep.json)",
             (root, "--config", "M2_eps0_s0"): "unknown configuration 'M2_eps0_s0' (did you mean",
             (root, "--config", competitor): "is a competitor trial (ridge)",
             (root, "--fold", 2): "ran folds 0, 1",
             (root, "--objective", "sbfn_rbf"): "no record of the model sbfn_rbf",
             # it exported the best sbfn_ls_linear configuration before, saying nothing
             (root, "--objective", "ridge"): "ridge runs in trials of its own (competitors, "
                                             "the M = 1 reference), not an ensemble's combiner",
             (root, "--metric", "accuracy"): "unknown metric 'accuracy'; a regression sweep's "
                                             "scores: rmse, mae, r2",
             (copy, "--config", best.trial_id): f"{best.trial_id} has no model with every fold ok "
                                                "(diverged on fold 1: nan loss)"}
    (tmp_path / "nothing").mkdir()
    for argv, message in cases.items():
        code, out, err = export(*argv, "--out", tmp_path / "out", "--no-mlflow")
        assert (code, out) == (2, ""), (argv, out)
        assert err.startswith("error: ") and err.count("\n") == 1 and message in err, (argv, err)
        assert not (tmp_path / "out").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("a user's file")
    code, _, err = export(root, "--out", tmp_path / "mine", "--no-mlflow")
    assert code == 2 and "holds no saved model: save to a new or empty directory" in err
    if Path("/proc").is_dir():      # tempfile's FileNotFoundError before issue 32
        code, out, err = export(root, "--out", "/proc/sbfn-model", "--no-mlflow")
        assert (code, out) == (2, "") and err.count("\n") == 1, err
        assert "cannot save a model to /proc/sbfn-model: cannot write in /proc" in err
    code, _, err = export(copy, "--out", tmp_path / "out", "--no-mlflow")
    assert code == 0, err            # the best of the others, the diverged one unranked
    assert manifest(tmp_path / "out")["source"]["trial_id"] != best.trial_id


def test_a_sweep_is_ranked_and_exported_by_its_own_recorded_objective(finished, tmp_path):
    """Regression sweeps rank by sbfn_ls_linear now (issue 32); a sweep run when the default was
    sbfn_ls (its sweep.json says so) is still ranked, and exported, by sbfn_ls."""
    _, result, root = finished
    assert result.objective == "sbfn_ls_linear" == result.best().model
    copy = a_copy(root, tmp_path)
    spec = json.loads((copy / "sweep.json").read_text())
    (copy / "sweep.json").write_text(json.dumps({**spec, "objective": "sbfn_ls"}))
    assert SweepResult.open(copy).best().model == "sbfn_ls"
    code, out, err = export(copy, "--out", tmp_path / "m", "--no-mlflow")
    assert code == 0 and manifest(tmp_path / "m")["source"]["model"] == "sbfn_ls", err


def test_the_export_of_a_killed_sweep_says_it_is_partial(finished, tmp_path):
    """A killed sweep leaves parts and no results.parquet; one configuration never ran. The
    export says so, by the report's rule (analysis.collect.SweepInfo.partial); it said nothing
    before issue 32."""
    sweep, _, root = finished
    copy = a_copy(root, tmp_path)
    (copy / "results.parquet").unlink()
    never = next(k for k in planned(sweep) if k.startswith("ridge"))
    for part in (copy / "parts").glob(f"{never}-f*.parquet"):
        part.unlink()
    code, out, err = export(copy, "--out", tmp_path / "m", "--no-mlflow")
    assert code == 0, err
    expected = len(planned(sweep))
    assert (f"  Partial sweep 'tiny': {expected - 1} of {expected} trials have results; 1 are "
            "missing (not finished, or never started): the configuration is the best of those "
            "present; --resume the sweep to finish it") in out
    code, out, err = export(root, "--out", tmp_path / "whole", "--no-mlflow")
    assert code == 0 and "Partial" not in out, err


def test_without_a_tracking_store_the_export_says_how_to_log_it(finished, tmp_path):
    _, _, root = finished
    copy = a_copy(root, tmp_path)
    (copy / "mlflow.db").unlink()
    code, out, err = export(copy, "--out", tmp_path / "m")
    assert code == 0, err
    assert "not logged to MLflow" in out and "pass --mlflow-uri URI" in out
    assert (tmp_path / "m" / "manifest.json").exists()


def test_a_sqlite_store_s_model_files_are_beside_it_not_in_the_working_folder(
        finished, tmp_path, monkeypatch):
    """MLflow's default artifact root is ./mlruns of the folder the command ran in: the model's
    files landed there, wherever the store's file was."""
    _, _, root = finished
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    code, out, err = export(root, "--out", "m", "--mlflow-uri",
                            f"sqlite:///{tmp_path}/store/other.db")
    assert code == 0 and "models:/m-" in out, out + err
    assert not Path("mlruns").exists()
    [logged] = (tmp_path / "store" / "mlartifacts" / "models").iterdir()
    assert any(logged.rglob("MLmodel"))


def test_a_password_in_the_tracking_uri_is_never_printed_or_stored(finished, tmp_path):
    _, _, root = finished
    code, out, err = export(root, "--out", tmp_path / "m", "--mlflow-uri",
                            f"http://someone:s3cret@127.0.0.1:{free_port()}")
    assert code == 1 and "not logged to MLflow" in out, out + err
    assert "s3cret" not in out + err
    assert "s3cret" not in (tmp_path / "m" / "manifest.json").read_text()
