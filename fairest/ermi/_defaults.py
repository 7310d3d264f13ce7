"""Defaults of the ERMI family (spec ``ermi.md``; section numbers cited per constant)."""

import dataclasses

from fairest.utils._tuning import Tuning

# fairness_weight="auto" (issue 33): the weight that halves the unconstrained fit's train
# parity gap (fairest.ermi._auto); a fixed weight for the fits that cannot search one, a
# private fit (the search would read the sensitive attribute without noise) and a stream
# (no whole training set): the paper's default, spec 5.1 (lam 1.0, grids in [0, 2.5]).
FAIRNESS_WEIGHT = "auto"
FIXED_FAIRNESS_WEIGHT = 1.0
BATCH_SIZE = 1024  # spec 5.1 / paper F.2.1: minibatch 1024
# Issue 23: the SGDA defaults follow one data-independent rule (documented in the
# estimator and docs/user_guide/ermi.md), not the paper's 200 epochs at eta = 0.005:
# - 50 epochs of batch 1024 and a constant theta step 0.1: non-private SGDA then reaches
#   the full-batch optimum on Adult (paper protocol) for lam in [0, 32]; fewer epochs
#   also mean less noise for the same privacy budget;
# - the W step is 0.5 / lam ("auto"): the ascent direction is lam-scaled and its W
#   curvature is 2 lam p_Yhat(j) <= 2 lam, so every step contracts W - W* by 1 - p_Yhat(j)
#   whatever lam is (a fixed eta_W diverges for lam * eta_W > 1);
# - the W radius is 2 sqrt(l) ("auto"): the maximiser has norm sqrt(l) at independence
#   (spec 3.2; about 1.42 on Adult), so the ball holds it with a factor 2 to spare;
# - the clip is 2 (per sample, on the part of the gradient the guarantee protects).
# The paper's values: N_EPOCHS 200, LEARNING_RATE 0.005, DUAL_LEARNING_RATE 0.01,
# DUAL_RADIUS = CLIP_NORM = 5 (spec 5.1).
N_EPOCHS = 50
LEARNING_RATE = 0.1
DUAL_STEP = 0.5  # dual_learning_rate="auto" is DUAL_STEP / lam (DUAL_STEP when lam = 0)
DUAL_LEARNING_RATE = "auto"
DUAL_RADIUS_FACTOR = 2.0  # dual_radius="auto" is DUAL_RADIUS_FACTOR * sqrt(n_classes)
DUAL_RADIUS = "auto"
CLIP_NORM = 2.0
PAPER_CLIP_NORM = 5.0  # spec 5.1 (calibrate_privacy's default, closed form)
PAPER_DUAL_RADIUS = 5.0  # spec 5.1 / 13.5 (calibrate_privacy's default, closed form)
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
# accounting="rdp" (the default of private fits, issue 23)
COUNT_BUDGET_SHARE = 0.1  # the group-count release alone is (0.1 epsilon, delta)-DP
THETA_NOISE_SHARE = 0.5  # share of the joint per-step budget (in 1 / z^2) given to theta


@dataclasses.dataclass
class SgdaTuning(Tuning):
    """How SGDA runs, never what it computes: change it in tests with
    ``SGDA_TUNING.override(...)`` (:class:`~fairest.utils._tuning.Tuning`)."""

    # rows (minibatch size x iterations) one compiled chunk of whole epochs draws at most
    # (fairest.ermi._sgda.chunk_epochs): between chunks the host checks for divergence and
    # reports progress; small fits run as one chunk
    chunk_rows: int = 2**18


SGDA_TUNING = SgdaTuning()


@dataclasses.dataclass
class FullBatchTuning(Tuning):
    """Which full-batch solver runs, never what it computes (both stop at the same
    gradient tolerance): change it in tests with ``FULL_BATCH_TUNING.override(...)``."""

    # Newton (fairest.ermi._newton) is the full-batch solver where the flattened parameters
    # number at most this: the Hessian's (p q)^2 entries and its factorisation stay small
    # beside a pass over the data, and a fit takes a few Newton iterations where L-BFGS
    # takes hundreds to the same tolerance (benchmarks/ermi_speed.py)
    newton_max_params: int = 1024
    # ... and where the float32 copy of X for its Gram matrices takes at most this
    newton_max_bytes: int = 256 * 2**20
    # solved points of a path that keep their last Hessian (the tangent start of a later
    # weight); older points drop theirs to bound memory
    kept_hessians: int = 4


FULL_BATCH_TUNING = FullBatchTuning()
