"""Display names for models and hyper-parameters (the names the paper's tables and figures use)."""

MODEL_LABELS = {
    # regression (paper, Tables "tableauc_test" / "tableenergy_test")
    "sbfn_ls": "s-BFN least squares", "sbfn_ls_linear": "s-BFN least squares + linear",
    "g1": "s-BFN G1", "g2": "s-BFN G2", "g3": "s-BFN G3", "arithmetic": "Arithmetic combiner",
    "single_network_M1": "Single network (M = 1)",
    "svm_rbf": "SVM-RBF", "random_forest": "Random forest", "gradient_boosting": "Gradient boosting",
    # image ensembles (paper, Table "tab:ensemble_variants")
    "sbfn": "s-BFN", "sbfn_stacked": "s-BFN (stacked)", "moe": "MoE", "moe_stacked": "MoE (stacked)",
    "logit_mean": "Mean", "logit_mean_tuned": "Mean (tuned T)", "prob_mean": "Prob. mean",
    "base_avg": "Base avg.",
}
MODEL_ORDER = list(MODEL_LABELS)

PARAM_LABELS = {"n_members": "M", "epsilon": "ε", "lambda2": "λ2", "lambda1": "λ1", "width": "κ",
                "lr": "η_θ", "lr_alpha": "η_α", "init_scale": "χ", "ensemble": "architecture",
                "model_params": "params", "epochs": "epochs", "batch_size": "b"}

ENSEMBLE_LABELS = {"mixed": "Het. mixed", "cnn": "Homo. CNN", "resnet": "Homo. ResNet"}


def model_label(name: str) -> str:
    return MODEL_LABELS.get(name, name)


def param_label(name: str) -> str:
    return PARAM_LABELS.get(name, name)


def ensemble_label(name: str) -> str:
    return ENSEMBLE_LABELS.get(name, f"Homo. {name}")


def model_sort_key(name: str) -> tuple:
    return (MODEL_ORDER.index(name) if name in MODEL_ORDER else len(MODEL_ORDER), name)
