"""What every post-processor shares: wrapping fitted estimators and routing rows to groups.

A post-processor wraps a fitted (or to-be-fitted) ``estimator`` and keeps one per-group
object (a threshold, a quantile map) for each group of ``groups_``. :class:`GroupRouting`
fits the wrapped estimators on ``X`` as given, and finds each row's group at prediction:
the ``sensitive_features`` passed to ``predict``, or, in group-blind mode, the group a
fitted ``group_estimator_`` infers from ``X``. The classes that use it set ``per_group``,
the noun of their per-group object in the error messages.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils import get_tags
from sklearn.utils.validation import _num_samples, check_is_fitted

from fairest.utils._degenerate import plain_label
from fairest.utils._estimator import wrapped_fit_params, wrapped_nan_error
from fairest.utils._validation import encode_groups

__all__ = ["GroupRouting"]


class GroupRouting:
    """Mixin of the post-processors (needs ``prefit``, ``group_estimator``, ``groups_``)."""

    per_group = "per-group object"

    def _fitted(self, estimator, X, y, sample_weight, weighted, sensitive_features=None):
        """``estimator`` fitted on ``X`` as given (or as it is, prefit); the groups and
        the weights reach its ``fit`` when it takes them (see
        :func:`~fairest.utils._estimator.wrapped_fit_params`); weights it cannot take
        raise."""
        if self.prefit:
            check_is_fitted(estimator)
            return estimator
        fitted = clone(estimator)
        params = wrapped_fit_params(
            fitted,
            sensitive_features=sensitive_features,
            sample_weight=sample_weight if weighted else None,
            owner=type(self).__name__,
            require_weight=True,
        )
        with wrapped_nan_error(type(self).__name__, fitted):
            return fitted.fit(X, y, **params)

    def _inferred_codes(self, X) -> np.ndarray:
        """The group codes ``group_estimator_`` infers from ``X``."""
        predicted = np.asarray(self.group_estimator_.predict(X))
        if not self.prefit:
            return predicted.astype(np.int64)
        index = {plain_label(label): code for code, label in enumerate(self.groups_)}
        try:
            return np.array([index[plain_label(v)] for v in predicted], dtype=np.int64)
        except KeyError as error:
            raise ValueError(
                f"group_estimator predicts the group {error.args[0]!r}, which is not one of "
                "the groups seen in fit (groups_)."
            ) from None

    def _routing_codes(self, X, codes):
        """Group of every sample used to pick its per-group object: inferred when
        group-blind, else ``codes``."""
        if getattr(self, "group_estimator_", None) is not None:
            return self._inferred_codes(X)
        return codes

    def _predict_codes(self, X, sensitive_features) -> np.ndarray:
        """Group codes of the rows of ``X`` at prediction (inferred, given or the one
        group), with errors that say how to give them."""
        n = _num_samples(X)
        if getattr(self, "group_estimator_", None) is not None:
            return self._inferred_codes(X)
        if len(self.groups_) == 1 and sensitive_features is None:
            return np.zeros(n, dtype=np.int64)
        if sensitive_features is None:
            raise ValueError(
                f"predict needs sensitive_features: the {self.per_group}s are per group. "
                "Pass predict(X, sensitive_features=...), enable metadata routing in a "
                "meta-estimator, or fit with group_estimator= for group-blind predictions."
            )
        codes, labels = encode_groups(sensitive_features, n_samples=n)
        index = {plain_label(label): code for code, label in enumerate(self.groups_)}
        unseen = [label for label in labels if plain_label(label) not in index]
        if unseen:
            raise ValueError(
                f"sensitive_features holds group(s) unseen during fit: "
                f"{', '.join(repr(plain_label(u)) for u in unseen[:5])}; the fitted groups "
                f"are {[plain_label(g) for g in self.groups_[:10]]}. There is no "
                f"{self.per_group} for them."
            )
        mapping = np.array([index[plain_label(label)] for label in labels], dtype=np.int64)
        return mapping[codes]

    def _wrapped_input_tags(self, tags, estimator):
        """``tags`` with sparse / NaN input allowed only where every wrapped estimator
        allows it: ``X`` goes to them as given, so they say what it may hold."""
        wrapped = [get_tags(estimator).input_tags]
        if self.group_estimator is not None:
            wrapped.append(get_tags(self.group_estimator).input_tags)
        tags.input_tags.sparse = all(t.sparse for t in wrapped)
        tags.input_tags.allow_nan = all(t.allow_nan for t in wrapped)
        return tags
