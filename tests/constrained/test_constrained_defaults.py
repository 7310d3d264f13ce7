"""LossGapConstrainedClassifier at its defaults (issue #33): the ``"default"`` preset
mitigates, the ``"paper"`` preset is the paper's configuration, the final feasibility
phase brings a near miss within the tolerance, and a fit that misses its tolerance or
predicts one class warns with the achieved figures."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from fairest.constrained import LossGapConstrainedClassifier, PrunedFairClassifier, _defaults
from fairest.constrained._feasibility import restore_feasibility
from fairest.constrained._path import fit_tolerance_path, fit_tolerance_path_folds
from fairest.constrained._presets import (
    resolve_batch_size,
    resolve_feasibility_steps,
    resolve_n_epochs,
    resolve_solver_params,
)
from fairest.metrics import loss_gap
from fairest.utils import FairnessWarning


def _many_groups(seed=0):
    """12 groups: six of 100-200 rows, six of 400-900; group-dependent base rates and
    noise, the group one-hot among the features (so group losses differ widely)."""
    rng = np.random.default_rng(seed)
    sizes = [120, 150, 180, 200, 100, 160, 400, 600, 900, 500, 700, 800]
    g = np.repeat(np.arange(len(sizes)), sizes)
    n = g.size
    X = rng.normal(size=(n, 6))
    shift = rng.normal(scale=1.0, size=len(sizes))
    noise = rng.uniform(0.3, 2.0, size=len(sizes))
    logits = X @ np.array([1.2, -0.8, 0.5, 0.0, 0.3, 0.0]) + shift[g]
    y = (logits + noise[g] * rng.normal(size=n) > 0).astype(int)
    X = np.column_stack([StandardScaler().fit_transform(X), np.eye(len(sizes))[g]])
    return X, y, g


def _gap(model, X, y, g):
    return loss_gap(y, model.predict_proba(X), sensitive_features=g)


def test_presets_resolve_to_the_papers_and_the_default_settings():
    assert resolve_batch_size("auto", "ssl-alm", "paper") == 8
    assert resolve_batch_size("auto", "ssw", "release") == 16
    assert resolve_batch_size("auto", "ssw", "default") == _defaults.DEFAULT_BATCH_SIZE == 32
    assert resolve_batch_size(5, "ssl-alm", "default") == 5
    assert resolve_n_epochs("auto", "paper", 10**6) == 5
    assert resolve_n_epochs("auto", "default", 20_000) == pytest.approx(10.0)
    assert resolve_n_epochs("auto", "default", 10**6) == _defaults.AUTO_MIN_EPOCHS
    assert resolve_n_epochs("auto", "default", 10) == _defaults.AUTO_MAX_EPOCHS
    assert resolve_n_epochs(3, "default", 10) == 3
    assert resolve_feasibility_steps("auto", "ssl-alm", "default") == 50
    assert resolve_feasibility_steps("auto", "ssl-alm", "paper") == 0
    assert resolve_feasibility_steps(7, "ghost", "paper") == 7
    assert resolve_feasibility_steps(7, "sgd", "default") == 0  # the baselines: never
    paper = resolve_solver_params("ssl-alm", "paper", None)
    assert paper["learning_rate"] == 0.01 and paper["constraint_draw"] == "independent"
    default = resolve_solver_params("ssl-alm", "default", None)
    assert default["learning_rate"] == 0.05 and default["constraint_draw"] == "shared"
    assert resolve_solver_params("sgd", "default", None)["learning_rate"] == 0.05
    assert resolve_solver_params("sgd", "paper", None)["learning_rate"] == 0.005
    est = LossGapConstrainedClassifier()
    assert (est.preset, est.n_epochs, est.feasibility_steps) == ("default", "auto", "auto")
    assert est.tolerance == 0.005 and tuple(est.hidden_layer_sizes) == (64, 32)


def test_defaults_on_many_groups_meet_the_tolerance_and_beat_unconstrained_fits():
    """12 groups, six of 100-200 rows: the default fit meets its tolerance on the exact
    train loss gap (or warns) and its train loss gap is far below those of an
    unconstrained MLP (solver="sgd") and of scikit-learn's logistic regression."""
    X, y, g = _many_groups()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FairnessWarning)
        est = LossGapConstrainedClassifier(random_state=0).fit(X, y, sensitive_features=g)
    missed = [w for w in caught if "above tolerance" in str(w.message)]
    assert est.is_feasible_ != bool(missed)
    assert est.is_feasible_ and est.train_unfairness_ <= est.tolerance
    assert _gap(est, X, y, g) == pytest.approx(est.train_unfairness_, rel=1e-6)
    free = LossGapConstrainedClassifier(solver="sgd", random_state=0)
    free.fit(X, y, sensitive_features=g)
    logreg = LogisticRegression(max_iter=1000).fit(X, y)
    assert _gap(free, X, y, g) > 10 * est.train_unfairness_
    assert _gap(logreg, X, y, g) > 10 * est.train_unfairness_
    majority = max(y.mean(), 1 - y.mean())
    assert est.score(X, y) > majority + 0.05


def test_the_paper_preset_misses_and_warns_with_the_achieved_gap():
    """The paper's configuration (5 epochs of batches of 8, no feasibility phase) ends
    outside the tolerance on these data: a FairnessWarning gives the achieved gap, the
    tolerance, the groups' losses and what to try; is_feasible_ says the same."""
    X, y, g = _many_groups()
    with pytest.warns(FairnessWarning) as record:
        est = LossGapConstrainedClassifier(preset="paper", random_state=0)
        est.fit(X, y, sensitive_features=g)
    assert not est.is_feasible_ and est.n_feasibility_steps_ == 0
    (message,) = [str(w.message) for w in record if "above tolerance" in str(w.message)]
    assert f"is {est.train_unfairness_:.4g}, above tolerance=0.005" in message
    assert "(100 rows)" in message and "0 of 0 feasibility steps" in message
    assert "preset='default'" in message and "merge small groups" in message
    assert "the smallest has 100 rows" in message


def test_the_feasibility_phase_brings_the_papers_near_miss_within_the_tolerance():
    """The same solver run with the final feasibility phase: the end point is moved (a few
    full-batch steps) until the exact train loss gap is within the tolerance; no
    warning, little accuracy given up."""
    X, y, g = _many_groups()
    kw = dict(preset="paper", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        paper = LossGapConstrainedClassifier(**kw).fit(X, y, sensitive_features=g)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FairnessWarning)
        restored = LossGapConstrainedClassifier(feasibility_steps=50, **kw)
        restored.fit(X, y, sensitive_features=g)
    assert paper.train_unfairness_ > paper.tolerance
    assert 0 < restored.n_feasibility_steps_ <= 50
    assert restored.train_unfairness_ <= 0.005 * (1 - _defaults.FEASIBILITY_MARGIN / 2) + 1e-6
    assert restored.n_iter_ == paper.n_iter_  # the same solver run, then the phase
    assert restored.score(X, y) > paper.score(X, y) - 0.03


def test_restore_feasibility_stops_at_once_when_feasible_and_keeps_the_best_iterate(x64):
    X, y, g = _many_groups()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        est = LossGapConstrainedClassifier((), preset="paper", dtype="float64", random_state=0)
        est.fit(X, y, sensitive_features=g)
    setup = est._fit_setup(X, y, g, None)
    x = np.concatenate([est.params_[0][0].ravel(), est.params_[0][1]])
    loose = est.train_unfairness_ + 0.1
    kw = dict(sample_weight=None, dtype=np.float64)
    same, steps = restore_feasibility(
        setup.problem, x, setup.X, setup.y_codes, setup.groups, setup.gaps, loose, **kw,
        max_steps=50,
    )  # fmt: skip
    assert steps == 0 and np.array_equal(same, x)
    moved, steps = restore_feasibility(
        setup.problem, x, setup.X, setup.y_codes, setup.groups, setup.gaps, 0.0, **kw,
        max_steps=3,
    )  # fmt: skip
    assert steps == 3  # tolerance 0 is not reached: the budget is spent
    est.params_ = [(moved[:-1].reshape(-1, 1), moved[-1:])]
    assert _gap(est, X, y, g) < est.train_unfairness_  # the best iterate, not x


def test_the_baselines_take_no_feasibility_phase_and_do_not_warn_about_the_tolerance():
    X, y, g = _many_groups()
    for solver in ("sgd", "penalty"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FairnessWarning)
            est = LossGapConstrainedClassifier((8,), solver=solver, n_epochs=5, random_state=0)
            est.fit(X, y, sensitive_features=g)
        assert est.n_feasibility_steps_ == 0 and not est.is_feasible_
        assert not any("above tolerance" in str(w.message) for w in caught)


def test_a_near_constant_model_warns_with_its_figures():
    """Labels independent of the features (20 % positive): the unconstrained fit
    predicts the majority class for every row, which warns, with the accuracy and the
    share predicted per group."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 3))
    y = (rng.random(600) < 0.2).astype(int)
    g = rng.choice(["a", "b"], 600)
    with pytest.warns(FairnessWarning, match="predicts one class nearly everywhere") as record:
        LossGapConstrainedClassifier((), solver="sgd", random_state=0).fit(
            X, y, sensitive_features=g
        )
    message = str(record[0].message)
    assert "share predicted 0 1.000" in message and "'a': 1.000 / " in message


def test_a_constrained_path_restores_each_point_as_its_refit():
    """A lane that misses its tolerance takes the feasibility phase as the refit does:
    the path's points equal the refits (one sweep, then the phase per point), in the
    single and the cross-validated path."""
    X, y, g = _many_groups()
    X, y, g = X[::3], y[::3], g[::3]
    estimator = LossGapConstrainedClassifier((), n_epochs=2, dtype="float64", random_state=0)
    values = [0.01, 0.3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessWarning)
        points = fit_tolerance_path(estimator, X, y, values, sensitive_features=g)
        refits = [
            LossGapConstrainedClassifier(**{**estimator.get_params(), "tolerance": v}).fit(
                X, y, sensitive_features=g
            )
            for v in values
        ]
        folds = [np.arange(0, X.shape[0], 2), np.arange(1, X.shape[0], 2)]
        fold_points = fit_tolerance_path_folds(estimator, X, y, values, folds, sensitive_features=g)
        fold_refit = LossGapConstrainedClassifier(**{**estimator.get_params(), "tolerance": 0.01})
        fold_refit.fit(X[folds[1]], y[folds[1]], sensitive_features=g[folds[1]])
    assert points[0].n_feasibility_steps_ > 0  # the tight lane was restored
    for point, refit in zip(points, refits):
        assert point.n_feasibility_steps_ == refit.n_feasibility_steps_
        np.testing.assert_allclose(point.coef_, refit.coef_, atol=1e-10)
        assert point.train_unfairness_ == pytest.approx(refit.train_unfairness_, abs=1e-10)
    assert fold_points[0][1].n_feasibility_steps_ == fold_refit.n_feasibility_steps_ > 0
    np.testing.assert_allclose(fold_points[0][1].coef_, fold_refit.coef_, atol=1e-10)


# ------------------------------------------------------------------------------------------
# PrunedFairClassifier: the same warnings (its own metric, the excess accuracy gap)
# ------------------------------------------------------------------------------------------

PRUNED = dict(
    hidden_layer_sizes=(8,),
    dense_n_epochs=10,
    n_epochs=4,
    pruning_epochs=2,
    target_sparsity=0.5,
    batch_size=32,
    learning_rate=0.05,
    dense_learning_rate=0.05,
    random_state=0,
)


def test_pruned_missed_tolerance_warns_with_the_groups_over_it():
    """tolerance=0 on 12 groups: some group loses more accuracy than the model; the
    warning gives the largest gap, the tolerance, the groups over it with their row
    counts, and what to try. Naive fine-tuning (metric=None) targets no tolerance and
    does not warn about it."""
    X, y, g = _many_groups()
    with pytest.warns(FairnessWarning, match="above tolerance=0 ") as record:
        est = PrunedFairClassifier(tolerance=0.0, **PRUNED).fit(X, y, sensitive_features=g)
    (message,) = [str(w.message) for w in record if "above tolerance" in str(w.message)]
    assert f"gap is {est.train_unfairness_:.4g}" in message and not est.is_feasible_
    worst = int(est.train_eags_.idxmax())
    rows = int(np.sum(g == worst))
    assert f"{worst}: {est.train_eags_.max():.4f} ({rows} rows" in message
    assert "raise dual_learning_rate" in message and "the smallest has 100 rows" in message
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FairnessWarning)
        naive = PrunedFairClassifier(metric=None, tolerance=0.0, **PRUNED)
        naive.fit(X, y, sensitive_features=g)
    assert not naive.is_feasible_
    assert not any("above tolerance" in str(w.message) for w in caught)


def test_pruned_within_the_tolerance_up_to_rounding_is_feasible():
    """A largest gap above the tolerance by float rounding only (1e-9 at most) is within
    it; one above it by more is not. The all-zero network (every logit 0, so class 1 as
    in predict) loses four rows of 200 in group 1 against its dense reference."""
    y = np.tile([0, 1], 200)
    y[200:208] = 0  # rows 201, 203, 205, 207: 1 -> 0
    groups = np.repeat([0, 1], 200)
    ref = {"acc": 0.5, "acc_g": np.array([0.5, 0.5]), "loss": 0.7, "loss_g": np.ones(2)}
    est = PrunedFairClassifier(tolerance=1.0)
    est.params_ = [(np.zeros((1, 1)), np.zeros(1))]
    X = np.zeros((400, 1))
    psi, _, _ = est._store_train_gaps(ref, X, y, groups, None, np.array([0, 1]))
    assert psi.max() == pytest.approx(0.01)
    for tolerance, feasible in ((np.nextafter(psi.max(), 0.0), True), (psi.max() - 1e-6, False)):
        est.tolerance = tolerance
        est._store_train_gaps(ref, X, y, groups, None, np.array([0, 1]))
        assert est.is_feasible_ == est.train_disparity_["is_feasible"] == feasible


def test_pruned_near_constant_model_warns():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 3))
    y = (rng.random(600) < 0.2).astype(int)
    g = rng.choice(["a", "b"], 600)
    with pytest.warns(FairnessWarning, match="predicts one class nearly everywhere"):
        PrunedFairClassifier(**PRUNED).fit(X, y, sensitive_features=g)


def test_a_model_that_barely_beats_the_majority_class_is_named():
    """Train accuracy within a tenth of the room above the majority rate: the figures of
    the warning; clearly above it, or near-constant (its own warning), nothing."""
    from fairest.constrained._feasibility import (
        near_constant_figures,
        warn_fit,
        weak_accuracy_figures,
    )

    y = np.array([0] * 88 + [1] * 12)
    weak = y.copy()
    weak[:2], weak[88:98] = 1, 0  # accuracy 0.88 + 0.00: nothing gained on the majority
    line = weak_accuracy_figures(weak, y, None, ["no", "yes"])
    assert line == "train accuracy 0.8800 against 0.8800 for always predicting 'no'"
    good = y.copy()
    good[88:91] = 0  # accuracy 0.97, a gain of 0.09 of the 0.12 above the majority
    assert weak_accuracy_figures(good, y, None, ["no", "yes"]) is None
    weights = np.where(y == 1, 2.0, 1.0)  # the weighted majority: 88 of 112
    assert "0.8036 against 0.7857" in weak_accuracy_figures(weak, y, weights, ["no", "yes"])
    # numpy labels print as the user wrote them, not as np.str_('no') / np.int64(0)
    assert weak_accuracy_figures(weak, y, None, np.array(["no", "yes"])).endswith("'no'")
    constant = near_constant_figures(
        np.zeros(100, int), y, np.arange(100) % 2, None, np.array([7, 9]), np.array(["no", "yes"])
    )
    assert "share predicted 'no' 1.000" in constant and "7: 1.000 / 0.880" in constant
    assert "np." not in constant

    class Stub:
        pass

    with pytest.warns(FairnessWarning, match=r"Stub: the returned model barely beats .*0\.8800"):
        warn_fit(Stub(), missed=None, constant=None, advice="", weak=line)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_fit(Stub(), missed=None, constant=None, advice="", weak=None)
