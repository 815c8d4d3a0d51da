"""The end of a --keep-models best run: every kept model deleted but the best configuration's
(its trials' models are kept where sweeps/engine/run/kept.py says)."""

import json

import pyarrow.fs as pafs

from sweeps.engine.common.store import ResultStore
from sweeps.engine.run.kept import KEPT, kept_dir


def keep_only(store: ResultStore, best, trials: list) -> None:
    """Delete every kept model (engine/run/trial.py, --keep-models best) but those of `best`
    (the best configuration's CV-means row: model, model_params; None: delete all) that its
    `trials` kept (one, or one per split: sweeps.engine.results.ranking.trials_of)."""
    for trial in _listed(store, f"{store.root}/{KEPT}"):
        if best is None or _name(trial) not in trials:
            store.fs.delete_dir(trial)
            continue
        leaf = _name(kept_dir(best["trial_id"], 0, best["model"],
                              json.loads(best["model_params"] or "{}")))
        for fold in _listed(store, trial):
            for setting in _listed(store, fold):
                if _name(setting) != leaf:
                    store.fs.delete_dir(setting)


def _listed(store: ResultStore, directory: str) -> list[str]:
    """The directories directly under `directory` (none where it does not exist)."""
    found = store.fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
    return [i.path for i in found if i.type == pafs.FileType.Directory]


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]
