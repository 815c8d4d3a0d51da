"""What the sweep commands share (the commands themselves are sweeps/<name>.py): the common
options, the run and its error handling (cli.py), the tabular and image commands (tabular.py,
image_sweeps.py) and the paper's appendix sweep (basis_trials.py)."""
