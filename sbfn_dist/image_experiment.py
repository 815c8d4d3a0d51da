"""run_trial for image classification (paper, "Multiple Hypothesis Deep Ensembles").

Per holdout split: the M members train once (Algorithm 2) with the on-the-fly heads (s-BFN,
MoE) stepping on every mini-batch; the stacked heads and the temperature of tuned logit
averaging then fit on the validation part; every combiner is scored on the test part. One
record per (split, combiner), with accuracy, NLL, ECE, the ensemble diagnostics and efficiency.
"""

import math
import time

import numpy as np
import torch

from sbfn_dist.combiners.classification import (MoEGateHead, SBFNClassifierHead, logit_average,
                                                probability_average, tune_temperature)
from sbfn_dist.data.images import DeviceImages, holdout_splits, load_images
from sbfn_dist.diagnostics import (classification_diagnostics, count_parameters,
                                   expected_calibration_error, flops_per_example, nll)
from sbfn_dist.ensemble import TrainingDiverged
from sbfn_dist.errors import ConfigError
from sbfn_dist.image_ensemble import ImageMemberConfig, train_image_ensemble
from sbfn_dist.runtime import fold_seed, resolve_device

STACKED = ("sbfn_stacked", "moe_stacked", "logit_mean_tuned")
# Stacked heads train for at least this many SGD steps unless head_epochs is given: at the
# paper's eta_alpha = 0.1, T = 3, alpha grows slowly and 10 epochs of a small validation part
# leave the head under-confident (digits: NLL 1.74 after 30 steps, 0.08 after 900; accuracy is
# flat), docs/method.md.
STACK_MIN_STEPS = 1000
CLASSIFICATION_METRICS = ("accuracy", "nll", "ece")


def default_n_val(cfg, data) -> int:
    """10% of the official training images unless n_val is given (0 when nothing needs it)."""
    if cfg.n_val is not None:
        return cfg.n_val
    return data.n_official_train // 10 if any(c in STACKED for c in cfg.combiners) else 0


def run_image_trial(cfg, base_record) -> list[dict]:
    data = load_images(cfg.dataset, cfg.data_dir)
    splits = holdout_splits(data, n_splits=cfg.folds, n_train=cfg.n_train,
                            n_val=default_n_val(cfg, data), n_test=cfg.n_test, seed=cfg.seed)
    device = resolve_device(cfg.device)
    records = []
    for s in (range(len(splits)) if cfg.fold is None else [cfg.fold]):
        images = DeviceImages(data, splits[s], device=device, augment=cfg.augment)
        base = base_record(cfg, s, len(splits[s].train), len(splits[s].test))
        base.update(n_val=len(splits[s].val), target="class", target_unit="")
        records += split_records(cfg, s, images, len(data.classes), base)
    return records


def member_config(cfg, split: int) -> ImageMemberConfig:
    return ImageMemberConfig(ensemble=cfg.ensemble, n_members=cfg.n_members,
                             epsilon=cfg.epsilon, epochs=cfg.epochs, batch_size=cfg.batch_size,
                             optimizer=cfg.optimizer, lr=cfg.lr, momentum=cfg.momentum,
                             weight_decay=cfg.weight_decay, seed=fold_seed(cfg.seed, split))


def make_head(name: str, cfg, n_classes: int, seed: int, device):
    """The learned head `name` on the members' device (their probabilities stay there)."""
    if name.startswith("sbfn"):
        head = SBFNClassifierHead(cfg.n_members, n_classes, cfg.sbfn_units_per_member * cfg.n_members,
                                  cfg.temperature, cfg.lr_alpha, cfg.row_norm, seed,
                                  cfg.head_optimizer, centre_init=cfg.centre_init)
    else:
        head = MoEGateHead(cfg.n_members, n_classes, lr=cfg.lr_alpha, optimizer=cfg.head_optimizer)
    return head.to(device)


def split_records(cfg, split: int, images, n_classes: int, base: dict) -> list[dict]:
    mcfg = member_config(cfg, split)
    heads = {n: make_head(n, cfg, n_classes, mcfg.seed, images.device)
             for n in ("sbfn", "moe") if n in cfg.combiners}
    try:
        trained = train_image_ensemble(images, n_classes, mcfg, list(heads.values()))
    except TrainingDiverged as exc:
        return [dict(base, model=n, family="sbfn", status="diverged", error=str(exc),
                     **{k: float("nan") for k in CLASSIFICATION_METRICS}) for n in cfg.combiners]
    start = time.perf_counter()
    test_logits = trained.logits(images.test_x)
    member_eval = time.perf_counter() - start
    y_test = images.test_y.cpu().numpy()
    test_probs = torch.softmax(test_logits, 2)
    shared = dict(base, family="sbfn", members_train_seconds=trained.seconds,
                  n_params_members=count_parameters(trained.model),
                  flops_per_example=flops_per_example(trained.model, images.test_x[:2]),
                  **classification_diagnostics(test_probs.cpu().numpy(), y_test),
                  **_member_scores(test_probs, y_test))
    fitted = _fit_stacked(cfg, trained, images, n_classes, mcfg.seed)
    out = []
    for name in cfg.combiners:
        start = time.perf_counter()
        probs = _combine(name, heads, fitted, test_logits, test_probs)
        eval_seconds = member_eval + time.perf_counter() - start
        train_seconds = trained.seconds + fitted.get("seconds", {}).get(name, 0.0)
        out.append(_scored(shared, name, probs, y_test, train_seconds, eval_seconds))
    return out


def _fit_stacked(cfg, trained, images, n_classes: int, seed: int) -> dict:
    """Heads and temperatures fitted on the validation part (held out from the members)."""
    wanted = [n for n in cfg.combiners if n in STACKED]
    if not wanted:
        return {}
    if len(images.val_y) == 0:
        raise ConfigError("n_val", 0, f"> 0: the combiners {wanted} fit on a validation split")
    val_logits = trained.logits(images.val_x)
    val_probs = torch.softmax(val_logits, 2)
    fitted, seconds = {}, {}
    for name in wanted:
        start = time.perf_counter()
        if name == "logit_mean_tuned":
            fitted[name] = tune_temperature(val_logits, images.val_y)
        else:
            head = make_head(name, cfg, n_classes, seed, images.device)
            epochs = cfg.head_epochs or stacking_epochs(len(val_probs), cfg.batch_size)
            fitted[name] = head.fit(val_probs, images.val_y, epochs, cfg.batch_size, seed)
        seconds[name] = time.perf_counter() - start
    fitted["seconds"] = seconds
    return fitted


def stacking_epochs(n_val: int, batch_size: int) -> int:
    """Default stacking epochs: at least 10, and at least STACK_MIN_STEPS steps in all."""
    return max(10, math.ceil(STACK_MIN_STEPS / math.ceil(n_val / batch_size)))


def _combine(name: str, heads: dict, fitted: dict, logits, probs) -> np.ndarray:
    if name in heads:
        out = heads[name].predict_proba_eval(probs)
    elif name in ("sbfn_stacked", "moe_stacked"):
        out = fitted[name].predict_proba_eval(probs)
    elif name == "logit_mean_tuned":
        out = logit_average(logits, fitted[name])
    elif name == "logit_mean":
        out = logit_average(logits)
    elif name == "prob_mean":
        out = probability_average(probs)
    else:                                   # base_avg: scored per member, then averaged
        out = probs
    return out.detach().cpu().numpy()


def _member_scores(probs: torch.Tensor, y: np.ndarray) -> dict:
    p = probs.cpu().numpy()
    acc = (p.argmax(2) == y[:, None]).mean(0)
    return {"member_accuracy_mean": float(acc.mean()), "member_accuracy_min": float(acc.min()),
            "member_accuracy_max": float(acc.max())}


def classification_scores(probs: np.ndarray, y: np.ndarray) -> dict:
    """accuracy, NLL, ECE of (N, C) probabilities; of (N, M, C) member probabilities: their mean."""
    if probs.ndim == 3:
        scores = [classification_scores(probs[:, j], y) for j in range(probs.shape[1])]
        return {k: float(np.mean([s[k] for s in scores])) for k in CLASSIFICATION_METRICS}
    if not np.isfinite(probs).all():
        return {k: float("nan") for k in CLASSIFICATION_METRICS}
    return {"accuracy": float((probs.argmax(1) == y).mean()), "nll": float(nll(probs, y)),
            "ece": float(expected_calibration_error(probs, y))}


def _scored(shared: dict, name: str, probs: np.ndarray, y: np.ndarray, train_seconds: float,
            eval_seconds: float) -> dict:
    scores = classification_scores(probs, y)
    ok = np.isfinite(scores["accuracy"])
    return dict(shared, model=name, status="ok" if ok else "diverged",
                error="" if ok else "combiner probabilities are not finite",
                train_seconds=train_seconds, eval_seconds=eval_seconds, **scores)
