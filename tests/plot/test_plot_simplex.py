"""Unfairness over the simplex: grids, drawn values, and the estimator adapter."""

import numpy as np
import pytest

from fairest import GroupWeightedClassifier
from fairest.metrics import demographic_parity_difference, individual_fairness
from fairest.plot import make_simplex_evaluator, plot_simplex_unfairness, simplex_grid
from fairest.plot._simplex import _lattice_triangles, _to_plane


@pytest.mark.parametrize("resolution", [1, 2, 5, 12])
def test_three_group_grid_and_triangles(resolution):
    grid = simplex_grid(3, resolution)
    assert grid.shape == ((resolution + 1) * (resolution + 2) // 2, 3)
    assert (grid >= 0).all()
    np.testing.assert_allclose(grid.sum(axis=1), 1.0)
    np.testing.assert_allclose(grid * resolution, np.round(grid * resolution))  # on the lattice
    assert len(np.unique(np.round(grid * resolution), axis=0)) == len(grid)
    # the lattice triangles tile the simplex: resolution**2 congruent triangles
    x, y = _to_plane(grid)
    triangles = _lattice_triangles(resolution)
    assert len(triangles) == resolution**2
    p = np.stack([x[triangles], y[triangles]], axis=-1)
    u, v = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
    area = 0.5 * np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])
    np.testing.assert_allclose(area, np.sqrt(3) / 4 / resolution**2)
    # the vertices map to the triangle's corners
    np.testing.assert_allclose(
        np.vstack(_to_plane(np.eye(3))), [[0, 1, 0.5], [0, 0, np.sqrt(3) / 2]]
    )


def test_two_group_grid():
    grid = simplex_grid(2, 11)
    np.testing.assert_allclose(grid[:, 0], np.linspace(0, 1, 11))
    np.testing.assert_allclose(grid.sum(axis=1), 1.0)
    assert simplex_grid(2, None).shape == (101, 2)


def test_two_groups_line_marks_and_png(tmp_path):
    calls = []

    def evaluate(lam):
        calls.append(np.array(lam))
        return (lam[0] - 0.3) ** 2 + 0.1

    ax = plot_simplex_unfairness(
        evaluate,
        n_groups=2,
        resolution=21,
        chosen_weights=[0.25, 0.75],
        reference_weights={"uniform": [0.5, 0.5]},
        group_labels=["F", "M"],
    )
    assert len(calls) == 21 + 2
    curve = [line for line in ax.lines if line.get_gid() == "simplex:curve"][0]
    x, y = curve.get_data()
    np.testing.assert_allclose(x, np.linspace(0, 1, 21))
    np.testing.assert_allclose(y, (x - 0.3) ** 2 + 0.1)
    np.testing.assert_allclose(ax.simplex_values_, y)
    offsets = {c.get_label().split(":")[0]: c.get_offsets()[0] for c in ax.collections}
    np.testing.assert_allclose(offsets["grid minimum"], [0.3, 0.1])
    np.testing.assert_allclose(offsets["chosen"], [0.25, 0.0025 + 0.1])
    np.testing.assert_allclose(offsets["uniform"], [0.5, 0.04 + 0.1])
    assert "'F'" in ax.get_xlabel() and "'M'" in ax.get_xlabel()
    ax.figure.savefig(tmp_path / "line.png")
    assert (tmp_path / "line.png").stat().st_size > 5_000


def test_three_groups_heatmap_values(tmp_path):
    target = np.array([0.2, 0.5, 0.3])

    def evaluate(lam):
        return float(np.sum((lam - target) ** 2))

    ax = plot_simplex_unfairness(evaluate, n_groups=3, resolution=10, chosen_weights=target)
    grid = simplex_grid(3, 10)
    mesh = [c for c in ax.collections if c.get_gid() == "simplex:heatmap"][0]
    expected = np.sum((grid - target) ** 2, axis=1)
    np.testing.assert_allclose(mesh.get_array(), expected)
    np.testing.assert_allclose(ax.simplex_values_, expected)
    chosen = [c for c in ax.collections if c.get_label().startswith("chosen")][0]
    np.testing.assert_allclose(chosen.get_offsets()[0], np.ravel(_to_plane(target)))
    best = [c for c in ax.collections if c.get_label().startswith("grid minimum")][0]
    np.testing.assert_allclose(best.get_offsets()[0], np.ravel(_to_plane(target)))  # on the grid
    texts = " ".join(t.get_text() for t in ax.texts)
    assert all(f"λ_{g} = 1" in texts for g in range(3))
    ax.figure.savefig(tmp_path / "triangle.png")
    assert (tmp_path / "triangle.png").stat().st_size > 5_000


def test_nan_values_are_masked():
    def evaluate(lam):
        return np.nan if lam[0] > 0.7 else lam[1]

    ax = plot_simplex_unfairness(evaluate, n_groups=3, resolution=6)
    mesh = [c for c in ax.collections if c.get_gid() == "simplex:heatmap"][0]
    triangulation = mesh._triangulation
    grid = simplex_grid(3, 6)
    bad = (grid[:, 0] > 0.7)[triangulation.triangles].any(axis=1)
    np.testing.assert_array_equal(triangulation.mask, bad)
    ax = plot_simplex_unfairness(evaluate, n_groups=2, resolution=11)
    assert np.isnan(ax.simplex_values_[-3:]).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n_groups": 4}, "n_groups=2"),
        ({"n_groups": 3, "resolution": 0}, "resolution"),
        ({"n_groups": 2, "resolution": 1}, "resolution"),
        ({"n_groups": 3, "chosen_weights": [0.5, 0.5]}, "shape"),
        ({"n_groups": 2, "chosen_weights": [0.7, 0.7]}, "simplex"),
        ({"n_groups": 2, "group_labels": ["a"]}, "group_labels"),
        ({}, "give n_groups"),
        ({"n_groups": 2, "color_quantile": 0.0}, "color_quantile"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        plot_simplex_unfairness(lambda lam: 0.0, **kwargs)


def _grouped_data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    group = rng.choice(np.array(["x", "y", "z"]), n)
    X = rng.standard_normal((n, 3)) + (group == "z")[:, None]
    y = (X[:, 0] + 0.8 * (group == "y") + 0.7 * rng.standard_normal(n) > 0.4).astype(int)
    return X, y, group


def test_evaluator_refits_group_weighted_model():
    X, y, group = _grouped_data()
    evaluate = make_simplex_evaluator(
        GroupWeightedClassifier(alpha=0.1),
        X,
        y,
        sensitive_features=group,
        metric="individual_fairness",
    )
    assert evaluate.n_groups == 3 and evaluate.groups.tolist() == ["x", "y", "z"]
    lam = np.array([0.6, 0.1, 0.3])
    reference = GroupWeightedClassifier(alpha=0.1, weights=lam).fit(X, y, sensitive_features=group)
    value = individual_fairness(y, reference.decision_function(X), sensitive_features=group)
    assert evaluate(lam) == pytest.approx(value, rel=1e-12)
    fitted = evaluate.fit(lam)
    np.testing.assert_allclose(fitted.group_weights_, lam)
    assert fitted.groups_.tolist() == evaluate.groups.tolist()
    # the pooled weights (group shares) give back plain ERM
    shares = np.array([np.mean(group == g) for g in evaluate.groups])
    erm = GroupWeightedClassifier(alpha=0.1).fit(X, y, sensitive_features=group)
    assert evaluate(shares) == pytest.approx(
        individual_fairness(y, erm.decision_function(X), sensitive_features=group), rel=1e-8
    )
    assert evaluate.n_evaluations == 2


def test_evaluator_on_held_out_data_hard_predictions_and_plot(tmp_path):
    X, y, group = _grouped_data(n=200, seed=1)
    train, test = slice(0, 120), slice(120, None)
    evaluate = make_simplex_evaluator(
        GroupWeightedClassifier(),
        X[train],
        y[train],
        sensitive_features=group[train],
        metric=demographic_parity_difference,
        response_method="predict",
        X_eval=X[test],
        y_eval=y[test],
        sensitive_features_eval=group[test],
    )
    lam = np.array([0.2, 0.3, 0.5])
    model = GroupWeightedClassifier(weights=lam).fit(
        X[train], y[train], sensitive_features=group[train]
    )
    expected = demographic_parity_difference(
        y[test], model.predict(X[test]), sensitive_features=group[test]
    )
    assert evaluate(lam) == pytest.approx(expected)
    ax = plot_simplex_unfairness(
        evaluate, resolution=4, chosen_weights=lam, metric_label="DP difference"
    )
    assert ax.simplex_values_.shape == (15,)
    assert "z  (λ_2 = 1)" in [t.get_text() for t in ax.texts]
    ax.figure.savefig(tmp_path / "evaluator.png")
    assert (tmp_path / "evaluator.png").stat().st_size > 5_000
    with pytest.raises(ValueError, match="unknown metric"):
        make_simplex_evaluator(
            GroupWeightedClassifier(), X, y, sensitive_features=group, metric="nope"
        )
