"""Display names and the order of models and hyper-parameters in tables and figures.

Model names come from `sbfn_dist.settings.records.MODEL_LABELS` (one display name per model, the
names the paper's tables use); the hyper-parameter symbols and architecture-mix names are analysis's
own (nothing else prints them).
"""

# Re-exported for analysis's modules.
from sbfn_dist.settings.records import ESTIMATORS, MODEL_LABELS, model_label  # noqa: F401

COMPETITORS = set(ESTIMATORS)
# Colours follow the registry's order, so a model keeps its colour whatever else is plotted.
COLOUR_ORDER = list(MODEL_LABELS)
# Tables list a task's combiners first and the competitors beside them, last.
MODEL_ORDER = [m for m in MODEL_LABELS if m not in COMPETITORS] + \
              [m for m in MODEL_LABELS if m in COMPETITORS]

PARAM_LABELS = {"n_members": "M", "epsilon": "ε", "lambda2": "λ2", "lambda1": "λ1", "width": "κ",
                "lr": "η_θ", "lr_alpha": "η_α", "init_scale": "χ", "ensemble": "architecture",
                "model_params": "params", "epochs": "epochs", "batch_size": "b"}

METRIC_LABELS = {"rmse": "RMSE", "mae": "MAE", "nll": "NLL", "ece": "ECE"}

ENSEMBLE_LABELS = {"mixed": "Het. mixed", "cnn": "Homo. CNN", "resnet": "Homo. ResNet"}


def param_label(name: str) -> str:
    return PARAM_LABELS.get(name, name)


def metric_label(name: str) -> str:
    return METRIC_LABELS.get(name, name)


def ensemble_label(name: str) -> str:
    return ENSEMBLE_LABELS.get(name, f"Homo. {name}")


def model_sort_key(name: str) -> tuple:
    return (MODEL_ORDER.index(name) if name in MODEL_ORDER else len(MODEL_ORDER), name)
