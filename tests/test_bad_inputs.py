"""The bad-input matrix (docs/errors.md): every entry is refused with a message that names the
problem, never a traceback; the commands exit 2, and a sweep refuses before Ray starts.

Commands run through their main(argv) in this process (what `python -m ...` runs), so an
exception escaping one would fail the test; the estimators and run_trial raise a ValueError
(SbfnError, or scikit-learn's own for what scikit-learn checks) naming the problem."""

import functools
import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from sbfn_dist import SBFNClassifier, SBFNRegressor, run_trial
from sbfn_dist.interfaces.cli import main as trial_command
from sweeps import Sweep, SweepFileError, cleanup
from sweeps.classification import main as classification
from sweeps.commands.image_sweeps import main_for
from sweeps.regression import main as regression
from sweeps.relog import main as relog_command

RNG = np.random.default_rng(0)
NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
LINUX = pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")


def table(n: int, target=None, feature=None) -> str:
    """CSV text: features a, b and target y (values from the callables, else random)."""
    rows = [f"{feature(i) if feature else RNG.random()},{RNG.random()},"
            f"{target(i) if target else RNG.random()}" for i in range(n)]
    return "a,b,y\n" + "\n".join(rows) + "\n"


CSV = {
    "tiny": table(4),
    "constant": table(60, target=lambda i: 1.5),
    "infinite": table(60, target=lambda i: "inf" if i == 3 else i),
    "empty_feature": "a,y\n" + "".join(f",{i}\n" for i in range(60)),
    "text_feature": table(60, feature=lambda i: f"x{i}"),
    "rare_class": "a,b,kind\n" + "".join(f"{i},{i % 7},{'u' if i < 2 else 'v'}\n"
                                         for i in range(60)),
    "one_row_class": "a,b,kind\n" + "".join(f"{i},{i % 7},{'u' if i < 1 else 'v'}\n"
                                            for i in range(60)),
    "ok": table(60),
    # a header the target is not found in, for a reason the columns listed did not say
    "no_header": table(60).partition("\n")[2],
    "semicolons": table(60).replace(",", ";"),
    "spaced_names": table(60).replace("a,b,y", "a , b , y ", 1),
}


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("csv")
    for name, text in CSV.items():
        (folder / f"{name}.csv").write_text(text)
    (folder / "a_directory.csv").mkdir()
    return lambda name: f"csv:{folder / name}.csv"


DIGITS = functools.partial(main_for, "digits")
SWEEPS = (regression, classification, DIGITS)
SWEEP = ["--grid", "demo", "--no-mlflow"]
REG = ["--dataset", "diabetes", "--smoke", *SWEEP]

# (id, command, argv with {csv:NAME} / {tmp} placeholders, words the message must hold)
COMMANDS = [
    ("unknown grid", regression, ["--dataset", "diabetes", "--grid", "regression81"],
     ["regression81", "regression80"]),
    ("unknown data set", regression, ["--dataset", "nosuch", *SWEEP], ["nosuch", "diabetes"]),
    ("a misspelt data set", regression, ["--dataset", "diabetis", *SWEEP],
     ["unknown data set 'diabetis' (did you mean 'diabetes'?)"]),
    ("a data set's name with a hyphen", regression, ["--dataset", "air-quality", *SWEEP],
     ["(did you mean 'air_quality'?)"]),
    # was told only the regression data sets, never where breast_cancer is swept
    ("a classification data set to sweeps.regression", regression,
     ["--dataset", "breast_cancer", *SWEEP],
     ["breast_cancer is a classification data set: sweep it with python -m "
      "sweeps.classification --dataset breast_cancer", "the regression data sets are"]),
    ("a regression data set to sweeps.classification", classification,
     ["--dataset", "diabetes", *SWEEP],
     ["diabetes is a regression data set: sweep it with python -m sweeps.regression "
      "--dataset diabetes"]),
    ("an image data set to sweeps.regression", regression, ["--dataset", "mnist", *SWEEP],
     ["mnist is an image data set: sweep it with python -m sweeps.images --dataset mnist"]),
    ("CSV too small for the folds", regression, ["--dataset", "{csv:tiny}", "--set", "target=y",
     "--folds", "5", *SWEEP], ["too few rows for the folds", "4 rows", "folds <= 4"]),
    ("CSV constant target", regression, ["--dataset", "{csv:constant}", "--set", "target=y",
     *SWEEP], ["is constant", "pick another target"]),
    ("CSV infinite target", regression, ["--dataset", "{csv:infinite}", "--set", "target=y",
     *SWEEP], ["target 'y'", "infinite values", "row 3"]),
    ("CSV no numeric feature", regression, ["--dataset", "{csv:empty_feature}", "--set",
     "target=y", *SWEEP], ["no numeric feature with a value", "add at least one"]),
    ("CSV text feature", regression, ["--dataset", "{csv:text_feature}", "--set", "target=y",
     *SWEEP], ["non-numeric feature columns ['a']", "encode them"]),
    ("CSV missing", regression, ["--dataset", "{csv:nowhere}", "--set", "target=y", *SWEEP],
     ["does not exist", "csv:"]),
    ("CSV is a directory", regression, ["--dataset", "{csv:a_directory}", "--set", "target=y",
     *SWEEP], ["is a directory, not a file"]),
    ("CSV without a target", regression, ["--dataset", "{csv:ok}", *SWEEP],
     ["no target column", "--set target=COLUMN", "a, b, y"]),
    ("class too rare for stratified folds", classification, ["--dataset", "{csv:rare_class}",
     "--set", "target=kind", "--folds", "3", *SWEEP], ["a class has only 2 rows", "(class 'u')",
                                                       "folds <= 2"]),
    ("a class of one row", classification, ["--dataset", "{csv:one_row_class}", "--set",
     "target=kind", *SWEEP], ["a class has only 1 row", "(class 'u')", "drop its row"]),
    ("a continuous target swept as classes (told to drop a row before)", classification,
     ["--dataset", "{csv:ok}", "--set", "target=y", *SWEEP],
     ["target 'y' of data set 'csv:", "looks continuous (60 distinct values in 60 rows",
      "regress it (python -m sweeps.regression"]),
    # ran seed 0 alone and said nothing (the image sweeps' --splits was refused alike)
    ("seeds with a sampled search", regression, ["--dataset", "diabetes", *SWEEP, "--seeds", "3",
                                                 "--search", "random", "--num-samples", "2"],
     ["'--seeds' = 3 is not allowed: 1 with --search random", "--search grid"]),
    ("a competitor given twice", regression, ["--dataset", "diabetes", *SWEEP, "--competitors",
                                              "svm_rbf", "svm_rbf"],
     ["the competitors list svm_rbf twice; give each once"]),
    ("a CSV without a header row", regression, ["--dataset", "{csv:no_header}", "--set",
     "target=y", *SWEEP], ["the first row looks like data, not names: add a header row, e.g. "
                           "x1,x2,y"]),
    ("a CSV separated by semicolons", regression, ["--dataset", "{csv:semicolons}", "--set",
     "target=y", *SWEEP], ["pick one of: a;b;y (the file is not comma-separated"]),
    ("a CSV header with spaces around its names", regression, ["--dataset",
     "{csv:spaced_names}", "--set", "target=y", *SWEEP],
     ["its names have spaces around them: remove the spaces"]),
    ("no room for the validation part", classification, ["--dataset", "iris", "--folds", "2",
     "--set", "n_samples=12", *SWEEP], ["val_fraction=0.2 cannot hold out", "6 rows"]),
    ("plugin_folds above a training part's rows", regression, ["--dataset", "diabetes", "--grid",
     "heterogeneous", "--no-mlflow", "--set", "n_samples=12", "plugin_folds=20"],
     ["too few rows for the plugin_folds", "fold 0's training part", "plugin_folds <= 10"]),
    ("inner_folds above a training part's rows", regression, ["--dataset", "diabetes", "--grid",
     "heterogeneous", "--no-mlflow", "--set", "n_samples=20", "inner_folds=19"],
     ["too few rows for the inner_folds", "inner_folds <= 18"]),
    ("image split larger than the data set", DIGITS, ["--smoke", "--no-mlflow",
     "--set", "n_train=100000"], ["'digits' has", "images, fewer than the 100000 train"]),
    ("no holdout split", DIGITS, ["--splits", "0", "--no-mlflow"],
     ["--splits: 0 is not a positive number of holdout splits"]),
    ("more splits than a sampled search runs", DIGITS, ["--splits", "2", "--search", "random",
     "--no-mlflow"], ["--splits 2 with --search random", "split 0 only", "--search grid"]),
    ("a kind in a list of members", DIGITS, ["--smoke", "--no-mlflow", "--ensembles",
     "mixed+simple_cnn"], ["'mixed' is an ensemble kind (mixed, cnn, resnet), which cannot be "
                           "an item of a list", "for mixed's members list simple_cnn, "
                           "resnet_tiny1, resnet_tiny2"]),
    # "$SBFN_RESULTS" unset: it wrote the results at the filesystem's root
    ("empty storage", regression, [*REG, "--storage", ""],
     ["'--storage' = '' is not allowed", "was a variable in it unset?"]),
    ("unwritable storage", regression, [*REG, "--storage", "/proc/sbfn-results"],
     ["cannot write to the results storage", "--storage"]),
    ("storage under a file", regression, [*REG, "--storage", "{tmp}/a_file"],
     ["cannot write to the results storage"]),
    ("resume of a sweep that does not exist", regression, [*REG, "--resume"],
     ["--resume: there is no sweep at", "--name"]),
    ("remote storage without a tracking server", regression, ["--dataset", "diabetes", "--smoke",
     "--grid", "demo", "--storage", "s3://bucket/prefix"], ["--mlflow-uri"]),
    ("name with a slash", regression, [*REG, "--name", "a/b"], ["--name 'a/b'", "letters"]),
    ("GPU fraction above 1", DIGITS, ["--num-gpus", "1", "--gpus-per-trial", "1.5",
     "--no-mlflow"], ["--gpus-per-trial", "(0, 1]"]),
    ("setting no trial takes", regression, [*REG, "--set", "temperature=2"],
     ["'temperature' = 2 is not allowed: it applies to no trial of this sweep (tabular "
      "regression), only to the s-BFN classification heads", "; leave it out"]),
    ("misspelt setting", regression, [*REG, "--set", "epoch=3"], ["did you mean 'epochs'"]),
    ("competitors none with names", regression, [*REG, "--competitors", "none", "svm_rbf"],
     ["'none' runs no competitor"]),
    ("image setting on a table", regression, [*REG, "--set", "n_train=100"],
     ["'n_train'", "it applies to no trial of this sweep", ", only to"]),
    ("trial: not KEY=VALUE", trial_command, ["epsilon"], ["'epsilon' is not KEY=VALUE"]),
    ("trial: epsilon out of range", trial_command, ["dataset=diabetes", "epsilon=1.5"],
     ["config field 'epsilon' = 1.5", "[0, 1]"]),
    ("trial: misspelt field", trial_command, ["dataset=diabetes", "epsilonn=0.3"],
     ["did you mean 'epsilon'"]),
    ("trial: CSV too small", trial_command, ["dataset={csv:tiny}", "target=y", "folds=5"],
     ["too few rows for the folds"]),
    ("trial: --out in a missing directory", trial_command, ["dataset=diabetes", "--out",
     "{tmp}/nowhere/records.csv"], ["--out", "does not exist"]),
    ("trial: --out unwritable", trial_command, ["dataset=diabetes", "--out", "/proc/records.csv"],
     ["--out", "cannot write in /proc"]),
    ("trial: --out is a directory", trial_command, ["dataset=diabetes", "--out", "{tmp}"],
     ["is a directory"]),
    ("cleanup of a sweep that does not exist", cleanup.main, ["--name", "nosuch", "--storage",
     "{tmp}"], ["there is no sweep at", "nosuch"]),
    ("relog of a folder that holds no sweep (it said 'nothing to log', exit 0)", relog_command,
     ["{tmp}/nosuch"], ["nosuch holds no sweep (no sweep.json)", "<storage>/<name>"]),
    # plug-ins by import path (modules written by the `plugin_modules` fixture)
    ("plug-in that is not an estimator", regression, [*REG, "--set",
     "plugin_members=sbfn_test_plugins.NotAnEstimator"],
     ["'sbfn_test_plugins.NotAnEstimator'", "is not a scikit-learn estimator", "BaseEstimator"]),
    ("plug-in competitor that is not an estimator", regression, [*REG, "--competitors",
     "collections.OrderedDict"], ["OrderedDict is not a scikit-learn estimator"]),
    ("plug-in module whose import fails", regression, [*REG, "--set",
     "plugin_members=sbfn_test_broken.Model"], ["importing sbfn_test_broken failed",
                                                "ModuleNotFoundError: No module named "
                                                "'sbfn_no_such_package'", "PYTHONPATH"]),
    ("plug-in module that calls sys.exit", regression, [*REG, "--set",
     "plugin_members=sbfn_test_exits.Model"], ["importing sbfn_test_exits called sys.exit(3)"]),
    ("plug-in that needs arguments", regression, [*REG, "--set",
     "plugin_members=sbfn_test_plugins.NeedsArguments"],
     ["NeedsArguments() failed: TypeError:", "builds with no arguments"]),
    ("a classifier where a regressor belongs", regression, [*REG, "--set",
     "plugin_members=sklearn.svm.SVC"], ["SVC is not a regressor"]),
    # the sweep's own keys as shared settings
    ("--set dataset=", regression, [*REG, "--set", "dataset=air_quality"],
     ["--set dataset=air_quality", "the sweep's dataset is its own", "--dataset"]),
    ("--set task=", regression, [*REG, "--set", "task=classification"],
     ["--set task=classification", "the command"]),
    ("a range in --set", regression, [*REG, "--set", "epsilon=uniform(0, 1)"],
     ["settings.epsilon (--set epsilon=...) = 'uniform(0, 1)' is a range", "under `axes:` of "
      "a sweep file", "Sweep.from_dict", "search: optuna or random"]),
]
GPU_COMMANDS = [
    ("device=cuda without a GPU", regression, [*REG, "--set", "device=cuda"],
     ["'device' = 'cuda'", "no CUDA GPU"]),
    ("trial: device=cuda without a GPU", trial_command, ["dataset=diabetes", "device=cuda"],
     ["no CUDA GPU"]),
    ("step_engine=cuda_graph without GPUs", DIGITS, ["--smoke", "--no-mlflow", "--set",
                                                     "step_engine=cuda_graph"],
     ["'step_engine' = 'cuda_graph'", "--num-gpus"]),
]
UNREADABLE = [("CSV unreadable", regression, ["--dataset", "csv:/proc/self/mem", "--set",
               "target=y", *SWEEP], ["cannot be read (Input/output error)"])]


def fill(argv: list[str], csv, tmp: Path) -> list[str]:
    (tmp / "a_file").touch()
    out = []
    for a in argv:
        if a.startswith("{csv:") or "={csv:" in a:
            key, _, name = a.partition("{csv:")
            a = key + csv(name.rstrip("}"))
        out.append(a.replace("{tmp}", str(tmp)))
    return out


def cases(rows, *marks):
    return [pytest.param(command, argv, words, id=name, marks=marks)
            for name, command, argv, words in rows]


# Plug-in modules a user might name: a class that is no estimator, a module whose own import
# fails, and a script that exits when imported.
PLUGIN_MODULES = {
    "sbfn_test_plugins": "from sklearn.base import BaseEstimator, RegressorMixin\n\n"
                         "class NotAnEstimator:\n    pass\n\n"
                         "class NeedsArguments(RegressorMixin, BaseEstimator):\n"
                         "    def __init__(self, depth):\n        self.depth = depth\n",
    "sbfn_test_broken": "import sbfn_no_such_package\n\nclass Model:\n    pass\n",
    "sbfn_test_exits": "import sys\nsys.exit(3)\n",
}


@pytest.fixture
def plugin_modules(tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.mktemp("plugins")
    for name, text in PLUGIN_MODULES.items():
        (folder / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(folder))


@pytest.mark.parametrize("command, argv, words", cases(COMMANDS) + cases(GPU_COMMANDS, NO_GPU)
                         + cases(UNREADABLE, LINUX))
def test_a_command_refuses_bad_input_in_one_line_before_any_work(command, argv, words, csv,
                                                                 tmp_path, capsys,
                                                                 plugin_modules, ray_connects):
    argv = fill(argv, csv, tmp_path)
    if command in SWEEPS and "--storage" not in argv:
        argv += ["--storage", str(tmp_path / "results")]
    code = command(argv)
    out = capsys.readouterr()
    assert code == 2, out
    assert "Traceback" not in out.err + out.out
    [line] = [line for line in out.err.splitlines() if line.startswith("error: ")]
    for word in words:
        assert word in line, line
    assert " on a local Ray" not in out.out and not ray_connects
    assert not list(tmp_path.rglob("records.csv"))          # --out: nothing trained
    assert not (tmp_path / "results").exists()              # nothing half-written


# Refused as Ray is asked for, so they need a process without Ray (others here may hold one).
FRESH_PROCESS = [
    ("unreachable Ray address", ["--address", "127.0.0.1:9"], {},
     ["cannot reach a Ray cluster at 127.0.0.1:9", "--address"]),
    # Ray itself would start a local Ray, then refuse --num-cpus with a traceback.
    ("unreachable RAY_ADDRESS", ["--num-cpus", "1"], {"RAY_ADDRESS": "127.0.0.1:9"},
     ["cannot reach a Ray cluster at 127.0.0.1:9", "unset RAY_ADDRESS"]),
    pytest.param("GPUs this machine lacks", ["--num-gpus", "1"], {},
                 ["this machine has 0 CUDA GPU"], marks=NO_GPU),
]


@pytest.mark.parametrize("name, argv, env, words", FRESH_PROCESS)
def test_a_sweep_refuses_what_ray_cannot_give_in_one_line(name, argv, env, words, tmp_path):
    """...and leaves nothing behind: an unreachable address is found once the results folder
    is claimed (it left parts/ and sweep.lock there)."""
    storage = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "sweeps.regression", *REG, "--storage",
                           str(storage), *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert all(word in line for word in words), line
    assert not storage.exists(), sorted(storage.rglob("*"))


@NO_GPU
def test_an_image_sweep_asking_for_gpus_this_machine_lacks_leaves_no_results_folder(tmp_path):
    """`sweeps.cifar10 --num-gpus 4` on a machine without a GPU left results/cifar10/parts/ and
    sweep.lock in the folder it ran from; now it is refused before the claim, in one line."""
    done = subprocess.run([sys.executable, "-m", "sweeps.cifar10", "--num-gpus", "4"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert "--num-gpus 4 asked, but this machine has 0 CUDA GPU(s)" in line
    assert not list(tmp_path.iterdir())


def test_a_claimed_run_refused_before_its_first_trial_takes_away_what_it_made(tmp_path):
    """Claim.unmake: the folders and the lock a claim made go, the MLflow store the run opened
    inside its folder with them; a folder above it that another sweep filled meanwhile stays;
    a folder that was there before keeps what it held."""
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.run.claim import claim
    new = tmp_path / "new" / "results"
    with claim(ResultStore(str(new / "a")), "a") as held:
        (new / "a" / "mlflow.db").write_bytes(b"x")
        (new / "b").mkdir()                         # another sweep, started meanwhile
        held.unmake()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["b", "new", "results"]
    old = tmp_path / "old"
    (old / "parts").mkdir(parents=True)
    (old / "sweep.json").write_text("{}")
    with claim(ResultStore(str(old)), "old") as held:
        held.unmake()
    assert sorted(p.name for p in old.iterdir()) == ["parts", "sweep.json"]


# ------------------------------------------------------------------------ estimators
X = RNG.normal(size=(40, 3))
Y = X[:, 0] + 0.1 * RNG.normal(size=40)
LABELS = (X[:, 0] > 0).astype(int)
FAST = {"n_members": 2, "epochs": 1}


def with_value(a: np.ndarray, index, value) -> np.ndarray:
    a = a.astype(float).copy()
    a[index] = value
    return a


ESTIMATOR_CASES = [
    ("text target", lambda: SBFNRegressor(**FAST).fit(X, np.array(["a", "b"] * 20)),
     "y given to SBFNRegressor.fit is not numeric (e.g. 'a')"),
    ("missing feature value", lambda: SBFNRegressor(**FAST).fit(with_value(X, (0, 0), np.nan), Y),
     "Input X contains NaN"),
    ("infinite target", lambda: SBFNRegressor(**FAST).fit(X, with_value(Y, 3, np.inf)),
     "Input y contains infinity"),
    ("no rows", lambda: SBFNRegressor(**FAST).fit(X[:0], Y[:0]), "0 sample(s)"),
    ("X and y of other lengths", lambda: SBFNRegressor(**FAST).fit(X, Y[:30]),
     "inconsistent numbers of samples"),
    ("M = 0", lambda: SBFNRegressor(n_members=0).fit(X, Y), "config field 'n_members' = 0"),
    ("unknown combiner", lambda: SBFNClassifier(combiner="sbfn_ls").fit(X, LABELS),
     "config field 'combiner' = 'sbfn_ls'"),
    ("one class", lambda: SBFNClassifier(**FAST).fit(X, np.zeros(40)),
     "y given to SBFNClassifier.fit holds one class"),
    ("continuous labels", lambda: SBFNClassifier(**FAST).fit(X, Y), "Unknown label type"),
    ("no room for the held-out part", lambda: SBFNClassifier(combiner="sbfn_stacked", **FAST)
     .fit(X[:4], [0, 0, 0, 1]), "val_fraction=0.2 cannot hold out a stratified part of 4 rows: "
                                "class 1 has a single row among them"),
    # Both were told to use a larger val_fraction, with a word on folds an estimator lacks.
    ("a held-out part too small for a row of each class", lambda: SBFNClassifier(
        combiner="sbfn_stacked", val_fraction=0.01, **FAST).fit(X, LABELS),
     "the held-out part (1 of 40) needs a row of each of the 2 classes: use "
     "val_fraction >= 0.05"),
    ("a held-out part too large", lambda: SBFNClassifier(
        combiner="logit_mean_tuned", val_fraction=0.99, **FAST).fit(X, LABELS),
     "the rows left (0 of 40) need a row of each of the 2 classes: use val_fraction <= 0.95"),
    ("images below 4x4", lambda: SBFNClassifier(**FAST).fit(RNG.normal(size=(10, 2, 2)),
                                                           np.arange(10) % 2), "at least 4x4"),
    ("channel-last images", lambda: SBFNClassifier(**FAST).fit(
        RNG.normal(size=(10, 8, 8, 3)), np.arange(10) % 2),
     "an array of shape (10, 8, 8, 3) looks channel-last (N, H, W, C): pass "
     "X.transpose(0, 3, 1, 2)"),
    # a CNN ensemble on flattened images trained MLPs, without a word
    ("an image ensemble on a table", lambda: SBFNClassifier(ensemble="cnn", **FAST).fit(
        RNG.normal(size=(10, 64)), np.arange(10) % 2),
     "X is a table of shape (10, 64); flattened 8x8 images go in as X.reshape(-1, 1, 8, 8)"),
    # flattened images to predict were told "resize or crop them"
    ("flattened images to predict", lambda: SBFNClassifier(**FAST).fit(
        RNG.normal(size=(10, 8, 8)), np.arange(10) % 2).predict(RNG.normal(size=(3, 64))),
     "got an array of shape (3, 64): pass X.reshape(-1, 1, 8, 8)"),
    ("predict on other features", lambda: SBFNRegressor(**FAST).fit(X, Y).predict(X[:, :2]),
     "X has 2 features, but SBFNRegressor is expecting 3"),
    # scikit-learn's "could not convert string to float: 'x'" named no column (issue 32)
    ("a text column in a DataFrame", lambda: SBFNClassifier(**FAST).fit(
        pd.DataFrame({"a": X[:, 0], "city": ["x", "y"] * 20}), LABELS),
     "X given to SBFNClassifier has non-numeric columns ['city'] (e.g. 'x' in column 'city', "
     "row 0): encode them as numbers"),
    ("a text column to predict", lambda: SBFNRegressor(**FAST).fit(pd.DataFrame(X, columns=list(
        "abc")), Y).predict(pd.DataFrame(X, columns=list("abc")).assign(b="z")),
     "X given to SBFNRegressor has non-numeric columns ['b']"),
]


@pytest.mark.parametrize("fit, message", [pytest.param(f, m, id=n) for n, f, m in ESTIMATOR_CASES])
def test_an_estimator_refuses_bad_input_with_a_value_error_naming_it(fit, message):
    with pytest.raises(ValueError) as caught:
        fit()
    assert message in str(caught.value)


@NO_GPU
def test_an_estimator_refuses_cuda_without_a_gpu():
    with pytest.raises(ValueError, match="'device' = 'cuda'.*no CUDA GPU"):
        SBFNRegressor(device="cuda", **FAST).fit(X, Y)


# ------------------------------------------------------------------------ run_trial
TRIAL_CASES = [
    ("infinite target", {"dataset": "{csv:infinite}", "target": "y"}, "infinite values"),
    ("constant target", {"dataset": "{csv:constant}", "target": "y"}, "is constant (1.5"),
    ("too few rows for the folds", {"dataset": "{csv:tiny}", "target": "y", "folds": 5},
     "too few rows for the folds"),
    ("inner_folds above the training rows", {"dataset": "diabetes", "n_samples": 12, "folds": 2,
     "combiners": ["sbfn_rbf"], "inner_folds": 10}, "too few rows for the inner_folds: 6 rows"),
    ("plugin_folds above the training rows", {"dataset": "diabetes", "n_samples": 12,
     "folds": 2, "plugin_members": ["knn"], "plugin_folds": 10},
     "too few rows for the plugin_folds: 6 rows"),
    ("n_samples below 10", {"dataset": "diabetes", "n_samples": 5}, "'n_samples' = 5"),
    ("unknown data set", {"dataset": "nosuch"}, "diabetes"),
    ("task the data cannot take", {"dataset": "iris", "task": "regression"}, "'task'"),
    ("continuous target as classes", {"dataset": "{csv:ok}", "target": "y",
                                      "task": "classification"}, "looks continuous"),
]


@pytest.mark.parametrize("config, message", [pytest.param(c, m, id=n) for n, c, m in TRIAL_CASES])
def test_run_trial_refuses_bad_data_before_training(config, message, csv):
    config = {k: csv(v[5:-1]) if isinstance(v, str) and v.startswith("{csv:") else v
              for k, v in config.items()}
    with pytest.raises(ValueError) as caught:
        run_trial({"epochs": 1, "n_members": 2, "competitors": [], **config})
    assert message in str(caught.value)



# ------------------------------------------------------------------------ sweep files and flags
# `python -m sweeps run FILE` on a small valid file with one change each: exit 2, one line
# naming the key, nothing written (issue 21: each of these was accepted, or a traceback).
FILE = "dataset: diabetes\ngrid: demo\nsmoke: true\nmlflow: false\n"
FILE_CASES = [
    ("a key given twice", FILE + "folds: 2\nfolds: 3\n",
     ["key 'folds' is given twice (lines 5 and 6)", "keep one"]),
    ("a resource given twice", FILE + "resources:\n  num_cpus: 1\n  num_cpus: 2\n",
     ["key 'num_cpus' is given twice (lines 6 and 7)"]),
    ("an axis over the data set", FILE + "axes:\n  dataset: [diabetes, air_quality]\n",
     ["axes.dataset", "scored on the same data and folds", "one sweep per data set"]),
    ("an axis over folds", FILE + "axes:\n  folds: [3, 5]\n", ["axes.folds", "`folds: K`"]),
    ("an axis over fold", FILE + "axes:\n  fold: [0, 1]\n", ["axes.fold", "per_fold: true"]),
    ("an axis over seed", FILE + "axes:\n  seed: [0, 1]\n", ["axes.seed", "seeds: N"]),
    ("an axis value given twice", FILE + "axes:\n  epsilon: [0.1, 0.10]\n",
     ["the grid repeats a trial: epsilon lists 0.1 twice; give each value once"]),
    ("retries forever", FILE + "resources:\n  max_failures: -1\n",
     ["resources.max_failures = -1", "an integer >= 0"]),
    ("a negative node wait", FILE + "resources:\n  node_wait_s: -5\n",
     ["resources.node_wait_s = -5", "seconds >= 0"]),
    ("a negative search seed", FILE + "search_seed: -1\n", ["search_seed = -1", "[0, "]),
    ("the data set as a shared setting", FILE + "settings:\n  dataset: air_quality\n",
     ["settings.dataset", "the sweep's dataset is its own"]),
    # flags join a file's settings and resources: what is no mapping is still the file's error
    ("settings that are a list, with --set", FILE + "settings: [epochs]\n",
     ["settings = ['epochs'] is not allowed: a mapping"], ["--set", "epochs=2"]),
    ("resources that are a number, with --num-cpus", FILE + "resources: 5\n",
     ["resources = 5 is not allowed: a mapping"], ["--num-cpus", "2"]),
    # ranges where no range stands (issue 32: "a finite number in [0, 1]", or cut at a comma)
    ("a range as an item of a list",
     FILE + "search: optuna\naxes:\n  epsilon: [0.1, uniform(0, 1)]\n",
     ["axes.epsilon = [0.1, 'uniform(0', '1)'] holds a range as an item of a list",
      "under `axes:` of a sweep file", "`epsilon: uniform(0, 1)` alone"]),
    ("a range under settings", FILE + "settings:\n  epsilon: uniform(0, 1)\n",
     ["settings.epsilon", "= 'uniform(0, 1)' is a range, but a shared setting is one value",
      "e.g. axes: {epsilon: uniform(0, 1)}"]),
    ("a range under preset", FILE + "preset:\n  n_members: randint(2, 5)\n",
     ["preset.n_members = 'randint(2, 5)' is a range", "axes: {n_members: randint(2, 5)}"]),
    # it trained the members once per value, and the end table merged two configurations' rows
    ("lambda2 as an axis", "dataset: diabetes\ngrid: demo\naxes:\n  lambda2: [0, 5]\n",
     ["'lambda2' = (0, 5) is not allowed: no axis", "settings (lambda2: [0, 5])"]),
]


@pytest.mark.parametrize("text, words, flags", [pytest.param(t, w, f[0] if f else [], id=n)
                                                for n, t, w, *f in FILE_CASES])
def test_a_sweep_file_is_refused_in_one_line_naming_the_key(text, words, flags, tmp_path,
                                                             capsys):
    from sweeps import __main__ as sweeps_main
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    code = sweeps_main.main(["run", str(path), "--storage", str(tmp_path / "results"), *flags])
    out = capsys.readouterr()
    assert code == 2 and "Traceback" not in out.err + out.out, out
    [line] = out.err.splitlines()
    assert line.startswith(f"error: {path}: ") and all(w in line for w in words), line
    assert not (tmp_path / "results").exists()


# argparse refuses these itself, in one line: `error: ...; --help lists every option`, exit 2
# (its 26-line usage block above that line was dropped: errors.Parser.error).
FLAG_CASES = [
    ("an abbreviation", regression, ["--epsilon", "0.3"],
     "unrecognized arguments: --epsilon 0.3 (did you mean --epsilons?)"),
    ("a typo", regression, ["--stroage", "x"], "--stroage x (did you mean --storage?)"),
    ("a setting as a flag", regression, ["--target", "y"],
     "--target y (target is a setting, not a flag: --set target=VALUE)"),
    ("a setting's typo as a flag", DIGITS, ["--epoch", "3"],
     "--epoch 3 (epochs is a setting, not a flag: --set epochs=VALUE)"),
    ("a flag like none", regression, ["--foo", "1"], "--foo 1; --help lists every option"),
    ("mnist: an abbreviation", functools.partial(main_for, "mnist"), ["--epsilon", "0.5"],
     "unrecognized arguments: --epsilon 0.5 (did you mean --epsilons?)"),
    ("retries forever", regression, ["--max-failures", "-1"],
     "argument --max-failures: '-1' is not an integer >= 0"),
    ("a negative node wait", regression, ["--node-wait-s", "-5"],
     "argument --node-wait-s: '-5' is not a number of seconds >= 0"),
    ("no CPUs", classification, ["--num-cpus", "0"], "'0' is not an integer >= 1"),
    # once `the following arguments are required: run`, the one sub-command and none of the others
    ("sweeps: no command", "sweeps.__main__", [],
     "name a command: python -m sweeps run FILE (a sweep file or a shipped grid), or a built-in "
     "grid's own, python -m sweeps.NAME, NAME one of regression, classification, images, "),
    # once `invalid choice: 'regression' (choose from 'run')`
    ("sweeps: a command after a space", "sweeps.__main__", ["regression", "--dataset", "wine"],
     "'regression' is a command of its own, with a dot: python -m sweeps.regression --dataset "
     "wine; --help lists every option"),
    ("sweeps run: retries forever", "run", ["--max-failures", "-1"],
     "argument --max-failures: '-1' is not an integer >= 0"),
    ("sweeps run: an abbreviation", "run", ["--num-cpu", "2"],
     "unrecognized arguments: --num-cpu 2 (did you mean --num-cpus?)"),
    ("cleanup: an abbreviation", cleanup.main, ["--name", "x", "--stor", "y"],
     "unrecognized arguments: --stor"),
    ("trial: an abbreviation", trial_command, ["dataset=diabetes", "--ou", "x.csv"],
     "unrecognized arguments: --ou"),
    ("relog: a flag like none", relog_command, ["x", "--foo"], "unrecognized arguments: --foo"),
    ("export: no results", "sweeps.export", [], "the following arguments are required: results"),
    ("report: no results", "analysis.report", [], "the following arguments are required"),
    ("appendix: a flag like none", "sweeps.appendix", ["--foo"], "unrecognized arguments: --foo"),
    ("check_cluster_yaml: a flag like none", "sweeps.tools.check_cluster_yaml", ["x", "--foo"],
     "unrecognized arguments: --foo"),
    ("mlflow_server: a flag like none", "sweeps.tools.mlflow_server",
     ["stop", "--store-dir", "x", "--foo"],
     "unrecognized arguments: --foo"),
    # "" (a variable that was not set) read the data from the working directory
    ("an empty data folder", regression, ["--data-dir", ""],
     "argument --data-dir: '' is not a folder's path (was a variable in it unset?)"),
    ("a range to --epsilons", regression, ["--epsilons", "uniform(0, 1)"],
     "argument --epsilons: 'uniform(0, 1)' is a range, but the flag lists values"),
    ("a range to --members", DIGITS, ["--members", "randint(2, 5)"],
     "argument --members: 'randint(2, 5)' is a range, but the flag lists values"),
]


@pytest.mark.parametrize("command, argv, message", [pytest.param(c, a, m, id=n)
                                                    for n, c, a, m in FLAG_CASES])
def test_a_bad_flag_is_refused_by_the_parser_in_one_line(command, argv, message, capsys):
    if command == "run":
        from sweeps import __main__ as sweeps_main
        command, argv = sweeps_main.main, ["run", "demo", *argv]
    elif isinstance(command, str):                      # a command imported only here
        command = importlib.import_module(command).main
    with pytest.raises(SystemExit) as exit_:
        command(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    [line] = err.splitlines()
    assert line.startswith("error: ") and message in line, err
    # once `(did you mean --epsilons?) (--help lists every option)`: two asides in a row
    assert line.endswith("; --help lists every option") and ") (" not in line, line


# ------------------------------------------------------------------------ the Python API
API_CASES = [
    ("a list as the definition", lambda: Sweep.from_dict([{"dataset": "diabetes"}]),
     "the sweep definition: a sweep is a mapping of keys (dataset: ..., axes: ...), not a list"),
    ("None as the definition", lambda: Sweep.from_dict(None), "not None; see docs/sweeps.md"),
    ("an unknown built-in task", lambda: Sweep.builtin("nope"),
     "Sweep.builtin: unknown task 'nope'; the built-in grids are per task: regression, "
     "classification"),
    ("a misspelt built-in task", lambda: Sweep.builtin("regresion"),
     "(did you mean 'regression'?)"),
    ("an unknown run option", lambda: Sweep.builtin("regression", "diabetes", "demo").run(
        num_cpu=1), "unknown run option 'num_cpu' (did you mean 'num_cpus'"),
    ("a range in a list", lambda: Sweep.from_dict({"dataset": "diabetes", "search": "optuna",
                                                   "axes": {"lr": [0.01, "loguniform(1e-3, 1)"]}}),
     "`lr: loguniform(1e-3, 1)` alone, or a list of values only"),
]


@pytest.mark.parametrize("make, message", [pytest.param(m, t, id=n) for n, m, t in API_CASES])
def test_the_python_api_refuses_a_bad_definition_with_a_sweep_file_error(make, message):
    with pytest.raises(SweepFileError) as caught:
        make()
    assert message in str(caught.value)


def test_the_python_api_takes_path_likes_and_numpy_numbers(tmp_path):
    """Refused as "not text" / "not an integer" before issue 21."""
    sweep = Sweep.from_dict({"dataset": "diabetes", "grid": "demo", "storage": tmp_path,
                             "folds": np.int64(2), "seeds": np.int32(1), "mlflow": False,
                             "axes": {"n_members": [np.int64(2)]},
                             "settings": {"epochs": np.int64(1)},
                             "resources": {"num_cpus": np.int64(1), "max_failures": np.int8(0)}})
    assert sweep.options.storage == str(tmp_path) and sweep.options.num_cpus == 1
    assert type(sweep.options.num_cpus) is int and sweep.options.max_failures == 0
    configs = sweep.trials()
    assert {c["folds"] for c in configs} == {2} and {type(c["folds"]) for c in configs} == {int}
    assert {c["n_members"] for c in configs if c["extra"]["role"] == "ensemble"} == {2}
    assert sweep._options({"storage": tmp_path / "other"}).storage == str(tmp_path / "other")


def test_a_large_grid_says_its_size_before_it_is_planned(capsys):
    """A 50,505-configuration grid started without a word (issue 21); here the note comes
    before the first configuration is checked (epochs=0 fails it at once)."""
    with pytest.raises(SweepFileError, match="'epochs' = 0"):
        Sweep.from_dict({"name": "big", "dataset": "diabetes", "mlflow": False,
                         "axes": {"width": list(range(1, 2_001))}, "settings": {"epochs": 0}})
    err = capsys.readouterr().err
    assert "[big] planning 2,005 configurations (Ctrl-C stops it)" in err
    assert "--dry-run" in err and "--search optuna" in err


# ------------------------------------------------------------------------ signals and pipes
BIG = """name: big
dataset: diabetes
mlflow: false
axes:
  width: [{widths}]
  epsilon: [0.0, 0.5]
"""


# `python -m sweeps ARGS` with Ctrl-C's handler, as a terminal's foreground command has it: a
# shell's background job (`make test &`, a CI step run so) starts with SIGINT ignored (POSIX),
# which Python then keeps, and the Ctrl-C below was ignored until the plan was done (~40 s).
AS_A_TERMINAL_STARTS_IT = ("import runpy, signal, sys; "
                           "signal.signal(signal.SIGINT, signal.default_int_handler); "
                           "sys.argv[0] = 'sweeps'; runpy.run_module('sweeps', run_name='__main__')")


def test_a_sweep_command_stops_quietly_on_a_closed_pipe_and_on_ctrl_c_while_planning(tmp_path):
    """`--dry-run | head` ended in a BrokenPipeError traceback; Ctrl-C while a large grid was
    planned said finished folds were kept (none were). Both commands run at once. The grid takes
    ~40 s to plan, so that Ctrl-C comes while it plans however busy the machine (6,005
    configurations, ~3 s, were planned before the signal once, on a loaded machine)."""
    (tmp_path / "big.yaml").write_text(BIG.format(widths=", ".join(map(str, range(1, 30_001)))))
    start = functools.partial(subprocess.Popen, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path)
    piped = start([sys.executable, "-m", "sweeps.regression", *REG, "--dry-run", "--storage",
                   str(tmp_path / "results")])
    piped.stdout.close()                        # the reader has gone before the first line
    planning = start([sys.executable, "-c", AS_A_TERMINAL_STARTS_IT, "run", "big.yaml",
                      "--dry-run"])
    note = planning.stderr.readline()           # printed as planning starts
    planning.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    _, interrupted = planning.communicate(timeout=60)
    assert note.startswith("[big] planning 60,005 configurations"), note     # + refs, competitors
    assert time.monotonic() - stopped < 10 and planning.returncode == 130, interrupted
    assert interrupted.strip() == "interrupted: the sweep had not started; nothing was written"
    assert piped.wait(timeout=120) == 128 + signal.SIGPIPE     # as `seq 1000000 | head -1`
    assert piped.stderr.read() == ""            # no traceback, no "Exception ignored"
    assert not (tmp_path / "results").exists()


def test_a_resume_on_data_whose_contents_changed_is_refused_before_ray(tmp_path, capsys,
                                                                         ray_connects):
    """A CSV edited between an interrupted run and its --resume: the resume mixed folds of the
    two contents (RMSE 57 and 5,400 in one configuration), and the table ranked the mixture.
    sweep.json records each path data set's contents_stamp; the resume compares them."""
    from sbfn_dist.catalog import contents_stamp
    from sweeps import regression as regression_module
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.plan.planning import plan_sweep
    data = tmp_path / "mine.csv"
    data.write_text(table(60))
    name = f"csv:{data}"
    argv = ["--dataset", name, "--set", "target=y", *SWEEP, "--storage", str(tmp_path),
            "--name", "edited", "--resume"]
    spec, _, opts = regression_module.build(argv)
    trial_ids = [c["trial_id"] for c in plan_sweep(spec, opts).configs]
    (tmp_path / "edited").mkdir()
    ResultStore(str(tmp_path / "edited")).write_spec({"trial_ids": trial_ids,
                                                      "data": {name: contents_stamp(name)}})
    data.write_text(table(60))                              # other values, the same shape
    assert regression(argv) == 2
    err = capsys.readouterr().err
    assert f"--resume: {name} has changed since the sweep at {tmp_path / 'edited'} was " \
           "created: its finished folds were computed on the old contents" in err
    assert err.count("\n") == 1 and not ray_connects


def test_an_interrupted_sweep_says_what_it_kept(tmp_path):
    """Interrupted before any fold finished, it said "finished folds are in results.parquet"
    (none was written)."""
    from sweeps.commands.cli import _what_is_kept
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.plan.planning import SweepOptions
    opts = SweepOptions(name="cut", storage=str(tmp_path))
    assert _what_is_kept(opts) == "the sweep had not started; nothing was written"
    store = ResultStore(str(tmp_path / "cut"))
    store.create()
    store.write_spec({"name": "cut", "trial_ids": ["t"]})
    assert _what_is_kept(opts).startswith("no fold had finished yet; continue with the same "
                                          "command plus --resume")
    store.write_part("t", 0, [{"trial_id": "t", "fold": 0, "rmse": 1.0}])
    assert _what_is_kept(opts).startswith("finished folds are in results.parquet")
