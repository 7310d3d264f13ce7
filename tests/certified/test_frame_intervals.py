"""MetricFrame.difference_certified: certified intervals of the frame's rate differences,
checked against Clopper-Pearson bounds written out with scipy's beta quantiles."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score

from fairest.metrics import MetricFrame


def clopper_pearson(hits, count, delta):
    """One-sided lower and upper bounds, each at level delta (scipy reference)."""
    lower = stats.beta.ppf(delta, hits, count - hits + 1) if hits > 0 else 0.0
    upper = stats.beta.ppf(1 - delta, hits + 1, count - hits) if hits < count else 1.0
    return lower, upper


def reference_gap_interval(values, eligible, groups, delta):
    """max_g upper_g - min_g lower_g and its lower end, each group rate bounded on both
    sides at delta / (2 G) (the union bound of fairest.certified)."""
    labels = np.unique(groups)
    share = delta / (2 * labels.size)
    bounds = [
        clopper_pearson(
            values[(groups == g) & eligible].sum(), ((groups == g) & eligible).sum(), share
        )
        for g in labels
    ]
    lower, upper = np.array(bounds).T
    return max(lower.max() - upper.min(), 0.0), upper.max() - lower.min()


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    groups = rng.choice(["a", "b", "c"], size=3000, p=[0.5, 0.3, 0.2])
    y_true = (rng.random(3000) < 0.4).astype(int)
    y_pred = (rng.random(3000) < np.where(groups == "a", 0.5, 0.3)).astype(int)
    return y_true, y_pred, groups


def test_certified_differences_match_clopper_pearson_by_hand(data):
    y_true, y_pred, groups = data
    frame = MetricFrame(
        metrics={
            "selection": "selection_rate",
            "tpr": "true_positive_rate",
            "accuracy": accuracy_score,
            "f1": f1_score,
        },
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
    )
    table = frame.difference_certified(delta=0.05)
    share = 0.05 / 3  # three certifiable rows share delta
    everyone = np.ones(y_true.size, dtype=bool)
    expected = {
        "selection": reference_gap_interval(y_pred, everyone, groups, share),
        "tpr": reference_gap_interval(y_pred, y_true == 1, groups, share),
        "accuracy": reference_gap_interval(y_pred != y_true, everyone, groups, share),
    }
    for name, (lower, upper) in expected.items():
        assert table.loc[name, "lower"] == pytest.approx(lower, abs=1e-9)
        assert table.loc[name, "upper"] == pytest.approx(upper, abs=1e-9)
        # the certified interval contains the frame's own difference
        assert lower <= frame.difference()[name] <= upper
    assert table.loc["selection", "certified_metric"] == "demographic_parity_difference"
    assert table.loc["accuracy", "certified_metric"] == "zero_one_loss_gap"
    assert np.isnan(table.loc["f1", "upper"]) and pd.isna(table.loc["f1", "certified_metric"])


def test_certified_differences_need_unweighted_rows(data):
    y_true, y_pred, groups = data
    frame = MetricFrame(
        metrics="selection_rate",
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
        sample_weight=np.full(y_true.size, 2.0),
    )
    with pytest.raises(ValueError, match="unweighted"):
        frame.difference_certified()
