"""fairest: fairness-aware estimators that feel native to scikit-learn."""

from fairest._config import config_context, get_config, set_config
from fairest.certified import CertifiedFairClassifier, certify_fairness
from fairest.constrained import LossGapConstrainedClassifier, PrunedFairClassifier
from fairest.ermi import ERMIClassifier
from fairest.partial import (
    GroupAUCConstrainedClassifier,
    GroupInteractionFeatures,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
    PartialParityClassifier,
    PartialParityPenaltyClassifier,
)
from fairest.paths import fairness_path
from fairest.postprocessing import GroupThresholdClassifier
from fairest.reweighting import (
    BADRClassifier,
    BADRRegressor,
    GroupWeightedClassifier,
    GroupWeightedRegressor,
)
from fairest.utils._show_versions import show_versions

__version__ = "0.1.0.dev0"  # the one source: pyproject.toml reads it (dynamic version)

__all__ = [
    "BADRClassifier",
    "BADRRegressor",
    "CertifiedFairClassifier",
    "ERMIClassifier",
    "GroupAUCConstrainedClassifier",
    "GroupInteractionFeatures",
    "GroupThresholdClassifier",
    "GroupWeightedClassifier",
    "GroupWeightedRegressor",
    "InterGroupPairwiseConstrainedClassifier",
    "IntraGroupPairwiseConstrainedClassifier",
    "LossGapConstrainedClassifier",
    "PartialParityClassifier",
    "PartialParityPenaltyClassifier",
    "PrunedFairClassifier",
    "__version__",
    "certify_fairness",
    "config_context",
    "fairness_path",
    "get_config",
    "set_config",
    "show_versions",
]
