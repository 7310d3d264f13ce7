"""Defaults of the reweighting family (badr spec sections 2 and 6)."""

ALPHA = 1e-3  # badr spec section 2: default l2_reg of every model
NEWTON_TOL = 1e-10  # badr spec section 2: relative inner tolerance
NEWTON_MAX_ITER = 100  # spec caps at 50 inside BADR's loop; a standalone fit may take more

# --- BADR (badr spec sections 3-5) ---
TEMPERATURE = 1.0  # spec 3.0 (rho there): smoothing of DP / EO / EOdds (reference default)
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
# A classifier whose rarer predicted class covers at most this share of the training
# weight, while the rarer label covers more, is (nearly) constant: BADR then steers off a
# single-class group's vertex to the best baseline of the badr spec 4.8 safeguard whose
# model is not, and warns. One row in a hundred: the data's own rarer label is more common,
# so a model this one-sided has stopped separating the classes.
NEAR_CONSTANT_SHARE = 0.01
