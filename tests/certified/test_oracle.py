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


def assert_guarantee_holds(rows):
    """Pooled over sample sizes: violations among certified models are compatible with a
    violation probability of at most delta."""
    certified = sum(row["certified"] for row in rows)
    violations = sum(row["violations"] for row in rows)
    assert certified >= 30, f"too few certified models ({certified}) for the test to have power"
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
@pytest.mark.parametrize("bound", ["clopper-pearson", "hoeffding", "bernstein"])
@pytest.mark.parametrize("estimator", ["least_squares", "logistic", "post_processor"])
def test_certified_models_keep_the_promise_full(population, bound, estimator):
    """The fuller version (benchmarks/certified_oracle.py runs and records it)."""
    rows = [
        oracle.run_oracle(
            population,
            bound=bound,
            n=n,
            draws=200,
            seed=n,
            estimator=estimator,
            delta=DELTA,
            tolerance=TOLERANCE,
        )
        for n in (1000, 4000, 16000)
    ]
    assert_guarantee_holds(rows)
