"""Floor 2 of the house, the engine's lowest, what every floor above uses: the results directory
on any filesystem (store.py), the environment a sweep gives Ray (environment.py), the MLflow
tracking URI and its secrets (tracking_uri.py), the commands a sweep prints for what to do next
(next_steps.py), Python's garbage collector around a trial worker's big imports (collector.py),
and a YAML file that is not text its reader takes (yaml_text.py)."""
