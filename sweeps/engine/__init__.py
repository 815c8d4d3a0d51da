"""The sweep engine: what a sweep goes through, one folder per stage, each floor importing only
its own and lower floors (tests/test_layers.py holds it; docs/design.md draws the plan).

    floor  room                 holds
    7      engine/ (this)       the entry points that walk a sweep through the stages:
                                sweep.py (run_sweep, dry_run), before_ray.py (the checks and the
                                plan a run prints before Ray starts), tune.py (the Ray side of a
                                run), outcome.py (what a run gives back and prints), export.py
                                (a finished sweep's winner as a saved and MLflow model)
    6      tell/                what it tells: MLflow (tracking.py, mlflow_logger.py, mlflow_model.py,
                                serving.py)
                                and Optuna (study.py)
    5      results/             what it leaves: ranking.py, recorded.py (a sweep read back),
                                refit.py, keep_best.py
    4      run/                 running it: trainable.py (Tune's function), trial.py (a trial's
                                work: torch), summaries.py, kept.py, progress.py, resources.py,
                                interruption.py, mps.py, claim.py, search.py
    3      plan/                what runs: options.py, ranges.py, sweep_keys.py, grid_files.py,
                                grids.py, model_names.py, packing.py, planning.py, sweepfile.py
    2      common/              what every floor uses: store.py (the results directory),
                                environment.py, tracking_uri.py, next_steps.py

Below it: analysis (1) and sbfn_dist (0); above it: sweeps/commands/ (8: what the commands share)
and sweeps/ (9: the commands, the Python API). The floors' numbers are tests/test_layers.py's.
"""
