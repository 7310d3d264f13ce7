"""Defaults of the ERMI family (spec ``ermi.md``; section numbers cited per constant)."""

FAIRNESS_WEIGHT = 1.0  # spec 5.1: lam default 1.0 (paper grids in [0, 2.5])
BATCH_SIZE = 1024  # spec 5.1 / paper F.2.1: minibatch 1024
N_EPOCHS = 200  # spec 5.1 / paper F.2.1: 200 epochs, no early stopping (spec 5.4)
LEARNING_RATE = 0.005  # spec 5.1: eta_theta from [0.005, 0.01], authors' code 0.005
DUAL_LEARNING_RATE = 0.01  # spec 5.1: eta_W, twice eta_theta (two time scales, spec 5.6)
DUAL_RADIUS = 5.0  # spec 5.1 / 13.5: Frobenius-ball radius R of the W set, also D
CLIP_NORM = 5.0  # spec 5.1: per-sample theta-gradient clipping norm C_theta (private only)
LIPSCHITZ_CONSTANT = 5.0  # spec 5.1 / 6.3: L_theta of the noise formula, authors set it to C
# spec 4: Lipschitz constant of F(x, .) per unit of ||(1, x)|| for lipschitz_constant="auto"
LIPSCHITZ_AUTO_BINARY = 0.25
LIPSCHITZ_AUTO_SOFTMAX = 2.0**0.5 / 4.0
# Not in the paper (no penalty there, spec 1): a tiny ridge keeps the deterministic
# full-batch problem well posed on separable data; alpha=0 reproduces the paper.
ALPHA = 1e-4
FULL_BATCH_TOL = 1e-8  # gradient inf-norm tolerance of the full-batch BFGS solve
FULL_BATCH_MAX_ITER = 1000
PRNG_IMPL = "rbg"  # XLA RngBitGenerator keys: deterministic, much faster to compile than threefry
