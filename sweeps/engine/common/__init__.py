"""Floor 0 of the engine, what every floor uses: the results directory on any filesystem
(store.py), the environment a sweep gives Ray (environment.py), the MLflow tracking URI and its
secrets (tracking_uri.py), and the commands a sweep prints for what to do next (next_steps.py)."""
