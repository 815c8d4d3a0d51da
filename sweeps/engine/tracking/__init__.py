"""Floor 4 of the engine, what a sweep tells: MLflow -- the sweep's runs (mlflow_runs.py), an
exported model logged (mlflow_model.py) and what it answers when served (serving.py) -- and
Optuna's study (study.py)."""
