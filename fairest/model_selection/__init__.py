"""Model selection with sensitive features: splitters, fairness scorers, constrained refit."""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_scorers": ["constrained_refit", "make_fairness_scorer"],
        "_split": ["GroupStratifiedKFold"],
    },
)
