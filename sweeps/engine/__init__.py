"""The sweep engine under the commands: run options (options.py), sweep files and grid lookup
(sweepfile.py; the grids themselves are the files in sweeps/grids/), the machinery that crosses
a grid into trials (spaces.py), planning and packing, the Ray Tune driver (runner.py) and
trainable, the results store, MLflow and Optuna bookkeeping, and the builders the commands
share (docs/design.md)."""
