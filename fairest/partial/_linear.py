"""Linear inference of the partial-fairness classifiers: a decision threshold."""

from __future__ import annotations

from fairest.utils._linear import LinearClassifierMixin

__all__ = ["_LinearClassifierMixin"]


class _LinearClassifierMixin(LinearClassifierMixin):
    """Shared linear inference; ``classes_[1]`` where the score is above ``threshold``.

    The paper's decision rule (spec section 0) is strict: ``score > threshold``.
    """

    def _positive(self, scores):
        return scores > getattr(self, "threshold", 0.0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
