import warnings

import numpy as np
import pytest
from sklearn import config_context
from sklearn.model_selection import GridSearchCV, cross_validate

from fairest import GroupWeightedClassifier
from fairest.metrics import demographic_parity_difference
from fairest.model_selection import GroupStratifiedKFold, constrained_refit, make_fairness_scorer


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])
    X = rng.normal(size=(n, 3)) + (s == "a")[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, s


def test_every_label_group_cell_in_every_fold():
    X, y, s = _data()
    cells = {(label, group) for label, group in zip(y, s)}
    folds = list(
        GroupStratifiedKFold(5, shuffle=True, random_state=0).split(X, y, sensitive_features=s)
    )
    assert len(folds) == 5
    tested = np.concatenate([test for _, test in folds])
    np.testing.assert_array_equal(np.sort(tested), np.arange(len(y)))
    for train, test in folds:
        assert {(a, b) for a, b in zip(y[test], s[test])} == cells
        assert {(a, b) for a, b in zip(y[train], s[train])} == cells


def test_splitter_needs_sensitive_features_and_takes_legacy_groups():
    X, y, s = _data()
    with pytest.raises(ValueError, match="sensitive features"):
        next(GroupStratifiedKFold().split(X, y))
    legacy = [t.tolist() for _, t in GroupStratifiedKFold(3).split(X, y, groups=s)]
    routed = [t.tolist() for _, t in GroupStratifiedKFold(3).split(X, y, sensitive_features=s)]
    assert legacy == routed


def test_fairness_scorer_equals_negated_metric():
    X, y, s = _data()
    model = GroupWeightedClassifier().fit(X, y, sensitive_features=s)
    scorer = make_fairness_scorer("demographic_parity_difference")
    expected = demographic_parity_difference(y, model.predict(X), sensitive_features=s)
    custom = make_fairness_scorer(lambda yt, yp, *, sensitive_features: 0.25)
    with config_context(enable_metadata_routing=True):
        assert scorer(model, X, y, sensitive_features=s) == pytest.approx(-expected)
        assert custom(model, X, y, sensitive_features=s) == -0.25


def test_unknown_metric_raises():
    with pytest.raises(ValueError, match="unknown fairness metric"):
        make_fairness_scorer("accuracy_of_everything")


def _search(tolerance):
    return GridSearchCV(
        GroupWeightedClassifier(),
        {"weights": ["pooled", "balanced"], "alpha": [1e-3, 1e-1]},
        cv=GroupStratifiedKFold(3),
        scoring={
            "accuracy": "accuracy",
            "dp": make_fairness_scorer("demographic_parity_difference"),
        },
        refit=constrained_refit(accuracy="accuracy", unfairness="dp", tolerance=tolerance),
    )


def test_constrained_refit_picks_best_accuracy_among_fair_candidates():
    X, y, s = _data()
    with config_context(enable_metadata_routing=True):
        search = _search(tolerance=0.36).fit(X, y, sensitive_features=s)
    unfair = -search.cv_results_["mean_test_dp"]
    accuracy = search.cv_results_["mean_test_accuracy"]
    feasible = unfair <= 0.36
    assert feasible.any() and not feasible.all()
    assert search.best_index_ == np.flatnonzero(feasible)[np.argmax(accuracy[feasible])]
    assert hasattr(search, "best_estimator_")


def test_constrained_refit_without_feasible_candidate_raises():
    X, y, s = _data()
    with (
        config_context(enable_metadata_routing=True),
        pytest.raises(ValueError, match="no candidate"),
    ):
        _search(tolerance=1e-6).fit(X, y, sensitive_features=s)


def test_cross_validate_with_fairness_scorer_and_routing():
    X, y, s = _data()
    with config_context(enable_metadata_routing=True):
        result = cross_validate(
            GroupWeightedClassifier(weights="balanced"),
            X,
            y,
            cv=GroupStratifiedKFold(3),
            scoring={"dp": make_fairness_scorer("demographic_parity_difference")},
            params={"sensitive_features": s},
        )
    assert np.all(result["test_dp"] <= 0)


def test_a_group_of_at_least_n_splits_rows_is_in_every_fold_whatever_its_cells():
    """Small groups whose (label, group) cells are each thinner than the folds: their
    rows are dealt round robin as one block, so every test (and training) fold holds
    every group of at least ``n_splits`` rows (label-major cells left some out)."""
    checked = 0
    for seed in range(30):
        rng = np.random.default_rng(seed)
        s = rng.choice(["a", "b", "c", "d"], 60, p=[0.8, 0.1, 0.05, 0.05])
        y = rng.integers(0, 2, 60)
        if np.unique(s, return_counts=True)[1].min() < 3 or len(set(s)) < 4:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # thin cells, named by the splitter
            folds = list(GroupStratifiedKFold(3).split(y, y, sensitive_features=s))
        tested = np.sort(np.concatenate([test for _, test in folds]))
        np.testing.assert_array_equal(tested, np.arange(60))
        for train, test in folds:
            assert set(s[test]) == set(s[train]) == set(s)
            assert np.intersect1d(train, test).size == 0
        checked += 1
    assert checked >= 10


def test_a_cell_thinner_than_the_folds_is_named_in_the_warning():
    y = np.array([0, 1] * 10)
    s = np.array(["a"] * 16 + ["b"] * 4)
    with pytest.warns(UserWarning, match=r"cell \(0, 'b'\) has only 2 rows, fewer than n_splits=3"):
        folds = list(GroupStratifiedKFold(3).split(y, y, sensitive_features=s))
    assert all(set(s[test]) == {"a", "b"} for _, test in folds)
