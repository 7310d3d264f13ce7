"""The host side of two-loop BADR's implicit oracle: cache, warm starts, best point.

What an oracle call computes is :func:`~fairest.reweighting._bilevel.implicit_hypergradient`
(lower-level Newton solve, adjoint solve, hypergradient); how it runs (cache size,
inexact and value-only paths, vertices on their rows, background compilation, memory
release) is decided by the hooks of :class:`~fairest.reweighting._runtime.OracleRuntime`.
This class keeps the state between calls; SciPy's and Frank-Wolfe's outer loops
(:mod:`fairest.reweighting._outer`) call it.
"""

from __future__ import annotations

import contextlib

import jax
import numpy as np

from fairest.reweighting._bilevel import (
    Anchor,
    OracleOutput,
    _lower_on_rows,
    _upper_blocked,
    _upper_from_result,
    _value_from_result,
    implicit_hypergradient,
    placeholder_result,
    plain_anchor,
    upper_level,
)
from fairest.reweighting._defaults import (
    CONTRACTION_MEMORY,
    ORACLE_TUNING,
    SNAP_ATOL,
)
from fairest.reweighting._runtime import OracleRuntime

__all__ = ["ImplicitOracle"]


def _or_nan(grad, lam) -> np.ndarray:
    """``grad``, or NaN of ``lam``'s shape where the hypergradient was not computed."""
    return np.full(np.shape(lam), np.nan) if grad is None else grad


class ImplicitOracle:
    """Host-side wrapper for SciPy: warm starts, a cache keyed by lambda, counters, best point.

    SciPy asks for ``fun`` and ``jac`` separately at the same point, and SLSQP's line
    searches and the safeguard's baselines revisit points (a vertex, the uniform
    weights): every evaluated point stays in a cache keyed by lambda (exact equality,
    spec 4.3), so each is one jitted oracle call. A new lower-level solve starts at the
    tangent prediction from the nearest evaluated point (:func:`predicted_start`). Every
    evaluation at a point of the simplex (within 1e-8) is a candidate for the returned
    weights: the best one is kept.
    """

    def __init__(self, loss, metric, num_groups, problem, theta0, groups=None):
        self.loss = loss
        self.metric = metric
        self.num_groups = num_groups
        self.problem = problem
        self.theta = theta0  # start of a solve with no evaluated point yet
        self.nfev = 0
        self.inner_iter = 0
        self.best = (np.inf, None, None)
        self.path = []
        # lambda bytes -> (value, grad, OracleOutput, inner tolerance), at most _size
        self._cache = {}
        self._anchors = []  # (lambda, Anchor) of finite evaluations, newest last
        self._contractions = []  # Newton's observed quadratic-convergence constants
        self.mispredictions = 0  # predicted last Newton steps that had to be resumed
        # how the calls run (cache size, inexact and value-only paths, the adjoint kernel,
        # vertices on their rows, background compilation): decided from the data's size
        self.runtime = OracleRuntime(problem, num_groups, theta0.shape[0], groups)
        self._size = self.runtime.cache_size
        self.loose = False  # inside loose_solves(): new points may be solved inexactly
        self._inexact = self.runtime.inexact
        self._exact_tol = float(problem.inner_tol) if self._inexact else 0.0
        self._reuse = self.runtime.reuse
        self._gradient_mode = self.runtime.gradient_mode
        self.gradients = 0  # hypergradients computed (adjoint solves)

    @contextlib.contextmanager
    def loose_solves(self):
        """Inside this context, new points are solved to a tolerance that tightens as
        they get closer to evaluated ones (:meth:`tolerance`); outside it every point,
        also one evaluated loosely before, is solved to ``inner_tol``."""
        previous, self.loose = self.loose, True
        try:
            yield self
        finally:
            self.loose = previous

    def tolerance(self, lam) -> float:
        """Newton tolerance of a new solve at ``lam``: ``inner_tol`` unless inside
        :meth:`loose_solves` on large data (``ORACLE_TUNING.inexact_min_rows``); there
        ``ORACLE_TUNING.loose_factor * dist^2`` within ``[inner_tol, ORACLE_TUNING.loose_max_tol]``, ``dist`` the l1
        distance to the nearest evaluated point (far or none: ``ORACLE_TUNING.loose_max_tol``)."""
        if not (self.loose and self._inexact):
            return self._exact_tol
        dist = min((np.abs(lam - point).sum() for point, _ in self._anchors), default=np.inf)
        return float(
            np.clip(
                ORACLE_TUNING.loose_factor * dist**2, self._exact_tol, ORACLE_TUNING.loose_max_tol
            )
        )

    def compile_in_background(self, vertices: bool = True) -> None:
        """Compile the metric + adjoint kernel, and the one-group vertex solve when there
        is one and ``vertices`` will be evaluated, each in a thread while the first
        lower-level solve compiles and runs: XLA
        compiles outside the GIL, so on two or more cores the first fit pays about the
        longest compilation, not their sum. A call to a kernel waits for its thread; an
        error there is left to that call, which compiles again and raises it."""
        num_groups, uniform = self.num_groups, np.full(self.num_groups, 1.0 / self.num_groups)
        kernels = {
            "adjoint": (
                _upper_blocked if self._gradient_mode == "blocked" else _upper_from_result,
                (
                    self.loss,
                    self.metric,
                    num_groups,
                    uniform,
                    placeholder_result(self.theta),
                    self.problem,
                ),
            )
        }
        if self._reuse:
            kernels["value"] = (_value_from_result, kernels["adjoint"][1])
        if vertices and self.runtime.group_rows is not None:  # no Newton step: one pass is run
            no_steps = self.problem._replace(inner_max_iter=np.int32(0))
            kernels["rows"] = (
                _lower_on_rows,
                (
                    self.loss,
                    num_groups,
                    np.eye(num_groups)[0],
                    plain_anchor(self.theta, num_groups),
                    no_steps,
                    np.float64(np.inf),
                    *(block[0] for block in self.runtime.group_rows),
                ),
            )
        # only compiled: a run on the placeholder arguments would hold its XLA
        # temporaries (at 1e6 x 100, 313 MiB for the blocked adjoint, 176 MiB for the
        # value pass) beside the main thread's first solve and compute nothing used
        self.runtime.compile_in_background(kernels)

    def evaluate(self, lam, with_grad: bool = True) -> tuple[float, np.ndarray, OracleOutput]:
        """``(Phi, grad Phi, OracleOutput)`` at ``lam``: cached, else one oracle call. A
        point solved loosely (:meth:`loose_solves`) is solved again to ``inner_tol``,
        from its own solution, when asked for outside that context, unless its measured
        lower-level gradient already meets ``inner_tol`` (:meth:`_meets_inner_tol`).

        On large data (``ORACLE_TUNING.reuse_min_rows``) ``with_grad=False`` skips the adjoint
        (``grad Phi`` is then NaN): a later call with the gradient at the same point adds
        it from the cached lower-level solution, with no new solve."""
        lam = np.asarray(lam, dtype=np.float64)
        lam = np.where(lam > 0.0, lam, 0.0)  # also -0.0 -> 0.0: one cache key per point
        key = lam.tobytes()
        cached = self._cache.get(key)
        with_grad = with_grad or not self._reuse
        if cached is not None and (
            self.loose or cached[3] <= self._exact_tol or self._meets_inner_tol(cached[2])
        ):
            if with_grad and cached[1] is None:
                return self._add_gradient(key, lam, cached)
            return cached[0], _or_nan(cached[1], lam), cached[2]
        tol = self.tolerance(lam)
        value, grad, out, result = self._solve(lam, tol, with_grad)
        if cached is None:
            if len(self._cache) >= self._size:
                self._cache.pop(next(iter(self._cache)))  # oldest first
            self.path.append((value, lam.copy()))
        self._cache[key] = (value, grad, out, tol, result)
        if abs(lam.sum() - 1.0) <= 1e-8 and (
            value < self.best[0] or np.array_equal(lam, self.best[1])
        ):
            self.best = (value, lam.copy(), out)
        return value, _or_nan(grad, lam), out

    def _meets_inner_tol(self, out: OracleOutput) -> bool:
        """Whether a point solved loosely already meets ``inner_tol``: the lower-level
        gradient its value (or adjoint) pass measured at ``theta*`` is within the threshold
        a solve started there would use (``inner_tol * max(1, that norm)``, i.e.
        ``inner_tol``), so solving it again would take no Newton step and return the same
        ``theta*`` and ``Phi``: the cached point is used as it is."""
        return self._inexact and float(out.lower_grad_norm) <= self._exact_tol

    def has_value(self, lam) -> bool:
        """Whether ``Phi(lam)`` is cached (:meth:`evaluate` at ``lam`` solves nothing new
        inside :meth:`loose_solves`)."""
        lam = np.asarray(lam, dtype=np.float64)
        return np.where(lam > 0.0, lam, 0.0).tobytes() in self._cache

    def _add_gradient(self, key, lam, cached) -> tuple[float, np.ndarray, OracleOutput]:
        """The hypergradient at a point evaluated without it: the adjoint at its cached
        lower-level solution (no new solve)."""
        value, _, _, tol, result = cached
        lam_device = jax.device_put(lam)
        self.runtime.ready("adjoint")
        out = upper_level(
            self.loss,
            self.metric,
            self.num_groups,
            lam_device,
            result,
            self.problem,
            self._gradient_mode,
        )
        grad = np.asarray(jax.device_get(out.grad))
        self.gradients += 1
        self._cache[key] = (value, grad, out, tol, result)
        if self.best[1] is not None and np.array_equal(lam, self.best[1]):
            self.best = (self.best[0], self.best[1], out)
        return value, grad, out

    def snap(self, lam, atol: float = SNAP_ATOL) -> np.ndarray:
        """``lam``, or the evaluated point of the simplex within ``atol`` (max abs) of it,
        the newest (large data only, ``ORACLE_TUNING.reuse_min_rows``): weights that differ from an
        evaluated point by rounding or by SLSQP's bound handling need no solve of their
        own (Phi changes by at most ``atol ||grad Phi||_1``, below the lower level's
        tolerance)."""
        lam = np.asarray(lam, dtype=np.float64)
        if not self._reuse:
            return lam
        for _, point in reversed(self.path):
            if abs(point.sum() - 1.0) <= 1e-8 and np.max(np.abs(point - lam)) <= atol:
                return point.copy()
        return lam

    def evaluate_near(self, lam, with_grad: bool = True):
        """:meth:`evaluate` at :meth:`snap` ``(lam)``; a snapped-to point is used solved
        to ``inner_tol`` (as ``lam`` itself, this close to an evaluated point, would be
        inside :meth:`loose_solves`): a loosely solved one is solved again."""
        point = self.snap(lam)
        if point is lam or np.array_equal(point, np.asarray(lam, dtype=np.float64)):
            return self.evaluate(lam, with_grad)
        previous, self.loose = self.loose, False
        try:
            return self.evaluate(point, with_grad)
        finally:
            self.loose = previous

    def _solve(self, lam, tol, with_grad: bool = True):
        """One oracle call (two jitted parts) with Newton tolerance ``tol``, started at
        the nearest anchor's tangent prediction; one device-to-host copy of the scalars
        and the gradient.

        Newton may end with a predicted step (:func:`~fairest._solvers._newton.newton_solve`,
        ``contraction`` = the largest constant observed in the last ``CONTRACTION_MEMORY``
        solves) when the data is large enough for the float32 Hessian (whose adjoint is
        refined anyway): the adjoint pass then checks the gradient there, and in the rare
        case it is above the threshold the solve resumes from that point without
        prediction.

        Returns ``(value, grad, OracleOutput, NewtonResult)``; ``grad`` is ``None`` when
        ``with_grad`` is false (large data, ``ORACLE_TUNING.reuse_min_rows``: no adjoint)."""
        lam_device = jax.device_put(lam)
        problem = self.problem
        if tol != self._exact_tol:  # traced: a new tolerance compiles nothing
            problem = problem._replace(inner_tol=jax.device_put(np.float64(tol)))
        kappa = max(self._contractions, default=np.inf)
        if problem.X_hessian is None:  # small data: an exact factor, no refinement
            kappa = np.inf
        anchor = self._nearest_anchor(lam)
        if anchor is None:
            anchor = plain_anchor(self.theta, self.num_groups)
        mode = self._gradient_mode if with_grad else "value"
        result, out = implicit_hypergradient(
            self.loss,
            self.metric,
            self.num_groups,
            lam_device,
            problem,
            anchor,
            contraction=kappa,
            mode=mode,
            rows=self.runtime.vertex_rows(lam),
            ready=self.runtime.ready,
        )
        value, grad, n_iter, converged, unverified, contraction = jax.device_get(
            (
                out.value,
                out.grad,
                out.inner_iter,
                out.inner_converged,
                out.unverified,
                out.contraction,
            )
        )
        if unverified and not converged:  # the predicted step fell short: resume there
            self.mispredictions += 1
            result, out = implicit_hypergradient(
                self.loss,
                self.metric,
                self.num_groups,
                lam_device,
                problem,
                plain_anchor(out.theta, self.num_groups),
                mode=mode,
            )
            value, grad, more_iter = jax.device_get((out.value, out.grad, out.inner_iter))
            n_iter = int(n_iter) + int(more_iter)
        if contraction > 0 and np.isfinite(contraction):
            self._contractions = [*self._contractions, float(contraction)][-CONTRACTION_MEMORY:]
        self.nfev += 1
        self.inner_iter += int(n_iter)
        if np.isfinite(value):
            self.theta = out.theta
            anchor = Anchor(lam_device, out.theta, out.cholesky, out.jacobian)
            self._anchors = [*self._anchors, (lam, anchor)][-self._size :]
        self.gradients += int(mode != "value")
        grad = np.asarray(grad) if mode != "value" else None
        return float(value), grad, out, result

    def _nearest_anchor(self, lam) -> Anchor | None:
        """The evaluated point closest to ``lam`` (l1), the newest among ties."""
        if not self._anchors:
            return None
        distances = [np.abs(lam - point).sum() for point, _ in self._anchors]
        nearest = len(distances) - 1 - int(np.argmin(distances[::-1]))
        return self._anchors[nearest][1]

    def fun(self, lam):
        return self.evaluate_near(lam)[0]

    def jac(self, lam):
        return self.evaluate_near(lam)[1]
