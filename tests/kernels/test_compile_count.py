"""Compile once: a fit runs a small fixed set of executables, bounded as n grows, and the
persistent compilation cache reaches joblib workers."""

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from fairest.reweighting import BADRClassifier, GroupWeightedClassifier
from fairest.utils._compilation_cache import count_compilations


def _data(n, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    groups = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * groups + rng.normal(size=n) > 0).astype(int)
    return X, y, groups


def _compilations(estimator, n, d):
    X, y, groups = _data(n, d)
    with warnings.catch_warnings(), count_compilations() as compiled:
        warnings.simplefilter("ignore")
        estimator.fit(X, y, sensitive_features=groups)
    return compiled.count


@pytest.mark.parametrize(
    ("estimator", "d", "most"),
    [
        (GroupWeightedClassifier(weights="uniform"), 7, 2),
        (BADRClassifier(metric="demographic_parity"), 9, 4),
    ],
)
def test_compiled_executables_per_fit_are_few_and_bounded_in_n(estimator, d, most):
    """The first fit compiles at most ``most`` executables; a fit on three times the rows
    (another bucket) compiles no more; a fit in a bucket already seen compiles none."""
    first = _compilations(estimator, 1000, d)
    larger = _compilations(estimator, 3000, d)
    same_bucket = _compilations(estimator, 1010, d)
    assert 1 <= first <= most
    assert larger <= first
    assert same_bucket == 0


def test_lbfgs_path_compiles_two_executables_bounded_in_n():
    """The L-BFGS driver: value-and-gradient and the Newton polish, whatever n."""
    from fairest._solvers._driver import solve_weighted_glm

    def fit(n):
        X, y, _ = _data(n, 11, seed=n)
        c = np.full(n, 1.0 / n)
        with count_compilations() as compiled:
            result = solve_weighted_glm("logistic", X, y.astype(float), c, 1e-3, solver="lbfgs")
        assert result["converged"]
        return compiled.count

    small = fit(1000) + fit(1010)  # one bucket: whether the polish runs depends on the data
    large = fit(3000) + fit(3030)
    assert 1 <= small <= 2
    assert large <= small
    assert fit(1000) == 0


def test_counter_sees_a_compilation():
    import jax
    import jax.numpy as jnp

    x = jnp.arange(5.0)
    with count_compilations() as compiled:
        jax.jit(lambda x: jnp.sin(x) * 3.0)(x).block_until_ready()
    assert compiled.count == 1
    assert compiled.seconds > 0


_WORKER_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import joblib
    from fairest.utils import enable_compilation_cache

    def worker_settings():
        import jax
        return (
            jax.config.jax_compilation_cache_dir,
            jax.config.jax_persistent_cache_min_compile_time_secs,
        )

    enable_compilation_cache(sys.argv[1])
    jobs = (joblib.delayed(worker_settings)() for _ in range(2))
    print(json.dumps(joblib.Parallel(n_jobs=2, backend="loky")(jobs)))
    """
)


def test_compilation_cache_reaches_joblib_workers(tmp_path):
    """``enable_compilation_cache`` in the parent: fresh loky workers use the same folder."""
    folder = tmp_path / "jax-cache"
    done = subprocess.run(
        [sys.executable, "-c", _WORKER_SCRIPT, str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    settings = json.loads(done.stdout.strip().splitlines()[-1])
    assert settings == [[str(folder), 0.0], [str(folder), 0.0]]
