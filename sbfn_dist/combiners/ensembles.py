"""One fold's ensemble, per task: train the members once, then fit every combiner setting on them.

run_trial (sbfn_dist.experiment) drives both tasks through the same steps, and so do the
scikit-learn estimators (sbfn_dist.interfaces.estimators: one fold, their one combiner):

    ens = ENSEMBLES[task](cfg, fold)
    [members] = train_together([ens])          # on-the-fly combiners observe this
    test = ens.test_hypotheses(members)        # D on the test part
    for name, params, model, seconds in ens.fit(members):
        scores = fold.score(ens.predict(model, test))

Regression (squared loss): D (N, M) plus plug-in columns; the closed-form s-BFN fits its whole
lambda2 path on the training part's D, G1/G2/G3 replay the recorded stream (or the frozen D),
the stackers (sbfn_rbf and the practitioners' combiners) fit on the training part's D.
Classification (cross-entropy): D (N, M, C) member probabilities, plus the plug-ins' (N, P, C)
out-of-fold class probabilities; the on-the-fly heads step on every member batch (Algorithm 2),
the stacked heads, the practitioners' combiners and the tuned temperature fit on the validation
part, the fixed rules need no fit. Each combiner reads the hypotheses it was fitted on: the
stacked heads and the practitioners' combiners all of D, the others the M members
(`n_hypotheses`). Then each is judged against the constant guess on the rows it was fitted on
(the record's `uninformative`), and a learned head that does not beat it gives the constant
guess instead (`head_fallback`). `fitted_columns` gives a fitted combiner's record columns: that
judgement, and what its fit chose (a weighted combiner's `weights`).

An ensemble's plug-ins are its config's (plugin_members), or the ones it is given (PluginSet:
the stacking estimators' own models). With n_members = 0 (those estimators' default; a trial
with plugin_members) nothing trains: D holds the plug-ins' hypotheses only (NoMembers).

train_together trains the members of several ensembles of one fold (tabular trials that share
sbfn_dist.learners.training.PACK_SHARED) as one member stack, a pack; each ensemble then sees only its own
members and its own columns of the recorded stream, as if it had trained alone.
"""

import math
import time
from dataclasses import replace

import numpy as np
import torch

from sbfn_dist.combiners import OnlineSBFN, fit_lambda_path
from sbfn_dist.combiners.online import fit_online_streams
from sbfn_dist.combiners.classification import (MoEGateHead, SBFNClassifierHead, TrainableHead,
                                                PROB_FLOOR, beats_constant_guess, class_prior,
                                                finite_minimum, fit_temperature, logit_average,
                                                probability_average, tune_temperature)
from sbfn_dist.combiners.mean import ArithmeticCombiner
from sbfn_dist.combiners.plugins import PluginSet, fit_columns, trial_plugins
from sbfn_dist.combiners.selection import WeightedHypotheses
from sbfn_dist.combiners.stacking import LogisticStack, stacker
from sbfn_dist.data.splits import kfold_splits
from sbfn_dist.evaluation.diagnostics import classification_diagnostics, regression_diagnostics
from sbfn_dist.learners.configs import mlp_settings
from sbfn_dist.learners.cost import count_parameters
from sbfn_dist.learners.geometry import GEOMETRIES
from sbfn_dist.learners.training import (SINGLE_THREAD_BELOW, CNNConfig, ColumnObserver, MLPConfig,
                               StreamRecorder, TrainingDiverged, train_cnn_pack, train_mlp_pack)
from sbfn_dist.runtime import fold_seed, resolve_device, torch_threads
from sbfn_dist.settings.tasks import (CLOSED_FORM, ITERATIVE, ON_THE_FLY_HEADS, STACKED,
                                      STACKED_HEADS, STACKERS, TASKS)

# Stacked heads train for at least this many SGD steps unless head_epochs is given: at the
# paper's eta_alpha = 0.1, T = 3, alpha grows slowly and 10 epochs of a small validation part
# leave the head under-confident (digits: NLL 1.74 after 30 steps, 0.08 after 900; accuracy is
# flat), docs/method.md.
STACK_MIN_STEPS = 1000
# The folds of a stacked head's validation part that give the out-of-fold probabilities its
# temperature is fitted on (head_calibration): scikit-learn's CalibratedClassifierCV default.
CALIBRATION_FOLDS = 5
# The classification combiners fitted in numpy on D: predict_proba(D) is an (N, C) array, and
# n_coef counts their coefficients.
NUMPY_STACKERS = (LogisticStack, WeightedHypotheses)


def mlp_config(cfg, fold: int, geometry: str) -> MLPConfig:
    """The MLP members' settings of fold `fold` of a trial (its seed: fold_seed)."""
    return seeded_mlp_config(cfg, fold_seed(cfg.seed, fold), geometry)


def seeded_mlp_config(cfg, seed: int, geometry: str) -> MLPConfig:
    """The MLP members' settings of a trial's or an estimator's `cfg` (a TrialConfig), seeded by
    a fold's seed (Fold.seed), on the device it resolves to here."""
    return replace(mlp_settings(cfg, seed, geometry), device=resolve_device(cfg.device))


def seeded_cnn_config(cfg, seed: int) -> CNNConfig:
    """The CNN members' settings of `cfg` as resolved (a trial's device, precision, step engine
    and compilation are this machine's, sbfn_dist.folds.resolved), seeded by a fold's seed."""
    sgd = cfg.optimizer == "sgd"
    return CNNConfig(ensemble=cfg.ensemble, n_members=cfg.n_members, epsilon=cfg.epsilon,
                     epochs=cfg.epochs, batch_size=cfg.batch_size, optimizer=cfg.optimizer,
                     lr=cfg.lr, momentum=cfg.momentum if sgd else CNNConfig.momentum,
                     weight_decay=cfg.weight_decay, seed=seed,
                     precision=cfg.precision, engine=cfg.step_engine, compile=cfg.step_compile)


class RegressionEnsemble:
    """Squared loss: M MLP members, plug-in columns, and every regression combiner setting."""

    n_outputs = 1

    def __init__(self, cfg, fold, plugins: PluginSet | None = None):
        self.cfg, self.fold, self.seed = cfg, fold, fold.seed
        self.mcfg = seeded_mlp_config(cfg, fold.seed, "squared") if cfg.n_members else None
        self.plugins = trial_plugins(cfg, fold.seed, "regression") if plugins is None else plugins
        self.online = [n for n in cfg.combiners if n in ITERATIVE]
        self.wants_stream = bool(self.online) and cfg.online_regime == "on_the_fly"
        self.stream = None           # (recorder, first column, last + 1), set by train_together
        self.replayed = None         # its G1/G2/G3 fits from the stream, set by replay_together

    def settings(self) -> list:
        """(name, params) of every row the fold will have, in record order."""
        lambdas = self.cfg.lambda2 if self.online or self._closed() else ()
        rows = [(n, {"lambda2": float(lam)}) for n in self.online for lam in lambdas]
        rows += [(n, {"lambda2": float(lam)}) for n in self._closed() for lam in lambdas]
        rows += [("arithmetic", {})] * ("arithmetic" in self.cfg.combiners)
        return rows + [(n, {}) for n in self._stackers()]

    def _stackers(self) -> list:
        return [n for n in STACKERS if n in self.cfg.combiners]

    def _closed(self) -> list:
        return [n for n in CLOSED_FORM if n in self.cfg.combiners]

    def observers(self, start: int, stop: int) -> list:
        return []                    # its stream comes from the pack's one recorder

    def adopt(self, members):
        """Its trained members arrived: fit the plug-ins beside them (they need no members)."""
        self.plug = fit_columns(self.plugins, self.fold.x_train, self.fold.y_train,
                                self.fold.x_test, self.seed)

    def plugin_rows(self) -> list:
        return plugin_rows(self.plug)

    def test_hypotheses(self, members):
        """(D_test with the plug-in columns, seconds): the structured dataset of the test part."""
        start = time.perf_counter()
        d = regression_hypotheses(members, self.fold.x_test, self.plug.test)
        return d, time.perf_counter() - start + self.plug.eval_seconds

    def fit(self, members) -> list:
        """(name, params, model, seconds) per setting; a shared fit's time is split evenly."""
        d_train = regression_hypotheses(members, self.fold.x_train, self.plug.train)
        y = self.fold.y_train
        fitted = self._fit_online(d_train, y)
        for name in self._closed():
            linear = name == "sbfn_ls_linear"
            start = time.perf_counter()
            path = fit_lambda_path(d_train, y, list(self.cfg.lambda2), basis=self.cfg.sbfn_basis,
                                   intercept=True if linear else self.cfg.sbfn_intercept,
                                   linear=linear, seed=self.seed)
            each = (time.perf_counter() - start) / len(path)
            fitted += [(name, {"lambda2": float(m.lambda2)}, m, each) for m in path]
        if "arithmetic" in self.cfg.combiners:
            fitted.append(("arithmetic", {}, ArithmeticCombiner().fit(d_train, y), 0.0))
        columns = hypothesis_names(self.cfg.n_members, self.plug)
        for name in self._stackers():
            start = time.perf_counter()
            model = stacker(name, "regression", self.cfg.get, self.seed, columns).fit(d_train, y)
            fitted.append((name, model.params, model, time.perf_counter() - start))
        return fitted

    def online_models(self) -> list:
        """One OnlineSBFN per (iterative variant, lambda2), unfitted."""
        cfg = self.cfg
        return [OnlineSBFN(n, lam, cfg.lr_alpha, cfg.get("window"), cfg.get("g3_basis"),
                           cfg.epochs, self.seed) for n in self.online for lam in cfg.lambda2]

    def replay_stream(self):
        """Its members' recorded stream, with the plug-ins beside it (a plug-in is a frozen
        hypothesis there), and the stream's targets."""
        recorder, first, last = self.stream
        z, stream_y = recorder.arrays(first, last)
        if self.plug.names:
            z = np.hstack([z, self.plug.stream(self.mcfg)])
        return z, stream_y

    def _fit_online(self, d_train, y) -> list:
        """The on-the-fly fits replay_together made, or (plug-in regime) fits on the frozen D."""
        if self.replayed is not None:
            return self.replayed
        models = self.online_models()
        start = time.perf_counter()
        for m in models:
            m.fit(d_train, y)
        each = (time.perf_counter() - start) / max(len(models), 1)
        return [(m.variant, {"lambda2": float(m.lambda2)}, m, each) for m in models]

    def predict(self, model, d_test):
        return model.predict(d_test)

    def summary(self, members, d_test) -> dict:
        """Member scores and diagnostics on the test part (plug-in columns excluded; none
        without members)."""
        out = {"plugin_seconds": self.plug.fit_seconds,
               "flops_per_example": members.flops_per_example(self.fold.x_test)}
        if not self.cfg.n_members:
            return out
        preds = self.fold.scaler.inverse_y(d_test[:, :self.cfg.n_members].T).T
        rmse = np.sqrt(((preds - self.fold.y_test[:, None]) ** 2).mean(0))
        return {**out, "member_rmse_mean": float(rmse.mean()), "member_rmse_min": float(rmse.min()),
                "member_rmse_max": float(rmse.max()),
                **regression_diagnostics(preds, self.fold.y_test)}

    def extra_seconds(self) -> float:
        return self.plug.fit_seconds

    def fitted_columns(self, name: str, model) -> dict:
        """The record columns of a fitted combiner: what its fit chose (fitted_record)."""
        return fitted_record(model)

    def n_coef(self, model) -> int:
        coef = getattr(model, "coef_", None)
        return 0 if coef is None else int(np.size(coef)) + int(getattr(model, "intercept", False))


class ClassificationEnsemble:
    """Cross-entropy: M MLP (tables) or CNN (images) members and every classification combiner."""

    wants_stream = False

    def __init__(self, cfg, fold, plugins: PluginSet | None = None):
        self.cfg, self.fold, self.seed = cfg, fold, fold.seed
        self.heads = {n: self._head(n) for n in ON_THE_FLY_HEADS if n in cfg.combiners}
        self.n_outputs = fold.n_classes
        images = fold.images is not None
        trains = bool(cfg.n_members)
        self.mcfg = (seeded_mlp_config(cfg, fold.seed, "cross_entropy") if trains and not images
                     else None)
        self.ccfg = seeded_cnn_config(cfg, fold.seed) if images else None
        self.plugins = (trial_plugins(cfg, fold.seed, "classification") if plugins is None
                        else plugins)
        self.plug = None             # PluginColumns, set by adopt where there are plug-ins
        self.uninformative = {}      # combiner -> it did not beat the constant guess (set by fit)

    def settings(self) -> list:
        return [(n, {}) for n in self.cfg.combiners]

    def _head(self, name: str):
        return make_head(name, self.cfg.get, self.fold.n_classes, self.seed, self.fold.device)

    def observers(self, start: int, stop: int) -> list:
        """The on-the-fly heads, each watching this ensemble's own members of the stack."""
        return [ColumnObserver(head, start, stop) for head in self.heads.values()]

    def adopt(self, members):
        """Its trained members arrived: the plug-ins' out-of-fold class probabilities on the
        whole training part (the members' rows, then the held-out rows the stacked combiners
        read: the rows the competitors fit on) and their refits' on the test part."""
        if not self.plugins.plugins:
            return
        f = self.fold
        x, y = np.concatenate([f.x_train, f.x_val]), np.concatenate([f.y_train, f.y_val])
        self.plug = fit_columns(self.plugins, x, y, f.x_test, self.seed, self.n_outputs)

    def plugin_rows(self) -> list:
        return plugin_rows(self.plug) if self.plug else []

    def _plugin_probs(self, part: str):
        """The plug-ins' probabilities of the held-out ("val") or test part; None without any."""
        if self.plug is None:
            return None
        return self.plug.test if part == "test" else self.plug.train[len(self.fold.y_train):]

    def test_hypotheses(self, members):
        """((member logits, D) of the test part, seconds): D the members' probabilities, then
        the plug-ins'."""
        start = time.perf_counter()
        test = class_hypotheses(members, self.fold.x_test, self._plugin_probs("test"))
        eval_seconds = self.plug.eval_seconds if self.plug else 0.0
        return test, time.perf_counter() - start + eval_seconds

    def fit(self, members) -> list:
        # On-the-fly heads were fitted while the members trained; a fixed rule is its name.
        fitted = [(n, {}, self.heads.get(n, n), 0.0) for n in self.cfg.combiners
                  if n not in STACKED]
        stacked = [n for n in self.cfg.combiners if n in STACKED]
        val = None
        if stacked or self._calibrates():
            val_logits = members.scores(self.fold.x_val)
            d_val = joined(torch.softmax(val_logits, 2).float(), self._plugin_probs("val"))
            val = (val_logits, d_val, self.fold.y_val_tensor)
        for name in stacked:
            start = time.perf_counter()
            if name == "logit_mean_tuned":
                model = tune_temperature(val_logits, val[2])
            else:
                model = self._stack(name, d_val, val[2])
            fitted.append((name, {}, model, time.perf_counter() - start))
        order = {n: i for i, n in enumerate(self.cfg.combiners)}
        return self._calibrated(self._judged(members, sorted(fitted, key=lambda f: order[f[0]]),
                                             val), val)

    def _calibrates(self) -> bool:
        """The learned heads are temperature-scaled (head_calibration), on the validation part."""
        return self.cfg.get("head_calibration") == "temperature"

    def _calibrated(self, fitted: list, val) -> list:
        """`fitted`, each learned head that answers its own output (not the constant guess)
        temperature-scaled where head_calibration says so (Guo et al. 2017; docs/method.md,
        "Calibrated heads"): tau fitted on the validation part, by the NLL of the head's
        probabilities there -- for an on-the-fly head rows it never saw, for a stacked head its
        out-of-fold probabilities (cross_fitted); tau = 1 where the NLL has no minimum inside
        the search's range (finite_minimum). Each head's row carries its own time."""
        if not self._calibrates():
            return fitted
        out = []
        for name, params, model, seconds in fitted:
            start = time.perf_counter()
            if isinstance(model, TrainableHead) and not model._guessing:
                probs = (self._cross_fitted(name, *val[1:]) if name in STACKED_HEADS else
                         combine(model, val[0], val[1][:, :self.cfg.n_members]))
                tau = fit_temperature(torch.log(probs.double().clamp_min(PROB_FLOOR)), val[2])
                model.calibrate(tau if finite_minimum(tau) else 1.0)
            out.append((name, params, model, seconds + time.perf_counter() - start))
        return out

    def _cross_fitted(self, name: str, d_val, y_val) -> torch.Tensor:
        """A stacked head's out-of-fold probabilities on the validation part it is fitted on:
        the head refitted on CALIBRATION_FOLDS - 1 folds of it predicts the last (as
        scikit-learn's CalibratedClassifierCV(ensemble=False) fits its calibrator)."""
        folds = min(CALIBRATION_FOLDS, len(y_val))
        out = torch.empty((len(y_val), self.n_outputs), dtype=torch.float64,
                          device=d_val.device)
        for rows, held in kfold_splits(len(y_val), folds, self.seed):
            rows, held = (torch.as_tensor(i, device=d_val.device) for i in (rows, held))
            head = fit_stacked_head(name, self.cfg.get, d_val[rows], y_val[rows], self.seed)
            out[held] = combine(head, None, d_val[held]).double()
        return out

    def _judged(self, members, fitted: list, val) -> list:
        """`fitted`, each combiner judged against the constant guess on the rows it was fitted
        on: the stacked ones on the held-out part, the others on the training part as the
        trained members see it. One that is right on no more of them than their majority class
        is uninformative; a learned head that is predicts their class prior from now on
        (head_fallback "prior"; docs/method.md). The judging time is split evenly among them."""
        start, train = time.perf_counter(), None
        for name, _, model, _ in fitted:
            if name == "base_avg":
                continue                         # the members' own probabilities, not combined
            if name not in STACKED:
                train = train or self._training_part(members)
            logits, d, y = val if name in STACKED else train
            probs = combine(model, logits, d[:, :getattr(model, "n_hypotheses",
                                                        self.cfg.n_members)])
            if not torch.isfinite(probs).all():
                continue                         # diverged: a status of its own
            self.uninformative[name] = not beats_constant_guess(probs, y)
            if (self.uninformative[name] and isinstance(model, TrainableHead)
                    and self.cfg.get("head_fallback") == "prior"):
                model.guess(class_prior(y, self.n_outputs))
        each = (time.perf_counter() - start) / max(len(fitted), 1)
        return [(name, params, model, seconds + each) for name, params, model, seconds in fitted]

    def _training_part(self, members):
        """(member logits, D, class codes) of the training part, with the trained members."""
        logits, d = class_hypotheses(members, self.fold.x_train)
        return logits, d, torch.as_tensor(self.fold.y_train, device=d.device)

    def fitted_columns(self, name: str, model) -> dict:
        """The record columns of a fitted combiner: `uninformative`, whether it failed to beat
        the constant guess on the rows it was fitted on (absent where it was not judged:
        base_avg), and what its fit chose (fitted_record)."""
        judged = {"uninformative": self.uninformative[name]} if name in self.uninformative else {}
        return {**judged, **fitted_record(model)}

    def _stack(self, name: str, d_val, y_val):
        """A combiner fitted on the held-out part's D (members' and plug-ins' probabilities)."""
        if name in STACKED_HEADS:
            return fit_stacked_head(name, self.cfg.get, d_val, y_val, self.seed)
        columns = hypothesis_names(self.cfg.n_members, self.plug)
        return stacker(name, "classification", self.cfg.get, self.seed, columns).fit(d_val, y_val)

    def predict(self, model, test) -> np.ndarray:
        """(N, C) probabilities of a combiner; base_avg: the members' own (N, M, C)."""
        logits, d = test
        reads = getattr(model, "n_hypotheses", self.cfg.n_members)
        return combine(model, logits, d[:, :reads]).detach().cpu().numpy()

    def summary(self, members, test) -> dict:
        """Member scores and diagnostics on the test part (plug-ins excluded; none without
        members)."""
        out = {"flops_per_example": members.flops_per_example(self.fold.x_test),
               **({"plugin_seconds": self.plug.fit_seconds} if self.plug else {})}
        if not self.cfg.n_members:
            return out
        logits, d = test
        p = d[:, :self.cfg.n_members].cpu().numpy()
        y = self.fold.y_test
        acc = (p.argmax(2) == y[:, None]).mean(0)
        return {**out, "member_accuracy_mean": float(acc.mean()),
                "member_accuracy_min": float(acc.min()),
                "member_accuracy_max": float(acc.max()), **classification_diagnostics(p, y)}

    def extra_seconds(self) -> float:
        return self.plug.fit_seconds if self.plug else 0.0

    def n_coef(self, model) -> int:
        if isinstance(model, NUMPY_STACKERS):
            return model.n_coef
        return count_parameters(model) if isinstance(model, torch.nn.Module) else 0


class NoMembers:
    """The members of an ensemble of M = 0 (the stacking estimators' default): no network, so
    D holds the plug-ins' hypotheses only; what TrainedMembers gives a fold's combiners."""

    seconds, n_parameters, packed_members, engine = 0.0, 0, 0, "eager"
    DTYPE = "float64"       # D's dtype where no member sets one: the plug-ins' own

    def __init__(self, task: str, n_outputs: int, dtype: str):
        self.geometry = GEOMETRIES[TASKS[task].geometry]
        self.n_outputs, self.dtype = n_outputs, getattr(torch, dtype)

    def scores(self, x) -> torch.Tensor:
        return torch.zeros((len(x), 0, self.n_outputs), dtype=self.dtype)

    def predict(self, x) -> torch.Tensor:
        return self.geometry.structured(self.scores(x))

    def flops_per_example(self, example) -> float:
        return 0.0


def hypothesis_names(n_members: int, plug) -> list:
    """D's column names, as records name them: member_0 ... member_{M-1}, then the plug-ins'
    (`plug`: PluginColumns, or None without plug-ins)."""
    return [f"member_{j}" for j in range(n_members)] + list(plug.names if plug else ())


def fitted_record(model) -> dict:
    """The record columns a fitted combiner's own fit chose (its `fitted`: the `weights` of a
    weighted combiner, stack_ridge's alpha as `fitted_params`); none for the others."""
    return getattr(model, "fitted", {})


def regression_hypotheses(members, x, plugin_cols: np.ndarray) -> np.ndarray:
    """D of rows x: the members' predictions (N, M), then the plug-ins' columns (N, P)."""
    return np.hstack([_numpy(members.predict(x)), plugin_cols])


def class_hypotheses(members, x, plugin_probs=None):
    """(member logits (N, M, C), D): D the members' probabilities, then the plug-ins'."""
    logits = members.scores(x)
    return logits, joined(torch.softmax(logits, 2), plugin_probs)


def joined(member_probs: torch.Tensor, plugin_probs) -> torch.Tensor:
    """D (N, M + P, C): the plug-ins' probabilities (numpy) beside the members', in their dtype
    and on their device; the members' alone where there are no plug-ins."""
    if plugin_probs is None:
        return member_probs
    plug = torch.as_tensor(plugin_probs, dtype=member_probs.dtype, device=member_probs.device)
    return torch.cat([member_probs, plug], 1)


def plugin_rows(plug) -> list:
    """(name, setting, test predictions, fit seconds) per plug-in: each input of the
    combiners is also a competitor row of the trial, from the same fit."""
    return [(name, params, plug.test[:, j], sec)
            for j, (name, params, sec) in enumerate(zip(plug.names, plug.settings, plug.seconds))]


def train_together(ensembles: list) -> list:
    """Train the members of one fold's ensembles (tabular ones agreeing on PACK_SHARED, image
    ones on CNN_PACK_SHARED) as one stack; per ensemble its TrainedMembers or the
    TrainingDiverged that ended its set."""
    fold = ensembles[0].fold
    if not any(e.cfg.n_members for e in ensembles):      # D of plug-ins only: nothing trains
        return [_without_members(e) for e in ensembles]
    observers, start = [], 0
    recorder = _stream_recorder(ensembles)
    for ens in ensembles:
        stop = start + ens.cfg.n_members
        observers += ens.observers(start, stop)
        ens.stream = (recorder, start, stop) if ens.wants_stream else None
        start = stop
    if fold.images is not None:
        return train_cnn_pack(fold.images, fold.n_classes, [e.ccfg for e in ensembles],
                              observers)
    results = train_mlp_pack(fold.x_train, fold.y_train, [e.mcfg for e in ensembles],
                             ensembles[0].n_outputs, observers + ([recorder] if recorder else []))
    trained = [e for e, m in zip(ensembles, results) if not isinstance(m, TrainingDiverged)]
    for ens in trained:
        ens.adopt(results[ensembles.index(ens)])
    replay_together([e for e in trained if e.wants_stream])
    return results


def _without_members(ens) -> NoMembers:
    # A trial of M = 0 has no member dtype: D is the plug-ins' float64 (NoMembers.DTYPE).
    members = NoMembers(ens.cfg.task, ens.n_outputs, ens.cfg.get("dtype", NoMembers.DTYPE))
    ens.adopt(members)
    return members


def replay_together(ensembles: list) -> None:
    """G1/G2/G3 of every ensemble fitted on its recorded stream in one alpha recursion (the
    streams of a pack share their visit order); a shared fit's time is split evenly."""
    if not ensembles:
        return
    start = time.perf_counter()
    replays = [e.replay_stream() for e in ensembles]     # one visit order: the same targets
    streams = [(z, e.online_models()) for (z, _), e in zip(replays, ensembles)]
    fit_online_streams(streams, replays[0][1], ensembles[0].mcfg.batch_size)
    each = (time.perf_counter() - start) / sum(len(models) for _, models in streams)
    for ens, (_, models) in zip(ensembles, streams):
        ens.replayed = [(m.variant, {"lambda2": float(m.lambda2)}, m, each) for m in models]


def _stream_recorder(ensembles: list):
    """One recorder of the whole stack's training-time predictions, if any ensemble replays
    its members' stream (G1/G2/G3 on the fly); each reads its own columns."""
    if not any(e.wants_stream for e in ensembles):
        return None
    mcfg = ensembles[0].mcfg
    return StreamRecorder(mcfg.epochs * len(ensembles[0].fold.y_train),
                          sum(e.cfg.n_members for e in ensembles), getattr(torch, mcfg.dtype))


def make_head(name: str, setting, n_classes: int, seed: int, device,
              n_hypotheses: int | None = None):
    """The learned head `name` (paper, Table "Ensemble variants"), an s-BFN (Algorithm 2) or a
    MoE gate, on the members' device (their probabilities stay there); `setting(field)` reads
    the trial's or estimator's settings. It reads `n_hypotheses` hypotheses (K = k times as
    many units): the M members, or a stacked head's members and plug-ins."""
    m = setting("n_members") if n_hypotheses is None else n_hypotheses
    if name.startswith("sbfn"):
        head = SBFNClassifierHead(m, n_classes, setting("sbfn_units_per_member") * m,
                                  setting("temperature"), setting("lr_alpha"), setting("row_norm"),
                                  seed, setting("head_optimizer"), centre_init=setting("centre_init"),
                                  centre_step=setting("centre_step"))
    else:
        head = MoEGateHead(m, n_classes, lr=setting("lr_alpha"), optimizer=setting("head_optimizer"))
    return head.to(device)


def fit_stacked_head(name: str, setting, val_probs, y_val, seed: int):
    """A head trained on held-out member probabilities (the stacking regime): `head_epochs`
    epochs, or at least 10 epochs and STACK_MIN_STEPS steps, in batches of `batch_size`."""
    b = setting("batch_size")
    epochs = setting("head_epochs") or stacking_epochs(len(val_probs), b)
    head = make_head(name, setting, val_probs.shape[2], seed, val_probs.device,
                     n_hypotheses=val_probs.shape[1])
    # Small batches: one thread, as for the members (a second one only spins under load).
    with torch_threads(1 if b < SINGLE_THREAD_BELOW else torch.get_num_threads()):
        return head.fit(val_probs, y_val, epochs, b, seed)


def combine(model, logits, probs) -> torch.Tensor:
    """A fitted classification combiner applied to member logits / probabilities (N, M, C)
    (a stacked one's: D, members then plug-ins)."""
    if isinstance(model, torch.nn.Module):       # a learned head runs in its own dtype
        return model.predict_proba_eval(probs.to(next(model.parameters()).dtype))
    if isinstance(model, NUMPY_STACKERS):
        return torch.as_tensor(model.predict_proba(probs))
    if isinstance(model, float):                 # the tuned temperature of logit averaging
        return logit_average(logits, model)
    return FIXED_RULES[model](logits, probs)


# The combiners that need no fit; base_avg keeps the members' probabilities (scored per member,
# then averaged, as the paper's "Base Avg.").
FIXED_RULES = {
    "logit_mean": lambda logits, probs: logit_average(logits),
    "prob_mean": lambda logits, probs: probability_average(probs),
    "base_avg": lambda logits, probs: probs,
}


def stacking_epochs(n_val: int, batch_size: int) -> int:
    """Default stacking epochs: at least 10, and at least STACK_MIN_STEPS steps in all."""
    return max(10, math.ceil(STACK_MIN_STEPS / math.ceil(n_val / batch_size)))


def _numpy(d: torch.Tensor) -> np.ndarray:
    return d.double().cpu().numpy()


ENSEMBLES = {"regression": RegressionEnsemble, "classification": ClassificationEnsemble}
