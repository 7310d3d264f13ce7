"""Pareto frontier: the pure mask against brute force, and the plot's drawn data."""

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairest.plot import pareto_frame_from_cv_results, pareto_front_mask, plot_pareto_frontier


def brute_force_front(u, a):
    """O(n^2) definition: not dominated by any point (<= on both, < on one)."""
    u, a = np.asarray(u, float), np.asarray(a, float)
    keep = np.ones(u.size, dtype=bool)
    for i in range(u.size):
        dominated = (u <= u[i]) & (a >= a[i]) & ((u < u[i]) | (a > a[i]))
        keep[i] = not dominated.any()
    return keep


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [0, 1, 2, 7, 60])
def test_mask_matches_brute_force_with_ties(seed, n):
    rng = np.random.default_rng(seed)
    # few distinct values: many ties in u, in a, and duplicated points
    u = rng.integers(0, 5, n) / 4
    a = rng.integers(0, 5, n) / 4
    np.testing.assert_array_equal(pareto_front_mask(u, a), brute_force_front(u, a))


def test_mask_continuous_and_order_invariant():
    rng = np.random.default_rng(3)
    u, a = rng.random(300), rng.random(300)
    mask = pareto_front_mask(u, a)
    np.testing.assert_array_equal(mask, brute_force_front(u, a))
    perm = rng.permutation(300)
    np.testing.assert_array_equal(pareto_front_mask(u[perm], a[perm]), mask[perm])
    # the frontier is a monotone staircase: accuracy increases with unfairness
    order = np.argsort(u[mask])
    assert np.all(np.diff(a[mask][order]) > 0)


def test_mask_documented_cases():
    assert pareto_front_mask([0.1, 0.2, 0.2, 0.3], [0.8, 0.85, 0.7, 0.85]).tolist() == [
        True,
        True,
        False,
        False,
    ]
    # duplicates of a frontier point are all kept; a copy does not dominate its twin
    assert pareto_front_mask([0.1, 0.1, 0.5], [0.9, 0.9, 0.2]).tolist() == [True, True, False]
    # equal unfairness: only the best accuracy survives; equal accuracy: only the fairest
    assert pareto_front_mask([0.2, 0.2], [0.5, 0.6]).tolist() == [False, True]
    assert pareto_front_mask([0.3, 0.2], [0.6, 0.6]).tolist() == [False, True]


def test_mask_is_n_log_n_on_large_input():
    rng = np.random.default_rng(0)
    n = 400_000
    u, a = rng.random(n), rng.random(n)
    mask = pareto_front_mask(u, a)  # a quadratic algorithm would not finish
    # independent check on the frontier: the running max of accuracy by unfairness
    order = np.argsort(u)
    running = np.maximum.accumulate(a[order])
    expected = np.zeros(n, dtype=bool)
    expected[order] = a[order] >= running  # continuous data: no ties
    np.testing.assert_array_equal(mask, expected)


@pytest.mark.parametrize(
    "u, a, message",
    [
        ([0.1, np.nan], [0.5, 0.6], "NaN"),
        ([0.1, 0.2], [0.5, np.inf], "NaN or infinite"),
        ([0.1, 0.2], [0.5], "same length"),
        ([[0.1, 0.2]], [[0.5, 0.6]], "1-D"),
    ],
)
def test_mask_bad_input(u, a, message):
    with pytest.raises(ValueError, match=message):
        pareto_front_mask(u, a)


def _two_method_table(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for method in ("alpha-method", "beta-method"):
        for value in np.linspace(0, 1, 9):
            rows.append(
                {
                    "method": method,
                    "unfairness": rng.random(),
                    "accuracy": 0.7 + 0.2 * rng.random(),
                    "lam": value,
                }
            )
    return pd.DataFrame(rows)


def _frontier_line(ax, label):
    lines = [line for line in ax.lines if line.get_gid() == f"frontier:{label}"]
    assert len(lines) == 1
    return lines[0].get_xydata()


def test_plot_draws_each_methods_frontier(tmp_path):
    table = _two_method_table()
    ax = plot_pareto_frontier(table, annotate="lam")
    for label, rows in table.groupby("method"):
        u, a = rows["unfairness"].to_numpy(), rows["accuracy"].to_numpy()
        keep = brute_force_front(u, a)
        order = np.argsort(u[keep])
        np.testing.assert_allclose(_frontier_line(ax, label), np.c_[u[keep][order], a[keep][order]])
    keep = brute_force_front(table["unfairness"], table["accuracy"])
    overall = table.loc[keep].sort_values("unfairness")[["unfairness", "accuracy"]].to_numpy()
    np.testing.assert_allclose(_frontier_line(ax, "overall"), overall)
    # dominated points are drawn (hollow) too: every input point appears once
    hollow = np.vstack([c.get_offsets() for c in ax.collections if len(c.get_offsets())])
    assert len(hollow) + sum(len(_frontier_line(ax, m)) for m in table["method"].unique()) == len(
        table
    )
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(text.startswith("alpha-method") for text in legend)
    assert ax.get_xlabel().startswith("unfairness") and ax.get_ylabel().startswith("accuracy")
    path = tmp_path / "pareto.png"
    ax.figure.savefig(path)
    assert path.stat().st_size > 5_000


def test_plot_aggregates_seeds_into_t_intervals(tmp_path):
    rng = np.random.default_rng(1)
    rows = [
        {
            "method": m,
            "lam": lam,
            "seed": seed,
            "unfairness": lam + 0.05 * rng.standard_normal(),
            "accuracy": 0.6 + 0.3 * lam + 0.02 * rng.standard_normal(),
        }
        for m in ("A", "B")
        for lam in (0.1, 0.5, 0.9)
        for seed in range(4)
    ]
    table = pd.DataFrame(rows)
    ax = plot_pareto_frontier(table, config="lam", confidence=0.95)
    t = stats.t.ppf(0.975, 3)
    for label, rows_m in table.groupby("method"):
        summary = rows_m.groupby("lam")[["unfairness", "accuracy"]].agg(["mean", "std"])
        means = summary.xs("mean", axis=1, level=1).to_numpy()
        keep = brute_force_front(means[:, 0], means[:, 1])
        order = np.argsort(means[keep, 0])
        np.testing.assert_allclose(_frontier_line(ax, label), means[keep][order])
    # error bars: half-widths t_{0.975, n-1} * sd / sqrt(n), per point and axis
    segments = []
    for container in ax.containers:
        _, _, bars = container.lines
        segments.extend(bars)
    x_bars = [np.asarray(s) for s in segments[0].get_segments()]  # method A, x errors
    summary_a = (
        table[table.method == "A"].groupby("lam", sort=False)["unfairness"].agg(["mean", "std"])
    )
    expected = t * summary_a["std"].to_numpy() / 2.0
    np.testing.assert_allclose([(s[1, 0] - s[0, 0]) / 2 for s in x_bars], expected)
    np.testing.assert_allclose(
        [(s[1, 0] + s[0, 0]) / 2 for s in x_bars], summary_a["mean"].to_numpy()
    )
    assert "95% intervals" in ax.get_title()
    with pytest.raises(ValueError, match="annotate must be one of the config"):
        plot_pareto_frontier(table, config="lam", annotate="seed")
    ax.figure.savefig(tmp_path / "pareto_ci.png")
    assert (tmp_path / "pareto_ci.png").stat().st_size > 5_000


def test_plot_std_columns_and_compare_table():
    # a `fairest compare`-style table: methods in the index, one row per method
    table = pd.DataFrame(
        {
            "accuracy": [0.85, 0.83, 0.80],
            "demographic parity diff": [0.20, 0.08, 0.10],
            "acc_sd": [0.01, 0.02, 0.0],
        },
        index=pd.Index(["ERM", "FERMI", "balanced"], name="method"),
    )
    ax = plot_pareto_frontier(table, x="demographic parity diff", y_err="acc_sd", n_repeats=5)
    np.testing.assert_allclose(_frontier_line(ax, "overall"), [[0.08, 0.83], [0.20, 0.85]])
    bars = ax.containers[0].lines[2][0].get_segments()
    np.testing.assert_allclose(
        np.ptp(np.asarray(bars[0])[:, 1]) / 2, stats.t.ppf(0.975, 4) * 0.01 / np.sqrt(5)
    )
    with pytest.raises(ValueError, match="n_repeats"):
        plot_pareto_frontier(table, x="demographic parity diff", y_err="acc_sd")


def test_plot_minimise_y_drops_nan_and_errors():
    table = pd.DataFrame({"unfairness": [0.1, 0.2, 0.3, np.nan], "RMSE": [3.0, 2.0, 2.5, 1.0]})
    with pytest.warns(UserWarning, match="dropping 1 rows"):
        ax = plot_pareto_frontier(table, y="RMSE", method=None, maximize_y=False)
    np.testing.assert_allclose(_frontier_line(ax, "model"), [[0.1, 3.0], [0.2, 2.0]])
    assert "lower is better" in ax.get_ylabel()
    assert not [line for line in ax.lines if line.get_gid() == "frontier:overall"]
    with pytest.raises(KeyError, match="no columns"):
        plot_pareto_frontier(table.dropna(), y="accuracy", method=None)
    with pytest.raises(KeyError, match="method column"):
        plot_pareto_frontier(table.dropna(), y="RMSE")
    with pytest.raises(ValueError, match="confidence"):
        plot_pareto_frontier(table.dropna(), y="RMSE", method=None, confidence=95)


def test_polars_input():
    pl = pytest.importorskip("polars")
    table = _two_method_table()
    ax = plot_pareto_frontier(pl.DataFrame(table.to_dict(orient="list")))
    reference = plot_pareto_frontier(table)
    for label in ("alpha-method", "beta-method", "overall"):
        np.testing.assert_allclose(_frontier_line(ax, label), _frontier_line(reference, label))


def test_plot_on_given_axes():
    from matplotlib.figure import Figure

    figure = Figure()
    axes = figure.subplots(1, 2)
    out = plot_pareto_frontier(_two_method_table(), ax=axes[1], title="")
    assert out is axes[1] and out.get_title() == "" and not axes[0].lines


def test_frame_from_grid_search_cv_results():
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from fairest import GroupWeightedClassifier
    from fairest.model_selection import make_fairness_scorer

    rng = np.random.default_rng(0)
    n = 240
    X = rng.standard_normal((n, 3))
    group = rng.integers(0, 2, n)
    y = (X[:, 0] + group + 0.5 * rng.standard_normal(n) > 0.5).astype(int)
    scoring = {"accuracy": "accuracy", "dp": make_fairness_scorer("demographic_parity_difference")}
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            GroupWeightedClassifier(),
            {"weights": [[0.2, 0.8], [0.5, 0.5], [0.8, 0.2]]},
            scoring=scoring,
            refit=False,
            cv=StratifiedKFold(3, shuffle=True, random_state=0),
        ).fit(X, y, sensitive_features=group)
    results = search.cv_results_
    frame = pareto_frame_from_cv_results(results, accuracy="accuracy", unfairness="dp")
    splits = np.column_stack([results[f"split{k}_test_dp"] for k in range(3)])
    np.testing.assert_allclose(frame["unfairness"], -results["mean_test_dp"])
    np.testing.assert_allclose(frame["unfairness_std"], splits.std(axis=1, ddof=1))
    np.testing.assert_allclose(frame["accuracy"], results["mean_test_accuracy"])
    assert (frame["n_repeats"] == 3).all() and (frame["method"] == "model").all()
    assert "param_weights" in frame and len(frame["params"]) == 3
    ax = plot_pareto_frontier(
        frame,
        x_err="unfairness_std",
        y_err="accuracy_std",
        n_repeats="n_repeats",
        annotate="params",
    )
    assert len(ax.containers) == 1
    with pytest.raises(KeyError, match="split<k>_test_eo"):
        pareto_frame_from_cv_results(results, unfairness="eo")


def test_import_is_lazy_and_pyplot_free(tmp_path):
    """Importing fairest.plot does not import matplotlib; plotting never uses pyplot."""
    code = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import fairest, fairest.plot
        assert "matplotlib" not in sys.modules
        ax = fairest.plot.plot_pareto_frontier(
            {{"unfairness": [0.1, 0.2], "accuracy": [0.7, 0.8]}}, method=None)
        ax = fairest.plot.plot_group_score_cdfs(np.arange(10.0), sensitive_features=[0, 1] * 5)
        ax = fairest.plot.plot_simplex_unfairness(lambda lam: lam[0], n_groups=3, resolution=3)
        ax.figure.savefig({str(tmp_path / "x.png")!r})
        assert "matplotlib.pyplot" not in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_missing_matplotlib_message(monkeypatch):
    import fairest.plot._common as common

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        common.require_matplotlib()
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_pareto_frontier({"unfairness": [0.1], "accuracy": [0.7]}, method=None)


def test_docstring_examples_run():
    import doctest

    import fairest.plot._pareto as module

    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 2 and result.failed == 0


def test_plot_takes_a_fairness_path_directly():
    from sklearn.linear_model import LogisticRegression

    from fairest import GroupThresholdClassifier, fairness_path

    rng = np.random.default_rng(0)
    groups = rng.choice(["a", "b"], size=400)
    X = rng.normal(size=(400, 2)) + (groups == "a")[:, None]
    y = (X[:, 0] + rng.normal(size=400) > 0.5).astype(int)
    path = fairness_path(
        GroupThresholdClassifier(LogisticRegression()),
        X[:300],
        y[:300],
        sensitive_features=groups[:300],
        values=[0.0, 0.02, 0.05, 0.1, 0.3],
        X_val=X[300:],
        y_val=y[300:],
        sensitive_features_val=groups[300:],
    )
    ax = plot_pareto_frontier(path, annotate="tolerance")
    frame = path.to_frame()
    # the drawn frontier is the brute-force front of the path's validation points
    u, a = frame["val_unfairness"].to_numpy(), frame["val_accuracy"].to_numpy()
    keep = brute_force_front(u, a)
    order = np.argsort(u[keep], kind="stable")
    np.testing.assert_allclose(
        _frontier_line(ax, "GroupThresholdClassifier"), np.c_[u[keep][order], a[keep][order]]
    )
    assert len(ax.texts) == int(keep.sum())  # one tolerance label per frontier point
