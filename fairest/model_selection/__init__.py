"""Model selection with sensitive features: splitters, fairness scorers, constrained refit."""

from fairest.model_selection._scorers import constrained_refit, make_fairness_scorer
from fairest.model_selection._split import GroupStratifiedKFold

__all__ = ["GroupStratifiedKFold", "constrained_refit", "make_fairness_scorer"]
