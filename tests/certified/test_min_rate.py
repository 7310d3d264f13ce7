"""certify_min_rate: the certificate of a rate floor (the promise of levelling up).

Oracle: a finite population whose every group's recall is known exactly. A model that
misses the floor in one group must be certified in at most ``delta`` of the held-out
draws (binomial margin stated); the same check rejects a broken variant that compares
the point estimates with the floor; a model above the floor in every group is certified
in most draws (power).
"""

import numpy as np
import pytest
from scipy import stats

from fairest.certified import certify_min_rate


class FixedPredictions:
    """A 'model' whose prediction of a row is stored in its first feature."""

    classes_ = np.array([0, 1])

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)


def _population(recalls, positives=4000, negatives=4000, seed=0):
    """Rows of len(recalls) groups; group g's recall is exactly recalls[g]."""
    rng = np.random.default_rng(seed)
    pred, y, g = [], [], []
    for group, recall in enumerate(recalls):
        hits = int(round(recall * positives))
        pred += [1] * hits + [0] * (positives - hits) + list(rng.integers(0, 2, negatives))
        y += [1] * positives + [0] * negatives
        g += [group] * (positives + negatives)
    return np.array(pred)[:, None], np.array(y), np.array(g)


def _certified_share(recalls, min_rate, certify, draws=300, rows=1500, delta=0.05):
    X, y, g = _population(recalls)
    rng = np.random.default_rng(1)
    passed = 0
    for _ in range(draws):
        take = rng.choice(y.size, rows * len(recalls), replace=False)
        passed += certify(X[take], y[take], g[take], min_rate, delta)
    return passed / draws


def _exact(X, y, g, min_rate, delta):
    model = FixedPredictions()
    return certify_min_rate(
        model, X, y, sensitive_features=g, min_rate=min_rate, delta=delta
    ).passed


def _point_estimate(X, y, g, min_rate, delta):
    """Broken: the held-out recall of every group compared with the floor, no bound."""
    pred = FixedPredictions().predict(X)
    return all(pred[(g == k) & (y == 1)].mean() >= min_rate for k in np.unique(g))


# at most delta = 0.05 of 300 draws, with a binomial margin: P(Binomial(300, 0.05) > 27)
# is below 1e-3, so a valid certificate exceeds 27 / 300 with probability below 1e-3
LIMIT = stats.binom.ppf(1 - 1e-3, 300, 0.05) / 300


@pytest.mark.parametrize("certify, valid", [(_exact, True), (_point_estimate, False)])
def test_a_model_missing_the_floor_in_one_group_is_rarely_certified(certify, valid):
    missing = [0.9, 0.9, 0.79]  # the third group's population recall is below 0.8
    share = _certified_share(missing, 0.8, certify)
    assert (share <= LIMIT) == valid, share


def test_a_model_above_the_floor_is_certified_in_most_draws():
    assert _certified_share([0.9, 0.9, 0.86], 0.8, _exact) > 0.8


def test_certificate_reports_every_group_and_refuses_bad_arguments():
    X, y, g = _population([0.9, 0.7])
    certificate = certify_min_rate(
        FixedPredictions(), X, y, sensitive_features=g, min_rate=0.8, rate="recall"
    )
    frame = certificate.to_frame()
    assert not certificate.passed and list(frame["certified"]) == [True, False]
    np.testing.assert_allclose(frame["estimate"], [0.9, 0.7])
    assert (frame["lower"] < frame["estimate"]).all()
    assert "is not certified" in certificate.promise()
    selection = certify_min_rate(
        FixedPredictions(), X, y, sensitive_features=g, min_rate=0.3, rate="selection_rate"
    )
    np.testing.assert_allclose(selection.estimate, [(0.9 + 0.5) / 2, (0.7 + 0.5) / 2], atol=0.02)
    with pytest.raises(ValueError, match="rate must be one of"):
        certify_min_rate(FixedPredictions(), X, y, sensitive_features=g, min_rate=0.8, rate="tpr")
    with pytest.raises(ValueError, match="min_rate must be"):
        certify_min_rate(FixedPredictions(), X, y, sensitive_features=g, min_rate=1.5)


def test_levelling_up_model_is_certified_on_held_out_rows():
    """The fitted LevellingUpClassifier's floor, certified on rows it was not fitted on."""
    from sklearn.linear_model import LogisticRegression

    from fairest.postprocessing import LevellingUpClassifier

    rng = np.random.default_rng(4)
    g = rng.choice(["a", "b"], 20000)
    X = rng.normal(size=(20000, 2)) + (g == "a")[:, None]
    y = (X[:, 0] + rng.normal(size=20000) > 0.8).astype(int)
    clf = LevellingUpClassifier(LogisticRegression(), min_rate=0.85).fit(
        X[:10000], y[:10000], sensitive_features=g[:10000]
    )
    certificate = certify_min_rate(
        clf, X[10000:], y[10000:], sensitive_features=g[10000:], min_rate=0.8
    )
    assert certificate.passed, certificate
