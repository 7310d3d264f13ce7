"""PartialParityClassifier on intersectional groups (a two-column sensitive frame) and on
problems only a constant model solves; GroupInteractionFeatures on unseen group codes."""

import warnings

import numpy as np
import pandas as pd
import pytest

from fairest.partial import GroupInteractionFeatures, PartialParityClassifier
from fairest.utils import FairnessWarning

PSP, PDP = "partial_statistical_parity", "partial_demographic_parity"


def intersectional_data(n=600, seed=0, low_cell=0):
    """Two binary attributes shifting the features (four cells), as a two-column frame;
    ``low_cell`` extra rows of a fifth cell ("f", "z") far below the others, all labelled
    0, which the model without constraints predicts 0."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 0.8 * (a + b)[:, None]
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.8).astype(int)
    frame = pd.DataFrame({"sex": np.where(a, "f", "m"), "race": np.where(b, "x", "y")})
    if low_cell:
        X = np.vstack([X, rng.normal(size=(low_cell, 3)) - 3.0])
        y = np.concatenate([y, np.zeros(low_cell, dtype=int)])
        extra = pd.DataFrame({"sex": ["f"] * low_cell, "race": ["z"] * low_cell})
        frame = pd.concat([frame, extra], ignore_index=True)
    return X, y, frame


@pytest.mark.parametrize(("metric", "tolerance"), [(PSP, 0.2), (PDP, 0.1)])
def test_two_column_frame_mitigates_like_its_intersection_labels(metric, tolerance):
    """A (sex, race) frame defines the four intersectional groups, encoded by
    fairest.utils as the row tuples: the same codes, hence the same model, as the
    one-column labels "sex|race" (which sort alike). The constraint holds on them and
    lowers the training metric well below the model's without it."""
    X, y, frame = intersectional_data()
    labels = (frame["sex"] + "|" + frame["race"]).to_numpy()
    make = lambda: PartialParityClassifier(metric, interval=(0.0, 0.5), tolerance=tolerance)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error", FairnessWarning)
        two = make().fit(X, y, sensitive_features=frame)
        one = make().fit(X, y, sensitive_features=labels)
    assert list(two.groups_) == [("f", "x"), ("f", "y"), ("m", "x"), ("m", "y")]
    np.testing.assert_array_equal(two.coef_, one.coef_)
    np.testing.assert_array_equal(two.intercept_, one.intercept_)
    free = PartialParityClassifier(metric, interval=(0.0, 0.5), tolerance=100.0)
    free.fit(X, y, sensitive_features=frame)
    assert two.train_unfairness_ <= tolerance < free.train_unfairness_ / 2
    share = np.mean(two.predict(X))
    assert 0.05 < share < 0.95  # a classifier, not the constant start


def test_constant_result_warns_with_the_figures_and_the_groups():
    """A small cell far below the others (no positive without the constraint) and pDP on
    the whole range at tolerance 0.02: only a constant model is that fair, so the fit
    returns one, and says so: accuracy and share predicted per group, and the two groups
    the model without constraints sets furthest apart (the cell among them)."""
    X, y, frame = intersectional_data(low_cell=12)
    with pytest.warns(FairnessWarning, match="predicts one class nearly everywhere") as record:
        clf = PartialParityClassifier(PDP, interval=(0.0, 1.0), tolerance=0.02)
        clf.fit(X, y, sensitive_features=frame)
    message = str(next(w.message for w in record if "nearly everywhere" in str(w.message)))
    assert "('f', 'z'): 1.000 / 0.000" in message  # share predicted 1 / accuracy of the cell
    assert "of group ('f', 'z') (weight 12)" in message
    assert "Raise tolerance" in message and len(clf.groups_) == 5


def test_group_interaction_features_refuses_unseen_codes():
    """A code outside those seen in fit is refused by name, as OneHotEncoder's
    handle_unknown="error" does; the fitted codes transform as before."""
    X = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 2.0]])
    features = GroupInteractionFeatures(group_column=2).fit(X)
    np.testing.assert_array_equal(features.group_codes_, [1.0, 2.0])
    np.testing.assert_array_equal(features.transform(X[::-1]), features.fit_transform(X)[::-1])
    unseen = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 1.0], [5.0, 5.0, 2.5]])
    with pytest.raises(ValueError, match=r"not seen in fit: 2\.5, 3 \(fitted codes: 1, 2\)"):
        features.transform(unseen)
    with pytest.raises(ValueError, match="group_column"):
        features.transform(unseen)
