"""Smooth JAX surrogates: golden values, exact twins, convergence, padding, gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fairest.metrics as fm

# spec badr.md 3.10
GOLDEN_SCORES = np.array([0.5, -1.0, 0.96, 1.54, -0.56, 0.02, -0.34, 1.68])
GOLDEN_Y = np.array([1, 0, 0, 1, 0, 1, 1, 0], dtype=float)
GOLDEN_Y_REAL = np.array([1.2, -0.3, 0.5, 2.1, -1.0, 0.8, 0.1, -0.6])
GOLDEN_CODES = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=np.int32)

GOLDEN_SMOOTH = [
    (fm.smooth_demographic_parity, GOLDEN_Y, {"temperature": 1.0}, 0.7320007992),
    (fm.smooth_demographic_parity, GOLDEN_Y, {"temperature": 10.0}, 0.2452514308),
    (fm.smooth_equal_opportunity, GOLDEN_Y, {"temperature": 1.0}, 1.403479179),
    (fm.smooth_equal_opportunity, GOLDEN_Y, {"temperature": 10.0}, 0.7057611301),
    (fm.smooth_equalized_odds, GOLDEN_Y, {"temperature": 1.0}, 1.396322412),
    (fm.smooth_equalized_odds, GOLDEN_Y, {"temperature": 10.0}, 0.4221995763),
    (fm.smooth_demographic_parity, GOLDEN_Y_REAL, {"task": "regression"}, 0.8431505139),
    (fm.smooth_individual_fairness, GOLDEN_Y, {"label_kind": "binary"}, 0.657203376),
    (fm.smooth_individual_fairness, GOLDEN_Y, {}, 0.657203376),
    (fm.smooth_individual_fairness, GOLDEN_Y_REAL, {}, 0.3307111627),
    (fm.smooth_disparate_mistreatment, GOLDEN_Y, {}, 0.005625),
    (fm.smooth_hsic_linear, GOLDEN_Y, {}, 0.007346938776),
    (fm.smooth_group_loss_variance, GOLDEN_Y, {"loss": "logistic"}, 0.03988615405),
    (fm.smooth_group_loss_variance, GOLDEN_Y, {"loss": "squared_hinge"}, 0.5701005025),
    (fm.smooth_group_loss_variance, GOLDEN_Y_REAL, {"loss": "squared_error"}, 0.34351321),
]
GOLDEN_IDS = [f"{f.__name__}-{i}" for i, (f, *_) in enumerate(GOLDEN_SMOOTH)]


@pytest.mark.parametrize(("metric", "y", "kwargs", "expected"), GOLDEN_SMOOTH, ids=GOLDEN_IDS)
def test_golden_values_float64(metric, y, kwargs, expected):
    with jax.enable_x64(True):
        value = metric(jnp.asarray(GOLDEN_SCORES), jnp.asarray(y), GOLDEN_CODES, 2, **kwargs)
        assert value.dtype == jnp.float64
        assert float(value) == pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize(
    ("metric", "y", "kwargs", "expected"), GOLDEN_SMOOTH[1::2], ids=GOLDEN_IDS[1::2]
)
def test_golden_values_float32(metric, y, kwargs, expected):
    scores = jnp.asarray(GOLDEN_SCORES, dtype=jnp.float32)
    value = metric(scores, jnp.asarray(y, dtype=jnp.float32), GOLDEN_CODES, 2, **kwargs)
    assert value.dtype == jnp.float32
    assert float(value) == pytest.approx(expected, rel=2e-5, abs=1e-6)


def test_global_jax_config_is_untouched():
    assert not jax.config.jax_enable_x64
    assert jnp.ones(1).dtype == jnp.float32


# ---------------------------------------------------------------------------------------
# exact twins agree with the numpy metrics


def _random_data(seed, n_groups, n=40, real_labels=False):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, n_groups, n).astype(np.int32)
    codes[:n_groups] = np.arange(n_groups)
    scores = rng.normal(size=n) + 0.4 * codes
    y = rng.normal(size=n) if real_labels else rng.integers(0, 2, n).astype(float)
    weights = rng.uniform(0.2, 2.0, n)
    return scores, y, codes, weights


TWINS = [
    (fm.smooth_individual_fairness, fm.individual_fairness, {}, {}, True),
    (fm.smooth_individual_fairness, fm.individual_fairness, {"label_kind": "binary"}, {}, False),
    (
        fm.smooth_disparate_mistreatment,
        fm.disparate_mistreatment,
        {"encoding": "onehot"},
        {"encoding": "onehot"},
        False,
    ),
    (fm.smooth_hsic_linear, fm.hsic_linear, {}, {}, True),
    (
        fm.smooth_group_loss_variance,
        fm.group_loss_variance,
        {"loss": "squared_hinge"},
        {"loss": "squared_hinge"},
        False,
    ),
    (
        fm.smooth_group_loss_variance,
        fm.group_loss_variance,
        {"loss": "squared_error"},
        {"loss": "squared_error"},
        True,
    ),
]


@pytest.mark.parametrize(("smooth", "exact", "smooth_kwargs", "exact_kwargs", "real"), TWINS)
def test_exact_twins_equal_numpy_metrics(smooth, exact, smooth_kwargs, exact_kwargs, real):
    scores, y, codes, weights = _random_data(21, 3, real_labels=real)
    expected = exact(y, scores, sensitive_features=codes, sample_weight=weights, **exact_kwargs)
    with jax.enable_x64(True):
        value = smooth(scores, y, codes, 3, weights=weights, **smooth_kwargs)
    assert float(value) == pytest.approx(expected, rel=1e-11)


# ---------------------------------------------------------------------------------------
# smoothing: bounds and convergence to the exact metrics


@jax.jit
def _smooth_extremes(values, rho):
    return fm.smooth_max(values, rho), fm.smooth_min(values, rho)


def test_smooth_max_and_min_bounds():
    rng = np.random.default_rng(5)
    with jax.enable_x64(True):
        for n_groups in (2, 7):
            values = rng.uniform(size=n_groups)
            for rho in (0.5, 1.0, 10.0, 1000.0):
                smax, smin = (float(v) for v in _smooth_extremes(values, rho))
                bound = np.log(n_groups) / rho
                assert values.max() - 1e-15 <= smax <= values.max() + bound + 1e-14
                assert values.min() - bound - 1e-14 <= smin <= values.min() + 1e-15
                spread = values.max() - values.min()
                assert spread - 1e-14 <= smax - smin <= spread + 2 * bound + 1e-14
        masked = jnp.array([0.1, 5.0, 0.3])
        keep = jnp.array([True, False, True])
        assert float(fm.smooth_max(masked, 1e4, where=keep)) == pytest.approx(0.3, abs=1e-3)


CONVERGENCE = [
    (fm.smooth_demographic_parity, fm.demographic_parity_deviation, 1.0, 1e-3),
    (fm.smooth_equal_opportunity, fm.equal_opportunity_range, 2.0, 1e-9),
    (fm.smooth_equalized_odds, fm.equalized_odds_range, 2.0, 1e-9),
]


@pytest.mark.parametrize(("smooth", "exact", "log_factor", "offset"), CONVERGENCE)
def test_smoothed_parity_tends_to_exact(smooth, exact, log_factor, offset):
    scores, y, codes, weights = _random_data(31, 3)
    scores = np.sign(scores) * np.maximum(np.abs(scores), 0.5)  # no score near 0
    expected = exact(y, scores, sensitive_features=codes, sample_weight=weights)
    log_groups = np.log(3)
    errors = []
    with jax.enable_x64(True):
        for rho in (1.0, 10.0, 100.0, 1000.0):
            value = float(
                smooth(
                    scores,
                    y,
                    codes,
                    3,
                    temperature_sigmoid=rho,
                    temperature_max=rho,
                    weights=weights,
                )
            )
            errors.append(abs(value - expected))
            if rho >= 100:
                # sigmoid(rho * 0.5) is saturated: only the smooth-max offset is left
                assert expected - 1e-9 <= value <= expected + log_factor * log_groups / rho + offset
        # with a sharp sigmoid, the smooth max alone obeys the bound, here at temperature_max = 1
        value = float(
            smooth(
                scores, y, codes, 3, temperature_sigmoid=1e4, temperature_max=1.0, weights=weights
            )
        )
        assert expected - 1e-9 <= value <= expected + log_factor * log_groups + offset
    assert errors[-1] < 3e-3
    assert errors == sorted(errors, reverse=True)


# ---------------------------------------------------------------------------------------
# padding rows (weight 0), absent groups, weights=None


# one entry per code path; the same keyword arguments everywhere, so that compiled
# functions are shared between tests (n = 40 rows, 3 groups, float64, explicit weights)
SURROGATES = [
    (fm.smooth_demographic_parity, {"temperature_sigmoid": 3.0, "temperature_max": 3.0}),
    (fm.smooth_equal_opportunity, {"temperature_sigmoid": 2.0, "temperature_max": 20.0}),
    (fm.smooth_equalized_odds, {"temperature_sigmoid": 5.0, "temperature_max": 5.0}),
    (fm.smooth_group_loss_variance, {"loss": "logistic"}),
    (fm.smooth_individual_fairness, {}),
    (fm.smooth_individual_fairness, {"label_kind": "binary"}),
    (fm.smooth_disparate_mistreatment, {"encoding": "onehot"}),
    (fm.smooth_hsic_linear, {}),
]
SURROGATE_IDS = [f"{f.__name__}-{i}" for i, (f, _) in enumerate(SURROGATES)]


@pytest.mark.parametrize(("metric", "kwargs"), SURROGATES, ids=SURROGATE_IDS)
def test_padding_rows_change_nothing(metric, kwargs):
    scores, y, codes, weights = _random_data(41, 3)
    n_pad = 8
    padded = [np.concatenate([a, np.zeros(n_pad, a.dtype)]) for a in (scores, y, codes, weights)]
    with jax.enable_x64(True):
        plain = metric(scores, y, codes, 3, weights=weights, **kwargs)
        pad = metric(*padded[:3], 3, weights=padded[3], **kwargs)
        assert float(pad) == pytest.approx(float(plain), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(("metric", "kwargs"), SURROGATES[::2], ids=SURROGATE_IDS[::2])
def test_groups_without_weight_are_left_out(metric, kwargs):
    scores, y, codes, weights = _random_data(42, 3)
    with jax.enable_x64(True):
        three = metric(scores, y, codes, 3, weights=weights, **kwargs)
        five = metric(scores, y, codes, 5, weights=weights, **kwargs)  # 3, 4 absent
        assert float(five) == pytest.approx(float(three), rel=1e-12)


def test_individual_fairness_is_zero_with_a_single_present_group():
    scores, y, _, weights = _random_data(43, 3)
    with jax.enable_x64(True):
        value = fm.smooth_individual_fairness(scores, y, np.zeros(40, np.int32), 3, weights=weights)
    assert float(value) == 0.0


# ---------------------------------------------------------------------------------------
# autodiff and compilation


@pytest.mark.parametrize(("metric", "kwargs"), SURROGATES, ids=SURROGATE_IDS)
def test_gradient_equals_central_finite_differences(metric, kwargs):
    scores, y, codes, weights = _random_data(51, 3)
    if kwargs.get("label_kind") != "binary" and metric is fm.smooth_individual_fairness:
        y = np.round(np.random.default_rng(0).normal(size=40), 1)  # real labels with ties
    directions = np.random.default_rng(1).normal(size=(3, 40))
    step = 1e-6
    with jax.enable_x64(True):

        def value(s):
            return metric(s, y, codes, 3, weights=weights, **kwargs)

        gradient = np.asarray(jax.grad(value)(jnp.asarray(scores)))
        assert np.all(np.isfinite(gradient))
        for direction in directions:
            finite_difference = (
                float(value(scores + step * direction)) - float(value(scores - step * direction))
            ) / (2 * step)
            assert gradient @ direction == pytest.approx(finite_difference, rel=1e-6, abs=1e-9)


def test_individual_fairness_gradient_matches_the_spec_formula():
    scores, y, codes, _ = _random_data(52, 3, real_labels=True)
    kernel = np.exp(-np.abs(y[:, None] - y[None, :]))
    cross = codes[:, None] != codes[None, :]
    normaliser = cross.sum()
    expected = 2 / normaliser * np.sum(kernel * cross * (scores[:, None] - scores[None, :]), axis=1)
    with jax.enable_x64(True):
        gradient = jax.grad(fm.smooth_individual_fairness)(
            jnp.asarray(scores), y, codes, 3, weights=np.ones(40)
        )
    np.testing.assert_allclose(np.asarray(gradient), expected, rtol=1e-10, atol=1e-14)


def test_temperature_is_traced_and_surrogates_compose_under_jit():
    scores = jnp.asarray(GOLDEN_SCORES, jnp.float32)
    y = jnp.asarray(GOLDEN_Y, jnp.float32)
    fm.smooth_equalized_odds(scores, y, GOLDEN_CODES, 2, temperature=1.0)
    size = fm.smooth_equalized_odds._cache_size()
    for rho in (2.0, 10.0, 100.0):
        fm.smooth_equalized_odds(scores, y, GOLDEN_CODES, 2, temperature=rho)
    assert fm.smooth_equalized_odds._cache_size() == size

    @jax.jit
    def objective(s, rho):
        parity = fm.smooth_demographic_parity(s, y, GOLDEN_CODES, 2, temperature=rho)
        return parity + fm.smooth_individual_fairness(s, y, GOLDEN_CODES, 2, label_kind="binary")

    value, gradient = jax.value_and_grad(objective)(scores, 5.0)
    assert value.dtype == jnp.float32 and gradient.shape == scores.shape
    assert float(value) == pytest.approx(
        float(fm.smooth_demographic_parity(scores, y, GOLDEN_CODES, 2, temperature=5.0))
        + 0.657203376,
        rel=1e-5,
    )


def test_prefix_scan_matches_the_sequential_recursion():
    from fairest.metrics._smooth import _affine_prefix_scan

    rng = np.random.default_rng(3)
    for n in (1, 37):
        decay = rng.random((n, 2))
        decay[0] = 0.0
        values = rng.normal(size=(n, 2, 3))
        expected = np.zeros_like(values)
        previous = np.zeros((2, 3))
        for k in range(n):
            previous = values[k] + decay[k][:, None] * previous
            expected[k] = previous
        with jax.enable_x64(True):
            result = _affine_prefix_scan(jnp.asarray(decay), jnp.asarray(values))
        np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-13, atol=1e-15)


def test_invalid_static_options_raise():
    scores, y, codes, _ = _random_data(62, 2, n=10)
    with pytest.raises(ValueError, match="task"):
        fm.smooth_demographic_parity(scores, y, codes, 2, task="ranking")
    with pytest.raises(ValueError, match="label_kind"):
        fm.smooth_individual_fairness(scores, y, codes, 2, label_kind="ordinal")
    with pytest.raises(ValueError, match="encoding"):
        fm.smooth_hsic_linear(scores, y, codes, 2, encoding="ordinal")
    with pytest.raises(ValueError, match="loss"):
        fm.smooth_group_loss_variance(scores, y, codes, 2, loss="hinge")
