"""Ray Tune sweeps over sbfn_dist trials (spaces, trainable, runner, CLIs; docs/sweeps.md).

Importing the package changes no global state: a sweep sets Ray's environment while it runs
(sweeps/environment.py).
"""
