"""Validation helpers: sensitive features to group codes, sklearn compatibility.

The names load on first access (PEP 562, :mod:`fairest.utils._lazy`): importing a
module of :mod:`fairest.utils` does not import JAX, scikit-learn or pandas for the others.
"""

from fairest.utils._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_compilation_cache": ["enable_compilation_cache"],
        "_estimator": ["FitData", "encode_binary_target", "validate_fit_data"],
        "_validation": ["FairnessWarning", "check_sensitive_features", "encode_groups"],
    },
    submodules=["discovery"],
)
