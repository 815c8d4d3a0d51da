"""The bad-input matrix (docs/errors.md): every entry is refused with a message that names the
problem, never a traceback; the commands exit 2, and a sweep refuses before Ray starts.

Commands run through their main(argv) in this process (what `python -m ...` runs), so an
exception escaping one would fail the test; the estimators and run_trial raise a ValueError
(SbfnError, or scikit-learn's own for what scikit-learn checks) naming the problem."""

import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from sbfn_dist import SBFNClassifier, SBFNRegressor, run_trial
from sbfn_dist.cli import main as trial_command
from sweeps import cleanup
from sweeps.classification import main as classification
from sweeps.images import main_for
from sweeps.regression import main as regression

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
    "ok": table(60),
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
     "--set", "target=kind", "--folds", "3", *SWEEP], ["a class has only 2 rows", "folds <= 2"]),
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
     ["'temperature'", "applies only to"]),
    ("misspelt setting", regression, [*REG, "--set", "epoch=3"], ["did you mean 'epochs'"]),
    ("competitors none with names", regression, [*REG, "--competitors", "none", "svm_rbf"],
     ["'none' runs no competitor"]),
    ("image setting on a table", regression, [*REG, "--set", "n_train=100"],
     ["'n_train'", "applies only to"]),
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


@pytest.mark.parametrize("command, argv, words", cases(COMMANDS) + cases(GPU_COMMANDS, NO_GPU)
                         + cases(UNREADABLE, LINUX))
def test_a_command_refuses_bad_input_in_one_line_before_any_work(command, argv, words, csv,
                                                                 tmp_path, capsys):
    import ray
    ray_before = ray.is_initialized()
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
    assert " on a local Ray" not in out.out and ray.is_initialized() == ray_before
    assert not list(tmp_path.rglob("records.csv"))          # --out: nothing trained


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
    done = subprocess.run([sys.executable, "-m", "sweeps.regression", *REG, "--storage",
                           str(tmp_path), *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert done.returncode == 2 and "Traceback" not in done.stderr + done.stdout, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert all(word in line for word in words), line
    assert not (tmp_path / "diabetes-demo-smoke" / "sweep.json").exists()


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
     .fit(X[:4], LABELS[:4]), "val_fraction=0.2 cannot hold out"),
    ("images below 4x4", lambda: SBFNClassifier(**FAST).fit(RNG.normal(size=(10, 2, 2)),
                                                           np.arange(10) % 2), "at least 4x4"),
    ("predict on other features", lambda: SBFNRegressor(**FAST).fit(X, Y).predict(X[:, :2]),
     "X has 2 features, but SBFNRegressor is expecting 3"),
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
]


@pytest.mark.parametrize("config, message", [pytest.param(c, m, id=n) for n, c, m in TRIAL_CASES])
def test_run_trial_refuses_bad_data_before_training(config, message, csv):
    config = {k: csv(v[5:-1]) if isinstance(v, str) and v.startswith("{csv:") else v
              for k, v in config.items()}
    with pytest.raises(ValueError) as caught:
        run_trial({"epochs": 1, "n_members": 2, "competitors": [], **config})
    assert message in str(caught.value)

