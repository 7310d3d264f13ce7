"""Group reweighting: fixed group weightings (baselines) and BADR."""

from fairest.reweighting._badr import BADRClassifier, BADRRegressor
from fairest.reweighting._baselines import GroupWeightedClassifier, GroupWeightedRegressor

__all__ = ["BADRClassifier", "BADRRegressor", "GroupWeightedClassifier", "GroupWeightedRegressor"]
