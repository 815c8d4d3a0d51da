"""Floor 5 of the house (with results/, which it reads), what a sweep tells: MLflow -- the
sweep's experiment and runs, logged from the driver (mlflow_runs.py) by Tune's callback
(mlflow_logger.py), an exported model logged (mlflow_model.py) and what it answers when served
(serving.py) -- and Optuna's study (study.py)."""
