"""Continuous search spaces (docs/sweeps.md, "Continuous search spaces"): an axis given as a
range (uniform, loguniform, randint, quniform), checked against its setting before Ray starts,
drawn by Optuna or by Tune's random generator, each draw planned when it arrives, its exact value
in the records, and the report's scatter and binned table of a drawn setting."""

import io
import math
import pickle
import re
from pathlib import Path
from unittest import mock

import numpy as np
import optuna
import pandas as pd
import pytest
import yaml
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from ray.tune.search.optuna import OptunaSearch

from analysis import figures, tables
from analysis.configs import continuous_settings
from analysis.report import write_report
from sbfn_dist.errors import SbfnError
from sbfn_dist.settings import config as config_module
from sweeps import Sweep
from sweeps.engine.checks import print_plan
from sweeps.engine.plan.planning import plan_sweep
from sweeps.engine.plan.ranges import Range, parse_range
from sweeps.engine.run.search import sampled_space
from sweeps.engine.sweep import expected
from tests.sweep_helpers import a_ray

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[1]

# Bundled diabetes, 70 rows, 3 folds, 1 epoch of 2 members: a configuration takes a second.
# One trial at a time (tests/sweep_helpers.py, ONE_AT_A_TIME).
SMALL = {"dataset": "diabetes", "folds": 3, "competitors": [], "mlflow": False,
         "settings": {"n_samples": 70, "epochs": 1},
         "resources": {"num_cpus": 2, "max_concurrent": 1}}
RANGES = {"epsilon": "uniform(0, 1)", "lr": "loguniform(1e-4, 1e-1)"}


def sweep(tmp_path, **changes) -> Sweep:
    return Sweep.from_dict({**SMALL, "name": "c", "storage": str(tmp_path), "search": "optuna",
                            "num_samples": 4, "axes": {**RANGES, "n_members": [2]}, **changes})


# ------------------------------------------------------------------ parsed and checked
def test_a_sampled_search_expects_its_draws_folds_not_its_bounds(tmp_path):
    """sweep.json's n_folds_expected (the MLflow tag folds_expected) counted the folds of the
    configurations planned at the ranges' bounds (4 here), not of the draws."""
    s = sweep(tmp_path, num_samples=7, axes={**RANGES, "n_members": [2, 3]})
    planned = plan_sweep(s.spec, s.options)
    assert len(planned.configs) != 7
    assert expected(planned.configs, s.options) == (7, 7 * SMALL["folds"])


def test_each_range_becomes_the_distribution_optuna_samples():
    axes = {"epsilon": parse_range("epsilon", "uniform(0, 1)"),
            "lr": parse_range("lr", " loguniform( 1e-4 , 0.1 ) "),
            "n_members": parse_range("n_members", "randint(2, 11)"),
            "lambda1": parse_range("lambda1", "quniform(0, 0.1, 0.025)"),
            "width": (20, 50)}
    assert axes["lr"] == Range("loguniform", (0.0001, 0.1)) and str(axes["lr"]) == \
        "loguniform(0.0001, 0.1)"
    assert [axes[a].bounds() for a in ("epsilon", "n_members", "lambda1")] == \
        [(0.0, 1.0), (2, 10), (0.0, 0.1)]
    assert [axes[a].size() for a in ("epsilon", "n_members", "lambda1")] == [math.inf, 9, 5]
    # Ray's own conversion of the Tune space the sweep hands OptunaSearch
    optuna_space = OptunaSearch.convert_search_space(sampled_space(axes, {"seed": 0}))
    assert optuna_space == {
        "epsilon": FloatDistribution(0.0, 1.0), "lr": FloatDistribution(0.0001, 0.1, log=True),
        "n_members": IntDistribution(2, 10), "lambda1": FloatDistribution(0.0, 0.1, step=0.025),
        "width": CategoricalDistribution((20, 50))}


BAD = {
    "a misspelt range": ({"epsilon": "normal(0, 1)"}, r"axes.epsilon = 'normal\(0, 1\)' is "
                         r"neither a list of values nor a range; write .*uniform\(a, b\)"),
    "a missing comma": ({"epsilon": "uniform(0 1)"}, r"uniform takes the finite numbers a, b, "
                        r"e.g. uniform\(0, 1\)"),
    "ε beyond 1": ({"epsilon": "uniform(0, 1.5)"}, r"axes.epsilon = uniform\(0, 1.5\): epsilon "
                   r"allows a finite number in \[0, 1\].*the bound 1.5 is not; give a range "
                   r"inside it"),
    "a log range from 0": ({"lr": "loguniform(0, 0.1)"}, r"axes.lr = loguniform\(0, 0.1\): a "
                           r"log-uniform range needs 0 < a < b"),
    "a reversed range": ({"lr": "uniform(0.1, 0.01)"}, r"a range needs a < b"),
    "an integer setting drawn as a real": ({"n_members": "uniform(2, 10)"}, r"n_members is an "
                                           r"integer >= 0.*draw it with randint\(a, b\)"),
    "M below 0": ({"n_members": "randint(-1, 5)"}, r"the bound -1 is not"),
    # M = 0 is the plug-ins alone: a range reaching it needs plug-ins, as a list's 0 does
    "M = 0 without plug-ins": ({"n_members": "randint(0, 5)"}, r"'n_members' = 0 is not allowed: "
                               r"an integer >= 1, or 0 with plugin_members"),
    "a setting that is no number": ({"activation": "uniform(0, 1)"}, r"activation is not a "
                                    r"number, so it has no range; give its values as a list"),
    "bounds off q's grid": ({"epsilon": "quniform(0, 1, 0.3)"}, r"a and b multiples of q"),
}


@pytest.mark.parametrize("axes, message", BAD.values(), ids=BAD)
def test_a_bad_range_is_refused_in_one_line_naming_the_axis_and_the_fix(tmp_path, axes, message):
    with pytest.raises(SbfnError) as refused:
        sweep(tmp_path, axes=axes)
    assert "\n" not in str(refused.value) and re.search(message, str(refused.value))


def test_a_grid_cannot_list_a_range(tmp_path):
    with pytest.raises(SbfnError, match=r"axes.epsilon = uniform\(0, 1\) is a range, which a "
                                        r"grid cannot list: draw from it with --search optuna "
                                        r"or --search random"):
        sweep(tmp_path, search="grid")
    with pytest.raises(SbfnError, match="per_fold"):
        sweep(tmp_path, search="random", per_fold=True)


# ------------------------------------------------------------------ planned as they arrive
def test_a_draw_is_planned_once_when_it_arrives_keyed_by_its_exact_values(tmp_path):
    s = sweep(tmp_path, axes={**RANGES, "n_members": [2, 3]})
    planned = plan_sweep(s.spec, s.options)
    ahead = [c for c in planned.configs if c["extra"]["role"] == "ensemble"]
    assert sorted((c["n_members"], c["epsilon"], c["lr"]) for c in ahead) == sorted(
        (m, e, lr) for m in (2, 3) for e in (0.0, 1.0) for lr in (0.0001, 0.1))   # the bounds
    worker = pickle.loads(pickle.dumps(planned))        # as the object store hands it over
    draw = {"lr": 0.0123456789012345, "epsilon": 0.3000000000000001, "n_members": 3, "seed": 0}
    # each validation of a configuration is a call of TrialConfig.from_dict's resolve
    with mock.patch.object(config_module, "resolve", wraps=config_module.resolve) as checks:
        [config] = worker.configs_of(draw)
        assert worker.configs_of(dict(reversed(draw.items()))) == [config]   # found again
    assert checks.call_count == 1
    assert (config["epsilon"], config["lr"]) == (draw["epsilon"], draw["lr"])
    assert config["trial_id"].startswith("eps0.3_lr0.0123457_M3_s0_")   # the axes' order
    [driver] = planned.configs_of(draw)                 # the driver plans it alike
    assert driver == config and worker.points[-1] == {**draw, "trial_id": config["trial_id"]}
    [near] = planned.configs_of({**draw, "epsilon": 0.3000000000000002})
    assert near["trial_id"] != config["trial_id"] and near["trial_id"][:18] == \
        config["trial_id"][:18]     # the same label, another hash: the exact value counts


def test_the_dry_run_says_what_is_drawn_and_when_a_space_is_small(tmp_path):
    out = io.StringIO()
    s = sweep(tmp_path, axes={**RANGES, "n_members": [2, 3]}, search="random", search_seed=4)
    print_plan(s.spec, s.options, s.trials(), out)
    text = out.getvalue()
    assert "4 random trials (no competitors or M = 1 reference): Tune's random generator " \
           "(seed 4) draws epsilon from uniform(0, 1), lr from loguniform(0.0001, 0.1), " \
           "n_members in [3, 2]" in text
    assert "planned now: 10 configurations, each range at its bounds" in text  # 8 + 2 references
    assert "will repeat" not in text
    out = io.StringIO()
    s = sweep(tmp_path, axes={"n_members": "randint(2, 4)", "epsilon": [0.0, 0.5]})
    print_plan(s.spec, s.options, s.trials(), out)
    assert "4 Optuna samples over a 4-point space will repeat points; --search grid evaluates " \
           "all 4 (its ranges given as lists)" in out.getvalue()


def test_the_documented_range_file_is_accepted_as_it_stands(tmp_path):
    text = (ROOT / "docs" / "sweeps.md").read_text()
    section = text.split("## Continuous search spaces", 1)[1].split("\n## ", 1)[0]
    definition = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S)[1])
    s = Sweep.from_dict({**definition, "storage": str(tmp_path)})
    assert s.spec.axes["lr"] == Range("loguniform", (0.0001, 0.1))
    assert (s.options.search, s.options.num_samples) == ("optuna", 40)


# ------------------------------------------------------------------ the report's view
def test_binned_summary_and_top_decile_against_a_direct_count():
    rng = np.random.default_rng(0)
    eps = rng.uniform(0, 1, 40)
    points = pd.DataFrame({"dataset": "d", "model": "sbfn_ls", "epsilon": eps,
                           "mean": (eps - 0.3) ** 2 + rng.normal(0, 0.01, 40),
                           "complete": np.arange(40) % 8 != 0})      # 5 stopped early
    full = points[points["complete"]]
    top = tables.top_decile(points, "regression")
    assert list(top.index) == list(full["mean"].nsmallest(4).index)   # ceil(0.1 * 35) = 4
    binned = tables.binned_summary(points, "epsilon", "regression", log=False)
    edges = np.linspace(full["epsilon"].min(), full["epsilon"].max(), 6)
    which = np.clip(np.searchsorted(edges, full["epsilon"], side="left") - 1, 0, 4)
    direct = full.groupby(which)["mean"].agg(["size", "mean", "min"])
    assert binned["configurations"].tolist() == direct["size"].tolist()
    assert binned["mean"].to_numpy() == pytest.approx(direct["mean"].to_numpy())
    assert binned["best"].to_numpy() == pytest.approx(direct["min"].to_numpy())
    assert binned["top_decile"].sum() == 4
    rows = pd.DataFrame({"epsilon": np.r_[eps[:11], [np.nan]], "n_members": 2, "lr": 0.1,
                         "width": np.r_[np.arange(11), 11]})
    assert continuous_settings(rows) == ["epsilon", "width"]     # > 10 values: continuous
    assert continuous_settings(rows.head(4), ranges={"epsilon": "uniform(0, 1)"}) == ["epsilon"]


# ------------------------------------------------------------------ through Ray Tune
@pytest.fixture(scope="module")
def local_ray():
    with a_ray():
        yield


def drawn(frame: pd.DataFrame) -> pd.DataFrame:
    """Each configuration's drawn settings, from its records."""
    ensemble = frame[frame["role"] == "ensemble"]
    per = ensemble.groupby("trial_id")[["epsilon", "lr", "n_members"]].nunique()
    assert (per == 1).all().all()               # one value per configuration
    return ensemble.groupby("trial_id")[["epsilon", "lr", "n_members"]].first()


def test_an_optuna_sweep_draws_each_range_resumes_and_reports_a_scatter(tmp_path, local_ray,
                                                                         monkeypatch):
    s = sweep(tmp_path)
    result = s.run()
    values = drawn(result.frame)
    assert len(values) == 4 and values["epsilon"].is_unique and values["lr"].is_unique
    assert values["epsilon"].between(0, 1).all() and values["lr"].between(1e-4, 1e-1).all()
    study = optuna.load_study(study_name="c", storage=result.study)
    states = {t.number: (t.state, t.value, t.params) for t in study.trials}
    # the study's draws are the records' values, to the bit
    assert sorted((t.params["epsilon"], t.params["lr"]) for t in study.trials) == \
        sorted(zip(values["epsilon"], values["lr"]))
    complete = complete_configurations(result.frame)
    best = result.best()            # ranks the draws too: the plan holds them after the run
    assert best.trial_id in complete and best.settings["epsilon"] == \
        values.loc[best.trial_id, "epsilon"]

    parts = {p: p.stat().st_mtime_ns for p in Path(result.path, "parts").iterdir()}
    again = s.resume()              # finished: nothing drawn beyond the budget, nothing rerun
    assert {t.number: (t.state, t.value, t.params) for t in optuna.load_study(
        study_name="c", storage=result.study).trials} == states     # PRUNED stays PRUNED
    assert {p: p.stat().st_mtime_ns for p in Path(result.path, "parts").iterdir()} == parts
    pd.testing.assert_frame_equal(again.frame, result.frame)

    drawn_points = []
    save = figures._save
    monkeypatch.setattr(figures, "_save", lambda fig, path: drawn_points.append(
        (path.name, fig.axes[0])) or save(fig, path))
    report = write_report(result.path, tmp_path / "report")
    md = (report / "report.md").read_text()
    assert "![diabetes: RMSE against ε](figures/epsilon_scatter_diabetes.png)" in md
    assert "drawn from loguniform(0.0001, 0.1)" in md and "RMSE by (M, ε)" not in md
    ax = dict(drawn_points)["epsilon_scatter_diabetes.png"]
    shown = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections
                            if len(c.get_offsets())])
    assert set(values["epsilon"]) <= set(shown)           # every configuration, the best again
    binned = pd.read_csv(report / "tables" / "binned_lr_diabetes.csv")
    assert binned["configurations"].sum() == len(complete)
    assert (binned["low"] >= 1e-4).all() and (binned["high"] <= 1e-1).all()


def complete_configurations(frame: pd.DataFrame) -> set:
    """The configurations with all 3 folds (ASHA stops others early)."""
    folds = frame[frame["role"] == "ensemble"].groupby("trial_id")["fold"].nunique()
    return set(folds[folds == SMALL["folds"]].index)


def test_a_random_search_draws_within_its_ranges_the_same_again_with_its_seed(tmp_path,
                                                                              local_ray):
    axes = {"epsilon": "uniform(0, 1)", "lr": "loguniform(1e-4, 1e-1)",
            "n_members": "randint(2, 4)"}
    runs = [sweep(tmp_path, name=name, search="random", search_seed=7, num_samples=3, folds=2,
                  axes=axes, settings={"n_samples": 60, "epochs": 1}).run()
            for name in ("first", "again")]
    first, again = (drawn(r.frame) for r in runs)
    assert len(first) == 3 and first["epsilon"].is_unique
    assert first["epsilon"].between(0, 1).all() and first["lr"].between(1e-4, 1e-1).all()
    assert set(first["n_members"]) <= {2, 3}
    assert sorted(map(tuple, first.to_numpy())) == sorted(map(tuple, again.to_numpy()))
    assert not Path(runs[0].path, "optuna.db").exists()      # drawn without Optuna
