"""Defaults of the reweighting family (badr spec sections 2 and 6)."""

ALPHA = 1e-3  # badr spec section 2: default l2_reg of every model
NEWTON_TOL = 1e-10  # badr spec section 2: relative inner tolerance
NEWTON_MAX_ITER = 100  # spec caps at 50 inside BADR's loop; a standalone fit may take more

# --- BADR (badr spec sections 3-5) ---
TEMPERATURE = 1.0  # spec 3.0 (rho there): smoothing of DP / EO / EOdds (reference default)
# The estimators' defaults (the paper's are TEMPERATURE for both and no cap): a sigmoid
# temperature of 10 makes the smoothed rates close to the hard ones (the scores are
# logits), and a smooth-max temperature of 50 keeps the smooth maximum within
# log(G) / 50 of the largest group deviation (spec 3.8: at 1 it adds up to log G, more
# than the deviations, and barely ranks the models). Measured with the weight cap below
# on ACSPublicCoverage by race (9 groups, 15 to 14,336 training rows) and KDD census by
# race (5 groups) at 20,000 training rows (benchmarks/practitioner.py): test demographic
# parity 0.166 and 0.024 against 0.174 and 0.031 at (1, 50) and logistic regression's
# 0.281 and 0.051, at its accuracy.
TEMPERATURE_SIGMOID = 10.0
TEMPERATURE_MAX = 50.0
# max_weight_ratio: a group's weight is at most this multiple of its share of the sample
# weight, so every weighted fit keeps at least n / 5 effective rows. On the whole simplex
# the smallest unfairness on those tasks lies at a model fitted mostly to a group of 40
# (or 226) rows: test accuracy 0.619 (0.934) against a majority rate of 0.702 (0.938).
# 2 to 5 give the same test figures there; at 5 a group of a third of the rows (women on
# Adult) may still take all the weight, the fairest point of that two-group simplex.
MAX_WEIGHT_RATIO = 5.0
INNER_MAX_ITER = 50  # spec 2: Newton steps per lower-level solve inside BADR
# From this n d^2 on, BADR's Newton steps assemble the Hessian block from float32 row blocks
# of X (cast on the fly, no copy; a float32 copy before): about 15 % less CPU time per fit
# on the data of benchmarks/badr_profile.py (n = 160,000, d = 10), minus the adjoint's
# refinement step (one exact Hessian-vector product per oracle call). The gradient, hence
# theta*, stays float64; the refined adjoint is float64-accurate.
FLOAT32_HESSIAN_WORK = 10_000_000
MAX_ITER = {  # spec 4.4 (SLSQP 500), 4.6 (trust-constr 500), 4.5 (FW 300), 5.5 (1000)
    "slsqp": 500,
    "trust-constr": 500,
    "frank-wolfe": 300,
    "gd": 1000,
    "sgd": 1000,
}
TOL = {  # spec 4.4 (SLSQP ftol), 4.6 (trust-constr gtol), 4.5 (FW gap)
    "slsqp": 1e-10,
    "trust-constr": 1e-5,
    "frank-wolfe": 1e-6,
    "gd": 0.0,  # single loops run max_iter iterations (spec 5.5)
    "sgd": 0.0,
}
LEARNING_RATE = 0.1  # spec 5.5: rho, step of theta and v
DUAL_LEARNING_RATE = 1.0  # spec 5.5: gamma, step of lambda
CLIP_NORM = 1.0  # spec 5.3: clipping threshold c of badr-sgd
BATCH_SIZE = 256  # spec 5.5: B = max(G, min(n, 256))
CHECK_EVERY = 25  # spec 5.5: exact Phi every k iterations, best lambda returned
MINIMAX_CVXPY_MAX_N = 20_000  # above this, the minimax baseline uses the dual path (spec 6.3)
