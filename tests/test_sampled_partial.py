"""A sampled search over a small space draws its points again (each one configuration): a
finished Optuna sweep of --num-samples 5 over a 2-point space was reported "Partial: 2 of 5
trials" (issue 48, item 9). sweep.json records the space's points; the report plans at most
that many."""

from analysis.collect import SweepInfo
from sweeps import regression
from sweeps.engine.sweep import _space_points

OPTUNA_OVER_TWO_POINTS = ["--dataset", "diabetes", "--grid", "demo", "--members", "2",
                          "--epsilons", "0", "0.35", "--search", "optuna", "--num-samples", "5",
                          "--no-mlflow"]


def test_a_sampled_sweep_records_the_points_of_its_space():
    spec, _, opts = regression.build(OPTUNA_OVER_TWO_POINTS)
    assert _space_points(spec, opts) == {"n_points": 2}
    spec, _, opts = regression.build(OPTUNA_OVER_TWO_POINTS[:8] + ["--no-mlflow"])   # a grid
    assert _space_points(spec, opts) == {}


def test_a_finished_search_of_a_small_space_is_not_partial():
    def info(trials: int, meta: dict) -> SweepInfo:
        return SweepInfo("s", "p", n_rows=10, n_trials=trials, n_trials_expected=5, meta=meta)
    assert info(2, {"n_points": 2}).partial == ""
    assert info(1, {"n_points": 2}).partial.startswith("Partial sweep 's': 1 of 2 trials have "
                                                       "results; 1 are missing")
    assert info(2, {}).partial.startswith("Partial sweep 's': 2 of 5")   # a grid, an older one
