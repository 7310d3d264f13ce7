"""Certificates under demographic shift: the declared set, the exact worst case, the
sentence, "no solution found" with its reason, and the population oracle.

The oracle: a population given by its cells (value ``t`` of the shift attribute, group
``s``): source shares ``P(T)``, ``P(S | T)`` and a classifier's selection rate per cell,
so that the demographic parity difference of any deployed distribution of ``T`` (with
``P(S, prediction | T)`` unchanged) is exact. Each draw is a new classifier (random cell
rates) and ``n`` held-out rows from the source. The guarantee is
``P(certified and violating) <= delta`` per draw, for every deployed distribution of the
declared set; it is rejected when ``P(Binomial(m, delta) >= V) < 0.001`` for ``V``
certified-and-violating draws of ``m``. At delta = 0.05 and m = 120 the margin is 15
(at most 14 such draws pass). The certificate that ignores the shift fails the same test.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression

from fairest.certified import CertifiedFairClassifier, DemographicShift, certify_fairness
from fairest.certified._shift import linear_fractional_max

DELTA = 0.05
LEVEL = 1e-3  # the binomial test's false-alarm probability
TOLERANCE = 0.12


class Column:
    """A fixed classifier: its predictions are the first column of ``X``."""

    classes_ = np.array([0, 1])

    def predict(self, X):
        return np.asarray(X)[:, 0]


def linear_fractional_max_linprog(num, den, low, high):
    """The same maximum by linear programming after the Charnes-Cooper transform.

    With ``y = q / (den . q)`` and ``u = 1 / (den . q)``: maximise ``num . y`` subject to
    ``den . y = 1``, ``sum y = u``, ``u low <= y <= u high``, ``y, u >= 0``.

    Parameters
    ----------
    num, den, low, high : ndarray of shape (K,)
        As in :func:`linear_fractional_max`.

    Returns
    -------
    float
        The maximum.

    References
    ----------
    .. [1] Charnes, A. and Cooper, W. W. "Programming with linear fractional
       functionals", Naval Research Logistics Quarterly 9 (1962), 181-186.
    """
    from scipy.optimize import linprog

    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    k = num.size
    objective = np.concatenate([-num, [0.0]])
    equality = np.vstack([np.concatenate([den, [0.0]]), np.concatenate([np.ones(k), [-1.0]])])
    eye = np.eye(k)
    inequality = np.vstack(
        [np.hstack([eye, -np.asarray(high)[:, None]]), np.hstack([-eye, np.asarray(low)[:, None]])]
    )
    solution = linprog(
        objective,
        A_ub=inequality,
        b_ub=np.zeros(2 * k),
        A_eq=equality,
        b_eq=[1.0, 0.0],
        bounds=[(0, None)] * (k + 1),
        method="highs",
    )
    if not solution.success:  # pragma: no cover - the set is non-empty and den > 0
        raise RuntimeError(f"linprog failed: {solution.message}")
    return float(-solution.fun)


# ----------------------------------------------------------------------------------
# the declared set


def test_shift_validates_its_arguments():
    with pytest.raises(ValueError, match="sum to 1"):
        DemographicShift({"a": 0.5, "b": 0.4})
    with pytest.raises(ValueError, match="not both"):
        DemographicShift({"a": 1.0}, low={"a": 1.0}, high={"a": 1.0})
    with pytest.raises(ValueError, match="low=... and high="):
        DemographicShift(low={"a": 1.0})
    with pytest.raises(ValueError, match=r"low\['a'\] = 0.6 exceeds high\['a'\]"):
        DemographicShift(low={"a": 0.6, "b": 0.2}, high={"a": 0.5, "b": 0.6})
    with pytest.raises(ValueError, match="must enclose 1"):
        DemographicShift(low={"a": 0.1, "b": 0.1}, high={"a": 0.3, "b": 0.3})
    with pytest.raises(ValueError, match="same values"):
        DemographicShift(low={"a": 0.1, "b": 0.1}, high={"a": 0.9, "c": 0.9})
    with pytest.raises(ValueError, match=r"shares\['a'\] must be a share"):
        DemographicShift({"a": 1.5, "b": -0.5})
    with pytest.raises(TypeError, match="must map each value"):
        DemographicShift([0.5, 0.5])
    with pytest.raises(ValueError, match="width must be"):
        DemographicShift.around({"a": 0.5, "b": 0.5}, 2)


def test_shift_box_and_nominal_shares():
    shift = DemographicShift.around({"a": 0.3, "b": 0.7}, 0.4)
    np.testing.assert_allclose(shift.low, [0.0, 0.3])
    np.testing.assert_allclose(shift.high, [0.7, 1.0])
    assert shift.nominal.sum() == pytest.approx(1.0)
    assert np.all((shift.low <= shift.nominal) & (shift.nominal <= shift.high))
    known = DemographicShift({"a": 0.25, "b": 0.75})
    assert known.exact and known.nominal.tolist() == [0.25, 0.75]
    assert "shares within" not in repr(known) and "box" in repr(shift)


# ----------------------------------------------------------------------------------
# the exact worst case


def test_sort_based_worst_case_matches_linear_programming():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(300):
        k = int(rng.integers(2, 8))
        num = rng.random(k)
        den = num + rng.random(k)
        low = rng.random(k) * (0.8 / k)
        high = np.minimum(low + rng.random(k) * 0.7, 1.0)
        if high.sum() < 1.0:
            continue
        value, shares = linear_fractional_max(num, den, low, high)
        assert value == pytest.approx(linear_fractional_max_linprog(num, den, low, high), abs=1e-9)
        assert shares.sum() == pytest.approx(1.0)
        assert np.all(shares >= low - 1e-12) and np.all(shares <= high + 1e-12)
        assert num @ shares / (den @ shares) == pytest.approx(value)
        # no random point of the set does better
        points = rng.dirichlet(np.ones(k), size=2000)
        inside = np.all((points >= low) & (points <= high), axis=1)
        assert np.all((points[inside] @ num) / (points[inside] @ den) <= value + 1e-12)
        checked += 1
    assert checked > 100


# ----------------------------------------------------------------------------------
# certify_fairness(shift=...)


def _rows(n=6000, seed=3):
    rng = np.random.default_rng(seed)
    t = rng.choice(["young", "middle", "old"], n, p=[0.5, 0.3, 0.2])
    s = rng.choice(["f", "m"], n)
    pred = (rng.random(n) < np.where(t == "old", 0.6, 0.3)).astype(int)
    return t, s, pred


def test_certificate_states_the_assumption_and_is_wider_than_iid():
    t, s, pred = _rows()
    shift = DemographicShift.around({"young": 0.3, "middle": 0.3, "old": 0.4}, 0.05)
    iid = certify_fairness(
        Column(),
        pred[:, None],
        pred,
        sensitive_features=s,
        constraints={"demographic_parity_difference": 0.5},
    )
    shifted = certify_fairness(
        Column(),
        pd.DataFrame({"p": pred, "age": t}),
        pred,
        sensitive_features=s,
        constraints={"demographic_parity_difference": 0.5},
        shift=shift,
        shift_features="age",
    )
    sentence = repr(shifted)
    assert "given age (P(X, Y, S | age)) is that of the population the rows were" in sentence
    assert "'old': [0.35, 0.45]" in sentence
    assert shifted.constraints[0].upper_bound > iid.constraints[0].upper_bound
    assert shifted.passed and shifted.reason is None
    assert shifted.constraints[0].group_count.sum() == t.size


def test_known_shares_equal_a_box_of_zero_width():
    t, s, pred = _rows()
    shares = {"young": 0.2, "middle": 0.3, "old": 0.5}
    results = [
        certify_fairness(
            Column(),
            pred[:, None],
            pred,
            sensitive_features=s,
            constraints={"demographic_parity_ratio": 0.5},
            shift=shift,
            shift_features=t,
        ).constraints[0]
        for shift in (DemographicShift(shares), DemographicShift(low=shares, high=shares))
    ]
    assert results[0].lower_bound == pytest.approx(results[1].lower_bound)
    assert results[0].estimate == pytest.approx(results[1].estimate)


def test_unseen_value_with_a_possible_share_is_no_solution_with_its_reason():
    t, s, pred = _rows()
    shift = DemographicShift(
        low={"young": 0.0, "middle": 0.0, "old": 0.0, "child": 0.0},
        high={"young": 1.0, "middle": 1.0, "old": 1.0, "child": 0.05},
    )
    certificate = certify_fairness(
        Column(),
        pred[:, None],
        pred,
        sensitive_features=s,
        constraints={"demographic_parity_difference": 0.99},
        shift=shift,
        shift_features=t,
    )
    assert not certificate.passed
    assert "value 'child' of the shift attribute has no held-out row" in certificate.reason
    assert "may reach 0.05" in certificate.reason
    # declared absent: the value costs nothing
    absent = DemographicShift(
        low={"young": 0.0, "middle": 0.0, "old": 0.0, "child": 0.0},
        high={"young": 1.0, "middle": 1.0, "old": 1.0, "child": 0.0},
    )
    certificate = certify_fairness(
        Column(),
        pred[:, None],
        pred,
        sensitive_features=s,
        constraints={"demographic_parity_difference": 0.99},
        shift=absent,
        shift_features=t,
    )
    assert certificate.passed


def test_shift_input_errors_name_the_argument():
    t, s, pred = _rows(200)
    shift = DemographicShift({"young": 0.5, "middle": 0.5})
    kwargs = dict(sensitive_features=s, constraints={"demographic_parity_difference": 0.5})
    with pytest.raises(ValueError, match="holds the value 'old', which the shift does not name"):
        certify_fairness(Column(), pred[:, None], pred, shift=shift, shift_features=t, **kwargs)
    with pytest.raises(ValueError, match="shift needs shift_features"):
        certify_fairness(Column(), pred[:, None], pred, shift=shift, **kwargs)
    with pytest.raises(ValueError, match="shift_features is given without shift"):
        certify_fairness(Column(), pred[:, None], pred, shift_features=t, **kwargs)
    with pytest.raises(ValueError, match="shift_features has 199 rows"):
        certify_fairness(Column(), pred[:, None], pred, shift=shift, shift_features=t[1:], **kwargs)
    with pytest.raises(ValueError, match="names no column of X"):
        certify_fairness(Column(), pred[:, None], pred, shift=shift, shift_features="age", **kwargs)
    with pytest.raises(TypeError, match="shift must be a DemographicShift"):
        certify_fairness(
            Column(), pred[:, None], pred, shift={"young": 1.0}, shift_features=t, **kwargs
        )
    missing = t.astype(object)
    missing[3] = None
    with pytest.raises(ValueError, match="1 missing value"):
        certify_fairness(
            Column(), pred[:, None], pred, shift=shift, shift_features=missing, **kwargs
        )


# ----------------------------------------------------------------------------------
# CertifiedFairClassifier(shift=...)


def _population(n, seed):
    rng = np.random.default_rng(seed)
    t = rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])
    s = rng.choice(["f", "m"], n)
    X = np.c_[rng.normal(size=n) + (t == "c") * (s == "m") * 2.0, rng.normal(size=n)]
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, s, t


def test_estimator_selects_and_certifies_with_the_shift_aware_bound():
    X, y, s, t = _population(20000, 11)
    common = dict(
        constraints=[("demographic_parity_difference", 0.12)],
        param_grid={"C": [1e-4, 1.0]},
        random_state=0,
        on_no_solution="constant",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iid = CertifiedFairClassifier(LogisticRegression(), **common).fit(
            X, y, sensitive_features=s
        )
        shift = DemographicShift.around({"a": 0.3, "b": 0.3, "c": 0.4}, 0.05)
        shifted = CertifiedFairClassifier(LogisticRegression(), shift=shift, **common).fit(
            X, y, sensitive_features=s, shift_features=t
        )
    predicted_iid = iid.candidate_results_["predicted_bound"][:, 0]
    predicted_shift = shifted.candidate_results_["predicted_bound"][:, 0]
    assert np.all(predicted_shift > predicted_iid)
    # the accurate candidate passes the i.i.d. prediction and fails the shift-aware one
    assert iid.best_params_ == {"C": 1.0}
    assert shifted.best_params_ == {"C": 1e-4}
    assert shifted.certificate_.shift is shift
    assert "every deployed population whose distribution of T" in repr(shifted.certificate_)


def test_estimator_no_solution_names_the_unseen_value():
    X, y, s, t = _population(4000, 12)
    shift = DemographicShift(
        low={"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}, high={"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.2}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CertifiedFairClassifier(
            LogisticRegression(),
            constraints=[("demographic_parity_difference", 0.5)],
            shift=shift,
            random_state=0,
            on_no_solution="constant",
        ).fit(X, y, sensitive_features=s, shift_features=t)
    assert not model.certified_
    assert model.no_solution_reason_.startswith("value 'd' of the shift attribute")
    with pytest.raises(ValueError, match="shift_features is given but shift is None"):
        CertifiedFairClassifier(LogisticRegression()).fit(
            X, y, sensitive_features=s, shift_features=t
        )


# ----------------------------------------------------------------------------------
# the oracle

P_T = np.array([0.6, 0.3, 0.1])  # source shares of T
P_S1 = np.array([0.5, 0.4, 0.6])  # P(S = 1 | T)
ORACLE_SHIFT = DemographicShift.around({0: 0.3, 1: 0.3, 2: 0.4}, 0.1)
TESTED_SHARES = np.array(  # inside the declared box, on the simplex (vertices and centre)
    [[0.3, 0.3, 0.4], [0.2, 0.4, 0.4], [0.4, 0.3, 0.3], [0.2, 0.3, 0.5], [0.3, 0.2, 0.5]]
)


def exact_gap(rates, shares):
    """Demographic parity difference of cell selection rates ``rates`` (K, 2) when T has
    ``shares``, ``P(S, prediction | T)`` unchanged."""
    mass = shares[:, None] * np.stack([1 - P_S1, P_S1], axis=1)
    selection = (mass * rates).sum(axis=0) / mass.sum(axis=0)
    return abs(selection[1] - selection[0])


def oracle(kind, draws, n, seed):
    """Per draw: certified by the shift-aware / i.i.d. certificate, and the exact gap
    under every tested shift."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(draws):
        base = rng.uniform(0.3, 0.5, size=3)
        rates = np.stack([base, base], axis=1) + rng.uniform(-0.01, 0.01, size=(3, 2))
        if kind == "unfair":  # fair where T is common in the source, not where it is rare
            rates[2, 1] += rng.uniform(0.15, 0.45)
        t = rng.choice(3, n, p=P_T)
        s = (rng.random(n) < P_S1[t]).astype(int)
        pred = (rng.random(n) < rates[t, s]).astype(int)
        verdicts = [
            certify_fairness(
                Column(),
                pred[:, None],
                pred,
                sensitive_features=s,
                constraints={"demographic_parity_difference": TOLERANCE},
                delta=DELTA,
                **extra,
            ).passed
            for extra in ({"shift": ORACLE_SHIFT, "shift_features": t}, {})
        ]
        gaps = [exact_gap(rates, q) for q in TESTED_SHARES]
        rows.append((*verdicts, gaps))
    return rows


def guarantee_holds(certified, violating):
    """The binomial test of ``P(certified and violating) <= DELTA`` per draw."""
    bad = int(np.sum(np.asarray(certified) & np.asarray(violating)))
    return stats.binom.sf(bad - 1, len(certified), DELTA) >= LEVEL


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
def test_oracle_shift_aware_certificates_hold_and_iid_ones_do_not():
    rows = oracle("unfair", 120, 20000, 1) + oracle("fair", 60, 20000, 2)
    shift_aware = np.array([row[0] for row in rows])
    iid = np.array([row[1] for row in rows])
    gaps = np.array([row[2] for row in rows])  # (draws, tested shares)
    assert stats.binom.sf(14, 120, DELTA) < LEVEL <= stats.binom.sf(13, 120, DELTA)  # margin
    unfair, fair = slice(0, 120), slice(120, None)
    for j in range(len(TESTED_SHARES)):
        violating = gaps[:, j] > TOLERANCE
        assert violating[unfair].mean() > 0.3  # the shifts matter for many unfair models
        assert guarantee_holds(shift_aware[unfair], violating[unfair])
        assert guarantee_holds(shift_aware, violating)
        # power: the certificate that ignores the shift fails the same check
        assert not guarantee_holds(iid[unfair], violating[unfair])
    # and the shift-aware certificate is not vacuous: most fair models are certified
    assert shift_aware[fair].mean() > 0.5
    assert not np.any(gaps[fair] > TOLERANCE)


def test_delta_is_split_over_four_bounds_per_rate_group_and_possible_value():
    from fairest.certified._shift import shift_interval, shift_statistics

    t, s, pred = _rows()
    t_codes = np.searchsorted(["middle", "old", "young"], t)
    s_codes = (s == "m").astype(np.int64)
    statistics = shift_statistics(
        "equalized_odds_difference", pred.astype(float), pred.astype(float), s_codes, 2, t_codes, 3
    )
    box = DemographicShift(
        low={"middle": 0.0, "old": 0.0, "young": 0.0},
        high={"middle": 1.0, "old": 0.0, "young": 1.0},  # "old" absent: not tested
    )
    result = shift_interval(statistics, "equalized_odds_difference", 0.05, "clopper-pearson", box)
    assert result.tested == 4 * 2 * 2 * 2
    assert result.interval.delta_per_bound == pytest.approx(0.05 / 32)


def test_bounded_losses_under_shift_need_a_bounded_value_bound():
    t, s, _ = _rows(3000)
    rng = np.random.default_rng(4)
    X = np.c_[rng.normal(size=t.size) + (t == "old"), rng.normal(size=t.size)]
    y = (X[:, 0] + rng.normal(size=t.size) > 0.5).astype(int)
    model = LogisticRegression().fit(X, y)
    shift = DemographicShift.around({"young": 0.3, "middle": 0.3, "old": 0.4}, 0.05)
    kwargs = dict(sensitive_features=s, shift=shift, shift_features=t)
    result = certify_fairness(
        model, X, y, constraints={"log_loss_gap": 2.0}, bound="hoeffding", **kwargs
    ).constraints[0]
    assert 0.0 <= result.lower_bound <= result.estimate <= result.upper_bound
    with pytest.raises(ValueError, match="exact for 0/1 outcomes only"):
        certify_fairness(model, X, y, constraints={"log_loss_gap": 2.0}, **kwargs)


def test_estimator_refuses_a_shift_that_is_not_a_demographic_shift():
    X, y, s, t = _population(500, 13)
    with pytest.raises(ValueError, match="'shift' parameter of CertifiedFairClassifier"):
        CertifiedFairClassifier(LogisticRegression(), shift={"a": 1.0}).fit(
            X, y, sensitive_features=s, shift_features=t
        )
