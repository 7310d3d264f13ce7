"""``fairness_weight="auto"`` (the weight that halves the unconstrained train parity gap),
the Newton full-batch solver, and the fit's FairnessWarnings."""

import warnings

import jax
import numpy as np
import pytest
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

from fairest.datasets import make_grouped_classification
from fairest.ermi import ERMIClassifier
from fairest.ermi._auto import GAP_SHARE, parity_gap
from fairest.ermi._kernels import device_scalar
from fairest.ermi._solvers import _device_strata, _place_padded, full_batch_solve
from fairest.ermi._strata import strata_constants
from fairest.utils import FairnessWarning

SMALL = (120, 150, 200)


def many_groups(n_groups=12, n_train=4000, seed=0):
    """``n_groups`` groups, (up to) three of 120-200 training rows, group-dependent labels;
    a held-out split with the same group sizes."""
    small = SMALL[: min(len(SMALL), n_groups - 1)]
    rest = (n_train - sum(small)) / (n_groups - len(small))
    sizes = np.array([*small, *[rest] * (n_groups - len(small))])
    X, y, g = make_grouped_classification(
        n_samples=2 * n_train,
        n_features=6,
        n_groups=n_groups,
        group_proportions=sizes / sizes.sum(),
        label_bias=2.0,
        random_state=seed,
    )
    train = np.zeros(2 * n_train, dtype=bool)
    for k in range(n_groups):
        rows = np.flatnonzero(g == k)
        train[rows[: rows.size // 2]] = True
    return (X[train], y[train], g[train]), (X[~train], y[~train], g[~train])


def dp(model, X, g):
    rates = [np.mean(model.predict(X)[g == k]) for k in np.unique(g)]
    return max(rates) - min(rates)


@pytest.fixture(scope="module")
def fits():
    (X, y, g), test = many_groups()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # halved, not constant: no warning
        auto = ERMIClassifier().fit(X, y, sensitive_features=g)
    plain = ERMIClassifier(fairness_weight=0.0).fit(X, y, sensitive_features=g)
    return (X, y, g), test, auto, plain


def test_auto_halves_the_unconstrained_train_gap_on_many_groups(fits):
    """The default weight is the smallest one searched whose train demographic-parity
    difference is at most half the unconstrained fit's; the held-out gap is clearly
    smaller too. Halving this data's gap costs accuracy (the groups' log-odds differ by
    2 at equal features), but the fit keeps half of the unconstrained one's margin over
    the majority class (the search's accuracy floor)."""
    (X, y, g), (X_test, y_test, g_test), auto, plain = fits
    unconstrained = dp(plain, X, g)
    assert auto.auto_gaps_[0.0] == pytest.approx(unconstrained)
    assert dp(auto, X, g) <= GAP_SHARE * unconstrained + 1e-12
    assert auto.auto_gaps_[auto.fairness_weight_] == pytest.approx(dp(auto, X, g))
    meeting = [w for w, gap in auto.auto_gaps_.items() if gap <= GAP_SHARE * unconstrained]
    assert auto.fairness_weight_ == min(meeting)
    below = [w for w in auto.auto_gaps_ if 0 < w < auto.fairness_weight_]
    assert max(below) >= auto.fairness_weight_ / 1.2  # bisected to a factor of 4 ** (1/8)
    assert dp(auto, X_test, g_test) < 0.75 * dp(plain, X_test, g_test)
    accuracy = [np.mean(m.predict(X) == y) for m in (auto, plain)]
    majority = max(np.mean(y), 1 - np.mean(y))
    assert accuracy[0] >= majority + 0.5 * (accuracy[1] - majority)
    assert auto.auto_accuracies_[auto.fairness_weight_] == pytest.approx(accuracy[0])


def test_verbose_logs_the_search(caplog):
    import logging

    (X, y, g), _ = many_groups(n_groups=3, n_train=1500)
    with caplog.at_level(logging.INFO, logger="fairest"):
        model = ERMIClassifier(verbose=1).fit(X, y, sensitive_features=g)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    solved = f"[ERMIClassifier] full batch at fairness_weight {model.fairness_weight_:.4g}:"
    assert lines[0].startswith(solved)
    assert lines[1].startswith("[ERMIClassifier] fairness_weight='auto': ")
    assert "train parity gaps 0: " in lines[1]


def test_a_number_keeps_its_meaning(fits):
    """fairness_weight=2.0 fits the FERMI objective at lambda = 2: Newton's minimiser is
    L-BFGS's (the full-batch solver before), and no search runs."""
    (X, y, g), _, _, _ = fits
    model = ERMIClassifier(fairness_weight=2.0).fit(X, y, sensitive_features=g)
    assert model.fairness_weight_ == 2.0 and not hasattr(model, "auto_gaps_")
    n = X.shape[0]
    codes = g.astype(np.int32)
    strata, _, _ = strata_constants(np.zeros(n, np.int32), codes, np.ones(n), 1, 12, "uniform")
    with jax.enable_x64(True):
        rows = _place_padded(X, y.astype(np.int32), codes, np.zeros(n, np.int32), np.ones(n))
        theta, objective, *_ = full_batch_solve(
            np.zeros((X.shape[1] + 1, 1)),
            *rows,
            _device_strata(strata),
            device_scalar(2.0),
            device_scalar(model.alpha),
            1e-8,
            5000,
            binary=True,
        )
    assert model.objective_ == pytest.approx(objective, rel=1e-10)
    np.testing.assert_allclose(model.coef_.ravel(), theta[1:, 0], atol=1e-5)
    assert model.n_iter_ < 30  # Newton iterations (L-BFGS takes hundreds)


def test_auto_halves_the_equalized_odds_gap():
    (X, y, g), _ = many_groups(n_groups=4, n_train=2000, seed=1)
    plain = ERMIClassifier(fairness_weight=0.0, metric="equalized_odds").fit(
        X, y, sensitive_features=g
    )
    auto = ERMIClassifier(metric="equalized_odds").fit(X, y, sensitive_features=g)
    gap = [equalized_odds_difference(y, m.predict(X), sensitive_features=g) for m in (auto, plain)]
    assert gap[0] <= GAP_SHARE * gap[1] + 1e-12
    assert auto.auto_gaps_[0.0] == pytest.approx(gap[1])


def test_parity_gap_is_fairlearns_difference():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    g = rng.integers(0, 4, 300)
    y = rng.integers(0, 2, 300)
    w = rng.uniform(0.5, 2.0, 300)
    theta = rng.normal(size=(4, 1))
    pred = (X @ theta[1:, 0] + theta[0, 0] >= 0).astype(int)
    ones = np.zeros(300, int)
    assert parity_gap(theta, X, ones, g, w, 4)[0] == pytest.approx(
        demographic_parity_difference(y, pred, sensitive_features=g, sample_weight=w)
    )
    assert parity_gap(theta, X, y, g, w, 4)[0] == pytest.approx(
        equalized_odds_difference(y, pred, sensitive_features=g, sample_weight=w)
    )


def test_private_fits_and_streams_use_the_fixed_weight():
    """A private fit cannot search (the search reads the groups without noise) and a
    stream has no whole training set: both use the paper's 1.0."""
    (X, y, g), _ = many_groups(n_groups=3, n_train=1500)
    private = ERMIClassifier(dp_epsilon=5.0, n_epochs=1, random_state=0).fit(
        X, y, sensitive_features=g
    )
    assert private.fairness_weight_ == 1.0 and not hasattr(private, "auto_gaps_")
    stream = ERMIClassifier(solver="sgda", random_state=0).partial_fit(
        X, y, sensitive_features=g, classes=[0, 1]
    )
    assert stream.fairness_weight_ == 1.0


def test_sgda_fits_at_the_searched_weight():
    (X, y, g), _ = many_groups(n_groups=3, n_train=1500)
    full = ERMIClassifier().fit(X, y, sensitive_features=g)
    sgda = ERMIClassifier(solver="sgda", n_epochs=5, random_state=0).fit(X, y, sensitive_features=g)
    assert sgda.fairness_weight_ == full.fairness_weight_ > 0
    assert sgda.auto_gaps_ == full.auto_gaps_


def test_no_groups_means_no_penalty_and_no_search():
    (X, y, _), _ = many_groups(n_groups=3, n_train=600)
    with pytest.warns(UserWarning):
        model = ERMIClassifier().fit(X, y)
    assert model.fairness_weight_ == 0.0 and not hasattr(model, "auto_gaps_")


def test_auto_that_cannot_halve_the_gap_warns_with_the_groups():
    """A group of 12 rows out of 2,412, all labelled 1 and predicted 1: ERMI weighs it by
    its share (0.5 %), so only weights that drive the model towards predicting 0
    everywhere shrink the gap it holds, and those fall below the accuracy floor (half of
    the unconstrained fit's margin over the majority class). The smallest gap above the
    floor is used; the warning names the group, its size and rate, and the floor."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2412, 3))
    g = np.r_[np.zeros(1200, int), np.ones(1200, int), np.full(12, 2)]
    X[g == 1, 0] += 1.0
    y = (X[:, 0] + 0.5 * rng.normal(size=2412) > 0.5).astype(int)
    X[g == 2, 0] += 3.0
    y[g == 2] = 1
    with pytest.warns(FairnessWarning, match="did not halve") as record:
        model = ERMIClassifier().fit(X, y, sensitive_features=g)
    message = str(next(w.message for w in record if "did not halve" in str(w.message)))
    assert "2 (12 rows, rate 1.000)" in message and "accuracy falls below" in message
    gaps, accuracies = model.auto_gaps_, model.auto_accuracies_
    floor = [w for w in gaps if accuracies[w] < accuracies[0.0] - 0.1]
    assert floor and min(floor) > model.fairness_weight_
    kept = [w for w in gaps if w < min(floor)]
    assert model.fairness_weight_ == min(kept, key=lambda w: (gaps[w], w))
    assert gaps[model.fairness_weight_] > GAP_SHARE * gaps[0.0]


def test_a_nearly_constant_model_warns_with_the_figures():
    """Features that only say the group: any group-blind model that is not constant
    treats the groups apart, so a large weight makes the fit (nearly) constant."""
    rng = np.random.default_rng(0)
    g = rng.integers(0, 2, 1000)
    X = (g + 0.01 * rng.normal(size=1000))[:, None]
    y = (rng.random(1000) < np.where(g == 1, 0.8, 0.3)).astype(int)
    with pytest.warns(FairnessWarning, match="predicts one class nearly everywhere") as record:
        ERMIClassifier(fairness_weight=1e4).fit(X, y, sensitive_features=g)
    message = str(next(w.message for w in record if "nearly everywhere" in str(w.message)))
    assert "fairness_weight=1e+04" in message and "by group" in message
