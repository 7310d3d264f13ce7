import numpy as np
import pandas as pd
import polars as pl
import pytest

from fairest.utils import FairnessWarning, check_sensitive_features, encode_groups


@pytest.mark.parametrize(
    "values",
    [
        ["b", "a", "b", "c"],
        np.array(["b", "a", "b", "c"]),
        pd.Series(["b", "a", "b", "c"]),
        pl.Series(["b", "a", "b", "c"]),
        pd.Series(["b", "a", "b", "c"], dtype="category"),
    ],
)
def test_strings_sorted_labels(values):
    codes, groups = encode_groups(values)
    assert codes.dtype == np.int32
    np.testing.assert_array_equal(codes, [1, 0, 1, 2])
    assert list(groups) == ["a", "b", "c"]


def test_integers_and_floats():
    codes, groups = encode_groups(np.array([3, 1, 3, 7]))
    np.testing.assert_array_equal(codes, [1, 0, 1, 2])
    np.testing.assert_array_equal(groups, [1, 3, 7])


def test_categorical_keeps_category_order_and_ignores_unused():
    values = pd.Categorical(["lo", "hi", "lo"], categories=["lo", "mid", "hi"], ordered=True)
    codes, groups = encode_groups(values)
    np.testing.assert_array_equal(codes, [0, 1, 0])
    assert list(groups) == ["lo", "hi"]


@pytest.mark.parametrize("frame", [pd.DataFrame, pl.DataFrame])
def test_intersectional_columns(frame):
    data = frame({"sex": ["m", "f", "m", "f", "m"], "race": [1, 2, 2, 1, 1]})
    codes, groups = encode_groups(data)
    assert list(groups) == [("f", 1), ("f", 2), ("m", 1), ("m", 2)]
    np.testing.assert_array_equal(codes, [2, 1, 3, 0, 2])


def test_two_dimensional_array():
    codes, groups = encode_groups(np.array([["a", "x"], ["a", "y"], ["a", "x"]]))
    np.testing.assert_array_equal(codes, [0, 1, 0])
    assert list(groups) == [("a", "x"), ("a", "y")]


def test_every_sample_kept():
    rng = np.random.default_rng(0)
    values = rng.choice(["p", "q", "r", "s"], size=1000)
    codes, groups = encode_groups(values)
    np.testing.assert_array_equal(groups[codes], values)


@pytest.mark.parametrize("missing", [None, np.nan])
def test_missing_values_raise(missing):
    with pytest.raises(ValueError, match="missing values"):
        encode_groups(["a", missing, "b"])


def test_length_mismatch_raises():
    with pytest.raises(ValueError, match="same length"):
        encode_groups(["a", "b"], n_samples=3)


def test_single_sample_group_raises():
    with pytest.raises(ValueError, match=r"'c' \(1 samples\)"):
        encode_groups(["a", "a", "b", "b", "c"], min_group_size=2)


def test_single_group_raises_when_two_needed():
    with pytest.raises(ValueError, match="at least 2"):
        encode_groups(["a", "a", "a"], min_groups=2)


def test_scalar_and_3d_raise():
    with pytest.raises(TypeError):
        encode_groups("abc")
    with pytest.raises(ValueError, match="1-D or 2-D"):
        encode_groups(np.zeros((2, 2, 2)))


def test_none_warns_and_gives_one_group():
    with pytest.warns(FairnessWarning, match="one group"):
        codes, groups = check_sensitive_features(None, 4, min_groups=2)
    np.testing.assert_array_equal(codes, np.zeros(4))
    assert len(groups) == 1


def test_import_leaves_jax_config_alone():
    import subprocess
    import sys

    code = (
        "import jax; before = {k: getattr(jax.config, k) for k in "
        "('jax_enable_x64', 'jax_compilation_cache_dir', 'jax_default_matmul_precision')};"
        "import fairest, fairest.metrics, fairest.datasets, fairest.reweighting;"
        "after = {k: getattr(jax.config, k) for k in before}; assert before == after, (before, after);"
        "print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_enable_compilation_cache_is_explicit(tmp_path):
    import subprocess
    import sys

    code = (
        "import jax, fairest; assert jax.config.jax_compilation_cache_dir is None;"
        "from fairest.utils import enable_compilation_cache;"
        f"d = enable_compilation_cache({str(tmp_path / 'cache')!r});"
        "assert jax.config.jax_compilation_cache_dir == str(d); print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize(
    "y",
    [
        np.array([3, 5, 5, 3, 5]),
        np.array([True, False, True]),
        np.array([2, 2, 7], dtype=np.uint8),
        np.array([-1, 1, 1], dtype=np.int32),
        np.array([0.0, 1.0, 1.0]),
        np.array(["no", "yes", "no"]),
        np.array(["b", "a"], dtype=object),
        [1, 0, 1],
    ],
)
def test_encode_binary_target_equals_np_unique(y):
    """The O(n) path for integer and boolean targets gives np.unique's classes (values and
    dtype) and inverse as float {0, 1}; other targets go through np.unique itself."""
    from fairest.utils._estimator import encode_binary_target

    classes, y01 = encode_binary_target("Est", y)
    want_classes, want_inverse = np.unique(y, return_inverse=True)
    np.testing.assert_array_equal(classes, want_classes)
    assert classes.dtype == want_classes.dtype
    np.testing.assert_array_equal(y01, want_inverse)
    assert y01.dtype == np.float64


@pytest.mark.parametrize(
    "y, message",
    [
        (np.array([4, 4, 4]), "only one class"),
        (np.array([0, 1, 2, 1]), "y has 3 classes"),
        (np.array([0, 2, 1]), "y has 3 classes"),  # a middle value between the extremes
        (np.array(["a", "b", "c"]), "y has 3 classes"),
    ],
)
def test_encode_binary_target_refuses_one_or_three_classes(y, message):
    from fairest.utils._estimator import encode_binary_target

    with pytest.raises(ValueError, match=message):
        encode_binary_target("Est", y)


@pytest.mark.parametrize(
    "column",
    [
        np.array([3, 1, 3, 0, 1]),  # counted (small non-negative codes)
        np.array([True, False, True]),  # bool: codes, not a mask
        np.array([0, 0, 1], dtype=np.uint8),
        np.array([2, 9, 2], dtype=np.int8),
        np.array([5, -2, 5]),  # negative: pandas' factorisation
        np.array([2**40, 3, 3]),  # far beyond the row count: pandas' factorisation
        np.random.default_rng(0).integers(0, 7, 50_000),
    ],
)
def test_integer_columns_encode_as_np_unique(column):
    """Integer and boolean numpy columns (counted or factorised) give np.unique's sorted
    labels (values and dtype) and codes."""
    codes, groups = encode_groups(column)
    want_groups, want_codes = np.unique(column, return_inverse=True)
    np.testing.assert_array_equal(groups, want_groups)
    assert groups.dtype == want_groups.dtype
    np.testing.assert_array_equal(codes, want_codes)
