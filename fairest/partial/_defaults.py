"""Defaults of the partial-fairness family; each cites the section of
``spec/partial_fairness.md`` (the spec) or of the paper (He, Huang, Yao, Lin 2025) it follows.

Constants that change *what* a fit computes are module constants (tolerances, grids,
iteration caps) or, where tests change them, fields of :data:`PARTIAL_RULES` (the
tightening policy, the theory caps); those that only choose *how* it is computed (block
sizes, storage rules, cost caps of optional paths) are fields of the tuning record
:data:`PARTIAL_TUNING`. Tests change both records with ``.override(...)``."""

import dataclasses

from fairest.utils._tuning import Tuning

# Fairness tolerance kappa (spec section 0). No paper default; 0.1 lies inside every
# kappa sweep of G.2.1 (spec section 7.2).
TOLERANCE = 0.1

# Number of grid levels J of problem (15) (spec sections 3.4 and 5.3: "ten equally spaced
# values"; paper section 7.1).
N_GRID = 10

# Grid rule (spec section 3.4, [default] ``grid="lemma"``): p_j = alpha + j (1-kappa)(beta-alpha)/J.
GRID = "lemma"

# Surrogate of 1[z > 0] (spec section 3.3): the ramp was used in every experiment.
SURROGATE = "ramp"
SURROGATE_WIDTH = 1.0  # tau of sigma(z / tau); the paper always has 1 (spec section 3.3)

# Decision threshold theta_hat of pDP (spec section 0: the paper uses 0).
THRESHOLD = 0.0

# DC split of (21) (spec section 4.7, [derived, default] "minimal").
DC_SPLIT = "minimal"

# Starting model ([default], spec section 5.1 has the paper's h = 0, "zero"): "auto" takes
# the best constant model h = logit(share of positives) for pDP, whose in-band terms are
# flat around the surrogate rate 1/2 of h = 0 when 1/2 lies outside the interval (IDCA then
# stops at a poor critical point), and h = 0 for pSP, where the constant-model start leads
# to near-constant scores with a poorer test pSP;
# benchmarks/results/partial_idca_diagnosis.md.
INIT = "auto"


# Practical IDCA settings (spec section 5.3, [default] package defaults when not tuning):
INNER_TOL = 1e-3  # SSG infeasibility tolerance / Polyak target epsilon
INNER_MAX_ITER = 200  # SSG iterations T per subproblem
MAX_ITER = 200  # IDCA outer iterations K
# Cap on the iterations of the ALM inner solver ([default], not in the paper): it stops at
# convergence well before this on the subproblems of the reference tests.
ALM_MAX_ITER = 1000
# Solver (not in the paper): "smooth_alm", an augmented Lagrangian on the smoothed
# problem (fairest/partial/_smooth.py) whose rounds are damped Gauss-Newton steps, the
# whole run (rounds, smoothing stages, steps, line searches) in one jitted
# lax.while_loop in float32 (fairest/partial/_fast.py), stopping on the convergence test
# TOL. It is the default because it reaches the objective of the paper's IDCA + SSG or a
# lower one at a fraction of its cost (benchmarks/results/partial_speed.md).
# On small bands a violated smoothed constraint can be flat (no score on the ramp of its
# level) and the run stalls; when no candidate of its solves meets ``tolerance``, the fit
# runs the paper's IDCA (solver="idca", with its own tightening rounds) and keeps the
# best candidate of both.
SOLVER = "smooth_alm"
# The IDCA fallback's cost cap: PARTIAL_TUNING.fallback_row_passes (below).
TOL = 1e-5  # relative change of f_0 over an augmented-Lagrangian round that stops it
PROXIMAL_STRENGTH = 0.0  # strong-convexity add-on mu (spec section 4.4, [default] 0)
ALPHA = 0.0  # optional L2 on the coefficients, not part of the paper (spec section 3.2)

# Grid search of the paper's tuning protocol (spec section 5.3, paper G.2.2).
TUNE_INNER_MAX_ITER = (150, 200)
TUNE_INNER_TOL = (5e-4, 1e-3, 2e-3, 5e-3)
TUNE_FIRST_STAGE_MAX_ITER = 50
TUNE_MAX_ITER = (100, 150, 200, 250, 300, 350, 400)

# "A tolerance is a measured fact" ([default], not in the paper). After the surrogate
# solve the exact training metric (fairest.metrics, fitted interval, sample weights,
# threshold for pDP) is measured. The surrogate, the finite grid and the unconverged
# subgradient solves leave an overshoot that is large and noisy (Adult, top 20 %,
# kappa = 0.05: exact pSP 0.067-0.12 depending on the rows). Candidates: the last
# tighten_tail share of every solve's IDCA iterates (each one is nearly feasible, and IDCA
# truncated there is the run with fewer outer iterations, spec section 5.1); the most
# accurate candidate (smallest objective) whose exact metric meets ``tolerance`` is
# returned. While no candidate of the last solve meets it, the problem is solved again,
# at most tighten_rounds times (none when the first solve meets it), from the constant
# start, with
# * the internal tolerance kappa_r = clip(kappa_{r-1} - (exact_{r-1} - kappa),
#   tighten_factors * kappa_{r-1}): the measured excess of the last final iterate is
#   subtracted, and kappa_r falls by at least 10 % and at most 75 % a round;
# * the levels "closed" (pSP: J levels from alpha to beta - c inclusive, which also
#   constrain the bottom of the band, where the largest gap sat on Adult);
# * the surrogate width times tighten_width_factor: a tighter internal tolerance alone
#   often did not help (pDP on Adult, kappa = 0.02: exact 0.055-0.06 at internal
#   tolerances 0.0003-0.0055 with width 1; 0.006-0.011 with width 0.5-0.25), the
#   smoothed rates differing from the exact ones.
# On 2,000-5,000 Adult rows (6 draws) with kappa in {0.05, 0.1, 0.2}, these rounds met
# pSP <= kappa in 12 of 12 fits, against 6-7 of 8 with the width kept or the grid doubled
# instead (benchmarks of this change, not in the repository). Each round costs one full
# solve; the rounds stop early when a round after the first ends no fairer than an
# earlier solve, or when a tightening round's smoothed solve stalls (bands of a few
# samples, where the smoothed rates stop following the exact ones: KDD census by race,
# top 10 %, 23-1,678 samples a band: 0.188, then 0.112 stalled, and 0.133 stalled when a
# third round ran).
# The values: PARTIAL_RULES's tighten_* fields (below).

# Candidate intervals of interval="auto" (spec section 6, [default] suggest_interval).
AUTO_WIDTHS = (0.1, 0.2, 0.25, 0.3)
AUTO_STEP = 0.05

# Sup of |sigmoid''| = 1 / (6 sqrt 3) (spec section 3.3, [derived]).
SIGMOID_CURVATURE = 0.09622504486493763

# Robust ceiling for the subset sizes ceil(a n - 1e-12) (spec section 2.1).
CEIL_EPS = 1e-12

# Baselines (spec section 8).
BASELINE_STEP = 0.5  # PGD step eta ([default] one of {0.1, 0.5, 1, 2}, spec section 8.5)
BASELINE_MAX_ITER = 1000  # PGD iterations (K = 1000 for a9a and bank, spec section 8.5)
PROJECTION_TOL = 1e-6  # cvxpy/Clarabel tolerances of the projection (spec section 8.5)
PENALTY_STEP = 1e-3  # constant subgradient step (one of {5e-4, 1e-3, 2e-3, 5e-3}, spec 8.6)
PENALTY_MAX_ITER = 80_000  # T * K ([default] 80,000, spec section 8.6)
PENALTY_WEIGHT = 0.3  # lambda of (114)/(119); inside the sweeps of spec section 8.6
# Solver of the penalty baseline: L-BFGS on the smoothed objective through the
# continuation PENALTY_SMOOTHING of (delta, tau) stages (ramp / min width, log-sum-exp
# temperature of the max), or the paper's subgradient descent ("subgradient", spec 8.6).
# L-BFGS is the default because it reaches a lower exact penalised objective in far fewer
# passes (benchmarks/results/partial_speed.md, "penalty" rows).
PENALTY_SOLVER = "lbfgs"
PENALTY_SMOOTHING = ((0.05, 1e-2), (0.01, 2e-3), (2e-3, 5e-4))
PENALTY_MEMORY = 20  # L-BFGS memory
PENALTY_GTOL = 1e-5  # sup-norm of the smoothed gradient that ends a stage (float32)
# Convergence test: "lbfgs": a stage ends when one step lowered the smoothed objective by
# at most PENALTY_TOL (relative; a looser value ends stages visibly higher, a tighter one
# no lower); "subgradient": the lowest penalised objective of a window of PENALTY_WINDOW
# steps is at most PENALTY_TOL (relative) below that of the previous window.
PENALTY_TOL = 1e-6
PENALTY_WINDOW = 1000


@dataclasses.dataclass
class PartialTuning(Tuning):
    """Thresholds that choose how a partial-parity fit is computed: block sizes, the
    storage of ``X`` and the cost caps of optional paths.

    Change them in tests with ``PARTIAL_TUNING.override(...)`` (:class:`Tuning`).
    """

    # rows a host-side pass over X (count non-zeros, cast, pad) handles at once: bounds
    # its temporaries to a block of rows, never a whole (n, d) mask or copy
    host_block_rows: int = 65_536
    # rows of one block of the smoothed solver's passes over dense X (fairest.partial._fast):
    # its temporaries are (block, d) and (block, 1 + G J); data of at most this many rows
    # is one block, the one-product form of the whole data
    solver_block_rows: int = 2**16
    # rows at most this share non-zero (and at least 8 columns) are stored by their
    # non-zeros (ELL); denser data is stored dense
    ell_density: float = 0.25
    # the smoothed solver's X^T U product taken group by group on rows ordered by group
    # (n d J flops instead of n d G J; fairest.partial._fast.group_ranges): the same sums
    # in another float32 order, which moves runs that stall on narrow bands to other
    # points (KDD census, tests/partial/test_partial_groups.py's many small groups), so
    # off until the outcomes of such runs are shown not to depend on it
    products_by_group: bool = False
    # the IDCA fallback costs max_iter * T SSG passes over the rows a solve (40,000 at
    # the defaults), about 100 times a smoothed solve, so it runs only where
    # rows * max_iter * T is at most this (5,000 rows at the defaults); larger fits that
    # miss the tolerance warn with the achieved value
    fallback_row_passes: int = 5_000 * 200 * 200
    # rows x features from which the penalty baseline frees the smoothed run's memory
    # (gc.collect and malloc_trim) before the exact evaluation of its candidates (64 MiB
    # of float32 X); below, the collection costs more than it saves
    penalty_collect_cells: int = 2**24
    # rows x features (non-zeros of sparse X) up to which the unconstrained model behind
    # interval="auto" is scikit-learn's Newton-CG on the host, whose solve costs less
    # than the XLA compilation of the jitted one; above, the jitted Newton-CG, whose
    # passes need no (n, d) temporary (scikit-learn's Hessian products keep one: 64 MiB
    # here)
    host_interval_cells: int = 2**23


PARTIAL_TUNING = PartialTuning()


@dataclasses.dataclass
class PartialRules(Tuning):
    """Rules of a partial-parity fit that change *what* it returns, unlike
    :data:`PARTIAL_TUNING`: the tightening rounds (the comment on them above) and the caps
    of ``schedule="theory"``.

    Change them in tests with ``PARTIAL_RULES.override(...)`` (:class:`Tuning`).
    """

    # tightening: at most this many more solves, the internal tolerance of each clipped
    # to these factors of the last one, candidates from this last share of a solve's
    # iterates, and the surrogate width times this factor a round
    tighten_rounds: int = 3
    tighten_factors: tuple = (0.25, 0.9)
    tighten_tail: float = 0.5
    tighten_width_factor: float = 0.5
    # theory schedule (spec section 5.4): caps on K and T_k, whose formulas are
    # astronomically large for realistic M, nu; capped values are reported with a warning
    theory_max_outer: int = 10_000
    theory_max_inner: int = 100_000


PARTIAL_RULES = PartialRules()
