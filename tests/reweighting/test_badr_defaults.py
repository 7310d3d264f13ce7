"""BADR's defaults on many groups, some small: demographic parity, smoothing temperatures
(10, 50) and the weight cap ``max_weight_ratio=5`` (the capped simplex of ``_capped``)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize

from fairest._kernels._projections import project_simplex
from fairest.datasets import make_grouped_classification
from fairest.metrics import smooth_demographic_parity
from fairest.reweighting import BADRClassifier, GroupWeightedClassifier
from fairest.reweighting._badr_metrics import MetricSpec, smooth_unfairness
from fairest.reweighting._capped import (
    capped_vertex,
    project_capped,
    project_capped_host,
    weight_caps,
)
from fairest.reweighting._common import baseline_weights, build_metric_spec

SMALL = (120, 150, 200)  # rows of the three small groups of every training split


def many_groups(n_groups=12, n_train=6000, seed=0):
    """``n_groups`` groups, three of them of 120-200 training rows, biased labels (group
    intercepts apart by 2 in log-odds, small feature shifts, so reweighting can move the
    selection rates); the same group sizes in a held-out split of the same size."""
    rest = (n_train - sum(SMALL)) / (n_groups - len(SMALL))
    sizes = np.array([*SMALL, *[rest] * (n_groups - len(SMALL))])
    X, y, g = make_grouped_classification(
        n_samples=2 * n_train,
        n_features=6,
        n_groups=n_groups,
        group_proportions=sizes / sizes.sum(),
        group_bias=0.5,
        label_bias=2.0,
        class_sep=1.0,
        random_state=seed,
    )
    train = np.zeros(2 * n_train, dtype=bool)
    for k in range(n_groups):  # the first half of every group's rows
        rows = np.flatnonzero(g == k)
        train[rows[: rows.size // 2]] = True
    return (X[train], y[train], g[train]), (X[~train], y[~train], g[~train])


def dp_difference(y_pred, groups):
    rates = [np.mean(y_pred[groups == k]) for k in np.unique(groups)]
    return max(rates) - min(rates)


@pytest.fixture(scope="module")
def fitted():
    (X, y, g), test = many_groups()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at the defaults on this data
        badr = BADRClassifier().fit(X, y, sensitive_features=g)
    plain = GroupWeightedClassifier().fit(X, y, sensitive_features=g)
    return (X, y, g), test, badr, plain


def test_defaults_are_fairer_than_the_unconstrained_fit_on_many_groups(fitted):
    """Twelve groups (three of 120-200 rows): the default BADR model has a clearly smaller
    demographic-parity difference than plain ERM, on the training and the held-out rows,
    at nearly its accuracy."""
    (X, y, g), (X_test, y_test, g_test), badr, plain = fitted
    for rows, labels, groups in ((X, y, g), (X_test, y_test, g_test)):
        fair, base = (dp_difference(m.predict(rows), groups) for m in (badr, plain))
        assert fair < 0.9 * base
        accuracy = [np.mean(m.predict(rows) == labels) for m in (badr, plain)]
        assert accuracy[0] > accuracy[1] - 0.05
        assert accuracy[0] > max(np.mean(labels), 1 - np.mean(labels))
    assert badr.unfairness_ <= badr.baseline_unfairness_["pooled"]


def test_defaults_keep_a_third_of_the_rows(fitted):
    """Every group's weight is at most 5 times its share of the rows, so the weighted fit
    keeps at least a fifth of the rows' effective size."""
    (X, y, g), _, badr, _ = fitted
    share = np.bincount(g) / g.size
    assert np.all(badr.group_weights_ <= np.minimum(1.0, 5 * share) + 1e-12)
    row_weights = (badr.group_weights_ / np.bincount(g))[g]
    effective = row_weights.sum() ** 2 / np.sum(row_weights**2)
    assert effective >= g.size / 5 - 1e-6


def test_the_whole_simplex_is_the_paper_search_that_the_cap_avoids():
    """On the whole simplex (max_weight_ratio=None) the fairest weighting found puts most
    of the weight on one of the small groups: a model fitted to a few hundred rows, less
    accurate than the default's."""
    (X, y, g), (X_test, y_test, _) = many_groups()
    whole = BADRClassifier(max_weight_ratio=None).fit(X, y, sensitive_features=g)
    default = BADRClassifier().fit(X, y, sensitive_features=g)
    share = np.bincount(g) / g.size
    assert np.max(whole.group_weights_ / share) > 5
    assert np.mean(default.predict(X_test) == y_test) > np.mean(whole.predict(X_test) == y_test)


@pytest.mark.parametrize("solver", ["slsqp", "trust-constr", "frank-wolfe", "gd", "sgd"])
def test_every_solver_stays_within_the_caps(solver):
    (X, y, g), _ = many_groups(n_groups=10, n_train=2000)
    caps = np.minimum(1.0, 2.0 * np.bincount(g) / g.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter below convergence
        badr = BADRClassifier(solver=solver, max_weight_ratio=2.0, max_iter=30, random_state=0).fit(
            X, y, sensitive_features=g
        )
    assert badr.group_weights_.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(badr.group_weights_ >= 0)
    assert np.all(badr.group_weights_ <= caps + 1e-9)
    assert badr.unfairness_ <= min(badr.baseline_unfairness_.values()) + 1e-12


def test_two_groups_search_their_capped_segment():
    """Two groups of 90 % and 10 %: the cap 5 x 0.1 = 0.5 bounds the small group's weight,
    and the two-group search runs on the segment between the capped vertices."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 3))
    g = (np.arange(1000) < 100).astype(int)
    y = (X[:, 0] + 1.5 * g + rng.normal(size=1000) > 0.5).astype(int)
    badr = BADRClassifier(record_history=True).fit(X, y, sensitive_features=g)
    assert badr.group_weights_[1] <= 0.5 + 1e-12
    assert np.all(badr.history_["group_weights"][:, 1] <= 0.5 + 1e-12)
    assert badr.baseline_unfairness_.keys() >= {"pooled", "group_0", "group_1"}
    unbounded = BADRClassifier(max_weight_ratio=None).fit(X, y, sensitive_features=g)
    assert "pooled" not in unbounded.baseline_unfairness_


def test_capped_projection_is_the_euclidean_one():
    rng = np.random.default_rng(0)
    for trial in range(20):
        size = rng.integers(2, 9)
        caps = rng.uniform(0.05, 1.0, size)
        caps = caps if caps.sum() >= 1 else caps / caps.sum() * 1.3
        v = rng.normal(scale=2.0, size=size)
        result = project_capped_host(v, caps)
        exact = minimize(
            lambda x, v=v: np.sum((x - v) ** 2),
            np.full(size, 1.0 / size),
            jac=lambda x, v=v: 2 * (x - v),
            bounds=[(0.0, c) for c in caps],
            constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0}],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        ).x
        np.testing.assert_allclose(result, exact, atol=1e-6)
        assert result.sum() == pytest.approx(1.0, abs=1e-12)
        with jax.enable_x64(True):
            np.testing.assert_allclose(
                np.asarray(project_capped(jnp.asarray(v), jnp.asarray(caps))), result, atol=1e-12
            )
            if trial < 5:  # caps of 1: the simplex projection
                ones = jnp.ones(size)
                np.testing.assert_allclose(
                    np.asarray(project_capped(jnp.asarray(v), ones)),
                    np.asarray(project_simplex(jnp.asarray(v))),
                    atol=1e-12,
                )


def test_capped_vertex_minimises_a_linear_function():
    """The capped LMO fills the groups of smallest gradient up to their caps: no point of
    the capped simplex has a smaller inner product (checked against a linear program)."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(1)
    for _ in range(10):
        grad = rng.normal(size=6)
        caps = rng.uniform(0.1, 0.6, 6)
        caps = caps if caps.sum() >= 1 else caps * 1.2 / caps.sum()
        with jax.enable_x64(True):
            vertex = np.asarray(capped_vertex(jnp.asarray(grad), jnp.asarray(caps)))
        best = linprog(grad, A_eq=np.ones((1, 6)), b_eq=[1.0], bounds=list(zip(0 * caps, caps)))
        assert grad @ vertex == pytest.approx(best.fun, abs=1e-10)
        assert vertex.sum() == pytest.approx(1.0) and np.all(vertex <= caps + 1e-15)
    np.testing.assert_array_equal(
        np.asarray(capped_vertex(jnp.array([0.3, -1.0, -1.0]), jnp.ones(3))), [0.0, 1.0, 0.0]
    )


def test_caps_bind_only_on_small_groups():
    assert weight_caps(np.array([50.0, 50.0]), 3.0) is None
    assert weight_caps(np.array([10.0, 90.0]), None) is None
    np.testing.assert_allclose(weight_caps(np.array([10.0, 90.0]), 3.0), [0.3, 1.0])
    weights = baseline_weights(np.array([10.0, 30.0, 60.0]), np.array([0.3, 0.9, 1.0]))
    assert list(weights)[0] == "pooled"
    np.testing.assert_allclose(weights["pooled"], [0.1, 0.3, 0.6])
    np.testing.assert_allclose(weights["group_0"], [0.3, 0.35, 0.35])
    np.testing.assert_allclose(weights["uniform"], [0.3, 0.35, 0.35])  # 1/3 above the cap


def test_metric_params_set_the_two_temperatures():
    spec, temperatures = build_metric_spec(
        "demographic_parity_deviation", None, "classification", "logistic", 10
    )
    assert temperatures == (10.0, 50.0)
    assert build_metric_spec(
        "demographic_parity_deviation", {"temperature": 2}, "classification", "l", 1
    )[1] == (2.0, 2.0)
    _, pair = build_metric_spec(
        "equal_opportunity_range",
        {"temperature": 2, "temperature_max": 7},
        "classification",
        "l",
        1,
    )
    assert pair == (2.0, 7.0)
    rng = np.random.default_rng(0)
    s, y, groups = rng.normal(size=50), rng.integers(0, 2, 50), rng.integers(0, 3, 50)
    with jax.enable_x64(True):
        args = (jnp.asarray(s), jnp.asarray(y), jnp.asarray(groups), jnp.ones(50), 3)
        value = smooth_unfairness(spec, *args, jnp.array([3.0, 20.0]))
        expected = smooth_demographic_parity(
            jnp.asarray(s),
            jnp.asarray(y),
            jnp.asarray(groups),
            3,
            temperature_sigmoid=3.0,
            temperature_max=20.0,
            weights=jnp.ones(50),
        )
        assert float(value) == pytest.approx(float(expected), rel=1e-14)
        scalar = smooth_unfairness(spec, *args, 3.0)
        both = smooth_unfairness(spec, *args, jnp.array([3.0, 3.0]))
        assert float(scalar) == pytest.approx(float(both), rel=1e-14)
    assert isinstance(spec, MetricSpec)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"temperature_max": 0.0}, "temperature_max"),
        ({"temperature_sigmoid": "hot"}, "temperature_sigmoid"),
        ({"rho": 1.0}, "temperature_sigmoid"),
    ],
)
def test_metric_params_errors_name_the_key(params, match):
    with pytest.raises(ValueError, match=match):
        BADRClassifier(metric_params=params).fit(
            np.eye(4), [0, 1, 0, 1], sensitive_features=[0, 0, 1, 1]
        )


def test_cost_grows_linearly_with_the_groups():
    """The safeguard's baselines are G + 3 lower-level solves; the search adds a number of
    them that does not grow faster than G (warm-started, cached)."""
    counts = {}
    for n_groups in (6, 24):
        (X, y, g), _ = many_groups(n_groups=n_groups, n_train=4000, seed=1)
        counts[n_groups] = BADRClassifier().fit(X, y, sensitive_features=g).n_evaluations_
    assert counts[24] <= 2 * (24 + 3) + 10
    assert counts[24] <= 4 * counts[6] + 10


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=5
@pytest.mark.parametrize(
    "old, new",
    [
        ("demographic_parity", "demographic_parity_deviation"),
        ("equal_opportunity", "equal_opportunity_range"),
        ("equalized_odds", "equalized_odds_range"),
        ("group_variance", "group_loss_variance"),
    ],
)
def test_previous_metric_names_warn_and_fit_the_same_model(old, new):
    """The previous release's names (one meaning each now, as the exact functions of
    fairest.metrics) still work for one release, with a FutureWarning naming the new one."""
    from fairest.reweighting import BADRClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    g = rng.integers(0, 3, 200)
    with pytest.warns(FutureWarning, match=f"renamed '{new}'"):
        before = BADRClassifier(metric=old, max_iter=5).fit(X, y, sensitive_features=g)
    after = BADRClassifier(metric=new, max_iter=5).fit(X, y, sensitive_features=g)
    np.testing.assert_array_equal(before.group_weights_, after.group_weights_)
    assert before.unfairness_exact_ == after.unfairness_exact_
