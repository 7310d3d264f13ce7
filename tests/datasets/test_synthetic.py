"""Synthetic grouped data: shapes, determinism, exact group sizes, bias."""

import numpy as np
import pytest

from fairest.datasets import make_grouped_classification, make_grouped_regression

GENERATORS = [make_grouped_classification, make_grouped_regression]


@pytest.mark.parametrize("make", GENERATORS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shapes_and_dtypes(make, dtype):
    X, y, groups = make(n_samples=501, n_features=7, n_groups=3, dtype=dtype, random_state=0)
    assert X.shape == (501, 7) and X.dtype == dtype
    assert y.shape == (501,) and groups.shape == (501,)
    assert groups.dtype == np.int32 and set(np.unique(groups)) == {0, 1, 2}
    if make is make_grouped_classification:
        assert y.dtype == np.int32 and set(np.unique(y)) == {0, 1}
    else:
        assert y.dtype == dtype
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))
    X2, y2 = make(n_samples=10, return_groups=False, random_state=0)
    assert X2.shape == (10, 10) and y2.shape == (10,)


@pytest.mark.parametrize("make", GENERATORS)
def test_determinism(make):
    a = make(n_samples=300, n_groups=4, random_state=42)
    b = make(n_samples=300, n_groups=4, random_state=42)
    c = make(n_samples=300, n_groups=4, random_state=43)
    for left, right in zip(a, b, strict=True):
        np.testing.assert_array_equal(left, right)
    assert not np.array_equal(a[0], c[0])
    # a legacy RandomState and a Generator are accepted too
    make(n_samples=20, random_state=np.random.RandomState(0))
    make(n_samples=20, random_state=np.random.default_rng(0))


@pytest.mark.parametrize("make", GENERATORS)
def test_group_proportions_are_exact(make):
    proportions = [0.7, 0.2, 0.05, 0.05]
    _, _, groups = make(n_samples=1001, n_groups=4, group_proportions=proportions, random_state=1)
    counts = np.bincount(groups, minlength=4)
    assert counts.sum() == 1001
    np.testing.assert_allclose(counts, np.multiply(proportions, 1001), atol=1)
    # groups are shuffled, not in blocks
    assert np.any(np.diff(groups) < 0)


def test_label_bias_moves_base_rates():
    kwargs = dict(n_samples=40_000, n_features=5, n_groups=2, group_bias=0.0, random_state=3)
    _, y, g = make_grouped_classification(label_bias=0.0, **kwargs)
    fair_gap = y[g == 0].mean() - y[g == 1].mean()
    _, y, g = make_grouped_classification(label_bias=2.0, **kwargs)
    biased_gap = y[g == 0].mean() - y[g == 1].mean()
    assert abs(fair_gap) < 0.02
    assert biased_gap > 0.2  # group 0 is favoured
    _, y, g = make_grouped_classification(label_bias=-2.0, **kwargs)
    assert y[g == 1].mean() - y[g == 0].mean() > 0.2


def test_group_bias_shifts_features():
    X, _, g = make_grouped_classification(
        n_samples=20_000, n_features=4, group_bias=2.0, label_bias=0.0, random_state=5
    )
    shift = np.linalg.norm(X[g == 0].mean(axis=0) - X[g == 1].mean(axis=0))
    assert shift > 1.0
    X, _, g = make_grouped_classification(
        n_samples=20_000, n_features=4, group_bias=0.0, label_bias=0.0, random_state=5
    )
    assert np.linalg.norm(X[g == 0].mean(axis=0) - X[g == 1].mean(axis=0)) < 0.1


def test_regression_bias_and_group_noise():
    kwargs = dict(n_samples=30_000, n_groups=3, group_bias=0.0, random_state=7)
    _, y, g = make_grouped_regression(label_bias=4.0, noise=0.5, **kwargs)
    means = [y[g == k].mean() for k in range(3)]
    np.testing.assert_allclose(means, [2.0, 0.0, -2.0], atol=0.1)
    X, y, g = make_grouped_regression(
        label_bias=0.0, noise=1.0, group_noise=[0.0, 1.0, 3.0], **kwargs
    )
    # residual spread per group follows group_noise (exact 0 for the first group)
    w, *_ = np.linalg.lstsq(X[g == 0], y[g == 0], rcond=None)
    residual_sd = [np.std(y[g == k] - X[g == k] @ w) for k in range(3)]
    assert residual_sd[0] < 1e-6
    np.testing.assert_allclose(residual_sd[1:], [1.0, 3.0], rtol=0.05)


def test_group_names_and_many_groups():
    _, _, groups = make_grouped_classification(
        n_samples=100, n_groups=2, group_names=["a", "b"], random_state=0
    )
    assert set(groups) == {"a", "b"}
    _, y, groups = make_grouped_classification(n_samples=6400, n_groups=64, random_state=0)
    np.testing.assert_array_equal(np.bincount(groups), np.full(64, 100))


def test_large_float32_is_vectorised():
    X, y, g = make_grouped_classification(
        n_samples=1_000_000, n_features=8, n_groups=16, dtype=np.float32, random_state=0
    )
    assert X.dtype == np.float32 and X.shape == (1_000_000, 8)
    assert 0.3 < y.mean() < 0.7


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(n_groups=65), ValueError),
        (dict(n_groups=0), ValueError),
        (dict(n_samples=0), ValueError),
        (dict(n_samples=10.5), TypeError),
        (dict(group_proportions=[0.5, 0.4]), ValueError),
        (dict(group_proportions=[0.5, 0.5, 0.0]), ValueError),
        (dict(group_proportions=[1.5, -0.5]), ValueError),
        (dict(group_bias=np.nan), ValueError),
        (dict(label_bias="high"), TypeError),
        (dict(dtype=np.int32), ValueError),
        (dict(group_names=["only one"]), ValueError),
        (dict(random_state="seed"), ValueError),
    ],
)
@pytest.mark.parametrize("make", GENERATORS)
def test_bad_arguments(make, kwargs, error):
    kwargs = {"n_samples": 10, **kwargs}
    with pytest.raises(error):
        make(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [dict(base_rate=0.0), dict(base_rate=1.0), dict(class_sep=np.inf)],
)
def test_bad_classification_arguments(kwargs):
    with pytest.raises(ValueError):
        make_grouped_classification(n_samples=10, **kwargs)


@pytest.mark.parametrize("kwargs", [dict(noise=-1.0), dict(group_noise=[1.0, -1.0])])
def test_bad_regression_arguments(kwargs):
    with pytest.raises(ValueError):
        make_grouped_regression(n_samples=10, **kwargs)
