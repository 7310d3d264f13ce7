"""Tuning of the ERM solvers (fairest/_solvers): the thresholds that choose a solver and
how its passes run.

:data:`SOLVER_TUNING` holds them; tests change them with ``SOLVER_TUNING.override(...)``
(:class:`fairest.utils._tuning.Tuning`). Some are read while JAX traces (a family's lower
level asks which Newton variant runs), so the record empties JAX's compiled caches when an
override begins and ends (:class:`fairest._kernels._defaults.TracedTuning`).
"""

from __future__ import annotations

import dataclasses

from fairest._kernels._defaults import TracedTuning

__all__ = ["SOLVER_TUNING", "SolverTuning"]


@dataclasses.dataclass
class SolverTuning(TracedTuning):
    """Thresholds that choose the ERM solver's path; every path minimises the same
    objective to the same stopping rule.

    Change them in tests with ``SOLVER_TUNING.override(...)``.
    """

    # above this many parameters Newton-CG replaces Newton (badr spec section 2): forming
    # and factorising the p x p Hessian costs O(n p^2 + p^3) per step there
    newton_cg_min_params: int = 2000
    # L-BFGS from this many features on, when the Hessian work n p^2 is also at least
    # lbfgs_min_work: a Newton pass then costs several L-BFGS passes
    # (benchmarks/speed_table.py)
    lbfgs_min_features: int = 50
    lbfgs_min_work: int = 50_000_000
    # dense data of at least this many entries (n p) goes to L-BFGS at a loose tol: there
    # L-BFGS reaches the same objective in less time than Newton's Hessian passes
    lbfgs_loose_min_size: int = 200_000
    # from this n p^2 on, Newton sums its Hessian block over float32 row blocks of X (half
    # the flops; objective and gradient stay float64, so the optimum is the same)
    float32_hessian_work: int = 100_000_000
    # sparse X: Newton up to this work per pass (_driver.sparse_newton_work); up to it a
    # few Newton passes beat L-BFGS + Newton-CG's hundreds of iterations to a tight tol
    # (benchmarks/results/sparse_speed.md)
    sparse_newton_max_work: int = 1_000_000_000
    # one thread of a split pass (_row_split.row_parts) per this many bytes of X: data
    # that fits the last-level cache gains nothing from threads
    min_part_bytes: int = 32 * 2**20
    # at most this many threads run a split pass (one per core below it); 1 turns the
    # split off (one-thread A/B runs of benchmarks/erm_vs_sklearn.py)
    max_split_threads: int = 8
    # a split pass cuts the rows into this many parts per thread, taken in turn: on a
    # loaded machine a thread that waits for a core holds up a smaller part, and each part
    # costs a dispatch and a host round trip, so more than two a thread cost more than
    # they balance
    parts_per_thread: int = 2
    # each part of a split pass has at least this many row blocks
    # (_kernels._placement.pass_block_rows): fewer rows would not amortise a part's dispatch
    min_part_blocks: int = 2


SOLVER_TUNING = SolverTuning()
