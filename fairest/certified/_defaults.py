"""Defaults of the certified family."""

# the sweep of an estimator's own training tolerance (fairest's constrained classifiers)
TOLERANCE_SWEEP = (0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.0)
# the sweep of a penalty weight (fairest's penalised classifiers, e.g. ERMI)
FAIRNESS_WEIGHT_SWEEP = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)
