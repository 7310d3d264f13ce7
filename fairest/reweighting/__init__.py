"""Group reweighting: fixed group weightings (baselines) and BADR."""

from fairest.reweighting._baselines import GroupWeightedClassifier, GroupWeightedRegressor

__all__ = ["GroupWeightedClassifier", "GroupWeightedRegressor"]
