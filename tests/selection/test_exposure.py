"""Exposure and nDCG loss: hand-computed values, scikit-learn's ndcg_score, ties, errors."""

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from fairest.selection import exposure_difference, exposure_ratio, group_exposure, ndcg_loss


def test_group_exposure_by_hand():
    exposure = group_exposure(None, [4, 3, 2, 1], sensitive_features=["a", "b", "a", "b"])
    a = (1 / np.log2(2) + 1 / np.log2(4)) / 2
    b = (1 / np.log2(3) + 1 / np.log2(5)) / 2
    assert exposure.index.tolist() == ["a", "b"]
    assert exposure.to_numpy() == pytest.approx([a, b])
    kwargs = {"sensitive_features": ["a", "b", "a", "b"]}
    assert exposure_difference(None, [4, 3, 2, 1], **kwargs) == pytest.approx(a - b)
    assert exposure_ratio(None, [4, 3, 2, 1], **kwargs) == pytest.approx(b / a)


def test_cut_off_weights_and_ties():
    kwargs = {"sensitive_features": ["a", "b", "a", "b"]}
    # k = 2: only the first two positions are seen
    exposure = group_exposure(None, [4, 3, 2, 1], k=2, **kwargs)
    assert exposure.to_numpy() == pytest.approx([0.5, 0.5 / np.log2(3)])
    # weights: a weighted mean within every group (weight 3 = three copies of the row)
    weighted = group_exposure(None, [4, 3, 2, 1], sample_weight=[3, 1, 1, 1], **kwargs)
    assert weighted["a"] == pytest.approx((3 * 1 + 1 / np.log2(4)) / 4)
    # tied scores share their positions' exposure: no order of ties favours a group
    assert exposure_difference(None, [1, 1, 1, 1], **kwargs) == 0.0
    assert exposure_ratio(None, [1, 1, 0, 0], k=1, **kwargs) == 1.0
    assert exposure_ratio(None, [1, 2], k=1, sensitive_features=["a", "b"]) == 0.0


def test_ndcg_loss_matches_scikit_learn():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 30))
        gains = rng.integers(0, 5, n).astype(float)
        order_scores = rng.integers(0, 6, n).astype(float)  # ties on purpose
        k = int(rng.integers(1, n + 1))
        expected = 1 - ndcg_score([gains], [order_scores], k=k)
        assert ndcg_loss(gains, order_scores, k=k) == pytest.approx(expected, abs=1e-12)
    assert ndcg_loss([3, 2, 1], [3, 2, 1]) == 0.0
    assert ndcg_loss([0, 0], [1, 2]) == 0.0


def test_errors():
    with pytest.raises(ValueError, match="y_true must be non-negative"):
        ndcg_loss([-1.0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="same shape"):
        ndcg_loss([1.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="k must be a positive int"):
        group_exposure(None, [1.0, 2.0], sensitive_features=["a", "b"], k=0)
    with pytest.raises(ValueError, match=r"groups \['b'\] have zero total sample_weight"):
        group_exposure(None, [1.0, 2.0], sensitive_features=["a", "b"], sample_weight=[1, 0])
    with pytest.raises(ValueError, match="sample_weight must hold 2"):
        group_exposure(None, [1.0, 2.0], sensitive_features=["a", "b"], sample_weight=[1])
