"""run_trial(config) -> records: the single entry point a sweep (or a notebook) calls.

One loop for every task and data kind:

    load -> split -> for each fold: prepare the parts (standardised tables / device images)
         -> train the M members once (MLP or CNN stack; on-the-fly combiners observe)
         -> fit every combiner setting on those same members (sbfn_dist.combiners.ensembles)
         -> run the competitors on the same parts -> one record per (fold, model, setting)

Records are built by sbfn_dist.records (docs/results-table.md). Divergence is a result (status
"diverged"), not a crash.
"""

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from sbfn_dist import records
from sbfn_dist.combiners.ensembles import ENSEMBLES, train_together
from sbfn_dist.data import splits as tabular_splits
from sbfn_dist.data.preprocess import FoldScaler
from sbfn_dist.evaluation.metrics import classification_scores, regression_metrics, reliability
from sbfn_dist.folds import check_parts, load_data, make_parts, pack_key, resolved
from sbfn_dist.learners.competitors import build_competitor, competitor_configs
from sbfn_dist.learners.training import TrainingDiverged
from sbfn_dist.runtime import fold_seed, resolve_device
from sbfn_dist.settings.config import TrialConfig


@dataclass
class Fold:
    """One fold's parts, ready for the members: standardised tables, or images on the device."""
    index: int
    x_train: object          # members train on these (and the on-the-fly combiners see them)
    y_train: object          # standardised targets (regression) or class codes
    x_test: object
    y_test: np.ndarray       # in the target's own units, or class codes
    task: str
    info: dict               # record columns: target, target_unit, n_train, n_val, n_test, ...
    seed: int                # every random choice of the fold: fold_seed(config seed, index)
    scaler: FoldScaler | None = None    # tables: the X (and regression's y) standardisation
    x_val: object = None     # the validation part the stacked combiners fit on
    y_val: np.ndarray | None = None
    n_classes: int | None = None
    images: object = None    # DeviceImages (image trials): batches with augmentation
    device: str = "cpu"
    competitor_part: tuple = field(default=())   # (X, y) the competitors fit on

    @property
    def y_val_tensor(self) -> torch.Tensor:
        return torch.as_tensor(self.y_val, device=self.device)

    def score(self, pred) -> dict:
        """The task's scores of predictions on the test part, in the target's own units."""
        if self.task == "regression":
            return regression_metrics(self.y_test, self.scaler.inverse_y(pred))
        return {**classification_scores(pred, self.y_test), **reliability(pred, self.y_test)}


def run_trial(config) -> list[dict]:
    """One trial's records (a pack of one). `config`: a dict, checked here (TrialConfig.from_dict),
    or a TrialConfig, checked where it was made (a sweep's plan) and trusted from here on."""
    return _run_pack([resolved(TrialConfig.from_dict(config))])[0]


def run_trials(configs, keep=None) -> list[list[dict]]:
    """Several trials' records, each list what run_trial(config) returns. Tabular trials that
    agree on pack_key train their members as one stack per fold (a pack: members.train_mlp_pack),
    which equals training them one after another up to floating-point rounding.

    keep(cfg, fold, members, name, params, model), if given, sees every fitted combiner setting
    as it is scored: the one way a fold's trained state leaves the loop (a sweep's
    --keep-models)."""
    cfgs = [resolved(TrialConfig.from_dict(c)) for c in configs]    # dicts checked: run_trial
    groups: dict = {}
    for i, cfg in enumerate(cfgs):
        key = pack_key(cfg)
        groups.setdefault(("alone", i) if key is None else key, []).append(i)
    out = [None] * len(cfgs)
    for members in groups.values():
        for i, recs in zip(members, _run_pack([cfgs[i] for i in members], keep)):
            out[i] = recs
    return out


def _run_pack(cfgs: list, keep=None) -> list[list[dict]]:
    """Trials of one pack_key (or one trial): per fold, one preparation of the parts, one
    member training for all, then each trial's combiners, competitors and records."""
    first = cfgs[0]
    data = load_data(first)
    parts = make_parts(first, data)
    for cfg in cfgs[1:]:      # what is fitted on the parts may differ (e.g. plugin_folds)
        if cfg.modality == "tabular":
            check_parts(cfg, data, parts)
    out = [[] for _ in cfgs]
    for k in first.fold_indices():
        fold = prepare_fold(first, data, parts[k], k)
        ensembles = [ENSEMBLES[c.task](c, fold) if c.combiners else None for c in cfgs]
        trained = iter(train_together([e for e in ensembles if e]) if any(ensembles) else [])
        for cfg, ens, recs in zip(cfgs, ensembles, out):
            base = records.base(cfg, k, fold.info)
            if ens:
                recs += ensemble_records(cfg, fold, base, ens, next(trained), keep)
            for name in cfg.get("competitors", ()):
                recs += competitor_records(cfg, name, fold, base)
    return out


def prepare_fold(cfg: TrialConfig, data, part, k: int) -> Fold:
    if cfg.modality == "image":
        return _image_fold(cfg, data, part, k)
    return _tabular_fold(cfg, data, part, k)


def _image_fold(cfg: TrialConfig, data, split, k: int) -> Fold:
    from sbfn_dist.data.images import device_images
    images = device_images(data, split, resolve_device(cfg.get("device", "cpu")),
                           cfg.get("augment"))
    info = {"n_train": len(split.train), "n_val": len(split.val), "n_test": len(split.test),
            "target": "class", "target_unit": "", "n_classes": len(data.classes)}
    return Fold(k, images.train_x, images.train_y, images.test_x, images.test_y.cpu().numpy(),
                "classification", info, fold_seed(cfg.seed, k), x_val=images.val_x,
                y_val=images.val_y.cpu().numpy(), n_classes=len(data.classes), images=images,
                device=str(images.device))


def _tabular_fold(cfg: TrialConfig, data, part, k: int) -> Fold:
    train_idx, test_idx = part
    classes = data.classes
    seed = fold_seed(cfg.seed, k)
    val_idx = np.array([], dtype=np.int64)
    if classes is not None and cfg.uses_validation():
        train_idx, val_idx = tabular_splits.validation_part(data.y, train_idx, cfg.val_fraction,
                                                            seed, classes)
    y = data.y
    regression = classes is None
    scaler = FoldScaler().fit(data.X[train_idx], y[train_idx] if regression else None)
    x_train, x_test = scaler.transform_X(data.X[train_idx]), scaler.transform_X(data.X[test_idx])
    y_train = scaler.transform_y(y[train_idx]) if regression else y[train_idx]
    info = {"target": data.target_name, "target_unit": data.target_unit,
            "n_train": len(train_idx), "n_test": len(test_idx)}
    fold = Fold(k, x_train, y_train, x_test, y[test_idx], cfg.task, info, seed, scaler=scaler,
                device=resolve_device(cfg.get("device", "cpu")))
    if not regression:
        fold.n_classes = len(classes)
        info.update(n_classes=len(classes), n_val=len(val_idx))
        fold.x_val, fold.y_val = scaler.transform_X(data.X[val_idx]), y[val_idx]
    # The competitors fit on the whole training part: the validation part is the ensemble's too.
    fold.competitor_part = (np.vstack([x_train, fold.x_val]) if len(val_idx) else x_train,
                            np.concatenate([y_train, fold.y_val]) if len(val_idx) else y_train)
    return fold


# ------------------------------------------------------------------------- the ensemble
def ensemble_records(cfg: TrialConfig, fold: Fold, base: dict, ens=None,
                     members=None, keep=None) -> list[dict]:
    """Every combiner setting's record on one fold; `ens` and `members` when a pack trained
    them (run_trials), else the members train here. keep: see run_trials."""
    row = lambda name: records.for_model(base, cfg, name, "sbfn")  # noqa: E731
    ens = ens or ENSEMBLES[cfg.task](cfg, fold)
    [members] = train_together([ens]) if members is None else [members]
    if isinstance(members, TrainingDiverged):
        return [records.diverged({**row(name), **_lambda2(cfg, params)}, params, cfg.task,
                                 str(members)) for name, params in ens.settings()]
    test, member_eval = ens.test_hypotheses(members)
    shared = {"members_train_seconds": members.seconds, "n_params_members": members.n_parameters,
              "packed_members": members.packed_members, **_engine_used(cfg, members),
              **ens.summary(members, test)}
    out = []
    for name, params, model, fit_seconds in ens.fit(members):
        start = time.perf_counter()
        pred = ens.predict(model, test)
        eval_seconds = member_eval + time.perf_counter() - start
        scores = fold.score(pred)
        if keep is not None:
            keep(cfg, fold, members, name, params, model)
        bad = "" if np.isfinite(pred).all() else "combiner predictions are not finite"
        out.append(records.scored(
            {**row(name), **shared, **ens.fitted_columns(name, model)}, params, scores, bad,
            train_seconds=members.seconds + ens.extra_seconds() + fit_seconds,
            eval_seconds=eval_seconds, n_params=members.n_parameters + ens.n_coef(model),
            **_lambda2(cfg, params)))
    return out + plugin_records(cfg, fold, base, ens)


def _engine_used(cfg: TrialConfig, members) -> dict:
    """The step engine that ran (a failed CUDA-graph capture falls back to eager)."""
    return {"step_engine": members.engine} if cfg.has("step_engine") else {}


def plugin_records(cfg: TrialConfig, fold: Fold, base: dict, ens) -> list[dict]:
    """One competitor row per plug-in, scored from the refit that gave its test column."""
    out = []
    for name, params, pred, seconds in ens.plugin_rows():
        out.append(competitor_row(cfg, fold, base, name, params, pred, "plug-in",
                                  train_seconds=seconds))
    return out


def _lambda2(cfg: TrialConfig, params: dict) -> dict:
    """Regression rows name their lambda2 in a column of its own (NaN where none applies)."""
    return {"lambda2": params.get("lambda2", np.nan)} if cfg.task == "regression" else {}


# ------------------------------------------------------------------------- competitors
def competitor_records(cfg: TrialConfig, name: str, fold: Fold, base: dict) -> list[dict]:
    X, y = fold.competitor_part
    out = []
    for params in competitor_configs(name, cfg.competitor_grid, cfg.task):
        model = build_competitor(name, params, fold.seed, cfg.task)
        start = time.perf_counter()
        model.fit(X, y)
        train_seconds = time.perf_counter() - start
        start = time.perf_counter()
        pred = _competitor_predict(model, fold)
        eval_seconds = time.perf_counter() - start
        out.append(competitor_row(cfg, fold, base, name, params, pred, "competitor",
                                  train_seconds=train_seconds, eval_seconds=eval_seconds))
    return out


def competitor_row(cfg: TrialConfig, fold: Fold, base: dict, name: str, params: dict, pred,
                   what: str, **seconds) -> dict:
    """The scored row of a scikit-learn model's test predictions (a competitor or a plug-in)."""
    rec = records.for_model(base, cfg, name, "competitor")
    bad = "" if np.isfinite(pred).all() else f"{what} predictions are not finite"
    return records.scored(rec, params, fold.score(pred), bad, **seconds, **_lambda2(cfg, {}))


def _competitor_predict(model, fold: Fold) -> np.ndarray:
    if fold.task == "regression":
        return model.predict(fold.x_test)
    probs = np.zeros((len(fold.x_test), fold.n_classes))
    probs[:, model.classes_] = model.predict_proba(fold.x_test)   # a class absent in training
    return probs

