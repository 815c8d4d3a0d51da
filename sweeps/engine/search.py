"""Ray Tune's searcher for `--search grid`: the planned configurations, one trial at a time.

Each trial's config is its planned point (sweeps.engine.planning): the settings the grid varied
and the trial_id, or {"pack": [point, ...]} for a pack, so that Tune's ResultGrid shows every
trial's hyper-parameters. A searcher rather than a `tune.grid_search` over the points: Tune's grid
generator deep-copies its whole grid once per trial it emits (n^2 work, issue 21), and
`grid_search` could only put the points under a key of their own, never as the trial's config.
Optuna's searcher is sweeps/engine/study.py. Imports Ray: the runner imports it as a sweep starts.
"""

import pickle

from ray.tune.search import Searcher


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
