"""One BLAS thread while a jitted loop factors matrices on the CPU.

jaxlib factors a matrix on the CPU (``jax.scipy.linalg.cho_factor``) with the LAPACK of
SciPy's OpenBLAS. After each call OpenBLAS's worker threads spin for a while, waiting for
more work, on the cores where XLA's intra-op thread pool then computes the next products
of the same loop: a jitted loop that factors a small matrix every iteration (partial
parity's Gauss-Newton steps) runs its large products on one core.
:func:`one_blas_thread` limits BLAS to one thread for a ``with`` block (threadpoolctl, as
scikit-learn does around its own threaded loops); the small factorizations lose nothing.
The block must enclose the wait for the loop's results (JAX dispatches asynchronously).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["one_blas_thread"]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit every BLAS library loaded in the process to one thread inside the block,
    restoring the previous limits after it."""
    from threadpoolctl import threadpool_limits  # at first use, not at fairest's import

    with threadpool_limits(limits=1, user_api="blas"):
        yield
