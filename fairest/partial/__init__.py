"""Partial fairness: classifiers fair on a percentile interval of every group's scores.

``PartialParityClassifier`` constrains partial statistical parity (pSP) or partial
demographic parity (pDP), difference-of-convex constraints (He, Huang, Yao, Lin 2025),
solved by a smoothed augmented Lagrangian with Gauss-Newton rounds (default) or the
paper's IDCA with switching-subgradient inner solves. The paper's baselines:
``PartialParityPenaltyClassifier`` (regularisation method; smoothed L-BFGS by default,
the paper's subgradient descent on request) and the full-metric constrained models
``GroupAUCConstrainedClassifier``, ``InterGroupPairwiseConstrainedClassifier``,
``IntraGroupPairwiseConstrainedClassifier``. Exact evaluation metrics live in
``fairest.metrics`` (``partial_statistical_parity``...).
"""

from fairest.partial._baselines import PartialParityPenaltyClassifier
from fairest.partial._estimator import PartialParityClassifier
from fairest.partial._features import GroupInteractionFeatures
from fairest.partial._idca import theory_schedule
from fairest.partial._pairwise import (
    GroupAUCConstrainedClassifier,
    InterGroupPairwiseConstrainedClassifier,
    IntraGroupPairwiseConstrainedClassifier,
    pairwise_quadratic_mean,
)

__all__ = [
    "GroupAUCConstrainedClassifier",
    "GroupInteractionFeatures",
    "InterGroupPairwiseConstrainedClassifier",
    "IntraGroupPairwiseConstrainedClassifier",
    "PartialParityClassifier",
    "PartialParityPenaltyClassifier",
    "pairwise_quadratic_mean",
    "theory_schedule",
]
