"""certify_fairness and FairnessCertificate on any fitted scikit-learn model."""

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import demographic_parity_difference, equalized_odds_ratio
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from fairest.certified import FairnessCertificate, certify_fairness, fairness_interval
from fairest.datasets import make_grouped_classification


@pytest.fixture(scope="module")
def fitted():
    X, y, groups = make_grouped_classification(n_samples=6000, n_features=5, random_state=0)
    y = np.where(y == 1, "yes", "no")
    model = LogisticRegression().fit(X[:3000], y[:3000])
    return model, X[3000:], y[3000:], groups[3000:]


def test_certificate_matches_the_intervals_and_the_delta_split(fitted):
    model, X, y, groups = fitted
    constraints = [("demographic_parity_difference", 0.9), ("equalized_odds_ratio", 0.01)]
    certificate = certify_fairness(
        model, X, y, sensitive_features=groups, constraints=constraints, delta=0.1
    )
    assert isinstance(certificate, FairnessCertificate)
    assert certificate.passed and certificate.exact and certificate.n_certification == 3000
    y01, pred01 = (y == "yes").astype(int), (model.predict(X) == "yes").astype(int)
    for result, (metric, tolerance) in zip(certificate.constraints, constraints):
        assert result.delta_share == pytest.approx(0.05)  # delta split over 2 constraints
        interval = fairness_interval(metric, y01, pred01, sensitive_features=groups, delta=0.05)
        assert result.upper_bound == pytest.approx(interval.upper)
        assert result.tolerance == tolerance
    dp, ratio = certificate.constraints
    assert dp.estimate == pytest.approx(
        demographic_parity_difference(y01, pred01, sensitive_features=groups)
    )
    assert ratio.estimate == pytest.approx(
        equalized_odds_ratio(y01, pred01, sensitive_features=groups)
    )
    assert dp.certified_bound == dp.upper_bound and ratio.certified_bound == ratio.lower_bound
    np.testing.assert_array_equal(dp.group_count[0], np.bincount(groups))


def test_repr_states_the_promise_in_one_sentence(fitted):
    model, X, y, groups = fitted
    certificate = certify_fairness(
        model,
        X,
        y,
        sensitive_features=groups,
        constraints=[("demographic_parity_difference", 0.01)],
    )
    text = repr(certificate)
    assert text.startswith("FairnessCertificate(failed): With probability at least 0.95")
    assert "3,000 held-out rows" in text and "NOT certified" in text
    assert text.count(". ") == 0 and text.endswith("is NOT certified.")  # one sentence
    assert "exact Clopper-Pearson" in text


def test_to_frame(fitted):
    model, X, y, groups = fitted
    certificate = certify_fairness(
        model,
        X,
        y,
        sensitive_features=groups,
        random_state=3,
        constraints={"equalized_odds_difference": 0.5, "demographic_parity_ratio": 0.5},
    )
    frame = certificate.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 2
    assert list(frame["relation"]) == ["<=", ">="]
    assert set(frame["random_state"]) == {3}
    per_group = certificate.to_frame(per_group=True)
    assert len(per_group) == 2 * 2 + 1 * 2  # (tpr, fpr) x 2 groups + selection x 2 groups
    assert (per_group["lower"] <= per_group["estimate"]).all()
    assert (per_group["estimate"] <= per_group["upper"]).all()


def test_approximate_bound_and_comparisons_are_stated(fitted):
    model, X, y, groups = fitted
    certificate = certify_fairness(
        model,
        X,
        y,
        sensitive_features=groups,
        bound="student-t",
        n_comparisons=4,
        constraints=[("demographic_parity_difference", 0.5)],
    )
    assert not certificate.exact
    assert certificate.constraints[0].delta_share == pytest.approx(0.05 / 4)
    assert "approximate" in repr(certificate) and "4 compared models" in repr(certificate)


def test_any_model_and_log_loss_gap(fitted):
    model, X, y, groups = fitted
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X[:1000], y[:1000])
    certificate = certify_fairness(
        tree,
        X[1000:],
        y[1000:],
        sensitive_features=groups[1000:],
        bound="bernstein",
        constraints=[("log_loss_gap", 1.0), ("zero_one_loss_gap", 0.5)],
    )
    assert certificate.constraints[0].metric == "log_loss_gap"
    with pytest.raises(ValueError, match="0/1 outcomes only"):
        certify_fairness(tree, X, y, sensitive_features=groups, constraints=[("log_loss_gap", 1.0)])


def test_post_hoc_coverage_on_a_known_population():
    """A fixed model and many fresh test sets from a known population: its true DP gap
    exceeds the certified upper bound in at most delta of them."""
    rng = np.random.default_rng(0)
    model = LogisticRegression().fit(rng.normal(size=(50, 1)), rng.integers(0, 2, 50))
    # population: x in {-1, 1}, P(x = 1 | group) = (0.3, 0.5); the model is a threshold
    predicted = model.predict(np.array([[-1.0], [1.0]]))
    p_one = np.array([0.3, 0.5])
    rates = p_one * (predicted[1] == 1) + (1 - p_one) * (predicted[0] == 1)
    truth = np.ptp(rates)
    misses, draws = 0, 400
    for _ in range(draws):
        groups = rng.integers(0, 2, 400)
        x = np.where(rng.random(400) < p_one[groups], 1.0, -1.0)[:, None]
        certificate = certify_fairness(
            model,
            x,
            rng.integers(0, 2, 400),
            sensitive_features=groups,
            constraints=[("demographic_parity_difference", 1.0)],
            delta=0.1,
        )
        misses += truth > certificate.constraints[0].upper_bound
    assert stats.binom.sf(misses - 1, draws, 0.1) > 1e-3


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"constraints": []}, "constraints is empty"),
        ({"constraints": [("accuracy", 0.1)]}, "unknown metric"),
        ({"constraints": [("demographic_parity_difference", 2.0)]}, "must be a number in"),
        ({"constraints": "demographic_parity_difference"}, "pairs"),
        ({"delta": 0}, "delta must be a probability"),
        ({"bound": "wilson"}, "bound must be one of"),
        ({"n_comparisons": 0}, "n_comparisons"),
    ],
)
def test_bad_inputs(fitted, kwargs, match):
    model, X, y, groups = fitted
    arguments = {"constraints": [("demographic_parity_difference", 0.1)], **kwargs}
    with pytest.raises(ValueError, match=match) as error:
        certify_fairness(model, X, y, sensitive_features=groups, **arguments)
    assert len(str(error.value)) < 500


def test_length_mismatch(fitted):
    model, X, y, groups = fitted
    with pytest.raises(ValueError, match="same length"):
        certify_fairness(
            model,
            X,
            y,
            sensitive_features=groups[:-1],
            constraints=[("demographic_parity_difference", 0.1)],
        )
