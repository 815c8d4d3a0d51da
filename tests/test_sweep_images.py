"""`python -m sweeps.images` (issue 23): the image sweep on any image data set -- a built-in name,
npz:PATH or folder:PATH -- on the named image commands' builder. Bad input is one line before
Ray starts. An ensemble given as a list is one value of the ensemble axis, from the command
(`a+b`) and from a sweep file (a YAML list) alike; a list given as a shared setting is not
crossed into trials."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sbfn_dist.errors import SbfnError
from sbfn_dist.folds import check_data
from sweeps.api import Sweep
from sweeps.commands.image_sweeps import ANY, build_for, main_for
from sweeps.engine.checks import on_trial_device
from sweeps.engine.plan.planning import SweepOptions, plan
from sweeps.engine.run.progress import _label
from sweeps.engine.summary import _labelled
from sweeps.engine.tune import _trial_name
# own_cache: an autouse fixture, so this module's decoded folders go to a cache dir of its own
from tests.test_image_files import own_cache, pattern, write_folder  # noqa: F401

BN_NET = "tests.nets_for_tests:small_bn_net"
SMALL = ["--members", "2", "--epsilons", "0.2", "--splits", "1"]
# Three classes of 8x8 images and one 12x12 among them: sweepable only with --image-size.
COUNTS = {"across": 12, "down": 12, "diagonal": 12}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = write_folder(tmp_path_factory.mktemp("images") / "patterns", COUNTS, side=8)
    Image.fromarray(pattern(0, np.random.default_rng(1), 12)).save(root / "across" / "big.png")
    return root


def planned(build, argv) -> list[dict]:
    spec, _, opts = build(argv)
    return plan(spec, dataclasses.replace(opts, name="x"))


def without_keys(configs: list[dict]) -> list[dict]:
    """The configurations' settings, without their ids and their sweep's name."""
    return [{k: v for k, v in c.items() if k not in ("trial_id", "sweep")} for c in configs]


# ------------------------------------------------------------------ one builder
def test_a_named_set_plans_as_its_own_command_plans():
    assert planned(build_for(ANY), ["--dataset", "mnist"]) == planned(build_for("mnist"), [])


def test_a_folder_is_named_after_itself_and_resized_by_image_size(folder):
    spec, _, opts = build_for(ANY)(["--dataset", f"folder:{folder}", "--image-size", "8", *SMALL])
    assert opts.name == "patterns"
    configs = plan(spec, opts)
    assert {(c["dataset"], c["image_size"]) for c in configs} == {(f"folder:{folder}", 8)}
    check_data(configs)         # what the sweep's driver does before Ray: the sizes now agree


# ------------------------------------------------------------------ bad input: one line
FORMS = ("npz:PATH", "folder:PATH")    # where images were expected, the line names your own
BAD = [   # (case, arguments, what the one line says)
    ("no data set", [], ("--dataset is missing", *FORMS)),
    # was "tables are swept by python -m sweeps.regression or sweeps.classification"
    ("a table", ["--dataset", "wine"], ("wine is a classification data set: sweep it with "
                                        "python -m sweeps.classification --dataset wine",
                                        *FORMS)),
    ("a regression table", ["--dataset", "diabetes"],
     ("sweep it with python -m sweeps.regression --dataset diabetes", *FORMS)),
    ("your own table", ["--dataset", "csv:{tmp}/t.csv"],
     ("is a table: sweep it with python -m sweeps.regression or sweeps.classification", *FORMS)),
    ("a misspelt name", ["--dataset", "fashion-mnist"], ("did you mean 'fashion_mnist'", *FORMS)),
    # heard nothing of diabetes: the near misses were looked for among the image names alone
    ("a misspelt table's name", ["--dataset", "diabetis"],
     ("'diabetis' is not allowed: a known data set (did you mean 'diabetes'?); the image data "
      "sets: mnist", *FORMS)),
    ("a missing folder", ["--dataset", "folder:{tmp}/nowhere"], ("{tmp}/nowhere does not exist",)),
    ("images of two sizes", ["--dataset", "folder:{folder}"], ("differ in shape",
                                                               "--image-size N")),
    ("an image size below the members' smallest input",
     ["--dataset", "folder:{folder}", "--image-size", "2"], ("'image_size' = 2 is not allowed",)),
    ("an image size for a named set", ["--dataset", "digits", "--image-size", "8"],
     ("image_size", "folder:PATH data sets")),
    ("a factory that does not import", ["--dataset", "digits", "--ensembles",
                                        "simple_cnn+no_such_module_here:build"],
     ("No module named 'no_such_module_here'",)),
]


@pytest.mark.parametrize("argv, says", [pytest.param(a, s, id=c) for c, a, s in BAD])
def test_bad_input_is_one_line_before_ray_starts(argv, says, folder, tmp_path, capsys,
                                                 ray_connects):
    named = lambda text: text.replace("{tmp}", str(tmp_path)).replace("{folder}", str(folder))
    code = main_for(ANY, [*map(named, argv), *SMALL, "--smoke", "--no-mlflow", "--storage",
                          str(tmp_path / "results")])
    out, err = capsys.readouterr()
    assert code == 2 and all(named(part) in err for part in says), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert " on a local Ray" not in out and not ray_connects
    assert not list(tmp_path.rglob("results.parquet"))


# ------------------------------------------------------------------ ensembles given as lists
def test_a_list_is_one_value_of_the_ensemble_axis_from_the_command_and_from_a_file():
    command = planned(build_for(ANY), ["--dataset", "digits", "--ensembles", "cnn",
                                       f"simple_cnn+{BN_NET}", *SMALL])
    assert [c["ensemble"] for c in command] == ["cnn", f"simple_cnn,{BN_NET}"]
    from_file = Sweep.from_dict({"dataset": "digits", "folds": 1, "axes": {
        "n_members": [2], "epsilon": [0.2], "ensemble": ["cnn", ["simple_cnn", BN_NET]]}})
    assert without_keys(from_file.trials()) == without_keys(command)
    # the same readable trial ids (the hash holds the sweep's name too): a list's mix is named
    labels = [[c["trial_id"].rsplit("_", 1)[0] for c in cs] for cs in (from_file.trials(), command)]
    assert labels[0] == labels[1] and labels[0][1].startswith(f"simple_cnn,{BN_NET}_M2")


def test_a_preset_of_an_axis_is_refused_not_ignored():
    """The image grid crosses ensemble kinds: a preset ensemble was silently dropped."""
    with pytest.raises(SbfnError) as refused:
        Sweep.from_dict({"dataset": "digits", "folds": 1, "axes": {"n_members": [2]},
                         "preset": {"ensemble": "cnn"}})
    message = str(refused.value)
    assert "preset.ensemble: every trial takes ensemble from the grid's axis" in message
    assert "axes: {ensemble: [VALUE]}" in message and "\n" not in message


def test_a_list_given_as_a_setting_is_refused_in_one_line_not_crossed():
    """The image grid's ensemble axis sets every trial's own ensemble, so a shared one would
    change nothing: refused, naming the whole list (not one trial per item)."""
    with pytest.raises(SbfnError) as refused:
        Sweep.from_dict({"dataset": "digits", "folds": 1, "axes": {"n_members": [2]},
                         "settings": {"ensemble": ["simple_cnn", BN_NET]}})
    message = str(refused.value)
    assert f"'ensemble' = ['simple_cnn', '{BN_NET}'] is not allowed" in message
    assert "grid axis" in message and "\n" not in message


MIX = "simple_cnn+resnet_tiny1"      # one ensemble of mixed members, as --ensembles takes it


def test_a_mix_is_shown_as_the_command_spells_it_so_a_copy_plans_the_same_sweep(tmp_path, capsys):
    """Shown as stored (simple_cnn,resnet_tiny1), a mix copied into --ensembles planned two
    homogeneous ensembles, without a word: the dry run, the end table, the progress line and
    Tune's trial names show it as the command takes it; its trial ids keep the stored form
    (--resume finds them)."""
    argv = ["--dataset", "digits", "--members", "2", "--epsilons", "0", "--splits", "1",
            "--set", "epochs=1", "--no-mlflow", "--storage", str(tmp_path)]
    assert main_for(ANY, ["--ensembles", MIX, "cnn", *argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"ensemble={MIX}" in out and f"{MIX} " in out.split("per member")[1]
    assert "=simple_cnn," not in out and "simple_cnn,resnet_tiny1_M2" in out     # the id
    listed = [line for line in out.splitlines() if line.startswith("    trial")]
    assert len(listed) == 2 and len({line.index(" folds") for line in listed}) == 1  # aligned
    configs = planned(build_for(ANY), ["--ensembles", MIX, *argv])
    rows = pd.DataFrame([{"ensemble": c["ensemble"], "role": "ensemble"} for c in configs])
    shown = _labelled(rows, ["ensemble"])["ensemble"].tolist()
    point = {"trial_id": "t", "ensemble": configs[0]["ensemble"]}         # as Tune holds it
    trial = SimpleNamespace(config={"pack": [point]}, last_result={})
    assert shown == [MIX] and _label(trial, "t") == f"ensemble={MIX}"
    trial.trial_id = "t"                    # Tune's trial and folder names: were a,b there
    assert _trial_name(trial) == f"t_ensemble={MIX}"
    again = planned(build_for(ANY), ["--ensembles", *shown, *argv])
    assert [c["ensemble"] for c in again] == [c["ensemble"] for c in configs]


# ------------------------------------------------------------------ how many splits
def refused_line(argv, tmp_path, capsys, ray_connects) -> str:
    """The one `error:` line of the image sweep with `argv` (exit 2, Ray not started, nothing
    written)."""
    code = main_for(ANY, [*argv, "--no-mlflow", "--num-cpus", "1", "--storage",
                          str(tmp_path / "results")])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert not ray_connects and not (tmp_path / "results").exists()
    return err


# `--splits 0` planned no trial: Ray started, "0 configurations", exit 0, and a results path
# that did not exist; with --set epochs=1 the error blamed epochs.
@pytest.mark.parametrize("splits, more", [("0", []), ("-1", []), ("0", ["--dry-run"]),
                                          ("0", ["--set", "epochs=1"])])
def test_splits_below_one_are_refused_before_ray_starts(splits, more, tmp_path, capsys,
                                                        ray_connects):
    err = refused_line(["--dataset", "digits", "--splits", splits, *more], tmp_path, capsys,
                       ray_connects)
    assert f"--splits: {splits} is not a positive number of holdout splits" in err


# --dry-run checked neither the data nor the networks: each of these listed "1 configurations",
# exit 0, where the run refused it in one line (issue 32). Both now refuse it alike.
NOT_DRY = [   # (case, --dataset or --ensembles, what the one line says)
    ("an empty folder", ["--dataset", "folder:{tmp}/empty"], "has no sub-folders"),
    ("one class", ["--dataset", "folder:{tmp}/one_class"], "holds one class ('a')"),
    ("a corrupt png", ["--dataset", "folder:{tmp}/corrupt"], "a/broken.png"),
    ("a factory that raises", ["--dataset", "digits", "--ensembles",
                               "tests.nets_for_tests:fails_to_build"],
     "build(1, 10) failed: ValueError: this network takes 3 channels, not 1"),
    # a trial without a GPU share sees no GPU, on any machine: on one with a GPU, the check
    # passed and every trial failed
    ("device=cuda without a GPU share", ["--dataset", "digits", "--set", "device=cuda"],
     "'device' = 'cuda' is not allowed: a sweep whose trials get GPUs (--num-gpus N: "),
]


@pytest.fixture
def not_sweepable(tmp_path):
    (tmp_path / "empty").mkdir()
    write_folder(tmp_path / "one_class", {"a": 6}, side=8)
    corrupt = write_folder(tmp_path / "corrupt", {"a": 5, "b": 5}, side=8)
    (corrupt / "a" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    return lambda text: text.replace("{tmp}", str(tmp_path))


@pytest.mark.parametrize("dry", [["--dry-run"], []], ids=["dry run", "run"])
@pytest.mark.parametrize("argv, says", [pytest.param(a, s, id=c) for c, a, s in NOT_DRY])
def test_a_dry_run_refuses_what_the_run_refuses_before_ray(argv, says, dry, not_sweepable,
                                                           tmp_path, capsys, ray_connects):
    err = refused_line([*map(not_sweepable, argv), *SMALL, *dry], tmp_path, capsys, ray_connects)
    assert not_sweepable(says) in err


def test_networks_are_checked_on_the_device_their_trials_get():
    """A trial without a GPU share runs on the CPU whatever the driver's machine holds."""
    cpu_only, with_gpus = SweepOptions(name="x"), SweepOptions(name="x", num_gpus=1)
    assert on_trial_device({"device": "auto"}, cpu_only) == {"device": "cpu"}
    assert on_trial_device({"device": "auto"}, with_gpus) == {"device": "auto"}
    assert on_trial_device({"device": "cpu"}, with_gpus) == {"device": "cpu"}


def test_a_dry_run_says_what_it_checked_and_what_it_left_to_the_run(tmp_path, capsys):
    assert main_for(ANY, ["--dataset", "digits", *SMALL, "--dry-run", "--storage",
                          str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "checked, as the run checks them before Ray starts: the settings, the data and " \
           "your networks, the results folder; not checked by a dry run: whether a trial's " \
           "resources fit Ray's; writing the results folder and the MLflow store" in out
    assert not list(tmp_path.iterdir())                       # nothing written
    sweep = Sweep.from_dict({"dataset": "digits", "folds": 1, "storage": str(tmp_path),
                             "axes": {"n_members": [2], "epsilon": [0.2],
                                      "ensemble": ["tests.nets_for_tests:fails_to_build"]}})
    with pytest.raises(SbfnError, match="build\\(1, 10\\) failed"):
        sweep.dry_run()                                       # the Python API's dry run too


def test_a_sweep_files_folds_below_one_are_refused_for_images():
    with pytest.raises(SbfnError, match="folds: 0 is not a positive number of holdout splits"):
        Sweep.from_dict({"dataset": "digits", "folds": 0})


# A sampled search runs split 0 alone (its space fixes the first split): --splits 2 ran split 0
# while the records and sweep.json said folds = 2.
@pytest.mark.parametrize("search", ["random", "optuna"])
def test_a_sampled_search_runs_one_split_and_says_so(search, tmp_path, capsys, ray_connects):
    err = refused_line(["--dataset", "digits", "--splits", "2", "--search", search],
                       tmp_path, capsys, ray_connects)
    assert f"--splits 2 with --search {search}" in err and "--search grid" in err
    spec, _, opts = build_for(ANY)(["--dataset", "digits", "--search", search])
    assert spec.base["folds"] == 1 and spec.repeat_axis == {"fold": (0,)}
    assert {c["folds"] for c in plan(spec, opts)} == {1}         # what the records say
    spec, _, _ = build_for(ANY)(["--dataset", "digits", "--search", search, "--splits", "1"])
    assert spec.base["folds"] == 1
    spec, _, _ = build_for(ANY)(["--dataset", "digits", "--splits", "2"])     # a grid: both
    assert spec.base["folds"] == 2 and spec.repeat_axis == {"fold": (0, 1)}


# ------------------------------------------------------------------ --smoke on small data
def test_smoke_runs_on_a_folder_too_small_for_its_parts(folder):
    """--smoke's 256 train + 64 val + 256 test images were refused on a 37-image folder as
    if the user had asked for them: there it keeps the library's parts, which fit."""
    from sweeps.engine.plan.grid_trials import SMOKE, smoke
    spec, _, opts = build_for(ANY)(["--dataset", f"folder:{folder}", "--image-size", "8",
                                    "--smoke"])
    configs = plan(smoke(spec), opts)
    assert {(c["n_train"], c["n_val"], c["n_test"]) for c in configs} == {(None, None, None)}
    check_data(configs)                 # the driver's check before Ray: the parts fit
    spec, _, opts = build_for(ANY)(["--dataset", "digits", "--smoke"])    # 1,797: they fit
    smoked = smoke(spec).base
    assert all(smoked[k] == SMOKE["image classification"][k] for k in ("n_train", "n_test"))


# ------------------------------------------------------------------ the labels an export answers
def test_a_model_exported_from_an_npz_sweep_answers_the_files_own_labels(tmp_path):
    """Integer labels answered as text ('0', '1'): scoring the exported model on the file's y
    raised "Mix of label input types (string and number)"."""
    from sweeps.engine.results.refit import refit
    from sbfn_dist.settings.config import TrialConfig
    rng = np.random.default_rng(0)
    y = np.arange(120) % 4
    x = np.stack([pattern(k % 3, rng, 8) for k in y])
    np.savez(tmp_path / "four.npz", x=x, y=y)
    config = TrialConfig.from_dict(dict(
        dataset=f"npz:{tmp_path / 'four.npz'}", folds=1, n_test=40, n_members=2, epochs=1,
        ensemble="cnn", combiners=["logit_mean"], device="cpu", trial_id="t")).to_dict()
    model = refit(config, "logit_mean", {}, None).estimator
    assert list(model.classes_) == [0, 1, 2, 3]
    assert set(model.predict(x[:, None])) <= {0, 1, 2, 3}
    assert 0 <= model.score(x[:, None], y) <= 1
