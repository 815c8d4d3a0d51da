"""The Python API and sweep files (sweeps/api.py, sweeps/engine/plan/sweepfile.py): a sweep written as a
file runs through real Ray Tune and returns its records and ResultGrid; the built-in grids are
files, written nowhere else, that the commands and `sweeps run` read alike; bad files are
refused before Ray; importing changes nothing."""

import ast
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sweeps import Sweep, SweepFileError, SweepResult
from sweeps import __main__ as sweeps_main
from sweeps import regression
from sweeps.commands import image_sweeps
from sweeps.engine.common.environment import RAY_DEFAULTS
from sweeps.engine.plan import grid_files
from sweeps.engine.plan.grid_files import GRID_FOLDERS, grid_file
from sweeps.engine.plan.grid_trials import smoke as smoke_of
from sweeps.engine.plan.planning import Planned
from sweeps.engine.plan.planning import plan
from sweeps.engine.results.ranking import trials_of

pytestmark = [pytest.mark.own_ray, pytest.mark.timeout(600)]   # the API's own Ray
ROOT = Path(__file__).resolve().parents[1]

# Tiny: 120 rows of bundled diabetes, 2 folds, 1 epoch; two combiners with two lambda2 values.
TINY = """\
name: tiny
dataset: diabetes
folds: 2
axes:
  n_members: [2, 3]
  epsilon: [0.0, 0.35]
settings:
  n_samples: 120
  epochs: 1
  combiners: [sbfn_ls, arithmetic]
  lambda2: [0, 3]
references: false
competitors: [svm_rbf]
mlflow: false
resources:
  num_cpus: 2
"""


def write(tmp_path, text: str, name: str = "sweep.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def clean_env() -> dict:
    """This environment without the sweep's Ray settings (conftest sets them for the tests)."""
    return {k: v for k, v in os.environ.items() if k not in RAY_DEFAULTS}


# ------------------------------------------------------------------ a real sweep from a file
def test_a_sweep_file_runs_through_ray_tune_and_returns_the_records_and_the_result_grid(tmp_path):
    # One trial at a time (tests/sweep_helpers.py, ONE_AT_A_TIME): resources' last key.
    sweep = Sweep.from_yaml(write(tmp_path, TINY + "  max_concurrent: 1\n"),
                            storage=str(tmp_path / "results"))
    planned = [c["trial_id"] for c in sweep.trials()]
    assert len(planned) == 2 * 2 + 1            # M x eps, the competitor; no references

    result = sweep.run()
    frame = result.frame
    assert Path(result.path) == tmp_path / "results" / "tiny"
    pd.testing.assert_frame_equal(frame, pd.read_parquet(Path(result.path, "results.parquet")))
    assert (frame["status"] == "ok").all()
    # trials x folds x models: every configuration has both folds, each model setting once
    assert set(zip(frame["trial_id"], frame["fold"])) == {(t, f) for t in planned for f in (0, 1)}
    assert not frame.duplicated(["trial_id", "fold", "model", "model_params"]).any()
    ensembles = frame[frame["role"] == "ensemble"]
    models = ensembles.groupby(["trial_id", "fold"]).apply(
        lambda g: sorted(zip(g["model"], g["model_params"].map(json.loads).map(str))),
        include_groups=False)
    assert len(models) == 4 * 2 and all(m == sorted([("arithmetic", "{}"),
                                                     ("sbfn_ls", "{'lambda2': 0.0}"),
                                                     ("sbfn_ls", "{'lambda2': 3.0}")])
                                        for m in models)
    assert set(frame.loc[frame["role"] == "competitors", "model"]) == {"svm_rbf"}

    # the ResultGrid: one result per Ray trial (a pack of configurations), each one's folds
    grid = result.result_grid
    keys = [k for r in grid for k in r.metrics["trial_keys"]]
    assert sorted(keys) == sorted(planned) and not grid.errors
    assert all(r.metrics["folds_done"] == 2 * len(r.metrics["trial_keys"]) for r in grid)
    assert grid.get_best_result().metrics["objective"] == min(r.metrics["objective"] for r in grid)

    # resume: every fold is read back from its part, none recomputed
    parts = {p: p.stat().st_mtime_ns for p in Path(result.path, "parts").iterdir()}
    again = sweep.resume()
    assert {p: p.stat().st_mtime_ns for p in Path(result.path, "parts").iterdir()} == parts
    pd.testing.assert_frame_equal(again.frame, frame)
    assert len(again.result_grid) == len(grid)


DOC_BLOCK = re.compile(r"```(yaml|python)\n(.*?)```", re.S)


def docs_example() -> tuple[str, str]:
    """The YAML and Python blocks of docs/sweeps.md's "Python API and sweep files"."""
    text = (ROOT / "docs" / "sweeps.md").read_text()
    section = text.split("## Python API and sweep files", 1)[1].split("\n## ", 1)[0]
    blocks = dict(DOC_BLOCK.findall(section))
    return blocks["yaml"], blocks["python"]


def test_the_documented_example_runs_in_a_plain_python_process_and_shows_its_progress(tmp_path):
    """Standard output is a pipe here, as in a notebook or a log file: no terminal."""
    yaml_text, code = docs_example()
    write(tmp_path, yaml_text, name="my-sweep.yaml")
    after = textwrap.dedent(f"""
        import os, ray
        print("LEFT", sorted(set({sorted(RAY_DEFAULTS)!r}) & set(os.environ)))
        print("GCS", ray.get_runtime_context().gcs_address)
        """)
    run = subprocess.run([sys.executable, "-c", code + after], cwd=tmp_path, env=clean_env(),
                         capture_output=True, text=True, timeout=500)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    progress = re.findall(r"^\[diabetes-width\] configurations (\d+)/(\d+) done.*\| folds (\d+)/(\d+)",
                          out, re.M)
    assert progress and progress[-1][0] == progress[-1][1] and progress[-1][2] == progress[-1][3]
    assert "on a local Ray instance on 127.0.0.1" in out
    assert "results/diabetes-width\n" in out and "sbfn_ls" in out
    assert (tmp_path / "results" / "diabetes-width" / "results.parquet").exists()
    assert "LEFT []" in out          # the sweep's Ray settings are gone once it has ended
    assert "GCS 127.0.0.1:" in out   # and the Ray it started listens on loopback only


# ------------------------------------------------------------------ built-in grids: the files
GRIDS = ROOT / "sweeps" / "grids"


def literal_lists(source: str) -> set:
    """Every list, tuple or set literal of two or more constants in Python `source`, each as
    the set of its values (numbers as floats: 2 and 2.0 are one value)."""
    value = lambda c: float(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else c
    return {frozenset(value(e.value) for e in node.elts) for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and len(node.elts) >= 2
            and all(isinstance(e, ast.Constant) for e in node.elts)}


def grid_lists(path: Path) -> set:
    """A grid file's axes and preset lists of two or more values, as literal_lists has them."""
    d = yaml.safe_load(path.read_text())
    lists = [*d.get("axes", {}).values(), *d.get("preset", {}).values()]
    return {frozenset(float(v) if isinstance(v, (int, float)) else v for v in values)
            for values in lists if isinstance(values, list) and len(values) >= 2}


def test_each_grid_is_written_once_in_its_file_and_nowhere_in_the_modules():
    """The grid files are the one source of the named grids (docs/sweeps.md, "Grids"): an axis
    or a preset list of one written again in a module of sweeps/ is a second copy to drift."""
    modules = {str(p): literal_lists(p.read_text()) for p in (ROOT / "sweeps").rglob("*.py")}
    files = {p: grid_lists(p) for p in GRIDS.rglob("*.yaml")}
    for path, lists in files.items():
        for module, literals in modules.items():
            assert not lists & literals, f"{module} repeats {path.name}'s {lists & literals}"
    # the check sees a copy: the module table the grids used to be in
    copy = literal_lists("MEMBERS = (2, 5, 10, 20, 35)\nEPSILONS = (0.0, 0.1, 0.35, 0.5)")
    assert grid_lists(GRIDS / "regression" / "regression80.yaml") <= copy


@pytest.mark.parametrize("name, build, argv", [
    ("heterogeneous", regression.build, ["--dataset", "appliances", "--grid", "heterogeneous"]),
    ("mnist", image_sweeps.build_for("mnist"), ["--num-gpus", "1"]),
])
@pytest.mark.parametrize("smoke", [[], ["--smoke"]])
def test_a_grid_file_run_by_name_plans_what_its_command_plans(name, build, argv, smoke):
    """One grid, two ways in: the command takes the file's grid keys (its preset too, which
    --smoke replaces), `python -m sweeps run NAME` the whole file."""
    spec, args, opts = build(argv + smoke)
    spec = smoke_of(spec) if args.smoke else spec
    by_name, _, file_opts = sweeps_main.build(["run", name, *smoke])
    same_name = lambda s, o: plan(s, dataclasses.replace(o, name="x"))
    assert same_name(by_name, file_opts) == same_name(spec, opts)


def test_the_grid_files_are_package_data_found_by_name():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["sweeps"]
    shipped = {p for g in globs for p in (ROOT / "sweeps").glob(g)}
    assert shipped == set(GRIDS.rglob("*.yaml")) and len(shipped) >= 7
    assert {p.parent.name for p in shipped} == set(GRID_FOLDERS)
    assert Path(str(grid_file("regression80"))) == GRIDS / "regression" / "regression80.yaml"
    assert Path(str(grid_file("demo"))) == GRIDS / "regression" / "demo.yaml"  # the first folder's
    assert Path(str(grid_file("classification/demo"))) == GRIDS / "classification" / "demo.yaml"
    with pytest.raises(SweepFileError, match="'regresion80'.*did you mean 'regression80'"):
        grid_file("regresion80")


def test_a_grid_file_is_refused_where_its_command_would_not_take_a_key(tmp_path, monkeypatch):
    """A grid's settings are its `preset`: a file's `settings` are its own --set, which the
    commands' --grid would leave out, so a grid file holding them is refused."""
    (tmp_path / "regression").mkdir()
    (tmp_path / "regression" / "mine.yaml").write_text(
        "dataset: diabetes\naxes: {n_members: [2, 3]}\nsettings: {epochs: 3}\n")
    monkeypatch.setattr(grid_files, "GRIDS", tmp_path)
    with pytest.raises(SweepFileError, match=r"mine.yaml: a grid file holds its settings under "
                                             r"`preset`.*not `settings`"):
        regression.build(["--dataset", "diabetes", "--grid", "mine"])


def test_python_m_sweeps_run_dry_run_lists_the_trials_and_runs_nothing(tmp_path):
    path = write(tmp_path, TINY.replace("mlflow: false", f"storage: {tmp_path / 'out'}"))
    run = subprocess.run([sys.executable, "-m", "sweeps", "run", str(path), "--dry-run"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    listed = re.findall(r"trial +\d+ +(\S+)", run.stdout)
    planned = [c["trial_id"] for c in Sweep.from_yaml(path).trials()]
    assert listed and sorted(listed) == sorted(planned)
    assert "sweep 'tiny': grid sweep on diabetes" in run.stdout
    assert not (tmp_path / "out").exists()


def test_a_dry_run_labels_each_trial_with_the_sweeps_axes_and_aligns_the_ids(tmp_path):
    """It printed `M=5 eps=0.1` on every trial: ε where it was no axis, a real axis (width)
    never; and a fixed 42-character id column that longer ids pushed out of line."""
    printed = io.StringIO()
    Sweep.from_dict({"dataset": "diabetes", "folds": 2, "storage": str(tmp_path), "axes": {
        "n_members": [2], "width": [8, 16]}, "competitors": ["gradient_boosting"],
                     "settings": {"epochs": 1}}).dry_run(printed)
    lines = [line for line in printed.getvalue().splitlines() if line.startswith("    trial")]
    said = [line.split("  folds  2  ")[1] for line in lines]
    assert said == ["n_members=1 width=50 lr=0.03 role=reference",    # the reference: its own
                    "n_members=1 width=50 lr=0.003 role=reference",
                    "role=competitors", "n_members=2 width=8 role=ensemble",
                    "n_members=2 width=16 role=ensemble"], said
    assert len({line.index("folds") for line in lines}) == 1          # one column


def test_a_shipped_file_runs_by_name_and_smoke_shrinks_it(capsys, data_dir):
    # data_dir: a dry run checks the data as a run does (regression80 is Air Quality's grid)
    assert sweeps_main.main(["run", "regression80", "--dry-run", "--smoke"]) == 0
    out = capsys.readouterr().out
    assert "sweep 'air_quality-regression80-smoke'" in out and "folds/splits in all" in out
    assert len(re.findall(r"^    trial ", out, re.M)) == 2 * 2 + 1 + 1   # 2 M x 2 eps, ref, svm


# ------------------------------------------------------------------ bad files, before Ray
@pytest.mark.parametrize("text, message", [
    (TINY.replace("axes:", "axis:"), r"unknown key 'axis' \(did you mean 'axes'\?\)"),
    (TINY.replace("num_cpus", "num_cpu"), r"unknown key 'resources.num_cpu' \(did you mean "
                                          r"'num_cpus'"),
    (TINY.replace("epochs: 1", "epoch: 1"), r"'epoch'.*did you mean 'epochs'"),
    (TINY.replace("folds: 2", "folds: two"), r"folds = 'two' is not allowed: an integer"),
    (TINY.replace("[0.0, 0.35]", "[0.0, 2]"), r"'epsilon' = 2 is not allowed: .* \[0, 1\]"),
    (TINY.replace("[2, 3]", "[2, x]"), r"axes.n_members = \[2, 'x'\]: ensemble sizes are"),
    (TINY.replace("[2, 3]", "[]"), r"axes.n_members = \[\]: an axis is a non-empty list"),
    (TINY.replace("dataset: diabetes\n", ""), r"'dataset' is missing"),
    (TINY.replace("dataset: diabetes", "dataset: diabetis"), r"unknown data set 'diabetis'"),
    (TINY.replace("dataset: diabetes", "dataset: digits"), r"'references' = False .* tabular"),
    (TINY.replace("competitors: [svm_rbf]", "competitors: svm_rbf"), r"a list of model names"),
    (TINY + "  gpus_per_trial: 2\n  num_gpus: 1\n", r"'resources.gpus_per_trial' = 2"),
    # a check the commands share names the file's key, not their flag (was '--objective')
    (TINY + "objective: sbfn_lss\n", r"'objective' = 'sbfn_lss' is not allowed: one of the "
                                     r"models .*did you mean 'sbfn_ls'"),
    # a misspelt axis, named as one (was "config field 'epsilons' = 0", its first value)
    (TINY.replace("  epsilon:", "  epsilons:"), r"axes.epsilons: no trial setting of this "
                                               r"name \(did you mean 'epsilon'\?\)"),
    (TINY + "data_dir: ''\n", r"data_dir = '' is not allowed: a folder's path \(was a "
                              r"variable in it unset\?\)"),          # was the working directory
    (TINY.replace("name: tiny", "name: my sweep"), r"'my sweep' may hold only ASCII letters"),
    (TINY + "preset:\n  dataset: wine\n", r"preset.dataset: the sweep's dataset is its own"),
    ("- a list\n", r"a sweep file is a mapping of keys"),
    ("dataset: [unclosed\n", r"line 1, column 10: not valid YAML: a '\[' not closed .*close "
                             r"it with '\]'"),
])
def test_a_bad_sweep_file_is_refused_naming_the_file_and_the_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(SweepFileError, match=message) as refused:
        Sweep.from_yaml(path)
    assert str(refused.value).startswith(f"{path}: ")


# PyYAML's 5-7 lines of parser states (`in "<byte string>", line 7, column 2`) said in words
@pytest.mark.parametrize("text, message", [
    (TINY.replace("folds: 2\n", "folds: 2\n seeds: 2\n"),
     r"line 4, column 2: not valid YAML: a key indented further than the line above it \(1 "
     r"space; that line has 0 spaces\).*line it up"),
    (TINY.replace("settings:", " settings:"), r"line 7, column 2: not valid YAML: a key indented "
                                            r"differently from the keys beside it \(1 space; "
                                            r".*has 0 spaces\): line it up"),
    (TINY.replace("  epsilon:", "\tepsilon:"), r"line 6, column 1: not valid YAML: a tab in the "
                                               r"indentation: indent with spaces only"),
    (TINY + 'data_dir: "C:\\data\\x"\n', r"not valid YAML: a backslash inside \"...\" "
                                            r"starts an escape .*single quotes"),
    (TINY.replace("folds: 2", "folds 2"), r"line 3, column 1: not valid YAML: a line that is "
                                          r"neither `key: value`.*add the ':'"),
    # the first key indented, the next not: YAML names no mapping (an AttributeError's traceback)
    (" " + TINY, r"line 2, column 1: not valid YAML: a key indented differently from the keys "
                 r"beside it \(0 spaces; the mapping it falls in, from line 1, has 1 space\)"),
], ids=["more indented", "less indented", "tab", "backslash", "no colon", "first indented"])
def test_yaml_that_does_not_parse_is_said_in_one_line_with_its_fix(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(SweepFileError, match=message) as refused:
        Sweep.from_yaml(path)
    assert "\n" not in str(refused.value) and "<byte string>" not in str(refused.value)
    assert str(refused.value).startswith(f"{path}: line ")


def test_a_missing_file_and_a_misspelt_resource_at_run_are_refused(tmp_path):
    with pytest.raises(SweepFileError, match=r"nope.yaml: cannot read the sweep file"):
        Sweep.from_yaml(tmp_path / "nope.yaml")
    sweep = Sweep.from_yaml(write(tmp_path, TINY))
    with pytest.raises(SweepFileError, match=r"unknown run option 'num_gpu' \(did you mean "
                                             r"'num_gpus'"):
        sweep.run(num_gpu=1)
    assert sweep._options({"num_gpus": 1}).gpus_per_trial == 0.25     # as the commands do


def test_the_command_reports_a_bad_file_in_one_line(tmp_path, capsys):
    path = write(tmp_path, TINY.replace("folds: 2", "fold: 2"))
    assert sweeps_main.main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: unknown key 'fold'")


def test_the_command_reports_yaml_that_does_not_parse_in_one_line(tmp_path, capsys):
    path = write(tmp_path, TINY.replace("folds: 2", " folds: 2"))
    assert sweeps_main.main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: line 3, column 2: "), err


# ------------------------------------------------------------------ no global state
IMPORT_ONLY = """
import logging, os, sys, warnings
env, filters = dict(os.environ), list(warnings.filters)
root = (logging.getLogger().level, list(logging.getLogger().handlers))
import sweeps, sbfn_dist, analysis
assert dict(os.environ) == env, {k: v for k, v in os.environ.items() if env.get(k) != v}
assert warnings.filters == filters
assert (logging.getLogger().level, logging.getLogger().handlers) == root
assert not {"ray", "torch"} & set(sys.modules), "import sweeps stays light"
"""

# The API's modules on top of their dependencies (torch, scipy, ... set their own variables
# and warning filters as they import): ours add nothing, and planning a sweep imports no Ray.
ON_TOP_OF_DEPENDENCIES = """
import importlib, json, logging, os, sys, warnings
for module in json.loads(sys.argv[1]):
    try:
        importlib.import_module(module)
    except Exception:
        pass
env, filters = dict(os.environ), list(warnings.filters)
root = (logging.getLogger().level, list(logging.getLogger().handlers))
from sweeps import Sweep
import sweeps.__main__
Sweep.builtin("regression", "diabetes", "demo").trials()
assert dict(os.environ) == env, {k: v for k, v in os.environ.items() if env.get(k) != v}
assert warnings.filters == filters
assert (logging.getLogger().level, logging.getLogger().handlers) == root
assert "ray" not in sys.modules, "Ray's environment must be set before Ray is imported"
"""
DEPENDENCIES = """
import json, sys
before = set(sys.modules)
import sweeps.api, sweeps.__main__
ours = ("sweeps", "sbfn_dist", "analysis")
print(json.dumps([m for m in sys.modules if m not in before and m.split(".")[0] not in ours
                  and m.split(".")[0] not in sys.stdlib_module_names]))
"""


def python(code: str, *args: str) -> str:
    run = subprocess.run([sys.executable, "-c", code, *args], env=clean_env(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_importing_the_packages_changes_no_global_state():
    python(IMPORT_ONLY)
    python(ON_TOP_OF_DEPENDENCIES, python(DEPENDENCIES))


# ------------------------------------------------------------------ a real notebook, if present
def test_in_a_jupyter_kernel_the_progress_lines_stay_in_the_cell(tmp_path):
    """Tune's notebook reporter cleared the cell's output as the sweep started (the plan and
    the first line vanished); runs where Jupyter is installed (not a dependency)."""
    nbformat = pytest.importorskip("nbformat", reason="Jupyter (nbclient, ipykernel) not installed")
    nbclient = pytest.importorskip("nbclient", reason="Jupyter (nbclient) not installed")
    pytest.importorskip("ipykernel", reason="Jupyter (ipykernel) not installed")
    path = write(tmp_path, TINY.replace("name: tiny", "name: nb"))
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from sweeps import Sweep\nsweep = Sweep.from_yaml({str(path)!r}, "
        f"storage={str(tmp_path)!r})\nsweep.dry_run()\nresult = sweep.run()")])
    nbclient.NotebookClient(notebook, timeout=500, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    out = "".join(o.get("text", "") for o in notebook.cells[0].outputs
                  if o.get("name") == "stdout")
    assert "sweep 'nb': grid sweep on diabetes" in out            # the plan stayed
    assert "[nb] 5 configurations in 3 trials" in out
    assert re.search(r"^\[nb\] configurations 5/5 done", out, re.M)


# ------------------------------------------------------------------------- image splits
def split_sweep() -> tuple:
    """An image sweep's plan (ε 0 and 0.5, 2 splits: a trial per split) and a result whose
    sbfn accuracy is `SCORES` by (ε, split): ε = 0's mean is best, ε = 0.5's split 1 is."""
    spec, _, opts = image_sweeps.build_for(image_sweeps.ANY)(
        ["--dataset", "digits", "--ensembles", "cnn", "--members", "2", "--epsilons", "0", "0.5",
         "--splits", "2", "--no-mlflow"])
    configs = plan(spec, dataclasses.replace(opts, name="x"))
    rows = [{"trial_id": c["trial_id"], "fold": c["fold"], "model": "sbfn", "model_params": "{}",
             "status": "ok", "role": "ensemble", "family": "sbfn", "task": "classification",
             "accuracy": SCORES[(c["epsilon"], c["fold"])], "nll": 1.0, "ece": 0.1}
            for c in configs]
    points = [{"epsilon": c["epsilon"], "fold": c["fold"], "trial_id": c["trial_id"]}
              for c in configs]
    return configs, SweepResult("x", pd.DataFrame(rows), None, plan=Planned(points, configs),
                                objective="sbfn", task="classification")


SCORES = {(0.0, 0): 0.70, (0.0, 1): 0.70, (0.5, 0): 0.50, (0.5, 1): 0.80}


def test_an_image_sweep_ranks_a_configuration_by_its_mean_over_every_split():
    """Each split is a trial of its own; ranking one split's score picked a lucky split (here
    ε = 0.5's 0.80) and kept, exported and reported only that split."""
    configs, result = split_sweep()
    best = result.best()
    first = next(c for c in configs if c["epsilon"] == 0.0 and c["fold"] == 0)
    assert (best.trial_id, best.folds, best.score) == (first["trial_id"], 2, pytest.approx(0.70))
    assert best.settings == {"epsilon": 0.0}
    other = next(c["trial_id"] for c in configs if c["epsilon"] == 0.5 and c["fold"] == 1)
    chosen = result.configuration(other)              # any split's trial names its configuration
    assert chosen.folds == 2 and chosen.score == pytest.approx(0.65)
    assert result._on_fold(best, 1)["fold"] == 1 and result._on_fold(best, None) == best.config
    assert set(trials_of(best.trial_id, configs)) == {c["trial_id"] for c in configs
                                                      if c["epsilon"] == 0.0}
