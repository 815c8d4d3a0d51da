"""run_trial(config) -> records: the single entry point a sweep (or a notebook) calls.

For every fold: standardise on the training part only, train the M hypotheses once, fit every
requested combiner (and every lambda2) on those same hypotheses, run the competitors on the
same fold, and return one tidy record per (fold, model, setting) in the results-table shape
of docs/results-table.md. Divergence is a result (status "diverged"), not a crash.
"""

import json
import time

import numpy as np

from sbfn_dist import __version__
from sbfn_dist.baselines import build_competitor, competitor_configs
from sbfn_dist.combiners import (CLOSED_FORM, ONLINE_VARIANTS, ArithmeticCombiner, OnlineSBFN,
                                 fit_lambda_path, fit_online_grid)
from sbfn_dist.config import TrialConfig
from sbfn_dist.data import FoldScaler, load_tabular, make_splits
from sbfn_dist.ensemble import MemberConfig, TrainingDiverged, train_members
from sbfn_dist.metrics import regression_metrics
from sbfn_dist.plugins import fit_plugins
from sbfn_dist.runtime import fold_seed, resolve_device

ONLINE = ONLINE_VARIANTS


def member_config(cfg: TrialConfig, fold: int) -> MemberConfig:
    return MemberConfig(
        n_members=cfg.n_members, epsilon=cfg.epsilon, width=cfg.width, init_scale=cfg.init_scale,
        lambda1=cfg.lambda1, lr=cfg.lr, epochs=cfg.epochs, batch_size=cfg.batch_size,
        activation=cfg.activation, init_scheme=cfg.init_scheme, seed=fold_seed(cfg.seed, fold),
        device=resolve_device(cfg.device), dtype=cfg.dtype)


def run_trial(config) -> list[dict]:
    cfg = config if isinstance(config, TrialConfig) else TrialConfig.from_dict(config)
    cfg = cfg.with_task_defaults()
    cfg.validate()
    if cfg.task == "classification":
        from sbfn_dist.image_experiment import run_image_trial
        return run_image_trial(cfg, base_record)  # same record shape, other task
    data = load_tabular(cfg.dataset, data_dir=cfg.data_dir, target=cfg.target,
                        include_random_vars=cfg.include_random_vars,
                        n_samples=cfg.n_samples, seed=cfg.seed)
    splits = make_splits(data, cfg.split, folds=cfg.folds, seed=cfg.seed,
                         test_fraction=cfg.test_fraction)
    folds = range(len(splits)) if cfg.fold is None else [cfg.fold]
    records = []
    for fold in folds:
        train_idx, test_idx = splits[fold]
        base = base_record(cfg, fold, len(train_idx), len(test_idx))
        base.update(target=data.target_name, target_unit=data.target_unit)
        fold_data = _standardise(data, train_idx, test_idx)
        if cfg.combiners:
            records += ensemble_records(cfg, fold, fold_data, base)
        for name in cfg.competitors:
            records += competitor_records(cfg, name, fold, fold_data, base)
    return records


def _standardise(data, train_idx, test_idx) -> dict:
    scaler = FoldScaler().fit(data.X[train_idx], data.y[train_idx])
    return {"X_train": scaler.transform_X(data.X[train_idx]),
            "y_train": scaler.transform_y(data.y[train_idx]),
            "X_test": scaler.transform_X(data.X[test_idx]),
            "y_test": data.y[test_idx], "scaler": scaler}


def base_record(cfg: TrialConfig, fold: int, n_train: int, n_test: int) -> dict:
    """The fields every record of a fold shares: the whole config, the fold, sizes, version."""
    rec = {k: v for k, v in cfg.to_dict().items() if k not in ("extra", "combiners", "competitors")}
    rec["lambda2_grid"] = json.dumps(list(cfg.lambda2))
    # The hypotheses beside the M members (competitor rows override it with []).
    rec["plugin_members"] = json.dumps(list(cfg.plugin_members))
    del rec["lambda2"]
    rec.update(cfg.extra)
    rec.update(task=cfg.task, fold=fold, n_train=n_train, n_test=n_test,
               package_version=__version__)
    return rec


def _combiner_specs(cfg: TrialConfig, fold: int) -> list:
    """(name, lambda2, model) for every combiner setting evaluated on the hypotheses."""
    seed = fold_seed(cfg.seed, fold)
    specs = []
    for name in cfg.combiners:
        if name == "arithmetic":
            specs.append((name, np.nan, ArithmeticCombiner()))
        elif name in ONLINE:
            specs += [(name, lam, OnlineSBFN(name, lam, cfg.lr_alpha, cfg.window, cfg.g3_basis,
                                             cfg.epochs, seed)) for lam in cfg.lambda2]
    return specs


def ensemble_records(cfg: TrialConfig, fold: int, fd: dict, base: dict) -> list[dict]:
    specs = _combiner_specs(cfg, fold)
    settings = [(n, lam) for n, lam, _ in specs]
    settings += [(n, lam) for n in CLOSED_FORM if n in cfg.combiners for lam in cfg.lambda2]
    on_the_fly = cfg.online_regime == "on_the_fly" and any(s[0] in ONLINE for s in specs)
    try:
        members = train_members(fd["X_train"], fd["y_train"], member_config(cfg, fold),
                                record_stream=on_the_fly)
    except TrainingDiverged as exc:
        return [dict(base, model=n, family="sbfn", lambda2=float(lam), model_params=_params(lam),
                     status="diverged", error=str(exc), **regression_metrics(None, None))
                for n, lam in settings]
    d_train, d_test, stream_z, plug, d_eval_seconds = _structured_dataset(cfg, fold, members, fd)
    shared = dict(base, family="sbfn", members_train_seconds=members.seconds,
                  member_rmse_mean=_member_rmse(d_test[:, :cfg.n_members], fd),
                  n_params_members=members.n_parameters, plugin_seconds=plug.fit_seconds)
    fitted = _fit_all(cfg, fold, specs, members, stream_z, d_train, fd["y_train"], on_the_fly)
    out = []
    for name, lam, model, fit_seconds in fitted:
        start = time.perf_counter()
        pred = model.predict(d_test)
        eval_seconds = d_eval_seconds + time.perf_counter() - start
        out.append(_scored(shared, name, lam, pred, fd,
                           members.seconds + plug.fit_seconds + fit_seconds,
                           eval_seconds, members.n_parameters + _n_coef(model)))
    return out


def _structured_dataset(cfg: TrialConfig, fold: int, members, fd: dict):
    """D on the training and test parts: the M members' columns, then the plug-ins' (out-of-fold
    on the training part), and the on-the-fly stream with the plug-ins' rows beside it."""
    start = time.perf_counter()
    d_train, d_test = members.predict(fd["X_train"]), members.predict(fd["X_test"])
    member_eval = time.perf_counter() - start
    plug = fit_plugins(cfg.plugin_members, fd["X_train"], fd["y_train"], fd["X_test"],
                       cfg.plugin_folds, fold_seed(cfg.seed, fold))
    stream_z = members.stream_z
    if stream_z is not None and plug.names:
        stream_z = np.hstack([stream_z, plug.stream(member_config(cfg, fold))])
    return (np.hstack([d_train, plug.train]), np.hstack([d_test, plug.test]), stream_z, plug,
            member_eval + plug.eval_seconds)


def _fit_all(cfg, fold, specs, members, stream_z, d_train, y_train, on_the_fly) -> list:
    """Fit every combiner setting; a shared fit's time is split evenly among its settings."""
    fitted = []
    online = [s for s in specs if s[0] in ONLINE]
    if online:
        start = time.perf_counter()
        if on_the_fly:
            fit_online_grid(stream_z, members.stream_y, members.batch_size,
                            [m for _, _, m in online])
        else:
            for _, _, m in online:
                m.fit(d_train, y_train)
        each = (time.perf_counter() - start) / len(online)
        fitted += [(n, lam, m, each) for n, lam, m in online]
    for name in (n for n in CLOSED_FORM if n in cfg.combiners):
        linear = name == "sbfn_ls_linear"
        start = time.perf_counter()
        path = fit_lambda_path(d_train, y_train, list(cfg.lambda2), basis=cfg.sbfn_basis,
                               intercept=cfg.sbfn_intercept or linear, linear=linear,
                               seed=fold_seed(cfg.seed, fold))
        each = (time.perf_counter() - start) / len(path)
        fitted += [(name, m.lambda2, m, each) for m in path]
    fitted += [(n, lam, m.fit(d_train, y_train), 0.0) for n, lam, m in specs if n == "arithmetic"]
    return fitted


def _params(lam: float) -> str:
    return json.dumps({} if np.isnan(lam) else {"lambda2": float(lam)})


def _n_coef(model) -> int:
    coef = getattr(model, "coef_", None)
    return 0 if coef is None else int(np.size(coef)) + int(getattr(model, "intercept", False))


def _member_rmse(d_test: np.ndarray, fd: dict) -> float:
    preds = fd["scaler"].inverse_y(d_test.T).T
    return float(np.sqrt(((preds - fd["y_test"][:, None]) ** 2).mean(0)).mean())


def _scored(shared: dict, name: str, lam: float, pred_std: np.ndarray, fd: dict,
            train_seconds: float, eval_seconds: float, n_params: int) -> dict:
    pred = fd["scaler"].inverse_y(pred_std)
    metrics = regression_metrics(fd["y_test"], pred)
    status = "ok" if np.isfinite(pred).all() else "diverged"
    error = "" if status == "ok" else "combiner predictions are not finite"
    shared = {"model_params": _params(lam), **shared}
    return dict(shared, model=name, lambda2=float(lam), status=status, error=error,
                train_seconds=train_seconds, eval_seconds=eval_seconds, n_params=n_params,
                **metrics)


def competitor_records(cfg: TrialConfig, name: str, fold: int, fd: dict, base: dict) -> list[dict]:
    out = []
    for params in competitor_configs(name, cfg.competitor_grid):
        model = build_competitor(name, params, fold_seed(cfg.seed, fold))
        start = time.perf_counter()
        model.fit(fd["X_train"], fd["y_train"])
        train_seconds = time.perf_counter() - start
        start = time.perf_counter()
        pred_std = model.predict(fd["X_test"])
        eval_seconds = time.perf_counter() - start
        rec = _scored(dict(base, family="competitor", model_params=json.dumps(params),
                           plugin_members="[]"), name,
                      np.nan, pred_std, fd, train_seconds, eval_seconds, None)
        out.append(rec)
    return out
