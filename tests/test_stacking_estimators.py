"""Specification of sbfn_dist.interfaces.stacking_estimators: SBFNStackingRegressor and
SBFNStackingClassifier, the s-BFN as the final combiner over a user's own estimators. A fit is
one fold of run_trial's loop with the estimators as plug-ins (checked against run_trial's
records and against the library's combiner on an out-of-fold matrix computed here with
scikit-learn); learning is judged against the trivial predictor on the same held-out rows."""

import inspect

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import (GridSearchCV, KFold, StratifiedKFold, cross_val_predict,
                                     train_test_split)
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from sbfn_dist import SBFNStackingClassifier, SBFNStackingRegressor, run_trial
from sbfn_dist.combiners.ensembles import fit_stacked_head
from sbfn_dist.combiners.sbfn_ls import fit_lambda_path
from sbfn_dist.data.preprocess import FoldScaler
from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.evaluation.metrics import regression_metrics
from sbfn_dist.folds import load_data, make_parts
from sbfn_dist.interfaces.stacking_estimators import COMBINERS
from sbfn_dist.runtime import fold_seed
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.fields import defaults


def regressors():
    return [("ridge", Ridge()), ("knn", KNeighborsRegressor())]


def classifiers():
    return [("logistic", LogisticRegression()), ("knn", KNeighborsClassifier())]


MEMBERS = dict(n_members=2, epochs=5, width=16)
# 20 epochs: the members are then good enough for check_classifiers_train with room to spare.
CLF_MEMBERS = dict(MEMBERS, epochs=20)
# The head's default (at least 1000 steps) made the classifier's ~50 checks take 35 s each
# set; 20 epochs of the checks' ~100 rows pass them all (10 did too), in a sixth of the time.
CHECKED_HEAD = dict(head_epochs=20)


@parametrize_with_checks([SBFNStackingRegressor(estimators=regressors()),
                          SBFNStackingRegressor(estimators=regressors(), **MEMBERS),
                          SBFNStackingClassifier(estimators=classifiers(), **CHECKED_HEAD),
                          SBFNStackingClassifier(estimators=classifiers(), **CLF_MEMBERS,
                                                 **CHECKED_HEAD)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def split(load, stratify: bool = True):
    """(X_train, X_test, y_train, y_test) of a bundled set: 30% held out, stratified by class."""
    X, y = load(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y if stratify else None)


@pytest.fixture(scope="module")
def diabetes():
    return split(load_diabetes, stratify=False)


@pytest.fixture(scope="module")
def wine():
    return split(load_wine)


# ------------------------------------------------------------------------- one fold loop
def test_the_regressor_is_one_fold_of_run_trial_with_plugins_to_the_bit():
    """A trial whose plug-ins are k-NN and ridge at the registry's defaults, and the estimator
    given the same two models, the trial's member settings and the fold's seed: the same test
    RMSE, bit for bit. A second copy of the out-of-fold columns, the members or the s-BFN would
    change the bits."""
    config = dict(dataset="diabetes", folds=3, fold=1, seed=1, n_members=3, epochs=2,
                  batch_size=8, init_scale=1.0, dtype="float64", device="cpu", lambda2=[0.5],
                  combiners=["sbfn_ls_linear"], plugin_members=["knn", "ridge"], plugin_folds=4)
    cfg = TrialConfig.from_dict(config)
    data = load_data(cfg)
    train, test = make_parts(cfg, data)[1]
    [record] = [r for r in run_trial(config) if r["model"] == "sbfn_ls_linear"]
    model = SBFNStackingRegressor(
        estimators=[("knn", KNeighborsRegressor()), ("ridge", Ridge(alpha=1.0))], cv=4,
        lambda2=0.5, n_members=3, epochs=2, batch_size=8, init_scale=1.0,
        random_state=fold_seed(1, 1)).fit(data.X[train], data.y[train])
    assert regression_metrics(data.y[test], model.predict(data.X[test]))["rmse"] == record["rmse"]


def test_the_regressor_s_combiner_is_the_library_s_on_the_out_of_fold_matrix(diabetes):
    """The out-of-fold matrix computed here by scikit-learn's cross_val_predict on the same
    folds, the closed-form s-BFN (sbfn_ls_linear) fitted on it by the library: the estimator's
    coefficients and predictions, to float64 rounding."""
    X_tr, X_te, y_tr, y_te = diabetes
    folds = KFold(5, shuffle=True, random_state=3)
    model = SBFNStackingRegressor(estimators=regressors(), cv=folds, lambda2=2.0).fit(X_tr, y_tr)
    scaler = FoldScaler().fit(X_tr, y_tr)
    x, y, x_te = scaler.transform_X(X_tr), scaler.transform_y(y_tr), scaler.transform_X(X_te)
    D = np.column_stack([cross_val_predict(e, x, y, cv=folds) for _, e in regressors()])
    [alone] = fit_lambda_path(D, y, [2.0], basis="member", intercept=True, linear=True)
    D_te = np.column_stack([e.fit(x, y).predict(x_te) for _, e in regressors()])
    np.testing.assert_allclose(model.combiner_.coef_, alone.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.predict(X_te), scaler.inverse_y(alone.predict(D_te)),
                               rtol=1e-9)


def test_the_classifier_s_head_is_algorithm_2_on_the_out_of_fold_probabilities(wine):
    """The estimators' out-of-fold class probabilities computed here (cross_val_predict, the
    same stratified folds), the s-BFN head fitted on them by the library's stacking fit: the
    estimator's head predicts the same probabilities. The head trains in float32 on the same
    inputs; 1e-6 is float32's rounding of probabilities."""
    X_tr, X_te, y_tr, y_te = wine
    folds = StratifiedKFold(5, shuffle=True, random_state=3)
    model = SBFNStackingClassifier(estimators=classifiers(), cv=folds).fit(X_tr, y_tr)
    scaler = FoldScaler().fit(X_tr)
    x, x_te = scaler.transform_X(X_tr), scaler.transform_X(X_te)
    D = np.stack([cross_val_predict(e, x, y_tr, cv=folds, method="predict_proba")
                  for _, e in classifiers()], axis=1)
    settings = defaults("classification", "tabular", estimator=True)
    head = fit_stacked_head("sbfn_stacked", settings.get, torch.as_tensor(D, dtype=torch.float32),
                            torch.as_tensor(y_tr), seed=0)
    D_te = np.stack([e.fit(x, y_tr).predict_proba(x_te) for _, e in classifiers()], axis=1)
    expected = head.predict_proba_eval(torch.as_tensor(D_te, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(model.predict_proba(X_te), expected, atol=1e-6)


# ------------------------------------------------------------------------- learning
def test_the_regressor_beats_the_training_mean_on_held_out_diabetes(diabetes):
    X_tr, X_te, y_tr, y_te = diabetes
    rmse = lambda pred: np.sqrt(np.mean((y_te - pred) ** 2))  # noqa: E731
    model = SBFNStackingRegressor(estimators=regressors()).fit(X_tr, y_tr)
    # measured 0.71 of the mean's RMSE; the mean itself (a useless model) is 1.0
    assert rmse(model.predict(X_te)) < 0.85 * rmse(y_tr.mean())


@pytest.mark.parametrize("load", [load_wine, load_breast_cancer])
def test_the_classifier_beats_the_majority_class(load):
    X_tr, X_te, y_tr, y_te = split(load)
    values, counts = np.unique(y_tr, return_counts=True)
    majority = np.mean(y_te == values[counts.argmax()])      # wine 0.40, breast cancer 0.63
    accuracy = np.mean(SBFNStackingClassifier(estimators=classifiers()).fit(X_tr, y_tr)
                       .predict(X_te) == y_te)
    assert accuracy > 0.9 and accuracy > majority + 0.25     # measured 0.96 / 0.97


def test_members_join_the_estimators_as_hypotheses(diabetes, wine):
    """With n_members = M the s-BFN sees M + P hypotheses: sbfn_ls_linear one unit and one raw
    column per hypothesis, the classifier's head M + P probability vectors."""
    X_tr, _, y_tr, _ = diabetes
    reg = SBFNStackingRegressor(estimators=regressors(), **MEMBERS).fit(X_tr, y_tr)
    assert reg.combiner_.coef_.shape == (2 * (2 + 2),) and reg.members_.n_parameters > 0
    X_tr, _, y_tr, _ = wine
    clf = SBFNStackingClassifier(estimators=classifiers(), **CLF_MEMBERS).fit(X_tr, y_tr)
    assert clf.combiner_.n_hypotheses == 2 + 2


# ------------------------------------------------------------------------- scikit-learn
def test_pipeline_and_grid_search_reach_the_s_bfn_and_the_estimators(diabetes):
    X_tr, X_te, y_tr, _ = diabetes
    pipe = make_pipeline(StandardScaler(), SBFNStackingRegressor(estimators=regressors()))
    grid = {"sbfnstackingregressor__lambda2": [0.0, 10.0],
            "sbfnstackingregressor__knn__n_neighbors": [3, 15]}
    search = GridSearchCV(pipe, grid, cv=3).fit(X_tr, y_tr)
    assert search.predict(X_te).shape == (len(X_te),)
    best = search.best_estimator_[-1]
    chosen = search.best_params_
    assert best.lambda2 == chosen["sbfnstackingregressor__lambda2"]
    assert (best.named_estimators_["knn"].n_neighbors
            == chosen["sbfnstackingregressor__knn__n_neighbors"])
    assert len(search.cv_results_["params"]) == 4


def test_grid_search_over_the_classifier(wine):
    X_tr, X_te, y_tr, y_te = wine
    search = GridSearchCV(SBFNStackingClassifier(estimators=classifiers()),
                          {"temperature": [1.0, 3.0]}, cv=3).fit(X_tr, y_tr)
    assert search.best_params_["temperature"] in (1.0, 3.0)
    assert np.mean(search.predict(X_te) == y_te) > 0.9


# Names users give their estimators (scikit-learn's user guide and examples; "lr" for a
# LogisticRegression above all): none may be a parameter of the stackers.
COMMON_NAMES = ("lr", "logreg", "logistic", "linear", "rf", "forest", "knn", "svm", "svc", "svr",
                "gb", "gbr", "gbc", "hgb", "xgb", "lgbm", "cat", "et", "dt", "tree", "nb", "gnb",
                "mlp", "nn", "ridge", "lasso", "enet", "sgd", "ada", "lda", "qda", "gp", "kr")


@pytest.mark.parametrize("Stack", [SBFNStackingRegressor, SBFNStackingClassifier])
def test_no_parameter_is_a_name_users_give_their_estimators(Stack):
    assert not set(COMMON_NAMES) & set(inspect.signature(Stack).parameters)


def test_an_estimator_named_lr_and_estimators_by_position_are_taken_as_scikit_learn_does(
        diabetes, wine):
    """StackingClassifier([("lr", LogisticRegression()), ...], cv=3) works; before issue 32 the
    s-BFN stackers refused "lr" at fit (the members' learning rate was `lr`) and took
    `estimators` by keyword only (a TypeError). Its parameters are reached as scikit-learn's."""
    X_tr, X_te, y_tr, y_te = wine
    clf = SBFNStackingClassifier([("lr", LogisticRegression()), ("knn", KNeighborsClassifier())],
                                 cv=3, n_members=2, epochs=2, lr_theta=0.05)
    clf.set_params(lr__C=0.5).fit(X_tr, y_tr)
    assert clf.named_estimators_["lr"].C == 0.5 and clf.get_params()["lr_theta"] == 0.05
    assert np.mean(clf.predict(X_te) == y_te) > 0.9
    X_tr, X_te, y_tr, y_te = diabetes
    reg = SBFNStackingRegressor([("lr", LinearRegression()), ("knn", KNeighborsRegressor())],
                                cv=3).fit(X_tr, y_tr)
    assert list(reg.named_estimators_) == ["lr", "knn"]


def test_an_estimator_named_like_a_parameter_is_refused_naming_the_fix(diabetes):
    X_tr, _, y_tr, _ = diabetes
    with pytest.raises(ValueError, match=r"estimator names \['epsilon'\] are parameters of "
                       "SBFNStackingRegressor .*rename the estimators, e.g. 'epsilon_model'"):
        SBFNStackingRegressor([("epsilon", Ridge())]).fit(X_tr, y_tr)


def test_a_dropped_estimator_takes_no_part(diabetes):
    X_tr, _, y_tr, _ = diabetes
    model = SBFNStackingRegressor(estimators=regressors()).set_params(knn="drop").fit(X_tr, y_tr)
    assert list(model.named_estimators_) == ["ridge"] and len(model.estimators_) == 1
    assert model.combiner_.coef_.shape == (2,)      # one unit and one raw column


def test_several_targets_are_refused_in_one_line(diabetes):
    X_tr, _, y_tr, _ = diabetes
    with pytest.raises(ValueError, match="y should be a 1d array"):
        SBFNStackingRegressor(estimators=regressors()).fit(X_tr, np.column_stack([y_tr, y_tr]))


# ------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("params, error, match", [
    ({"cv": 1}, ConfigError, "'cv' = 1 .* an integer >= 2"),
    ({"combiner": "g1"}, ConfigError, "sbfn_ls_linear.*sbfn_rbf"),
    ({"n_members": -1}, ConfigError, "n_members"),
    ({"lambda2": -1.0}, ConfigError, "lambda2")])
def test_bad_parameters_are_one_clear_error(diabetes, params, error, match):
    X_tr, _, y_tr, _ = diabetes
    with pytest.raises(error, match=match):
        SBFNStackingRegressor(estimators=regressors(), **params).fit(X_tr, y_tr)


def test_a_classifier_without_probabilities_is_refused(wine):
    X_tr, _, y_tr, _ = wine
    with pytest.raises(ValueError, match="'svc' .*SVC.* has no predict_proba"):
        SBFNStackingClassifier(estimators=[("svc", SVC())]).fit(X_tr, y_tr)


def test_fewer_rows_than_folds_name_cv_and_the_rows():
    X, y = np.random.default_rng(0).normal(size=(3, 2)), np.arange(3.0)
    with pytest.raises(DataError, match="cv=5 .*n_samples=3"):
        SBFNStackingRegressor(estimators=regressors()).fit(X, y)


# ------------------------------------------------------------------------- saved and loaded
@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_a_saved_stack_loads_and_predicts_identically(kind, diabetes, wine, tmp_path):
    """Members, combiner, scaler and the given estimators (through skops' trusted types) come
    back; the loaded stack predicts to the bit."""
    Stack, data, given = {"regressor": (SBFNStackingRegressor, diabetes, regressors()),
                          "classifier": (SBFNStackingClassifier, wine, classifiers())}[kind]
    X_train, X_test, y_train, _ = data
    fitted = Stack(estimators=given, cv=3, **MEMBERS).fit(X_train, y_train)
    loaded = Stack.load(fitted.save(tmp_path / "stack"))
    predict = "predict" if kind == "regressor" else "predict_proba"
    assert np.array_equal(getattr(loaded, predict)(X_test), getattr(fitted, predict)(X_test))
    assert loaded.get_params()["cv"] == 3 and type(loaded) is Stack
    # saved before issue 32, the members' learning rate was the parameter `lr`
    manifest = tmp_path / "stack" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"lr_theta":', '"lr":'))
    assert Stack.load(tmp_path / "stack").get_params()["lr_theta"] == fitted.lr_theta


@pytest.mark.parametrize("combiner", COMBINERS["regression"])
def test_every_combiner_of_the_regressor_saves(combiner, diabetes, tmp_path):
    """Each final combiner the regressor offers comes back from its saved directory (the
    inner-CV RBF one too), predicting to the bit."""
    X_train, X_test, y_train, _ = diabetes
    fitted = SBFNStackingRegressor(estimators=regressors(), cv=3, n_members=0,
                                   combiner=combiner).fit(X_train, y_train)
    loaded = SBFNStackingRegressor.load(fitted.save(tmp_path / "stack"))
    assert np.array_equal(loaded.predict(X_test), fitted.predict(X_test))
