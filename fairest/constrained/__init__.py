"""Fairness-constrained training: loss-gap constrained classifiers (stochastic approximation
methods of Kliachkin et al.) and pruned models with constrained excess accuracy gaps
(Hashemizadeh et al.)."""

from fairest.constrained._loss_gap import LossGapConstrainedClassifier
from fairest.constrained._pruned import PrunedFairClassifier

__all__ = ["LossGapConstrainedClassifier", "PrunedFairClassifier"]
