"""Validation helpers: sensitive features to group codes, sklearn compatibility."""

from fairest.utils._compilation_cache import enable_compilation_cache
from fairest.utils._estimator import FitData, encode_binary_target, validate_fit_data
from fairest.utils._validation import (
    FairnessWarning,
    check_sensitive_features,
    encode_groups,
)

__all__ = [
    "FairnessWarning",
    "FitData",
    "check_sensitive_features",
    "enable_compilation_cache",
    "encode_binary_target",
    "encode_groups",
    "validate_fit_data",
]
