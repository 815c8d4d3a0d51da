"""SBFNClassifier: scikit-learn classifier API over image arrays."""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sbfn_dist.classifier_estimator import COMBINERS, SBFNClassifier
from sbfn_dist.errors import ConfigError, DataError


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X.reshape(-1, 8, 8), y, test_size=0.3, random_state=0, stratify=y)


@pytest.mark.parametrize("combiner", COMBINERS)
def test_learns_digits_with_every_combiner(digits, combiner):
    X_tr, X_te, y_tr, y_te = digits
    clf = SBFNClassifier(n_members=3, epochs=8, combiner=combiner, random_state=0).fit(X_tr, y_tr)
    proba = clf.predict_proba(X_te)
    assert proba.shape == (len(X_te), 10) and np.allclose(proba.sum(1), 1, atol=1e-5)
    assert clf.score(X_te, y_te) > 0.5


def test_labels_keep_their_own_values(digits):
    X_tr, X_te, y_tr, _ = digits
    names = np.array(list("abcdefghij"))
    clf = SBFNClassifier(n_members=2, epochs=1, combiner="logit_mean").fit(X_tr, names[y_tr])
    assert set(clf.predict(X_te)) <= set(names)


def test_same_random_state_same_predictions(digits):
    X_tr, X_te, y_tr, _ = digits
    runs = [SBFNClassifier(n_members=2, epochs=1, random_state=3).fit(X_tr, y_tr).predict_proba(X_te)
            for _ in range(2)]
    np.testing.assert_allclose(runs[0], runs[1])


def test_bad_inputs_are_clear_errors(digits):
    X_tr, _, y_tr, _ = digits
    with pytest.raises(DataError, match="shape"):
        SBFNClassifier().fit(X_tr.reshape(len(X_tr), -1), y_tr)
    with pytest.raises(ConfigError, match="combiner"):
        SBFNClassifier(combiner="vote").fit(X_tr, y_tr)
    with pytest.raises(DataError, match="two classes"):
        SBFNClassifier().fit(X_tr, np.zeros(len(X_tr)))
