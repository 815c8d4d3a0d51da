"""The sweep engine: what a sweep goes through, one folder per stage, each floor importing only
its own and lower floors (tests/test_layers.py holds it and numbers the floors; docs/design.md
draws the whole house's plan).

    floor  room                 holds
    6      engine/ (this)       the entry points that walk a sweep through the stages:
                                sweep.py (run_sweep, dry_run), checks.py (the checks and the
                                plan a run prints before Ray starts), tune.py (the Ray side of a
                                run), summary.py (what a run gives back and prints),
                                model_export.py (a finished sweep's configuration as a saved and
                                MLflow model)
    5      results/             what it leaves: ranking.py, recorded.py (a sweep read back),
                                refit.py, keep_best.py
           tracking/            what it tells: MLflow (mlflow_runs.py, mlflow_logger.py,
                                mlflow_model.py, serving.py) and Optuna (study.py); it reads
                                results/ (an exported model's refit), never the other way
    4      run/                 running it: trainable.py (Tune's function), trial.py (a trial's
                                work: torch), fold_means.py, kept.py, progress.py, resources.py,
                                interruption.py, mps.py, claim.py, search.py, estimate.py
    3      plan/                what runs: options.py, ranges.py, sweep_keys.py, grid_files.py,
                                grid_trials.py, model_names.py, packing.py, planning.py,
                                sweepfile.py
    2      common/              what every floor uses: store.py (the results directory),
                                environment.py, tracking_uri.py, next_steps.py, collector.py,
                                yaml_text.py

Below it: analysis (1) and sbfn_dist (0); above it: sweeps/commands/ and sweeps/tools/ (7: what
the commands share, the cluster's commands) and sweeps/ (8: the commands, the Python API).
"""

import importlib
import importlib.abc
import importlib.util
import sys

# The old paths that the code of a model logged to MLflow names (MLflow's "models from code": a
# file logged with the model, run where it loads; tracking/serving.py, MODEL_CODE): models logged
# before 2026-11-28 import pyfunc_model from sweeps.engine.export, later ones until the renames
# of issue 49 from sweeps.engine.tell.serving. Each loads the module it became; no other old
# name does, so an older sweep's pickled Tune state still meets a module gone and starts again
# in one line (tune.py, _restored_tuner).
MOVED = {"sweeps.engine.export": "sweeps.engine.model_export",
         "sweeps.engine.tell": None,                # the old folder, holding only serving now
         "sweeps.engine.tell.serving": "sweeps.engine.tracking.serving"}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the names of MOVED, and only those: each is the module it became, imported (the
    old folder: an empty package, so nothing else is found under it)."""

    def find_spec(self, name, path=None, target=None):
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=MOVED[name] is None)

    def create_module(self, spec):
        now = MOVED[spec.name]
        return importlib.import_module(now) if now else None

    def exec_module(self, module):
        pass


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())
