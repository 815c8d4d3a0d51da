"""Operator commands for clusters, installed with the package so a cluster node runs them as
`python -m sweeps.tools.check_cluster_yaml` / `python -m sweeps.tools.mlflow_server`. Floor 7 of
the house, with sweeps/commands/ (tests/test_layers.py)."""
