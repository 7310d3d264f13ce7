"""BADR's outer loop moves the progress line of ``show_progress`` (issue 33): every SLSQP /
trust-constr iteration and every bracket trial of the two-group search, every chunk of
badr-gd / badr-sgd (from the jitted scan), and the jitted Frank-Wolfe loop as it starts and
ends; nothing is drawn outside the block."""

import io
import re
import warnings

import numpy as np
import pytest

from fairest.reweighting import BADRClassifier
from fairest.utils._reporting import show_progress


def _data(n=300, num_groups=3, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, num_groups, n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 0.6 * groups
    y = X @ np.array([1.0, -0.5, 0.3, 0.2]) + 0.4 * groups + rng.normal(size=n) > 0
    return X, y.astype(int), groups


def _fit_with_bar(params, num_groups=3):
    X, y, groups = _data(num_groups=num_groups)
    stream = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few iterations: convergence warnings expected
        with show_progress(True, stream=stream, delay=0.0) as bar:
            bar.interval = 0.0
            est = BADRClassifier(**params).fit(X, y, sensitive_features=groups)
    return est, stream.getvalue()


@pytest.mark.parametrize(
    "params, num_groups, unit",
    [
        ({}, 3, "outer iteration"),  # SLSQP
        ({}, 2, "outer iteration"),  # the two-group bracket search
        ({"solver": "trust-constr", "max_iter": 5}, 3, "outer iteration"),
        ({"solver": "frank-wolfe", "max_iter": 5}, 3, "outer iteration"),
        ({"solver": "gd", "max_iter": 10, "check_every": 5}, 3, "iteration"),
    ],
)
def test_a_badr_fit_draws_the_bar(params, num_groups, unit):
    _, drawn = _fit_with_bar(params, num_groups)
    assert f"[BADRClassifier] {unit} " in drawn
    if params.get("solver") in ("frank-wolfe", "trust-constr"):  # steps of max_iter
        assert re.search(rf"{unit} [0-5]/5 ", drawn)
    if params.get("solver") == "gd":  # from inside the jitted scan, after each chunk
        assert f"{unit} 5/10 " in drawn
    assert drawn.endswith("\r")  # wiped when the block ends


def test_no_bar_and_the_same_fit_outside_show_progress(capsys):
    X, y, groups = _data()
    est = BADRClassifier().fit(X, y, sensitive_features=groups)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    barred, _ = _fit_with_bar({})
    np.testing.assert_array_equal(barred.group_weights_, est.group_weights_)
    np.testing.assert_array_equal(barred.coef_, est.coef_)
