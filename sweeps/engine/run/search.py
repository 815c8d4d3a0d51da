"""Ray Tune's searchers. `--search grid`: the planned configurations, one trial at a time
(PlannedSearch). `--search optuna` and `random`: draws from the sweep's axes (`sampled_space`),
by Optuna's TPE (sweeps/engine/tracking/study.py) or by Tune's own random generator
(`random_search`).

A grid trial's config is its planned point (sweeps.engine.plan.planning): the settings the grid
varied and the trial_id, or {"pack": [point, ...]} for a pack, so that Tune's ResultGrid shows
every trial's hyper-parameters (a sampled trial's: what it drew). A searcher rather than a
`tune.grid_search` over the points: Tune's grid generator deep-copies its whole grid once per
trial it emits (n^2 work, issue 21), and `grid_search` could only put the points under a key of
their own, never as the trial's config.
Imports Ray: the runner imports it as a sweep starts.
"""

import pickle

from ray import tune
from ray.tune.search import Searcher
from ray.tune.search.basic_variant import BasicVariantGenerator

from sweeps.engine.plan.ranges import is_range


class PlannedSearch(Searcher):
    """Hands out `configs` (Tune configs, one per Ray trial) in their order, then FINISHED. Its
    saved state is only how many it has handed out: the configs come with the searcher Tune
    pickles once when the sweep starts (tuner.pkl), and a resumed Tune carries on from there."""

    def __init__(self, configs: list[dict]):
        super().__init__()
        self.configs = configs
        self.handed = 0

    def set_search_properties(self, metric, mode, config, **spec) -> bool:
        return True      # the configs are planned: Tune's param space adds nothing

    def suggest(self, trial_id: str):
        if self.handed >= len(self.configs):
            return Searcher.FINISHED
        self.handed += 1
        return self.configs[self.handed - 1]

    def on_trial_complete(self, trial_id: str, result=None, error: bool = False) -> None:
        pass             # nothing to learn: every config is planned

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as f:
            pickle.dump({"handed": self.handed}, f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as f:
            self.handed = pickle.load(f)["handed"]


def sampled_space(axes: dict, fixed: dict) -> dict:
    """Tune's param space of a sampled search: each axis a Tune domain -- a list as tune.choice,
    a range as Tune's function of its name (tune.uniform(0, 1), ...), which OptunaSearch turns
    into Optuna's Categorical, Float and Int distributions -- and `fixed` (the first seed or
    split) as it is."""
    return {**{name: _domain(values) for name, values in axes.items()}, **fixed}


def _domain(values):
    if is_range(values):
        return getattr(tune, values.kind)(*values.args)
    return tune.choice(list(values))


def random_search(seed: int, max_concurrent: int | None) -> BasicVariantGenerator:
    """`--search random`: Tune's generator, its draws seeded (--search-seed) so that a sweep
    draws the same configurations again. Tune ignores max_concurrent_trials beside a search
    algorithm of its own, so --max-concurrent is the generator's."""
    return BasicVariantGenerator(max_concurrent=max_concurrent or 0, random_state=seed)
