"""Post-processing: group-specific thresholds on the scores of any fitted classifier.

:class:`GroupThresholdClassifier` wraps any scikit-learn classifier and picks one
threshold per group (or a seeded randomized mixture) that maximises accuracy subject to
demographic parity, equal opportunity or equalized odds within a ``tolerance``, exactly and
in time polynomial in the number of groups. :func:`make_group_scorer` routes the groups to
``predict`` inside a model selection.
"""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_estimator": ["GroupThresholdClassifier"],
        "_scoring": ["make_group_scorer"],
    },
)
