"""BADR's metrics: spec 3.10 golden values, smooth -> exact, identities, fast IF (spec 10.6-10.8)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.exceptions import UndefinedMetricWarning

from fairest.reweighting._badr_metrics import MetricSpec, exact_unfairness, smooth_unfairness

X_TOY = np.array(
    [
        [1.0, 0.5],
        [-0.5, 1.0],
        [0.3, -1.2],
        [2.0, 0.1],
        [-1.0, -0.4],
        [0.7, 0.9],
        [-0.2, 0.3],
        [1.5, -0.8],
    ]
)
Y_BIN = np.array([1, 0, 0, 1, 0, 1, 1, 0], dtype=float)
Y_REAL = np.array([1.2, -0.3, 0.5, 2.1, -1.0, 0.8, 0.1, -0.6])
G_TOY = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=np.int32)

GOLDEN = [  # badr spec 3.10 (reference implementation, intercept 0)
    ("individual_fairness", "classification", "logistic", Y_BIN, 1.0, 0.657203376),
    ("disparate_mistreatment", "classification", "logistic", Y_BIN, 1.0, 0.005625),
    ("hsic_linear", "regression", "squared_error", Y_BIN, 1.0, 0.007346938776),
    ("demographic_parity_deviation", "classification", "logistic", Y_BIN, 1.0, 0.7320007992),
    ("demographic_parity_deviation", "classification", "logistic", Y_BIN, 10.0, 0.2452514308),
    ("equal_opportunity_range", "classification", "logistic", Y_BIN, 1.0, 1.403479179),
    ("equal_opportunity_range", "classification", "logistic", Y_BIN, 10.0, 0.7057611301),
    ("equalized_odds_range", "classification", "logistic", Y_BIN, 1.0, 1.396322412),
    ("equalized_odds_range", "classification", "logistic", Y_BIN, 10.0, 0.4221995763),
    ("group_loss_variance", "classification", "logistic", Y_BIN, 1.0, 0.03988615405),
    ("group_loss_variance", "classification", "squared_hinge", Y_BIN, 1.0, 0.5701005025),
    ("individual_fairness", "regression", "squared_error", Y_REAL, 1.0, 0.3307111627),
    ("demographic_parity_deviation", "regression", "squared_error", Y_REAL, 1.0, 0.8431505139),
    ("group_loss_variance", "regression", "squared_error", Y_REAL, 1.0, 0.34351321),
]
EXACT_GOLDEN = {
    "demographic_parity_deviation": 0.125,
    "equal_opportunity_range": 0.5,
    "equalized_odds_range": 0.25,
}


def _eval(name, task, loss, s, y, g, num_groups, rho=1.0, w=None, encoding="index", exact=False):
    spec = MetricSpec(name, task, loss, encoding)
    w = np.ones_like(s) if w is None else w
    args = (
        jnp.asarray(s),
        jnp.asarray(y),
        jnp.asarray(g, dtype=jnp.int32),
        jnp.asarray(w),
        num_groups,
    )
    if exact:
        return float(exact_unfairness(spec, *args))
    return float(smooth_unfairness(spec, *args, rho))


@pytest.mark.parametrize("name,task,loss,y,rho,expected", GOLDEN)
def test_golden_values(name, task, loss, y, rho, expected):
    with jax.enable_x64(True):
        s = X_TOY @ np.array([0.8, -0.6])
        assert _eval(name, task, loss, s, y, G_TOY, 2, rho) == pytest.approx(expected, rel=1e-8)
        if task == "classification" and name in EXACT_GOLDEN:
            assert _eval(name, task, loss, s, y, G_TOY, 2, exact=True) == pytest.approx(
                EXACT_GOLDEN[name], abs=1e-12
            )


def _random(seed, n=300, num_groups=3, real=False):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, num_groups, n).astype(np.int32)
    s = rng.normal(size=n) + 0.3 * g
    s[np.abs(s) < 1e-3] += 0.01  # no ties at the threshold
    y = (
        np.round(rng.normal(size=n) + g, 1)
        if real
        else (rng.random(n) < 0.4 + 0.1 * g).astype(float)
    )
    return s, y, g


@pytest.mark.parametrize(
    "name", ["demographic_parity_deviation", "equal_opportunity_range", "equalized_odds_range"]
)
def test_smooth_tends_to_exact(name):
    with jax.enable_x64(True):
        s, y, g = _random(1)
        exact = _eval(name, "classification", "logistic", s, y, g, 3, exact=True)
        errors = [
            abs(_eval(name, "classification", "logistic", s, y, g, 3, rho) - exact)
            for rho in (1.0, 10.0, 100.0, 1e4)
        ]
        assert errors[-1] < 1e-3
        assert errors[0] > errors[-1]


def _brute_if(s, y, g, w):
    num = 0.0
    for i, j in itertools.product(range(len(s)), repeat=2):
        if g[i] < g[j]:
            num += w[i] * w[j] * np.exp(-abs(y[i] - y[j])) * (s[i] - s[j]) ** 2
    totals = np.bincount(g, weights=w)
    return num / (totals.sum() ** 2 - np.sum(totals**2))


@pytest.mark.parametrize("real", [False, True])
def test_fast_individual_fairness_equals_brute_force(real):
    with jax.enable_x64(True):
        s, y, g = _random(2, n=70, real=real)
        if real:
            y = np.round(y)  # heavy ties
        w = np.random.default_rng(3).uniform(0.2, 2.0, size=s.size)
        task = "regression" if real else "classification"
        fast = _eval("individual_fairness", task, "logistic", s, y, g, 3, w=w)
        assert fast == pytest.approx(_brute_if(s, y, g, w), rel=1e-12)


def test_metric_identities():
    with jax.enable_x64(True):
        s, y, g = _random(4)
        for name, task in [
            ("individual_fairness", "classification"),
            ("disparate_mistreatment", "classification"),
            ("hsic_linear", "regression"),
            ("demographic_parity_deviation", "regression"),
        ]:
            base = _eval(name, task, "logistic", s, y, g, 3)
            assert _eval(name, task, "logistic", s + 2.5, y, g, 3) == pytest.approx(base, rel=1e-10)
            perm = np.random.default_rng(5).permutation(s.size)
            assert _eval(name, task, "logistic", s[perm], y[perm], g[perm], 3) == pytest.approx(
                base, rel=1e-10
            )
        n = s.size
        dm = _eval("disparate_mistreatment", "classification", "logistic", s, y, g, 3)
        hsic = _eval("hsic_linear", "regression", "logistic", s, y, g, 3)
        assert hsic == pytest.approx((n / (n - 1)) ** 2 * dm, rel=1e-12)
        g2 = (g > 0).astype(np.int32)
        for name, task in [
            ("hsic_linear", "regression"),
            ("disparate_mistreatment", "classification"),
        ]:
            one = _eval(name, task, "logistic", s, y, g2, 2, encoding="onehot")
            assert one == pytest.approx(2 * _eval(name, task, "logistic", s, y, g2, 2), rel=1e-12)
        # one-hot encoding is invariant under relabelling the groups
        relabel = np.array([2, 0, 1], dtype=np.int32)[g]
        a = _eval(
            "disparate_mistreatment", "classification", "logistic", s, y, g, 3, encoding="onehot"
        )
        b = _eval(
            "disparate_mistreatment",
            "classification",
            "logistic",
            s,
            y,
            relabel,
            3,
            encoding="onehot",
        )
        assert a == pytest.approx(b, rel=1e-12)
        # group variance vanishes when every group has the same loss
        y_eq = np.zeros(4)
        s_eq = np.array([1.0, -1.0, 1.0, -1.0])
        assert (
            _eval(
                "group_loss_variance",
                "regression",
                "squared_error",
                s_eq,
                y_eq,
                np.array([0, 0, 1, 1]),
                2,
            )
            == 0.0
        )


def test_equal_opportunity_ignores_group_without_positives():
    with jax.enable_x64(True):
        s = np.array([1.0, -1.0, 0.5, 2.0, -0.5, 0.3])
        y = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
        g = np.array([0, 0, 1, 2, 1, 2])  # group 2 has no positives
        with pytest.warns(UndefinedMetricWarning, match="no positive"):
            exact = _eval(
                "equal_opportunity_range", "classification", "logistic", s, y, g, 3, exact=True
            )
        assert exact == pytest.approx(0.5)  # TPR 1 (group 0) vs 0.5 (group 1); group 2 left out


def _brute_force_if(s, y, groups, weight):
    """Individual fairness for real labels from the full pair matrix (spec 3.2)."""
    centred = s - np.sum(weight * s) / np.sum(weight)
    cross = groups[:, None] != groups[None, :]
    pairs = np.outer(weight, weight) * np.exp(-np.abs(y[:, None] - y[None, :]))
    energy = 0.5 * np.sum(cross * pairs * (centred[:, None] - centred[None, :]) ** 2)
    totals = np.bincount(groups, weights=weight)
    return energy / (np.sum(weight) ** 2 - np.sum(totals**2))


@pytest.mark.parametrize("n, num_groups, seed", [(9, 2, 0), (120, 3, 1), (400, 5, 2)])
def test_continuous_individual_fairness_gradient(n, num_groups, seed):
    """The two-scan score gradient of the regression IF (issue 19: no stored scan steps)
    equals reverse-mode autodiff of the metric and central finite differences of a
    brute-force pair sum, with tied labels and zero-weight (padding) rows."""
    from fairest.metrics import smooth_individual_fairness
    from fairest.reweighting._badr_metrics import continuous_individual_fairness

    rng = np.random.default_rng(seed)
    s = rng.standard_normal(n)
    y = np.round(rng.standard_normal(n), 1)  # ties across and within groups
    groups = rng.permutation(np.arange(n) % num_groups).astype(np.int32)
    weight = rng.random(n)
    weight[-2:] = 0.0
    with jax.enable_x64(True):
        value, grad = jax.jit(
            jax.value_and_grad(
                lambda s: continuous_individual_fairness(s, y, groups, weight, num_groups)
            )
        )(s)
        ref_value, ref_grad = jax.value_and_grad(
            lambda s: smooth_individual_fairness(
                s, y, groups, num_groups, weights=weight, label_kind="continuous"
            )
        )(s)
    np.testing.assert_allclose(value, ref_value, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-14 * np.abs(ref_grad).max())
    assert np.isclose(value, _brute_force_if(s, y, groups, weight), rtol=1e-10)
    step = 1e-6
    for i in (0, n // 2, n - 3):
        e = np.zeros(n)
        e[i] = step
        finite = (
            _brute_force_if(s + e, y, groups, weight) - _brute_force_if(s - e, y, groups, weight)
        ) / (2 * step)
        assert np.isclose(grad[i], finite, rtol=1e-5, atol=1e-9)


def test_badr_reads_its_metrics_from_the_catalogue():
    """BADR's smooth objective and exact figure are the catalogue record's surrogate and
    exact function: replacing the record (the one place a metric is defined) changes
    both, and restoring it restores them."""
    import dataclasses

    from fairest.metrics import get_metric, register_metric

    original = get_metric("group_loss_variance")
    doubled = dataclasses.replace(
        original,
        function=lambda *args, **kwargs: 2.0 * original.exact(*args, **kwargs),
        surrogate=lambda *args, **kwargs: 2.0 * original.smooth(*args, **kwargs),
    )
    with jax.enable_x64(True):
        s, y, g = _random(3)
        args = ("group_loss_variance", "classification", "logistic", s, y, g, 3)
        smooth, exact = _eval(*args), _eval(*args, exact=True)
        register_metric(doubled, replace=True)
        try:
            assert _eval(*args) == pytest.approx(2.0 * smooth, rel=1e-12)
            assert _eval(*args, exact=True) == pytest.approx(2.0 * exact, rel=1e-12)
        finally:
            register_metric(original, replace=True)
        assert _eval(*args) == smooth and _eval(*args, exact=True) == exact
