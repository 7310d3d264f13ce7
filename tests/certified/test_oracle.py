"""The population oracle: certified models violate their tolerance on the TRUE population
at most delta of the time; a broken bound (the point estimate) fails the same test.

The population, the cheap wrapped estimator and the experiment live in
``benchmarks/certified_oracle.py`` (its full run is the benchmark behind the slow test).
The statistical test: with ``m`` certified models of which ``V`` violate, the guarantee
"P(violation) <= delta" is rejected when ``P(Binomial(m, delta) >= V) < 0.001``. All
draws are seeded, so the test is deterministic.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import certified_oracle as oracle

DELTA = 0.05
TOLERANCE = 0.1
LEVEL = 1e-3  # the binomial test's false-alarm probability


def assert_guarantee_holds(rows, min_certified=30):
    """Pooled over sample sizes: violations among certified models are compatible with a
    violation probability of at most delta."""
    certified = sum(row["certified"] for row in rows)
    violations = sum(row["violations"] for row in rows)
    assert certified >= min_certified, (
        f"too few certified models ({certified}) for the test to have power"
    )
    p_value = stats.binom.sf(violations - 1, certified, DELTA)
    assert p_value > LEVEL, (
        f"{violations} of {certified} certified models violate the tolerance on the "
        f"population: P(Binomial({certified}, {DELTA}) >= {violations}) = {p_value:.2g}"
    )


@pytest.fixture(scope="module")
def population():
    return oracle.Population()


def test_population_metric_is_exact_and_the_unconstrained_model_is_unfair(population):
    model = oracle.LeastSquaresClassifier().fit(
        *population.sample(20000, np.random.default_rng(0))[:2]
    )
    truth = population.true_metrics(model)
    assert truth["demographic_parity_difference"] > 0.4  # clearly unfair
    # the exact value is the limit of the empirical one on a huge sample
    X, y, groups = population.sample(400_000, np.random.default_rng(1))
    predicted = model.predict(X)
    rates = [predicted[groups == g].mean() for g in (0, 1)]
    assert abs(truth["demographic_parity_difference"] - abs(rates[0] - rates[1])) < 0.01
    assert abs(truth["accuracy"] - np.mean(predicted == y)) < 0.01


SIZES = (300, 1000, 4000)


@pytest.mark.parametrize("bound", ["clopper-pearson", "hoeffding"])
def test_certified_models_keep_the_promise(population, bound):
    rows = [
        oracle.run_oracle(
            population,
            bound=bound,
            n=n,
            draws=40,
            delta=DELTA,
            tolerance=TOLERANCE,
            seed=n,
            baseline=bound == "clopper-pearson",
        )
        for n in SIZES
    ]
    assert_guarantee_holds(rows)
    nsf = [row["nsf_rate"] for row in rows]
    assert nsf[0] > nsf[-1] and nsf[-1] <= 0.1  # NSF falls as n grows
    if bound == "clopper-pearson":  # the test has power: no held-out test, many violations
        baseline = np.mean([row["baseline_violation_rate"] for row in rows])
        assert baseline >= 0.2 and baseline > 4 * DELTA


# fairest's own estimators wrapped, on cheap candidate grids (3 settings each): ERMI along
# its fairness weight (demographic parity <= 0.08), the loss-gap constrained classifier along
# its tolerance (0-1 loss gap <= 0.22, on a population where closing it costs accuracy)
WRAPPED_GRIDS = {
    "ermi": {"fairness_weight": [0.0, 4.0, 32.0]},
    "loss_gap": {"tolerance": [1.0, 0.1, 0.0]},
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", sorted(WRAPPED_GRIDS))
def test_wrapped_fairest_estimators_keep_the_promise(estimator):
    population, (metric,), tolerance = oracle.settings(estimator)
    rows = [
        oracle.run_oracle(
            population,
            bound="clopper-pearson",
            n=n,
            draws=8,
            delta=DELTA,
            metric=metric,
            tolerance=tolerance,
            seed=n,
            estimator=estimator,
            grid=WRAPPED_GRIDS[estimator],
            baseline=True,
        )
        for n in (1000, 8000)
    ]
    assert_guarantee_holds(rows, min_certified=8)
    assert rows[0]["nsf_rate"] > rows[-1]["nsf_rate"]  # NSF falls as n grows
    if estimator == "ermi":
        # power: the same candidates chosen on their TRAINING metric violate far more
        # often. (Not asserted for the loss-gap model: its candidates' 0-1 loss gaps lie
        # mostly far from the tolerance, so the uncertified choice violates only 0-7 % of
        # the time in the benchmark, certified_oracle_wrapped.md.)
        certified_rate = sum(r["violations"] for r in rows) / sum(r["certified"] for r in rows)
        baseline = np.mean([row["baseline_violation_rate"] for row in rows])
        assert baseline >= 2 * DELTA and baseline > certified_rate + 0.1


def test_the_point_estimate_fails_the_same_test(population):
    with oracle.broken_bound() as point:
        rows = [
            oracle.run_oracle(
                population, bound=point, n=1000, draws=120, delta=DELTA, tolerance=TOLERANCE
            )
        ]
    with pytest.raises(AssertionError, match="violate the tolerance on the population"):
        assert_guarantee_holds(rows)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("bound", ["clopper-pearson", "hoeffding", "bernstein"])
@pytest.mark.parametrize(
    "estimator", ["least_squares", "logistic", "post_processor", "ermi", "loss_gap"]
)
def test_certified_models_keep_the_promise_full(bound, estimator):
    """The fuller version (benchmarks/certified_oracle.py runs and records it)."""
    population, metrics, tolerance = oracle.settings(estimator)
    rows = [
        oracle.run_oracle(
            population,
            bound=bound,
            n=n,
            draws=200,
            seed=n,
            estimator=estimator,
            metric=metrics[0],
            delta=DELTA,
            tolerance=tolerance,
        )
        for n in (1000, 4000, 16000)
    ]
    assert_guarantee_holds(rows)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_point_estimate_fails_with_wrapped_ermi_full():
    """The broken bound around ERMI on a fine fairness-weight grid (the benchmark run
    ``certified_oracle.py --name certified_oracle_wrapped_point``: 42 of 207 certified
    models violate at 1,000 and 2,000 rows)."""
    population, metrics, tolerance = oracle.settings("ermi_fine")
    with oracle.broken_bound() as point:
        rows = [
            oracle.run_oracle(
                population,
                bound=point,
                n=n,
                draws=150,
                seed=n,
                estimator="ermi_fine",
                metric=metrics[0],
                delta=DELTA,
                tolerance=tolerance,
            )
            for n in (1000, 2000)
        ]
    with pytest.raises(AssertionError, match="violate the tolerance on the population"):
        assert_guarantee_holds(rows)
