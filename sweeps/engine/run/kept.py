"""Where a trial keeps its fitted models (--keep-models best) in the results directory, on any
pyarrow filesystem:

    <results>/models/<trial_id>/fold-<k>/<model>_<setting>/    e.g. .../fold-1/sbfn_ls_lambda2-3.0

The trial saves them (sweeps/engine/run/trial.py); the export reads them back and the sweep's end
deletes all but the best configuration's (sweeps/engine/results/kept.py).
"""

import json

import pyarrow.fs as pafs

from sweeps.engine.run.fold_means import setting_label


KEPT = "models"          # under the results directory


def kept_dir(trial_id: str, fold, model: str, model_params: dict) -> str:
    """Where a configuration's fitted `model` at `model_params` on `fold` is kept, relative to
    the results directory."""
    return f"{KEPT}/{trial_id}/fold-{fold}/{model}_{setting_label(json.dumps(model_params))}"


def copy_directory(source: str, source_fs, destination: str, destination_fs) -> None:
    """A directory copied between pyarrow filesystems (a saved model to or from the store)."""
    destination_fs.create_dir(destination, recursive=True)    # copy_files does not make it
    pafs.copy_files(source, destination, source_filesystem=source_fs,
                    destination_filesystem=destination_fs)
