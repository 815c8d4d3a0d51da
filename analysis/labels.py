"""Display names and the order of models and hyper-parameters in tables and figures.

Model names come from `sbfn_dist.records.MODEL_LABELS` (one display name per model, the
names the paper's tables use); the hyper-parameter symbols and architecture-mix names are analysis's
own (nothing else prints them).
"""

# Re-exported for analysis's modules.
from sbfn_dist.records import ESTIMATORS, MODEL_LABELS, model_label  # noqa: F401
from sbfn_dist.records import HETEROGENEOUS, MEMBER_SEPARATOR

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
    """The paper's kinds by name; any other mix as its architectures, a list's in its order
    (two lists of the same architectures in other proportions stay apart): "Homo. simple_cnn",
    "Het. simple_cnn + mynets:build"."""
    if name in ENSEMBLE_LABELS:
        return ENSEMBLE_LABELS[name]
    if is_heterogeneous(name):
        return f"Het. {' + '.join(str(name).split(MEMBER_SEPARATOR))}"
    return f"Homo. {mix_architectures(name)[0]}"


def is_heterogeneous(name) -> bool:
    """Whether the members of an ensemble differ in architecture: 'mixed', or a list (stored
    joined by MEMBER_SEPARATOR) of two or more different architectures or factories. A list of
    one factory repeated, or a single one, is homogeneous."""
    return name == HETEROGENEOUS or len(mix_architectures(name)) > 1


def mix_architectures(name) -> list:
    """The different names an ensemble value holds, in order of appearance (a kind such as
    'cnn' or 'mixed' is one name)."""
    return list(dict.fromkeys(str(name).split(MEMBER_SEPARATOR)))


def model_sort_key(name: str) -> tuple:
    return (MODEL_ORDER.index(name) if name in MODEL_ORDER else len(MODEL_ORDER), name)
