"""The loss-gap tolerance path in one vmapped sweep (fairest.constrained._path, #17 item 2).

Every point of the sweep is checked against an independent refit,
``clone(estimator).set_params(tolerance=value).fit(...)`` with the same ``random_state``:
the lanes share the refit's initialisation and draws, so parameters, multipliers, slacks
and counts agree to float rounding (float64: 1e-10).
"""

import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.preprocessing import StandardScaler

from fairest import fairness_path
from fairest.constrained import LossGapConstrainedClassifier
from fairest.constrained._engine import GenericProblem, run_lanes, run_solver, spawn_rngs
from fairest.constrained._path import (
    fit_tolerance_path,
    fit_tolerance_path_folds,
    tolerance_path_supported,
)

TOLERANCES = [0.0, 0.01, 0.05, 0.3]


def _data(n=400, p=4, seed=0, n_groups=2, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    g = rng.integers(0, n_groups, n)
    X[:, 0] += 0.8 * g
    score = X @ np.linspace(1.0, -0.5, p) + 0.7 * g + rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return StandardScaler().fit_transform(X), y, g


def _refits(estimator, values, X, y, g, **fit):
    return [
        clone(estimator).set_params(tolerance=v).fit(X, y, sensitive_features=g, **fit)
        for v in values
    ]


def _own_scores(point, X, y, groups, sample_weight=None) -> tuple:
    """``(accuracy, loss gap)`` of ``point`` on ``(X, y)`` from its own ``predict`` /
    ``predict_proba`` through ``accuracy_score`` and ``fairest.metrics.loss_gap``: the
    largest gap over the label strata of ``point.metric`` (a stratum without rows
    skipped), the oracle of the paths' one-product scores."""
    from sklearn.metrics import accuracy_score

    from fairest.metrics import loss_gap

    proba = point.predict_proba(X)
    strata = {
        "loss_parity": [np.ones(y.size, bool)],
        "loss_equal_opportunity": [y == point.classes_[-1]],
        "loss_equalized_odds": [y == c for c in point.classes_],
    }[point.metric]
    gap = max(
        loss_gap(
            y[r],
            proba[r],
            sensitive_features=groups[r],
            sample_weight=None if sample_weight is None else sample_weight[r],
            labels=point.classes_,
        )
        for r in strata
        if r.any()
    )
    return accuracy_score(y, point.predict(X), sample_weight=sample_weight), gap


def _assert_same_models(points, refits, atol):
    for point, refit in zip(points, refits):
        assert point.tolerance == refit.tolerance
        for (W1, b1), (W2, b2) in zip(point.params_, refit.params_):
            np.testing.assert_allclose(W1, W2, rtol=0, atol=atol)
            np.testing.assert_allclose(b1, b2, rtol=0, atol=atol)
        np.testing.assert_allclose(point.constraint_values_, refit.constraint_values_, atol=atol)
        assert point.train_unfairness_ == pytest.approx(refit.train_unfairness_, abs=atol)
        assert point.is_feasible_ == refit.is_feasible_
        assert point.n_iter_ == refit.n_iter_ and point.n_epochs_done_ == refit.n_epochs_done_
        assert point.step_counts_ == refit.step_counts_
        for name in ("multipliers_", "slacks_"):
            a, b = getattr(point, name), getattr(refit, name)
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=0, atol=atol)


@pytest.mark.parametrize(
    "solver, solver_params",
    [
        ("ssl-alm", None),
        ("alm", {"slack_init": "feasible"}),  # per-lane init reads the lane's tolerance
        ("ssw", {"output": "random"}),  # switching branches and reservoir per lane
        ("penalty", None),
    ],
)
def test_every_lane_is_the_refit_at_its_tolerance(solver, solver_params):
    X, y, g = _data()
    estimator = LossGapConstrainedClassifier(
        (6,),
        solver=solver,
        solver_params=solver_params,
        n_epochs=2,
        dtype="float64",
        random_state=3,
    )
    points = fit_tolerance_path(estimator, X, y, TOLERANCES, sensitive_features=g)
    refits = _refits(estimator, TOLERANCES, X, y, g)
    _assert_same_models(points, refits, atol=1e-10)
    if solver != "penalty":  # the tolerance matters: the lanes differ from each other
        assert not np.allclose(points[0].params_[0][0], points[-1].params_[0][0])


def test_many_groups_weights_and_multiclass_follow_the_refits():
    """Scaled constraints (5 groups, SSL-ALM), sample weights and three classes."""
    X, y, g = _data(n=500, n_groups=5, n_classes=3)
    weight = np.random.default_rng(1).uniform(0.2, 2.0, y.size)
    estimator = LossGapConstrainedClassifier(
        (), n_epochs=1, batch_size=16, dtype="float64", random_state=0
    )
    points = fit_tolerance_path(
        estimator, X, y, [0.02, 0.2], sensitive_features=g, sample_weight=weight
    )
    assert points[0].constraint_scale_ == pytest.approx(np.sqrt(2 / 5))
    _assert_same_models(
        points, _refits(estimator, [0.02, 0.2], X, y, g, sample_weight=weight), 1e-10
    )


def test_float32_linear_lanes_are_the_refits_and_float32_mlps_refit():
    """Float32 linear lanes fold the lanes into one product per layer: the refit's model
    to float32 rounding (1.2e-6 on Adult); a float32 MLP's batched hidden products round
    differently, so its path runs refits."""
    X, y, g = _data(seed=2)
    estimator = LossGapConstrainedClassifier((), n_epochs=2, random_state=0)
    points = fit_tolerance_path(estimator, X, y, [0.005, 0.1], sensitive_features=g)
    refits = _refits(estimator, [0.005, 0.1], X, y, g)
    _assert_same_models(points, refits, atol=1e-6)
    np.testing.assert_allclose(
        points[1].predict_proba(X), refits[1].predict_proba(X), rtol=0, atol=1e-6
    )
    mlp = LossGapConstrainedClassifier((8,), n_epochs=1, random_state=0)
    assert not tolerance_path_supported(mlp)
    assert tolerance_path_supported(mlp.set_params(dtype="float64"))
    path = fairness_path(mlp.set_params(dtype="float32"), X, y, sensitive_features=g, values=[0.01])
    assert path.strategy == "refit"


def test_fairness_path_runs_the_lanes_for_the_scan_solvers_only():
    X, y, g = _data()
    estimator = LossGapConstrainedClassifier((), n_epochs=1, dtype="float64", random_state=0)
    path = fairness_path(estimator, X, y, sensitive_features=g, values=[0.01, 0.1])
    assert path.strategy == "vmap"
    _assert_same_models(path.estimators, _refits(estimator, [0.01, 0.1], X, y, g), 1e-10)
    for unsupported in (
        {"solver": "ghost", "solver_params": {"max_iter": 3, "qp_backend": "dual"}},
        {"record_history": True},
        {"max_time": 10.0},
    ):
        other = clone(estimator).set_params(**unsupported)
        assert not tolerance_path_supported(other)
        with pytest.raises(ValueError, match="scan solver"):
            fit_tolerance_path(other, X, y, [0.01], sensitive_features=g)
    ghost = clone(estimator).set_params(solver="ghost", solver_params={"max_iter": 3})
    path = fairness_path(ghost, X, y, sensitive_features=g, values=[0.01])
    assert path.strategy == "refit"


def test_a_diverged_lane_is_refitted_by_the_estimators_own_fit(monkeypatch):
    """A lane whose iterates were not finite (flagged here on lane 1) becomes the
    estimator's own fit, whose divergence guard refits with smaller steps."""
    import fairest.constrained._path as path_module

    X, y, g = _data()
    estimator = LossGapConstrainedClassifier((), n_epochs=1, dtype="float64", random_state=0)
    real_run_lanes = path_module.run_lanes

    def flag_lane_one(*args, **kwargs):
        results = real_run_lanes(*args, **kwargs)
        results[1].extras["nonfinite_iter"] = 5
        return results

    fits = []
    real_fit = LossGapConstrainedClassifier.fit

    def counted_fit(self, *args, **kwargs):
        fits.append(self.tolerance)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(path_module, "run_lanes", flag_lane_one)
    monkeypatch.setattr(LossGapConstrainedClassifier, "fit", counted_fit)
    points = fit_tolerance_path(estimator, X, y, [0.01, 0.1, 0.2], sensitive_features=g)
    assert fits == [0.1]
    monkeypatch.undo()
    _assert_same_models(points, _refits(estimator, [0.01, 0.1, 0.2], X, y, g), 1e-10)


def test_run_lanes_equals_run_solver_lane_by_lane(x64):
    """Engine level, a generic problem: least squares under ``x_0 <= bound`` with the
    bound in ``aux`` (one lane per bound), SSL-ALM on minibatches."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = X @ np.array([1.5, -1.0, 0.5]) + 0.1 * rng.normal(size=120)

    def objective(x, batch, aux):
        r = batch.X @ x - batch.y
        return jnp.sum(batch.w * r * r) / jnp.sum(batch.w)

    def constraints(x, batch, aux):
        return jnp.stack([x[0] - aux["bound"], aux["scale"] * x[1]])

    problem = GenericProblem(objective, constraints, m=2)
    hyper = {
        "learning_rate": 0.05,
        "dual_learning_rate": 0.1,
        "penalty_strength": 1.0,
        "proximal_strength": 0.5,
        "anchor_rate": 0.5,
        "dual_radius": 10.0,
        "final_full_step": True,
    }
    bounds = np.array([-0.5, 0.0, 0.7, 3.0])
    options = dict(batch_size=10, constraint_batch_size=5, n_epochs=3, dtype=jnp.float64)
    groups = np.zeros(120, np.int32)
    lanes = run_lanes(
        "ssl-alm",
        problem,
        X,
        y,
        groups,
        groups,
        np.zeros(3),
        hyper=hyper,
        aux={"bound": jnp.asarray(bounds), "scale": jnp.asarray(1.0)},
        lane_keys=("bound",),
        rngs=spawn_rngs(7),
        **options,
    )
    assert len(lanes) == bounds.size
    for bound, lane in zip(bounds, lanes):
        alone = run_solver(
            "ssl-alm",
            problem,
            X,
            y,
            groups,
            groups,
            np.zeros(3),
            hyper=hyper,
            aux={"bound": jnp.asarray(bound), "scale": jnp.asarray(1.0)},
            rngs=spawn_rngs(7),
            record_history=False,
            **options,
        )
        np.testing.assert_allclose(lane.x, alone.x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            lane.extras["multipliers"], alone.extras["multipliers"], rtol=0, atol=1e-12
        )
        assert lane.n_iter == alone.n_iter and lane.extras["nonfinite_iter"] is None
    assert lanes[0].x[0] < lanes[-1].x[0]  # the bound binds on the tight lanes
    # a lane whose iterates overflow reports its own divergence, the others run on
    scales = jnp.asarray([1.0, 1e200])
    mixed = run_lanes(
        "ssl-alm",
        problem,
        X,
        y,
        groups,
        groups,
        np.zeros(3),
        hyper=hyper,
        aux={"bound": jnp.asarray([0.0, 0.0]), "scale": scales},
        lane_keys=("bound", "scale"),
        rngs=spawn_rngs(7),
        **options,
    )
    assert mixed[0].extras["nonfinite_iter"] is None
    assert mixed[1].extras["nonfinite_iter"] is not None
    np.testing.assert_allclose(mixed[0].x, lanes[1].x, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="lane_keys"):
        run_lanes(
            "ssl-alm",
            problem,
            X,
            y,
            groups,
            groups,
            np.zeros(3),
            hyper=hyper,
            aux={"bound": jnp.asarray(bounds)},
            lane_keys=("nope",),
        )


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # 1 epoch: near-constant
@pytest.mark.parametrize("hidden, sparse", [((), True), ((5,), False)])
def test_fairness_path_scores_sparse_and_mlp_points_as_their_refits(hidden, sparse):
    """The path's train accuracy and loss gap are the refits' (sparse X: the batched
    linear predictions; an MLP: each point's own predictions)."""
    from scipy import sparse as sp

    from fairest.metrics import loss_gap

    X, y, g = _data(seed=4)
    X_fit = sp.csr_matrix(X) if sparse else X
    estimator = LossGapConstrainedClassifier(hidden, n_epochs=1, dtype="float64", random_state=0)
    path = fairness_path(estimator, X_fit, y, sensitive_features=g, values=[0.01, 0.1])
    assert path.strategy == "vmap"
    for k, refit in enumerate(_refits(estimator, [0.01, 0.1], X, y, g)):
        assert path.train_accuracy[k] == pytest.approx(np.mean(refit.predict(X) == y))
        gap = loss_gap(y, refit.predict_proba(X), sensitive_features=g)
        assert path.train_unfairness[k] == pytest.approx(gap, rel=1e-9)


@pytest.mark.parametrize(
    "metric, n_classes, weighted",
    [
        ("loss_parity", 2, False),
        ("loss_equal_opportunity", 2, True),
        ("loss_equalized_odds", 2, False),
        ("loss_parity", 3, True),
    ],
)
def test_linear_points_are_scored_as_each_points_own_predictions(metric, n_classes, weighted):
    """score_linear_points (one product for every point) against each point's own
    predict / predict_proba through accuracy_score and fairest.metrics.loss_gap, per
    label stratum, on held-out rows with three groups."""
    from fairest.constrained._path import score_linear_points

    X, y, g = _data(n=600, n_groups=3, n_classes=n_classes, seed=5)
    labels = np.array(["lo", "mid", "hi"])[:n_classes][y]  # string classes
    weight = np.random.default_rng(2).uniform(0.1, 3.0, y.size) if weighted else None
    estimator = LossGapConstrainedClassifier((), metric=metric, n_epochs=1, random_state=0)
    points = fit_tolerance_path(
        estimator, X[:400], labels[:400], [0.01, 0.3], sensitive_features=g[:400]
    )
    X_val, y_val, g_val = X[400:], labels[400:], g[400:]
    w_val = None if weight is None else weight[400:]
    scores = score_linear_points(points, X_val, y_val, g_val, w_val)
    for point, (accuracy, unfairness) in zip(points, scores):
        expected_accuracy, expected_gap = _own_scores(point, X_val, y_val, g_val, w_val)
        assert accuracy == pytest.approx(expected_accuracy, abs=1e-12)
        assert unfairness == pytest.approx(expected_gap, rel=1e-9, abs=1e-12)
    assert scores[0][1] != pytest.approx(scores[1][1])  # the points differ


# ---------------------------------------------------------------------------------------
# cross-validated sweep: lanes = (fold, value) pairs (fit_tolerance_path_folds)


def _fold_refits(estimator, values, X, y, g, folds, weight=None):
    """The reference: ``refits[k][f]``, a plain refit of value k on fold f's rows."""
    return [
        [
            clone(estimator)
            .set_params(tolerance=v)
            .fit(
                X[rows],
                y[rows],
                sensitive_features=g[rows],
                sample_weight=None if weight is None else weight[rows],
            )
            for rows in folds
        ]
        for v in values
    ]


@pytest.mark.parametrize(
    "solver, solver_params, hidden, weighted",
    [
        ("ssl-alm", None, (5,), False),
        ("alm", {"slack_init": "feasible"}, (), True),  # init reads the fold's rows
        ("ssw", {"output": "random"}, (), False),  # step counts from the fold's logs
    ],
)
def test_every_fold_lane_is_the_refit_on_its_fold(solver, solver_params, hidden, weighted):
    """Folds of 256, 257 and 263 rows: 32, 33 and 33 batches of 8 an epoch, so the
    shorter fold's last steps are masked; every lane keeps its fold's own draws."""
    X, y, g = _data(n=400, seed=4)
    rng = np.random.default_rng(0)
    order = rng.permutation(y.size)
    folds = [np.sort(order[:256]), order[100:357], np.sort(order[137:])]
    weight = rng.uniform(0.3, 2.0, y.size) if weighted else None
    estimator = LossGapConstrainedClassifier(
        hidden,
        solver=solver,
        solver_params=solver_params,
        n_epochs=1.5,
        dtype="float64",
        random_state=7,
    )
    points = fit_tolerance_path_folds(
        estimator, X, y, TOLERANCES[:3], folds, sensitive_features=g, sample_weight=weight
    )
    refits = _fold_refits(estimator, TOLERANCES[:3], X, y, g, folds, weight)
    assert len(points) == 3 and all(len(row) == len(folds) for row in points)
    assert len({p.n_iter_ for p in points[0]}) == 2  # the folds ran different budgets
    for k in range(3):
        _assert_same_models(points[k], refits[k], atol=1e-10)


def test_float32_fold_lanes_and_folds_of_different_shapes():
    """Float32 linear fold lanes are the refits to float32 rounding; a fold that misses a
    group makes a different problem, so every fold runs its own sweep (still the refits)."""
    X, y, g = _data(n=300, seed=5, n_groups=3)
    folds = [np.arange(0, 200), np.arange(100, 300)]
    estimator = LossGapConstrainedClassifier((), n_epochs=1, random_state=0)
    points = fit_tolerance_path_folds(estimator, X, y, [0.01, 0.2], folds, sensitive_features=g)
    for k, refit_row in enumerate(_fold_refits(estimator, [0.01, 0.2], X, y, g, folds)):
        _assert_same_models(points[k], refit_row, atol=2e-6)
    no_group_two = np.flatnonzero(g != 2)
    mixed = [folds[0], no_group_two]
    points = fit_tolerance_path_folds(estimator, X, y, [0.05], mixed, sensitive_features=g)
    assert [p.groups_.size for p in points[0]] == [3, 2]
    _assert_same_models(points[0], _fold_refits(estimator, [0.05], X, y, g, mixed)[0], 2e-6)


def test_cross_validated_fairness_path_scores_every_fold_as_its_refit():
    """``fairness_path(..., cv=)``: per-(value, fold) test scores equal the refits' own
    accuracy and loss gap on the fold's test rows, the means and spreads are theirs."""
    from fairest.metrics import loss_gap
    from fairest.model_selection import GroupStratifiedKFold

    X, y, g = _data(n=360, seed=6)
    estimator = LossGapConstrainedClassifier((), n_epochs=1, dtype="float64", random_state=1)
    values = [0.01, 0.1]
    path = fairness_path(estimator, X, y, sensitive_features=g, values=values, cv=3)
    assert path.strategy == "vmap" and path.n_splits == 3
    assert path.fold_val_accuracy.shape == (2, 3)
    splits = list(GroupStratifiedKFold(3).split(X, y, sensitive_features=g))
    for i, value in enumerate(values):
        for j, (train, test) in enumerate(splits):
            refit = clone(estimator).set_params(tolerance=value)
            refit.fit(X[train], y[train], sensitive_features=g[train])
            assert path.fold_val_accuracy[i, j] == pytest.approx(refit.score(X[test], y[test]))
            gap = loss_gap(y[test], refit.predict_proba(X[test]), sensitive_features=g[test])
            assert path.fold_val_unfairness[i, j] == pytest.approx(gap, abs=1e-10)
            assert path.fold_train_accuracy[i, j] == pytest.approx(refit.score(X[train], y[train]))
    frame = path.to_frame()
    np.testing.assert_allclose(frame["val_accuracy"], path.fold_val_accuracy.mean(axis=1))
    np.testing.assert_allclose(frame["val_accuracy_std"], path.fold_val_accuracy.std(axis=1))


def test_a_diverged_fold_lane_is_refitted_and_scored_as_its_refit(monkeypatch):
    """``fairness_path(..., cv=)`` with a (fold, value) lane whose iterates were not finite
    (made NaN here): that point is the estimator's own fit on the fold, and its train and
    test scores are the refit's, not the lane's (the lanes' shared logits are replaced)."""
    import fairest.constrained._path as path_module
    from fairest.metrics import loss_gap
    from fairest.model_selection import GroupStratifiedKFold

    X, y, g = _data(n=360, seed=7)
    estimator = LossGapConstrainedClassifier((), n_epochs=1, dtype="float64", random_state=2)
    values = [0.01, 0.1]
    real_run_fold_lanes = path_module.run_fold_lanes

    def diverge_fold_one_value_one(*args, **kwargs):
        results = real_run_fold_lanes(*args, **kwargs)
        lane = results[1][1]
        lane.extras["nonfinite_iter"] = 3
        results[1][1] = lane._replace(x=np.full_like(lane.x, np.nan))
        return results

    monkeypatch.setattr(path_module, "run_fold_lanes", diverge_fold_one_value_one)
    path = fairness_path(estimator, X, y, sensitive_features=g, values=values, cv=3)
    monkeypatch.undo()
    assert path.strategy == "vmap"
    assert np.all(np.isfinite(path.fold_train_unfairness))
    assert np.all(np.isfinite(path.fold_val_unfairness))
    splits = list(GroupStratifiedKFold(3).split(X, y, sensitive_features=g))
    for i, value in enumerate(values):
        for j, (train, test) in enumerate(splits):
            refit = clone(estimator).set_params(tolerance=value)
            refit.fit(X[train], y[train], sensitive_features=g[train])
            _assert_same_models([path.estimators[i][j]], [refit], 1e-10)
            assert path.fold_val_accuracy[i, j] == pytest.approx(refit.score(X[test], y[test]))
            gap = loss_gap(y[test], refit.predict_proba(X[test]), sensitive_features=g[test])
            assert path.fold_val_unfairness[i, j] == pytest.approx(gap, abs=1e-10)
            gap = loss_gap(y[train], refit.predict_proba(X[train]), sensitive_features=g[train])
            assert path.fold_train_unfairness[i, j] == pytest.approx(gap, abs=1e-10)
            assert path.fold_train_accuracy[i, j] == pytest.approx(refit.score(X[train], y[train]))


@pytest.mark.parametrize("metric, n_classes", [("loss_equalized_odds", 2), ("loss_parity", 3)])
def test_cross_validated_scores_with_weights_strata_and_classes(metric, n_classes):
    """``fairness_path(..., cv=)`` with sample weights, three groups, label strata and
    string classes: every fold's train scores (weighted) and test scores (unweighted)
    are those of each point's own ``predict`` / ``predict_proba`` through
    ``accuracy_score`` and ``fairest.metrics.loss_gap`` on the fold's rows."""
    from fairest.model_selection import GroupStratifiedKFold

    X, y, g = _data(n=360, n_groups=3, n_classes=n_classes, seed=8)
    labels = np.array(["lo", "mid", "hi"])[:n_classes][y]
    weight = np.random.default_rng(3).uniform(0.2, 2.5, y.size)
    estimator = LossGapConstrainedClassifier(
        (), metric=metric, n_epochs=1, dtype="float64", random_state=3
    )
    path = fairness_path(
        estimator, X, labels, sensitive_features=g, sample_weight=weight, values=[0.02, 0.2], cv=3
    )
    assert path.strategy == "vmap"
    splits = list(GroupStratifiedKFold(3).split(X, labels, sensitive_features=g))

    for i in range(2):
        for j, (train, test) in enumerate(splits):
            point = path.estimators[i][j]
            accuracy, gap = _own_scores(point, X[train], labels[train], g[train], weight[train])
            assert path.fold_train_accuracy[i, j] == pytest.approx(accuracy, abs=1e-12)
            assert path.fold_train_unfairness[i, j] == pytest.approx(gap, rel=1e-9, abs=1e-12)
            accuracy, gap = _own_scores(point, X[test], labels[test], g[test])
            assert path.fold_val_accuracy[i, j] == pytest.approx(accuracy, abs=1e-12)
            assert path.fold_val_unfairness[i, j] == pytest.approx(gap, rel=1e-9, abs=1e-12)
