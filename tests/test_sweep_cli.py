"""Sweep commands refuse bad input with one clear line (exit 2), before any trial runs."""

import argparse
import ast
import os
import pathlib
import re
import runpy
import sys
import warnings
from unittest import mock

import pytest

from sbfn_dist.interfaces.cli import main as cli_main
from sbfn_dist.interfaces.usage import ListOf
from sbfn_dist.settings.fields import TRIAL_FIELDS, defaults
from sweeps import __main__ as sweeps_main
from sweeps.classification import main as classification
from sweeps.commands.image_sweeps import main_for
from sweeps.engine.plan import planning
from sweeps.regression import build
from sweeps.regression import main as regression
from tests.sweep_helpers import free_port

# The checks of --address and --num-gpus are those of a sweep that starts or joins Ray itself.
pytestmark = pytest.mark.own_ray

SMOKE = ["--dataset", "diabetes", "--grid", "demo", "--smoke", "--no-mlflow"]


def error_of(capsys, code):
    out = capsys.readouterr()
    assert code == 2, out
    assert "Traceback" not in out.err
    return out.err


def test_unknown_grid_names_the_known_ones(capsys):
    err = error_of(capsys, regression(["--dataset", "diabetes", "--grid", "regression81"]))
    assert "regression81" in err and "regression80" in err


def test_a_bad_epsilon_list_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        regression(SMOKE + ["--epsilons", "0,abc"])
    assert exit_.value.code == 2
    assert "'abc' is not one of the ε values" in capsys.readouterr().err
    err = error_of(capsys, regression(SMOKE + ["--epsilons", "0.2", "1.5", "--dry-run"]))
    assert "config field 'epsilon' = 1.5 is not allowed: a finite number in [0, 1]" in err


@pytest.mark.parametrize("fraction", ["1.5", "0"])
def test_gpus_per_trial_must_be_a_fraction_in_0_1(capsys, fraction, tmp_path):
    code = main_for("digits", ["--num-gpus", "1", "--gpus-per-trial", fraction, "--no-mlflow",
                               "--storage", str(tmp_path)])
    err = error_of(capsys, code)
    assert "--gpus-per-trial" in err and "(0, 1]" in err


def test_gpus_that_this_machine_lacks_fail_fast(capsys, tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code = main_for("digits", ["--smoke", "--num-gpus", "1", "--no-mlflow", "--storage", str(tmp_path)])
    assert "this machine has 0 CUDA GPU" in error_of(capsys, code)


SHARE_FILE = "name: s\ndataset: diabetes\nmlflow: false\naxes: {n_members: [2, 5]}\n"
NEEDS_GPUS = ("{share} 0.5 needs GPUs: give {gpus} N (this machine has 0 CUDA GPUs), or leave "
              "{share} out to train on the CPU")
FLAGS = {"share": "--gpus-per-trial", "gpus": "--num-gpus"}
KEYS = {"share": "resources.gpus_per_trial:", "gpus": "resources.num_gpus:"}


@pytest.mark.parametrize("resources, flags, says", [
    (None, ["--gpus-per-trial", "0.5"], NEEDS_GPUS.format(**FLAGS)),
    ("", ["--gpus-per-trial", "0.5"], NEEDS_GPUS.format(**FLAGS)),
    ("{gpus_per_trial: 0.5}", [], NEEDS_GPUS.format(**KEYS).replace(
        "leave resources.gpus_per_trial:", "leave resources.gpus_per_trial")),
    ("", ["--num-gpus", "1", "--gpus-per-trial", "1.5"], "config field '--gpus-per-trial' = 1.5 "
     "is not allowed: a fraction in (0, 1] when --num-gpus > 0"),
    ("{num_gpus: 1, gpus_per_trial: 1.5}", [], "config field 'resources.gpus_per_trial' = 1.5 "
     "is not allowed: a fraction in (0, 1] when resources.num_gpus > 0"),
], ids=["command", "flag on a file", "file key", "flag above 1", "key above 1"])
def test_a_gpu_share_is_blamed_where_it_was_given_and_says_the_fix(resources, flags, says,
                                                                   tmp_path, capsys, monkeypatch):
    """A share without GPUs blamed `--num-gpus = 0.0`, a flag never typed, with no fix; a flag's
    value on a sweep file was blamed on the file's key (`resources.num_gpus`)."""
    monkeypatch.setattr(planning, "cuda_gpus", lambda: 0)       # what a GPU machine would count
    tail = [*flags, "--storage", str(tmp_path), "--dry-run"]
    if resources is None:
        code = regression(["--dataset", "diabetes", "--grid", "demo", "--no-mlflow", *tail])
    else:
        path = tmp_path / "my-sweep.yaml"
        path.write_text(SHARE_FILE + (f"resources: {resources}\n" if resources else ""))
        code = sweeps_main.main(["run", str(path), *tail])
    err = error_of(capsys, code)
    assert err.startswith("error: ") and says in err and err.count("\n") == 1, err


def test_a_resume_with_other_settings_names_them_and_the_command_that_made_the_sweep(
        tmp_path, capsys):
    """It said "created with other settings" alone, and quoted the last --resume's command: each
    run wrote sweep.json anew with its own."""
    from sweeps.engine.sweep import _check_store
    path = tmp_path / "my-sweep.yaml"
    path.write_text(SHARE_FILE + "settings: {epochs: 2}\n")
    made = ["run", str(path), "--storage", str(tmp_path)]
    for resume, argv in ((False, made), (True, [*made, "--resume"])):    # made, then resumed
        spec, _, opts = sweeps_main.build(argv)
        store = planning.result_store(opts)
        store.write_spec(_check_store(store, spec, opts, planning.plan(spec, opts), {}))
    assert store.read_spec()["command"] == f"python -m sweeps {' '.join(made)}"
    err = error_of(capsys, sweeps_main.main([*made, "--resume", "--set", "epochs=3",
                                             "--dry-run"]))
    assert (f"created with other settings (epochs 3, not 2; its command: python -m sweeps "
            f"{' '.join(made)}). Resume with the same arguments") in err, err
    path.write_text(path.read_text().replace("[2, 5]", "[2, 10]"))     # an axis' values
    err = error_of(capsys, sweeps_main.main([*made, "--resume", "--dry-run"]))
    assert re.search(r"other settings \(trials planned now, not in the sweep: M10_s0_\w+; in "
                     r"the sweep, not planned now: M5_s0_\w+; its command", err), err


def test_an_unreachable_address_fails_in_seconds(capsys, tmp_path):
    code = regression(SMOKE + ["--address", f"127.0.0.1:{free_port()}", "--storage", str(tmp_path)])
    err = error_of(capsys, code)
    assert "cannot reach a Ray cluster" in err and "--address" in err
    assert not (tmp_path / "diabetes-demo-smoke" / "sweep.json").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_an_unwritable_storage_path_is_refused_as_non_root(capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    err = error_of(capsys, regression(SMOKE + ["--storage", str(locked)]))
    assert "cannot write to the results storage" in err


def test_an_unwritable_storage_path_is_refused(capsys):
    err = error_of(capsys, regression(SMOKE + ["--storage", "/proc/sbfn-results"]))
    assert "cannot write to the results storage" in err and "--storage" in err


def test_a_remote_storage_needs_a_tracking_server(capsys):
    err = error_of(capsys, regression(SMOKE[:-1] + ["--storage", "s3://bucket/prefix"]))
    assert "--mlflow-uri" in err


def test_dry_run_lists_trials_and_resources_and_runs_nothing(capsys, tmp_path):
    assert regression(SMOKE + ["--dry-run", "--storage", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "6 configurations in 3 trials (--pack auto), 18 folds/splits" in out
    assert "1 CPU" in out and "trial   0" in out
    assert "competitors_s0_" in out
    assert not any(tmp_path.iterdir())


def test_dry_run_without_packing_lists_one_configuration_per_trial(capsys, tmp_path):
    assert regression(SMOKE + ["--dry-run", "--pack", "off", "--storage", str(tmp_path)]) == 0
    assert "6 configurations, 18 folds/splits" in capsys.readouterr().out


def test_a_missing_data_directory_stops_the_sweep_before_ray(capsys, tmp_path):
    code = regression(["--dataset", "air_quality", "--smoke", "--no-mlflow", "--storage",
                       str(tmp_path), "--data-dir", str(tmp_path / "nowhere")])
    err = error_of(capsys, code)
    assert "air" in err.lower()


def test_one_holdout_split_is_a_valid_image_sweep_but_one_kfold_fold_is_not(capsys, tmp_path):
    assert main_for("digits", ["--splits", "1", "--dry-run", "--storage", str(tmp_path)]) == 0
    assert "folds/splits" in capsys.readouterr().out
    err = error_of(capsys, regression(["--dataset", "diabetes", "--grid", "demo", "--folds", "1",
                                       "--dry-run", "--storage", str(tmp_path)]))
    assert "folds" in err and "split=kfold" in err


def test_a_set_that_applies_to_no_trial_is_refused_before_ray_starts(capsys, tmp_path,
                                                                    ray_connects):
    err = error_of(capsys, regression(SMOKE + ["--set", "temperature=2", "--storage", str(tmp_path)]))
    assert "'temperature'" in err and "the s-BFN classification heads" in err
    assert "tabular regression" in err
    assert not ray_connects and not any(tmp_path.iterdir())


def test_a_set_every_trial_overrides_is_refused_too(capsys, tmp_path):
    err = error_of(capsys, regression(SMOKE + ["--set", "n_members=3", "--dry-run"]))
    assert "'n_members'" in err and "--members" in err


@pytest.mark.parametrize("setting, where", [("width=20", "tabular data sets"),
                                            ("lambda2=3", "regression combiners"),
                                            ("dtype=float64", "tabular data sets"),
                                            ("split=kfold", "holdout")])
def test_an_image_sweep_refuses_settings_of_tables(capsys, tmp_path, setting, where):
    err = error_of(capsys, main_for("digits", ["--smoke", "--set", setting, "--dry-run",
                                               "--storage", str(tmp_path)]))
    assert f"'{setting.split('=')[0]}'" in err and where in err


def test_classification_dry_run_lists_the_reference_competitors_and_ensembles(capsys, tmp_path):
    assert classification(["--dataset", "iris", "--grid", "demo", "--smoke", "--dry-run",
                           "--storage", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "6 configurations in 4 trials (--pack auto), 18 folds/splits" in out
    assert "M1_eps0_reference_s0_" in out   # the reference holds out no validation part: own pack
    assert "svm_rbf_competitors_s0_" in out and "M10_eps0.5_s0_" in out
    with pytest.raises(SystemExit):    # λ2 is a regression combiner's: not an option here
        classification(["--dataset", "iris", "--grid", "demo", "--lambda2", "3"])
    assert "unrecognized arguments: --lambda2" in capsys.readouterr().err


# ------------------------------------------------------------------ help, fields, list flags
ROOT = pathlib.Path(__file__).resolve().parents[1]
OURS = ("sbfn_dist", "sweeps")                  # analysis.report's options count as flags only


class Parsed(Exception):
    """Carries the parser a command built, stopping it before it parses (nothing runs)."""


def commands(*packages: str) -> list[str]:
    """Every `python -m` command of these packages: modules with a __main__ block."""
    found = []
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            if 'if __name__ == "__main__":' in path.read_text():
                found.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return sorted(found)


def parser_of(module: str) -> argparse.ArgumentParser:
    def stop(parser, *args, **kwargs):
        raise Parsed(parser)
    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", stop), \
            mock.patch.object(sys, "argv", [module]), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # runpy: "found in sys.modules"
        try:
            runpy.run_module(module, run_name="__main__")
        except Parsed as parsed:
            return parsed.args[0]
    raise AssertionError(f"python -m {module} parses no arguments")


def options_of(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every option of the parser and of its sub-commands."""
    found = []
    for action in parser._actions:
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            found += [a for sub in action.choices.values() for a in options_of(sub)]
    return found


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    return {m: parser_of(m) for m in commands(*OURS, "analysis")}


def test_every_command_is_found_and_builds_its_parser(parsers):
    assert {"sbfn_dist.interfaces.cli", "sweeps.regression", "sweeps.cifar10",
            "sweeps.tools.mlflow_server"} <= set(parsers)


def test_the_commands_python_m_sweeps_names_exist(parsers):
    """`python -m sweeps` alone lists them (sweeps_main.NO_COMMAND)."""
    assert {f"sweeps.{name}" for name in sweeps_main.COMMANDS} <= set(parsers)


def test_help_shows_every_default(parsers):
    """An option with a default says it; one without says what happens instead."""
    silent = {}
    for module in commands(*OURS):
        formatter = parsers[module]._get_formatter()
        for action in options_of(parsers[module]):
            quiet = (not action.option_strings or action.required or action.nargs == 0)
            if not quiet and "default" not in formatter._expand_help(action):
                silent.setdefault(module, []).append(action.option_strings[0])
    assert not silent, f"options whose --help hides the default: {silent}"


def test_no_command_takes_an_abbreviated_flag(parsers):
    """`--epsilon 0.3` was silently taken for --epsilons (issue 21)."""
    def all_parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from all_parsers(sub)
    abbreviating = [m for m in commands(*OURS) for p in all_parsers(parsers[m]) if p.allow_abbrev]
    assert not abbreviating
    with pytest.raises(SystemExit):
        build(["--dataset", "diabetes", "--epsilon", "0.3"])


def test_list_flags_have_one_spelling(parsers):
    """Space-separated values (nargs='+'), parsed by one action; --set keeps commas for a
    setting's own list (lambda2=0,3)."""
    other = {(m, a.option_strings[0]) for m in commands(*OURS) for a in options_of(parsers[m])
             if a.option_strings and a.nargs in ("+", "*") and not isinstance(a, ListOf)}
    assert other == {(m, "--set") for m in commands("sweeps")
                     if any("--set" in a.option_strings for a in options_of(parsers[m]))}


def flag_mentions(path: pathlib.Path):
    """(flag, the source of the innermost statement holding it) for each --flag in a string
    literal of the file."""
    text = path.read_text()
    statement_of = {}
    for statement in ast.walk(ast.parse(text)):     # outer statements first: inner ones overwrite
        if isinstance(statement, ast.stmt):
            statement_of.update((node, statement) for node in ast.walk(statement))
    for node, statement in statement_of.items():
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", node.value):
                yield flag, ast.get_source_segment(text, statement) or ""


# Flags of other programs that the code passes or quotes, and the program, which the same
# statement names.
FOREIGN = {"--head": "ray", "--short": "git", "--backend-store-uri": "mlflow", "--host": "mlflow",
           "--port": "mlflow", "--default-artifact-root": "mlflow", "--version": "argparse",
           "--env-manager": "mlflow", "--tmux": "ray", "--now": "systemctl",
           **dict.fromkeys(("--node-manager-port", "--object-manager-port",
                            "--dashboard-agent-grpc-port", "--dashboard-agent-listen-port",
                            "--min-worker-port", "--max-worker-port"), "ray start")}


def test_every_flag_a_message_names_exists(parsers):
    """Error messages and docs strings in sbfn_dist/ and sweeps/ name only real options
    (the CSV error once said --target, which no sweep has)."""
    real = {s for p in parsers.values() for a in options_of(p) for s in a.option_strings}
    unknown = {}
    for package in OURS:
        for path in (ROOT / package).rglob("*.py"):
            for flag, source in flag_mentions(path):
                if flag not in real and FOREIGN.get(flag, "\0") not in source:
                    unknown.setdefault(flag, set()).add(str(path.relative_to(ROOT)))
    assert not unknown, f"flags that no command has: {unknown}"


def test_list_fields_prints_every_setting_with_its_defaults_and_exits_0(capsys):
    with pytest.raises(SystemExit) as exit_:
        regression(["--list-fields"])
    assert exit_.value.code == 0
    listing = capsys.readouterr().out
    names = re.findall(r"^(\w+) = ", listing, flags=re.M)
    assert names == list(TRIAL_FIELDS)
    epochs = re.search(r"^epochs = (.*)$", listing, flags=re.M).group(1)
    for modality, task, value in [("tabular", "regression", 10), ("image", "classification", 2)]:
        assert defaults(task, modality)["epochs"] == value
        assert f"{modality} {task}: {value}" in epochs
    assert "lambda2 = 0.0\n    applies to: the s-BFN regression combiners" in listing


def test_the_library_command_lists_the_same_fields(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli_main(["--list-fields"])
    assert exit_.value.code == 0 and "\nn_members = 5\n" in capsys.readouterr().out


@pytest.mark.parametrize("typo, meant", [("epohcs", "epochs"), ("lamda2", "lambda2"),
                                         ("n_member", "n_members")])
def test_a_misspelt_setting_gets_did_you_mean(capsys, tmp_path, typo, meant):
    err = error_of(capsys, regression(SMOKE + ["--set", f"{typo}=3", "--dry-run",
                                               "--storage", str(tmp_path)]))
    assert f"did you mean '{meant}'" in err and "--list-fields" in err
    assert f"did you mean '{meant}'" in error_of(capsys, cli_main([f"{typo}=3"]))


def test_a_setting_with_no_near_name_lists_where_the_fields_are(capsys):
    err = error_of(capsys, cli_main(["colour=red"]))
    assert "did you mean" not in err and "python -m sbfn_dist --list-fields" in err


def trials_of(*argv: str) -> list:
    spec, _, _ = build(["--dataset", "diabetes", "--grid", "demo", *argv])
    return spec.trials()


def test_every_list_flag_takes_space_separated_values_and_commas_still_work():
    spaced = trials_of("--epsilons", "0", "0.5", "--competitors", "svm_rbf", "random_forest")
    assert len(spaced) == 3 * 2 + 2 + 2       # M x ε, the two references, two competitors
    assert trials_of("--epsilons", "0,0.5", "--competitors", "svm_rbf,random_forest") == spaced
    assert trials_of("--epsilons", "0", "--epsilons", "0.5", "--competitors", "svm_rbf",
                     "--competitors", "random_forest") == spaced
    assert not [t for t in trials_of("--competitors", "none") if t.get("competitors")]


def test_competitors_none_stands_alone(capsys):
    err = error_of(capsys, regression(["--dataset", "diabetes", "--grid", "demo", "--dry-run",
                                       "--competitors", "none", "svm_rbf"]))
    assert "'none' runs no competitor" in err


def test_set_takes_several_settings_after_one_flag():
    _, _, once = build(SMOKE + ["--set", "epochs=3", "lambda2=0,3"])
    _, _, twice = build(SMOKE + ["--set", "epochs=3", "--set", "lambda2=0,3"])
    assert once.overrides == twice.overrides == {"epochs": 3, "lambda2": [0, 3]}
