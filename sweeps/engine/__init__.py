"""The sweep engine under the commands: run options (options.py), grids and presets (spaces.py,
sweepfile.py), planning and packing, the Ray Tune driver (runner.py) and trainable, the results
store, MLflow and Optuna bookkeeping, and the builders the commands share (docs/design.md)."""
