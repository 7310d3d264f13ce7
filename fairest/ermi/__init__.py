"""ERMI-regularised logistic regression: FERMI and differentially private DP-FERMI.

Lowy, Gupta, Razaviyayn, "Stochastic Differentially Private and Fair Learning" (ICLR 2023).
"""

from fairest.ermi._dp import PrivacyWarning, dp_fermi_noise
from fairest.ermi._estimator import ERMIClassifier

__all__ = ["ERMIClassifier", "PrivacyWarning", "dp_fermi_noise"]
