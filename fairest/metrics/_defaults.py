"""Default values and numerical constants of the metrics, each citing its source.

Spec references are to ``badr.md`` (the BADR implementation spec of this project).
"""

# Smoothing parameter rho of the smoothed parity metrics (sigmoid temperature and
# log-sum-exp temperature); the reference implementation's default (spec section 3.0).
DEFAULT_TEMPERATURE = 1.0

# Offset inside the square root of the smoothed demographic parity,
# ``sqrt(delta_g**2 + 1e-6)`` (spec section 3.3). It keeps the gradient finite at
# ``delta_g = 0`` and biases the smoothed value upwards by at most ``sqrt(1e-6) = 1e-3``.
DEMOGRAPHIC_PARITY_SQRT_OFFSET = 1e-6

# Hard prediction rule of the exact metrics: ``y_hat = 1[score >= 0]`` (spec section 3.0),
# the same rule as ``predict`` of the linear classifiers.
DEFAULT_THRESHOLD = 0.0

# Exact individual fairness on numpy: labels with at most this many distinct values use
# the O(n) per-(group, label) cell algorithm, others the O(n log n) sorted recursions
# (spec section 3.9). The cell algorithm costs O(n + G * m**2) for m distinct labels.
MAX_DISCRETE_LABELS = 32
