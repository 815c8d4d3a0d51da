"""What the sweep commands share (the commands themselves are sweeps/<name>.py): the common
options, the run and its error handling (common.py), the tabular and image commands (tabular.py,
images.py) and the paper's appendix sweep (appendix.py)."""
