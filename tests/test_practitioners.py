"""The practitioners' combiners (issue 46; docs/method.md, "The practitioners' combiners"):
Caruana et al.'s greedy ensemble selection, NNLS stacking of probabilities, the best single
hypothesis -- by hand on tiny matrices, against scipy, and in trials of both tasks, with their
`weights` recorded; and trials of the plug-ins alone (n_members: 0)."""

import io
import json

import numpy as np
import pytest
import torch
from scipy.optimize import nnls
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

from sbfn_dist import records
from sbfn_dist.combiners.selection import BestSingle, EnsembleSelection, greedy_selection
from sbfn_dist.combiners.stacking import ProbabilityNNLS
from sbfn_dist.errors import ConfigError
from sbfn_dist.evaluation.diagnostics import nll
from sbfn_dist.experiment import run_trial, run_trials
from sbfn_dist.interfaces.stacking_estimators import COMBINERS, SBFNStackingClassifier
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.tasks import PLUGIN_HEADS, PRACTITIONERS, TASKS
from sweeps import Sweep
from sweeps.engine.plan.sweep_keys import SweepFileError

WEIGHTED = ("ensemble_selection", "stack_nnls", "best_single")
# float64 sums of a few weights: exact up to a few ulps.
SUM_TOLERANCE = 1e-12


# ------------------------------------------------------------------------- by hand
# y and three columns whose errors D - y are e0 = [2, 0, 0, 0], e1 = [1, 1, 1, 1] and
# e2 = [-2, 0, 0, 1] (small integers: every loss of rounds 1, 2 and 4 is exact in float64).
Y = np.array([1.0, 0.0, -1.0, 2.0])
D_REG = Y[:, None] + np.array([[2, 1, -2], [0, 1, 0], [0, 1, 0], [0, 1, 1]], dtype=float)


def test_ensemble_selection_by_hand_squared_error():
    """Round 1, MSE alone: e0 4/4 = 1, e1 4/4 = 1, e2 5/4 -- a tie of columns 0 and 1: the
    lowest index, column 0. Round 2, the mean of column 0 and a candidate: with 0 errors
    [2,0,0,0] (1), with 1 [1.5,.5,.5,.5] (3/4), with 2 [0,0,0,.5] (1/16): column 2. Round 3,
    the running error sum [0,0,0,1] plus a candidate, over 3: with 0 [2,0,0,1]/3 (5/36), with 1
    [1,1,1,2]/3 (7/36), with 2 [-2,0,0,2]/3 (8/36): column 0. Round 4, [2,0,0,1] plus one, over
    4: with 0 (17/64), with 1 [3,1,1,2]/4 (15/64), with 2 [0,0,0,2]/4 (4/64): column 2. Picks
    0, 2, 0, 2: weights 2/4, 0, 2/4."""
    assert list(greedy_selection(D_REG, Y, "squared_error", 1)) == [1.0, 0.0, 0.0]
    assert list(greedy_selection(D_REG, Y, "squared_error", 2)) == [0.5, 0.0, 0.5]
    assert list(greedy_selection(D_REG, Y, "squared_error", 4)) == [0.5, 0.0, 0.5]
    # Had the tie gone to column 1, round 2 would add column 2 to it (errors [-.5,.5,.5,1],
    # 7/16 against column 0's 3/4): weights 0, 1/2, 1/2. The selection is the weighted mean.
    model = EnsembleSelection(["a", "b", "c"], "squared_error", 4).fit(D_REG, Y)
    assert np.allclose(model.predict(D_REG), D_REG @ [0.5, 0.0, 0.5], rtol=0, atol=1e-15)
    assert json.loads(model.fitted["weights"]) == {"a": 0.5, "b": 0.0, "c": 0.5}


def probabilities(p_true: list, y: np.ndarray) -> np.ndarray:
    """(N, H, 2) class probabilities from each hypothesis' probability of the true class."""
    p = np.asarray(p_true).T                      # (N, H)
    return np.where(y[:, None, None] == np.arange(2), p[:, :, None], 1 - p[:, :, None])


Y_CLF = np.array([0, 0, 1, 1])


def test_ensemble_selection_by_hand_log_loss():
    """p(true class) of three hypotheses on 4 rows; log-loss L = -mean ln p.
    h0 [.9, .9, .1, .9], h1 [.6, .6, .6, .6], h2 [.2, .9, .9, .9].
    Round 1: h0 (3 ln(1/.9) + ln 10)/4 = 0.6547, h1 ln(1/.6) = 0.5108, h2 (ln 5 + 3 ln(1/.9))/4
    = 0.4814: h2. Round 2, the mean with h2: h0 [.55, .9, .5, .9] 0.3754, h1 [.4, .75, .75, .75]
    0.4448, h2 0.4814: h0. Round 3, (h2 + h0 + candidate) / 3: h0 [.667, .9, .367, .9] 0.4049,
    h1 [.567, .8, .533, .8] 0.4107, h2 [.433, .9, .633, .9] 0.3759: h2. Round 4, (2 h2 + h0 +
    candidate) / 4: h0 [.55, .9, .5, .9] 0.3754, h1 [.475, .825, .625, .825] 0.3998, h2 [.375,
    .9, .7, .9] 0.3871: h0. Picks h2, h0, h2, h0: weights 1/2, 0, 1/2; the best single is h2."""
    P = probabilities([[.9, .9, .1, .9], [.6, .6, .6, .6], [.2, .9, .9, .9]], Y_CLF)
    assert list(greedy_selection(P, Y_CLF, "log_loss", 1)) == [0.0, 0.0, 1.0]
    assert list(greedy_selection(P, Y_CLF, "log_loss", 3)) == [1 / 3, 0.0, 2 / 3]
    assert list(greedy_selection(P, Y_CLF, "log_loss", 4)) == [0.5, 0.0, 0.5]
    model = EnsembleSelection(["h0", "h1", "h2"], "log_loss", 4).fit(P, Y_CLF)
    mixture = 0.5 * P[:, 0] + 0.5 * P[:, 2]
    assert np.allclose(model.predict_proba(P), mixture, rtol=0, atol=1e-15)
    assert nll(mixture, Y_CLF) == pytest.approx(0.3754, abs=1e-4)    # round 4's loss
    assert list(BestSingle(["h0", "h1", "h2"], "log_loss").fit(P, Y_CLF).weights_) == [0, 0, 1]
    # accuracy picks otherwise: h1 alone is right on every row
    assert list(greedy_selection(P, Y_CLF, "accuracy", 4)) == [0.0, 1.0, 0.0]


def test_ensemble_selection_by_hand_accuracy_ties_to_the_lowest_index():
    """p(true class): h0 [.9, .9, .3, .3], h1 [.3, .3, .9, .9], h2 [.6, .4, .6, .4]; each
    alone is wrong on two rows (error 1/2, counts: exact): round 1 is a three-way tie, won by
    h0. Round 2, the mean with h0: h0 1/2; h1 [.6, .6, .6, .6] right everywhere, 0; h2 [.75,
    .65, .45, .35] wrong on rows 2, 3, 1/2: h1. Weights 1/2, 1/2, 0 (h2 first would give 0,
    1/2, 1/2: its mean with h1, [.45, .35, .75, .65], is wrong on rows 0, 1)."""
    P = probabilities([[.9, .9, .3, .3], [.3, .3, .9, .9], [.6, .4, .6, .4]], Y_CLF)
    assert list(greedy_selection(P, Y_CLF, "accuracy", 1)) == [1.0, 0.0, 0.0]
    assert list(greedy_selection(P, Y_CLF, "accuracy", 2)) == [0.5, 0.5, 0.0]


# ------------------------------------------------------------------------- NNLS
def brier_design(P: np.ndarray, y: np.ndarray):
    """The Super Learner's NNLS system written out row by row: one equation per (row i, class c),
    sum_h w_h p_ihc = [y_i = c]."""
    rows, targets = [], []
    for i in range(P.shape[0]):
        for c in range(P.shape[2]):
            rows.append([P[i, h, c] for h in range(P.shape[1])])
            targets.append(1.0 if y[i] == c else 0.0)
    return np.array(rows), np.array(targets)


def test_nnls_probabilities_are_scipys_nnls_of_the_brier_design_normalised():
    rng = np.random.default_rng(0)
    y = np.array([0, 1, 2, 1, 0, 2, 2])
    P = rng.dirichlet(np.ones(3), size=(7, 4))               # 7 rows, 4 hypotheses, 3 classes
    P[:, 1] = 0.7 * np.eye(3)[y] + 0.1                       # a good hypothesis
    model = ProbabilityNNLS(["a", "b", "c", "d"]).fit(P, y)
    expected, _ = nnls(*brier_design(P, y))
    assert expected.sum() > 0 and np.all(model.weights_ >= 0)
    assert model.weights_.sum() == pytest.approx(1.0, abs=SUM_TOLERANCE)
    np.testing.assert_allclose(model.weights_, expected / expected.sum(), rtol=1e-10, atol=1e-12)
    assert np.argmax(model.weights_) == 1
    assert np.allclose(model.predict_proba(P).sum(1), 1.0)


def test_nnls_weights_are_uniform_when_no_hypothesis_helps():
    """Every hypothesis gives the true class probability 0: NNLS gives all-zero weights, and
    the combination falls back to the uniform average (still a probability vector)."""
    y = np.array([0, 1])
    P = np.array([[[0.0, 1.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]])
    assert list(ProbabilityNNLS(["a", "b"]).fit(P, y).weights_) == [0.5, 0.5]


# ------------------------------------------------------------------------- in a trial
def naive_selection(D: np.ndarray, loss, rounds: int) -> np.ndarray:
    """Caruana et al.'s rounds as a plain double loop (an independent computation): `loss` of
    one candidate's averaged prediction."""
    total, counts = np.zeros_like(D[:, 0]), np.zeros(D.shape[1])
    for r in range(1, rounds + 1):
        losses = [loss((total + D[:, h]) / r) for h in range(D.shape[1])]
        best = min(range(D.shape[1]), key=lambda h: (losses[h], h))
        counts[best] += 1
        total = total + D[:, best]
    return counts / rounds


def kept_trial(config: dict):
    """The trial's records by model, and what each fitted combiner was (run_trials' keep)."""
    seen = {}

    def keep(cfg, fold, members, name, params, model):
        seen.update(fold=fold, members=members)
        seen[name] = model
    [recs] = run_trials([config], keep)
    return {r["model"]: r for r in recs}, seen


def weights_of(record: dict) -> dict:
    return json.loads(record["weights"])


TINY = {"folds": 2, "fold": 0, "n_members": 3, "epochs": 1, "dtype": "float64",
        "competitors": []}


def test_a_regression_trial_fits_the_practitioners_combiners_on_the_training_part():
    recs, seen = kept_trial(dict(TINY, dataset="diabetes", n_samples=120, batch_size=8,
                                 combiners=list(PRACTITIONERS["regression"])))
    fold, members = seen["fold"], seen["members"]
    d_train = members.predict(fold.x_train).double().numpy()
    d_test = members.predict(fold.x_test).double().numpy()
    y = fold.y_train
    mse = lambda z: float(((z - y) ** 2).mean())  # noqa: E731
    expected = {"ensemble_selection": naive_selection(d_train, mse, 50),
                "stack_nnls": nnls(d_train, y)[0],
                "best_single": np.eye(3)[np.argmin([mse(d_train[:, h]) for h in range(3)])]}
    for name in WEIGHTED:
        record = recs[name]
        records.check(record)
        assert record["status"] == "ok" and record["model_params"] == "{}"
        w = weights_of(record)
        assert list(w) == ["member_0", "member_1", "member_2"]
        # fitted on the training part's D (none of it test rows): the weights an independent
        # computation gets there, and the record's score is that of D_test @ w
        np.testing.assert_allclose(list(w.values()), expected[name], rtol=1e-9, atol=1e-12)
        pred = fold.scaler.inverse_y(d_test @ np.array(list(w.values())))
        rmse = float(np.sqrt(np.mean((pred - fold.y_test) ** 2)))
        assert record["rmse"] == pytest.approx(rmse, rel=1e-12), name
    for name in ("ensemble_selection", "best_single"):
        assert sum(weights_of(recs[name]).values()) == pytest.approx(1.0, abs=SUM_TOLERANCE)
    assert min(weights_of(recs["stack_nnls"]).values()) >= 0     # Breiman's: no sum constraint
    assert recs["ensemble_selection"]["selection_rounds"] == 50
    assert "selection_metric" not in recs["ensemble_selection"]   # regression: squared error
    assert "weights" not in recs["stack_ridge"]
    assert json.loads(recs["stack_ridge"]["fitted_params"])["alpha"] in (0.1, 1.0, 10.0)


def test_a_classification_trial_fits_them_on_the_validation_part():
    recs, seen = kept_trial(dict(TINY, dataset="wine", combiners=list(PRACTITIONERS[
        "classification"]), selection_rounds=20))
    fold, members = seen["fold"], seen["members"]
    # D as the stacked combiners read it: the members' probabilities held in float32
    d_val = torch.softmax(members.scores(fold.x_val), 2).float().double().numpy()
    d_test = torch.softmax(members.scores(fold.x_test), 2).double().numpy()
    y = fold.y_val
    loss = lambda p: nll(p, y)  # noqa: E731
    expected = {"ensemble_selection": naive_selection(d_val, loss, 20),
                "stack_nnls": nnls(*brier_design(d_val, y))[0],
                "best_single": np.eye(3)[np.argmin([loss(d_val[:, h]) for h in range(3)])]}
    expected["stack_nnls"] /= expected["stack_nnls"].sum()
    for name in WEIGHTED:
        record = recs[name]
        records.check(record)
        assert record["status"] == "ok" and record["n_val"] == len(y) > 0
        w = weights_of(record)
        assert list(w) == ["member_0", "member_1", "member_2"]
        assert sum(w.values()) == pytest.approx(1.0, abs=SUM_TOLERANCE)
        np.testing.assert_allclose(list(w.values()), expected[name], rtol=1e-6, atol=1e-9)
        mixture = np.tensordot(d_test, np.array(list(w.values())), axes=([1], [0]))
        assert record["nll"] == pytest.approx(nll(mixture, fold.y_test), rel=1e-9), name
    assert recs["ensemble_selection"]["selection_metric"] == "log_loss"
    assert "weights" not in recs["stack_logistic"]


def test_the_accuracy_variant_is_a_setting_of_its_own():
    recs = {r["model"]: r for r in run_trial(dict(
        TINY, dataset="wine", combiners=["ensemble_selection"], selection_metric="accuracy",
        selection_rounds=5))}
    record = recs["ensemble_selection"]
    assert record["selection_metric"] == "accuracy" and record["selection_rounds"] == 5
    assert all(w * 5 == int(w * 5) for w in weights_of(record).values())   # counts / 5


# ------------------------------------------------------------------------- no members
PLUGINS = ["ridge", "knn"]


@pytest.mark.parametrize("dataset, score, combiners", [
    ("diabetes", "rmse", None), ("wine", "nll", list(PLUGIN_HEADS))])
def test_a_trial_of_the_plugins_alone(dataset, score, combiners):
    """n_members: 0 -- D is the plug-ins' columns (classification: on the validation part,
    which still exists); no member summary is recorded; best_single predicts exactly as the
    plug-in it chose, whose competitor row is the same refit."""
    config = {"dataset": dataset, "folds": 2, "fold": 0, "n_members": 0,
              "plugin_members": PLUGINS, "competitors": []}
    if combiners:
        config["combiners"] = combiners
    recs = {r["model"]: r for r in run_trial(config)}
    task = TASKS[recs["best_single"]["task"]]
    assert set(recs) == set(config.get("combiners") or task.combiners) | set(PLUGINS)
    for name, record in recs.items():
        records.check(record)
        assert record["status"] == "ok", (name, record["error"])
        assert not any(k.startswith(("member_", "bregman_")) for k in record), name
    for name in WEIGHTED:
        w = weights_of(recs[name])
        assert list(w) == PLUGINS and min(w.values()) >= 0
    for name in ("ensemble_selection", "best_single"):
        assert sum(weights_of(recs[name]).values()) == pytest.approx(1.0, abs=SUM_TOLERANCE)
    chosen = next(n for n, w in weights_of(recs["best_single"]).items() if w == 1.0)
    assert recs["best_single"][score] == recs[chosen][score]
    assert recs["best_single"]["n_params_members"] == 0
    assert recs["best_single"]["plugin_seconds"] > 0
    if task.name == "classification":
        assert recs["stack_nnls"]["n_val"] > 0
    else:
        assert recs["g1"]["online_regime"] == "plug_in"     # no member stream to replay


def test_a_sweep_of_the_plugins_alone_plans_without_an_epsilon(tmp_path):
    """A sweep file's n_members axis takes 0 (the trials' own check refuses it without
    plug-ins); the plan names the hypotheses of such a trial, nothing runs."""
    path = tmp_path / "alone.yaml"
    path.write_text("dataset: diabetes\nfolds: 3\naxes: {n_members: [0]}\n"
                    "settings: {plugin_members: [ridge, knn]}\ncompetitors: []\n"
                    f"storage: {tmp_path / 'out'}\nmlflow: false\n")
    out = io.StringIO()
    configs = Sweep.from_yaml(path).dry_run(out)
    [alone] = [c for c in configs if c["extra"]["role"] == "ensemble"]
    assert alone["n_members"] == 0 and "epsilon" not in alone
    assert "n_members=0 plug-ins=ridge,knn role=ensemble" in out.getvalue()
    path.write_text(path.read_text().replace("settings: {plugin_members: [ridge, knn]}\n", ""))
    with pytest.raises(SweepFileError, match="alone.yaml: .*'n_members' = 0.*0 with plugin_"):
        Sweep.from_yaml(path)


@pytest.mark.parametrize("config, field, says", [
    ({"n_members": 0}, "n_members", "0 with plugin_members"),
    ({"dataset": "wine", "n_members": 0, "plugin_members": PLUGINS}, "combiners",
     "'sbfn', 'moe', 'logit_mean'"),
    ({"dataset": "digits", "n_members": 0}, "n_members", "takes no plug-ins"),
    ({"n_members": 0, "plugin_members": PLUGINS, "online_regime": "on_the_fly"},
     "online_regime", "no member stream"),
    ({"n_members": 0, "plugin_members": PLUGINS, "epsilon": 0.3}, "epsilon", "train members"),
    ({"combiners": ["sbfn_ls"], "selection_rounds": 10}, "selection_rounds",
     "ensemble_selection"),
    ({"selection_metric": "accuracy"}, "selection_metric", "classification"),
    ({"dataset": "wine", "selection_metric": "brier"}, "selection_metric", "log_loss"),
])
def test_bad_settings_are_refused_before_any_work(config, field, says):
    with pytest.raises(ConfigError, match=field) as err:
        TrialConfig.from_dict(config)
    assert says in str(err.value) and "\n" not in str(err.value)


# ------------------------------------------------------------------------- the stacker
@pytest.mark.parametrize("combiner", COMBINERS["classification"])
def test_the_stacking_classifier_takes_each_combiner_and_saves_it(combiner, tmp_path):
    X, y = load_wine(return_X_y=True)
    pairs = [("logistic", LogisticRegression(max_iter=500)), ("knn", KNeighborsClassifier())]
    fitted = SBFNStackingClassifier(pairs, cv=3, combiner=combiner).fit(X, y)
    loaded = SBFNStackingClassifier.load(fitted.save(tmp_path / "stack"))
    assert np.array_equal(loaded.predict_proba(X), fitted.predict_proba(X))
    assert fitted.score(X, y) > 0.9
    if combiner in WEIGHTED:
        assert fitted.combiner_.columns == ("logistic", "knn")
