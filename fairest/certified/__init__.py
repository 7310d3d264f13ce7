"""Certified fairness: guarantees on unseen data with a stated confidence.

* :class:`CertifiedFairClassifier`: the Seldonian candidate / safety algorithm around any
  binary classifier; a certified model or an explained "no solution found".
* :func:`certify_fairness`: a high-confidence test of any fitted model on held-out data,
  returning a :class:`FairnessCertificate`.
* :func:`fairness_interval`: simultaneous confidence intervals of the fairness metrics
  and their group rates (exact Clopper-Pearson, Hoeffding, empirical Bernstein;
  approximate Student-t and bootstrap); :func:`rows_needed`.
* :class:`DemographicShift`: the declared deployment distribution of a demographic
  attribute, for certificates that hold after a change of population (``shift=``).
* :func:`certify_ks_gap`: simultaneous bounds of a regressor's KS gap between the groups'
  prediction distributions (per-group DKW bands), a :class:`KSGapCertificate`.
* :func:`certify_min_rate`: certify a rate floor in every group (the promise of levelling
  up), a :class:`MinRateCertificate`.
* Scorers of model selection: :func:`no_solution_scorer`, :func:`certified_bound_scorer`.
"""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_bounds": ["MetricInterval", "rows_needed"],
        "_certificate": [
            "ConstraintResult",
            "FairnessCertificate",
            "certify_fairness",
            "fairness_interval",
        ],
        "_estimator": ["CertifiedFairClassifier", "NoSolutionFoundError"],
        "_ks": ["KSGapCertificate", "certify_ks_gap"],
        "_min_rate": ["MinRateCertificate", "certify_min_rate"],
        "_scorers": ["certified_bound_scorer", "no_solution_scorer"],
        "_shift": ["DemographicShift"],
    },
)
