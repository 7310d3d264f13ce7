"""fairest: fairness-aware estimators that feel native to scikit-learn."""

from fairest.ermi import ERMIClassifier
from fairest.reweighting import GroupWeightedClassifier, GroupWeightedRegressor

__version__ = "0.1.0.dev0"

__all__ = ["ERMIClassifier", "GroupWeightedClassifier", "GroupWeightedRegressor", "__version__"]
