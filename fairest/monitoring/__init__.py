"""Anytime-valid fairness monitoring of deployed models.

* :class:`FairnessMonitor`: fed batches of predictions, groups and (possibly late or
  partial) labels, it keeps confidence sequences for every group's rates and the
  constrained metric, valid at every check at once with probability ``1 - delta``; it
  raises an alarm when the constraint is violated with confidence, certifies compliance
  so far, and plots the sequences.
* :func:`bernoulli_confidence_sequence`: the time-uniform intervals of a mean of [0, 1]
  observations it is built on (beta-binomial or normal mixture boundaries).
"""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_boundaries": ["bernoulli_confidence_sequence"],
        "_monitor": ["FairnessMonitor"],
    },
)
