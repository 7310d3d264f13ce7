"""CertifiedFairClassifier: split, candidates, selection, safety test, NSF, routing."""

import functools
import pickle

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairest.certified import (
    CertifiedFairClassifier,
    NoSolutionFoundError,
    certified_bound_scorer,
    certify_fairness,
    no_solution_scorer,
    rows_needed,
)
from fairest.certified._estimator import stratified_safety_split
from fairest.constrained import LossGapConstrainedClassifier
from fairest.datasets import make_grouped_classification
from fairest.ermi import ERMIClassifier
from fairest.reweighting import GroupWeightedClassifier

GRID = {"class_weight": [{0: 1.0, 1: w} for w in (0.02, 0.05, 0.1, 0.3, 1.0)]}


@pytest.fixture(scope="module")
def data():
    X, y, groups = make_grouped_classification(
        n_samples=8000, n_features=4, group_bias=0.5, random_state=0
    )
    return X, y, np.where(groups == 0, "f", "m")


def _split(model, y, groups):
    strata = np.unique(groups, return_inverse=True)[1] * 2 + np.unique(y, return_inverse=True)[1]
    return stratified_safety_split(strata, model.safety_fraction, model.random_state)


def test_stratified_split_sizes():
    strata = np.repeat(np.arange(4), [10, 1, 25, 2])
    safety = stratified_safety_split(strata, 0.6, 0)
    np.testing.assert_array_equal(np.bincount(strata[safety], minlength=4), [6, 1, 15, 1])
    assert not np.array_equal(safety, stratified_safety_split(strata, 0.6, 1))


def test_certified_model_is_the_candidate_fit_and_the_certificate_is_reproducible(data):
    X, y, groups = data
    model = CertifiedFairClassifier(
        LogisticRegression(),
        constraints=[("demographic_parity_difference", 0.15)],
        param_grid=GRID,
        random_state=0,
    ).fit(X, y, sensitive_features=groups)
    assert model.certified_ and model.no_solution_reason_ is None
    safety = _split(model, y, groups)
    # never refit: the certified model is the candidate-part fit of the chosen setting
    reference = LogisticRegression(**model.best_params_).fit(X[~safety], y[~safety])
    np.testing.assert_allclose(model.best_estimator_.coef_, reference.coef_)
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))
    # the certificate is certify_fairness of that model on the safety rows
    again = certify_fairness(
        reference,
        X[safety],
        y[safety],
        sensitive_features=groups[safety],
        constraints=[("demographic_parity_difference", 0.15)],
    )
    assert model.certificate_.constraints[0].upper_bound == pytest.approx(
        again.constraints[0].upper_bound
    )
    assert model.certificate_.n_certification == safety.sum()
    assert model.certificate_.n_candidate == (~safety).sum()
    # the most accurate candidate whose predicted bound passes
    results = model.candidate_results_
    passing = np.flatnonzero(results["predicted_pass"])
    assert model.best_index_ == passing[np.argmax(results["accuracy"][passing])]
    assert results["predicted_bound"].shape == (5, 1)
    assert model.predict_proba(X[:3]).shape == (3, 2)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))


def test_inflation_widens_the_prediction(data):
    X, y, groups = data
    kwargs = dict(
        param_grid=GRID, random_state=0, constraints=[("demographic_parity_difference", 0.15)]
    )
    narrow = CertifiedFairClassifier(LogisticRegression(), inflation=1.0, **kwargs).fit(
        X, y, sensitive_features=groups
    )
    wide = CertifiedFairClassifier(LogisticRegression(), inflation=3.0, **kwargs).fit(
        X, y, sensitive_features=groups
    )
    fair = narrow.candidate_results_["predicted_bound"][:, 0]
    assert np.all(wide.candidate_results_["predicted_bound"][:, 0] >= fair)


def test_no_solution_too_little_data_names_the_rows_needed(data):
    X, y, groups = data
    model = CertifiedFairClassifier(LogisticRegression(), param_grid=GRID, random_state=0).fit(
        X[:300], y[:300], sensitive_features=groups[:300]
    )
    assert not model.certified_
    assert model.no_solution_reason_.startswith("too little data")
    share = model.certificate_.constraints[0].delta_share
    rate = model.certificate_.constraints[0].group_estimate.mean()
    assert model.rows_needed_ == rows_needed(
        "demographic_parity_difference", 0.05, share, "clopper-pearson", rate=rate
    )
    assert str(model.rows_needed_) in model.no_solution_reason_
    with pytest.raises(NoSolutionFoundError, match="too little data"):
        model.predict(X)
    with pytest.raises(NoSolutionFoundError):
        model.score(X, y)


def test_no_solution_no_candidate_reached_and_constant_fallback(data):
    X, y, groups = data
    unfair = np.where(groups == "f", 1, y)  # every 'f' is positive: a large DP gap
    model = CertifiedFairClassifier(
        LogisticRegression(),
        constraints=[("demographic_parity_difference", 0.05)],
        random_state=0,
        on_no_solution="constant",
    ).fit(np.column_stack([X, groups == "f"]), unfair, sensitive_features=groups)
    assert not model.certified_ and model.rows_needed_ is None
    assert model.no_solution_reason_.startswith("no candidate reached the constraint")
    Xg = np.column_stack([X, groups == "f"])
    majority = np.bincount(unfair).argmax()
    np.testing.assert_array_equal(model.predict(Xg), np.full(len(X), majority))
    np.testing.assert_array_equal(model.predict_proba(Xg)[:, majority], 1.0)


def test_no_solution_group_missing_from_the_safety_part(data):
    X, y, groups = data
    groups = groups.copy()
    groups[:3] = "x"
    y = y.copy()
    y[:3] = [1, 0, 0]  # group x: one positive, kept in the candidate part (round(0.4) = 0)
    model = CertifiedFairClassifier(
        LogisticRegression(),
        constraints=[("equal_opportunity_difference", 0.5)],
        safety_fraction=0.4,
        random_state=0,
    ).fit(X, y, sensitive_features=groups)
    assert not model.certified_
    assert model.no_solution_reason_.startswith("group 'x' has no rows with y = 1")


def test_n_comparisons_divides_delta(data):
    X, y, groups = data
    model = CertifiedFairClassifier(
        LogisticRegression(),
        constraints=[("demographic_parity_difference", 0.5), ("equalized_odds_difference", 0.5)],
        n_comparisons=5,
        delta=0.1,
        random_state=0,
    ).fit(X, y, sensitive_features=groups)
    assert model.certificate_.constraints[1].delta_share == pytest.approx(0.1 / 10)
    assert "5 compared models" in repr(model.certificate_)


def test_default_sweeps_use_the_estimators_own_knob():
    lossgap = CertifiedFairClassifier(LossGapConstrainedClassifier())._candidate_grid()
    assert [p["tolerance"] for p in lossgap] == [0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.0]
    ermi = CertifiedFairClassifier(ERMIClassifier())._candidate_grid()
    assert set(ermi[0]) == {"fairness_weight"} and len(ermi) == 6
    pipe = make_pipeline(StandardScaler(), LossGapConstrainedClassifier())
    names = {name for p in CertifiedFairClassifier(pipe)._candidate_grid() for name in p}
    assert names == {"lossgapconstrainedclassifier__tolerance"}
    assert CertifiedFairClassifier(LogisticRegression())._candidate_grid() == [{}]


def test_sensitive_features_and_weights_reach_the_wrapped_estimator(data):
    X, y, groups = data
    weights = np.random.default_rng(0).integers(1, 4, len(y)).astype(float)
    model = CertifiedFairClassifier(
        GroupWeightedClassifier(weights="balanced"),
        constraints=[("demographic_parity_difference", 1.0)],
        random_state=0,
    ).fit(X, y, sensitive_features=groups, sample_weight=weights)
    safety = _split(model, y, groups)
    reference = GroupWeightedClassifier(weights="balanced").fit(
        X[~safety], y[~safety], sensitive_features=groups[~safety], sample_weight=weights[~safety]
    )
    np.testing.assert_array_equal(model.best_estimator_.groups_, ["f", "m"])
    np.testing.assert_allclose(model.best_estimator_.coef_, reference.coef_)


def test_routing_search_inside_and_scorers_outside(data):
    X, y, groups = data
    X, y, groups = X[:3000], y[:3000], groups[:3000]
    with config_context(enable_metadata_routing=True):
        inner = GridSearchCV(GroupWeightedClassifier(), {"alpha": [1e-3, 1e-1]}, cv=2)
        model = CertifiedFairClassifier(
            inner, constraints=[("demographic_parity_difference", 1.0)], random_state=0
        ).fit(X, y, sensitive_features=groups)
        assert model.certified_ and len(model.best_estimator_.cv_results_["params"]) == 2
        search = GridSearchCV(
            CertifiedFairClassifier(LogisticRegression(), random_state=0),
            {
                "constraints": [
                    [("demographic_parity_difference", 1.0)],
                    [("demographic_parity_difference", 0.001)],
                ]
            },
            scoring={
                "nsf": no_solution_scorer,
                "bound": certified_bound_scorer,
                "ratio": functools.partial(certified_bound_scorer, constraint=0),
            },
            cv=2,
            refit=False,
        ).fit(X, y, sensitive_features=groups)
        np.testing.assert_array_equal(search.cv_results_["mean_test_nsf"], [0.0, 1.0])
        assert np.all(search.cv_results_["mean_test_bound"] < 0)
        result = cross_validate(
            CertifiedFairClassifier(LogisticRegression(), random_state=0),
            X,
            y,
            cv=2,
            scoring=no_solution_scorer,
            params={"sensitive_features": groups},
        )
        assert result["test_score"].shape == (2,)
    with pytest.raises(ValueError, match="reads a fitted CertifiedFairClassifier"):
        no_solution_scorer(LogisticRegression().fit(X, y), X, y)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"constraints": [("demographic_parity", 0.1)]}, "unknown metric"),
        ({"constraints": [("demographic_parity_difference", -1)]}, "must be a number"),
        ({"bound": "normal"}, "bound"),
        ({"inflation": 0.5}, "inflation"),
        ({"safety_fraction": 1.0}, "safety_fraction"),
        ({"on_no_solution": "ignore"}, "on_no_solution"),
    ],
)
def test_bad_parameters(data, kwargs, match):
    X, y, groups = data
    model = CertifiedFairClassifier(LogisticRegression(), **kwargs)
    with pytest.raises(ValueError, match=match) as error:
        clone(model).fit(X[:200], y[:200], sensitive_features=groups[:200])
    assert len(str(error.value)) < 500


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")  # class weight 0.02
def test_fixed_sequence_tests_in_order_until_the_first_failure(data):
    X, y, groups = data
    constraints = [("demographic_parity_difference", 0.12)]
    model = CertifiedFairClassifier(
        LogisticRegression(),
        constraints=constraints,
        param_grid=GRID,
        selection="fixed_sequence",
        random_state=0,
    ).fit(X, y, sensitive_features=groups)
    results = model.candidate_results_
    order = np.argsort(results["predicted_margin"], kind="stable")
    tested = results["safety_tested"][order]
    assert tested[0] and not np.any(np.diff(tested.astype(int)) > 0)  # a prefix of the order
    # reference: refit every tested candidate on the candidate part, certify it on the safety part
    safety = _split(model, y, groups)
    verdicts = []
    for index in order[tested]:
        candidate = LogisticRegression(**results["params"][index]).fit(X[~safety], y[~safety])
        certificate = certify_fairness(
            candidate,
            X[safety],
            y[safety],
            sensitive_features=groups[safety],
            constraints=constraints,
        )
        verdicts.append(certificate.passed)
    assert all(verdicts[:-1]) and (verdicts[-1] is False or tested.all())
    passed = order[tested][np.array(verdicts)]
    assert model.certified_ == bool(passed.size)
    assert model.best_index_ == passed[np.argmax(results["accuracy"][passed])]
    assert "fixed-sequence" in model.certificate_.selection


def test_group_aware_post_processor_is_certified_along_its_tolerance_path(data):
    from fairest.postprocessing import GroupThresholdClassifier

    X, y, groups = data
    model = CertifiedFairClassifier(
        GroupThresholdClassifier(LogisticRegression()),
        constraints=[("demographic_parity_difference", 0.05)],
        selection="fixed_sequence",
        random_state=0,
    ).fit(X, y, sensitive_features=groups)
    assert model.certified_ and set(model.best_params_) == {"tolerance"}
    safety = _split(model, y, groups)
    again = certify_fairness(
        model.best_estimator_,
        X[safety],
        y[safety],
        sensitive_features=groups[safety],
        constraints=[("demographic_parity_difference", 0.05)],
    )
    assert model.certificate_.constraints[0].upper_bound == pytest.approx(
        again.constraints[0].upper_bound
    )
    np.testing.assert_array_equal(
        model.predict(X, sensitive_features=groups),
        model.best_estimator_.predict(X, sensitive_features=groups),
    )


@pytest.mark.parametrize("routing", [False, True])
def test_pipelines_receive_the_groups_with_or_without_routing(data, routing):
    X, y, groups = data
    with config_context(enable_metadata_routing=routing):
        model = CertifiedFairClassifier(
            make_pipeline(StandardScaler(), GroupWeightedClassifier(weights="uniform")),
            constraints=[("demographic_parity_difference", 1.0)],
            random_state=0,
        ).fit(X[:2000], y[:2000], sensitive_features=groups[:2000])
    np.testing.assert_array_equal(model.best_estimator_[-1].groups_, ["f", "m"])


def test_zero_tolerance_is_not_reported_as_too_little_data(data):
    X, y, groups = data
    model = CertifiedFairClassifier(
        LogisticRegression(), constraints=[("demographic_parity_difference", 0.0)], random_state=0
    ).fit(X, y, sensitive_features=groups)
    assert not model.certified_ and model.rows_needed_ is None
    assert model.no_solution_reason_.startswith("no candidate reached the constraint")
