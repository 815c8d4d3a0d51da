"""Floor 3 of the house, what runs: the run options (options.py), an axis given as a range
(ranges.py), a sweep file's keys (sweep_keys.py), the named grids (grid_files.py), a grid crossed
into trials (grid_trials.py), the model names checked (model_names.py), packs (packing.py), the
plan (planning.py: SweepOptions, every configuration validated once) and a sweep file or dict
turned into a spec and options (sweepfile.py). Neither Ray nor torch."""
