"""A grid search over lambda and CV folds of slightly different size reuses compiled code."""

import numpy as np

from fairest import ERMIClassifier


def test_full_batch_no_recompile_across_fold_sizes_and_lambdas(count_compilations):
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 3))
    s = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * s + rng.normal(size=n) > 0).astype(int)
    ERMIClassifier(fairness_weight=1.0).fit(X[:390], y[:390], sensitive_features=s[:390])

    def more_fits():
        for rows, lam in [(395, 0.5), (388, 2.0), (400, 1.0)]:
            ERMIClassifier(fairness_weight=lam).fit(X[:rows], y[:rows], sensitive_features=s[:rows])

    assert count_compilations(more_fits) == 0
