"""Defaults of the reweighting family (badr spec sections 2 and 6)."""

import dataclasses

from fairest.utils._tuning import Tuning

ALPHA = 1e-3  # badr spec section 2: default l2_reg of every model
NEWTON_TOL = 1e-10  # badr spec section 2: relative inner tolerance
NEWTON_MAX_ITER = 100  # spec caps at 50 inside BADR's loop; a standalone fit may take more

# --- BADR (badr spec sections 3-5) ---
# The estimators' temperatures for DP / EO / EOdds (spec 3.0, rho there; the paper's and
# the reference's are 1.0 for both, with no cap): a sigmoid temperature of 10 makes the
# smoothed rates close to the hard ones (the scores are logits), and a smooth-max
# temperature of 50 keeps the smooth maximum within
# log(G) / 50 of the largest group deviation (spec 3.8: at 1 it adds up to log G, more
# than the deviations, and barely ranks the models). Chosen on the many-group tasks of
# benchmarks/practitioner.py, where they mitigate more than (1, 50) at the same accuracy.
TEMPERATURE_SIGMOID = 10.0
TEMPERATURE_MAX = 50.0
# max_weight_ratio: a group's weight is at most this multiple of its share of the sample
# weight, so every weighted fit keeps at least n / 5 effective rows. Uncapped, the smallest
# unfairness on many-group data can lie at a model fitted mostly to a group of a few dozen
# rows, below the majority rate on test data; at 5 a group of a third of the rows (women
# on Adult) may still take all the weight, the fairest point of that two-group simplex.
MAX_WEIGHT_RATIO = 5.0
INNER_MAX_ITER = 50  # spec 2: Newton steps per lower-level solve inside BADR
# From this n d^2 on, BADR's Newton steps assemble the Hessian block from float32 row blocks
# of X (cast on the fly, no copy): below it the blocks' cast and the adjoint's refinement
# step (one exact Hessian-vector product per oracle call) cost more than they save. The
# gradient, hence theta*, stays float64; the refined adjoint is float64-accurate.
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


# --- The implicit oracle of two-loop BADR (reweighting/_bilevel.py, _oracle.py) ---
CONTRACTION_MEMORY = 8  # Newton solves whose convergence constants set the next prediction
ADJOINT_CG_MAX_ITER = 1000  # Hessian-vector products of one adjoint solve (Newton-CG path)
SLSQP_FIRST_STEP = 0.2  # largest weight change of SLSQP's first step (see run_scipy)
# SLSQP's points within SNAP_ATOL (max abs) of an evaluated point of the simplex are taken
# as that point (ImplicitOracle.snap): its bound-hugging iterates next to a vertex, its
# result re-normalised by rounding, get no solve of their own.
SNAP_ATOL = 1e-9


@dataclasses.dataclass
class OracleTuning(Tuning):
    """Thresholds that choose the implicit oracle's code path, never its result.

    Change them in tests with ``ORACLE_TUNING.override(...)`` (:class:`Tuning`).
    """

    # evaluated points kept (cache and warm-start anchors), unless their p x p factors
    # would exceed cache_floats floats (128 MB)
    cache_size: int = 64
    cache_floats: int = 16_000_000
    # from this many groups on, the adjoint's Jacobian comes from segment sums rather than
    # a one-hot product (the one-hot product's cost grows with G, the segment sums' not)
    segment_sum_min_groups: int = 5
    # a one-group vertex e_g is solved on the rows of group g only (a row-index block of
    # bucketed size) when that block is at most group_rows_max_share of the padded rows and
    # the data at least group_rows_min_rows: otherwise the extra compilation for the block's
    # shape costs more than the passes it saves; from group_rows_large_rows rows on, a block
    # of up to group_rows_large_share pays too while a gathered copy stays within
    # group_rows_max_bytes
    group_rows_min_rows: int = 65_536
    group_rows_max_share: float = 0.25
    group_rows_large_rows: int = 500_000
    group_rows_large_share: float = 0.5
    group_rows_max_bytes: int = 128 * 2**20
    # rows per block of the adjoint's products: as the Newton Hessian's blocks
    # (fairest._kernels._placement.GRAM_BLOCK_ROWS), large enough for full GEMM speed
    adjoint_block_rows: int = 16_384
    # from inexact_min_rows rows on, early lower-level solves are inexact
    # (ImplicitOracle.loose_solves): a new point's Newton tolerance is loose_factor * (l1
    # distance to the nearest evaluated point)^2, kept within [inner_tol, loose_max_tol].
    # Far points (the safeguard's baselines, SLSQP's first steps) are solved to
    # loose_max_tol; as SLSQP's steps shrink its points are solved ever more tightly, down
    # to inner_tol, so its last iterates (and its stopping test) see exact values. The
    # returned weights are always solved to inner_tol.
    inexact_min_rows: int = 65_536
    loose_max_tol: float = 1e-6
    loose_factor: float = 1e-4
    # from this many rows on, points that need only Phi skip the adjoint (the safeguard's
    # baselines, the final refit, restart comparisons) and SLSQP's points within SNAP_ATOL
    # of an evaluated point reuse it
    reuse_min_rows: int = 65_536
    # sparse X whose Newton Hessian is built from densified row blocks anyway is held dense
    # when the copy takes at most this (_runtime.densify_pays): plain and float32 GEMMs
    densify_max_bytes: int = 256 * 2**20
    # "slsqp" at two groups: the one-dimensional bracket search of _segment.run_segment
    # (the same optimum in 3-5 lower-level solves fewer; SLSQP itself where it declines);
    # False: SLSQP
    segment_search: bool = True
    # small data is padded to a row bucket (_buckets.padded_rows: one compiled kernel per
    # bucket); False: every fit runs on its exact row count, as data too large to pad does
    pad_rows: bool = True


ORACLE_TUNING = OracleTuning()
