"""Floor 7 of the house (with sweeps/tools/), what the sweep commands share (the commands
themselves are sweeps/<name>.py, floor 8): the common options, the run and its error handling
(cli.py), the tabular and image commands (tabular.py, image_sweeps.py) and the paper's appendix
sweep's trials and centres (basis_trials.py)."""
