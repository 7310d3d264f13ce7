"""Solvers of the FERMI objective: deterministic full batch and (DP-)SGDA (spec ``ermi.md`` 5).

* :func:`full_batch_solve` minimises ``L(theta) + lam ERMI(theta) + alpha/2 ||coef||^2``
  with W at its closed-form maximiser (spec 3.2) by L-BFGS-B on a jitted objective.
  Deterministic; the reference for small data.
* :func:`sgda_solve` is Algorithm 1 of Lowy, Gupta, Razaviyayn (ICLR 2023): simultaneous
  stochastic descent in theta and projected ascent in W with optional per-sample
  clipping and Gaussian noise (spec 5.3), run on the solver contract in jitted chunks of
  whole epochs (:mod:`fairest.ermi._sgda`: the step, the state, ``init`` / ``step`` /
  ``params``, the shared guarded scan and refit after a divergence).
* :func:`run_full_batch` and :func:`run_sgda` are the entry points of the estimator: they
  take host arrays, set up the solve (padding, starting point, keys, W0) under
  ``jax.enable_x64``, and return an :class:`ERMIResult` of numpy values.

Random streams (spec 11): one key per purpose (batches, theta-noise, W-noise, random
iterate), so the batch sequence does not depend on k, l or the noise settings.

Speed (CPU, issue 5): the per-step keys of a chunk are derived in one vectorised call
before its loop (threefry inside a scan is a small while loop per call); the
per-sample constants (labels, cells, 1/sqrt(p), ||(1, x_i)||^2) are packed into one float
and one int table gathered once per step; the minibatch gathers skip bounds handling;
the theta-gradient is ``A^T X_b`` (a fast GEMV orientation on CPU); ``X`` may be float32.
The minibatches are uniform m-subsets drawn without sorting or integer division
(:mod:`fairest.ermi._sampling`).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize

from fairest._kernels import scores
from fairest._kernels._buckets import bucket_size, pad_rows, pad_rows_to, padded_rows
from fairest._kernels._placement import place_dense
from fairest._kernels._sparse import sparse_rows
from fairest._solvers._lbfgs import single_threaded_blas
from fairest.ermi import _defaults, _sgda
from fairest.ermi._kernels import (
    Strata,
    closed_form_w,
    device_scalar,
    fermi_value_and_grad,
    probabilities,
)
from fairest.ermi._newton import NewtonSolver, gram_copy, newton_applies
from fairest.ermi._sgda import SGDAHyper, project_ball
from fairest.utils._devices import place_rows

__all__ = [
    "ERMIResult",
    "fitted_w",
    "full_batch_solve",
    "resolve_dual_learning_rate",
    "resolve_dual_radius",
    "run_full_batch",
    "run_sgda",
    "sgda_iterations",
    "sgda_solve",
]

HISTORY_KEYS = ("batch_loss", "batch_saddle", "w_norm")  # the per-iteration SGDA records


class ERMIResult(NamedTuple):
    """Outcome of :func:`run_full_batch` / :func:`run_sgda` (numpy values)."""

    theta: np.ndarray  # (d + 1, q) intercept row first; q = 1 (binary) or n_classes
    W: np.ndarray  # (n_strata, n_groups, n_classes) auxiliary matrix
    n_iter: int  # L-BFGS iterations, or SGDA iterations T
    converged: bool  # L-BFGS reached tol; SGDA (a fixed T, no stopping test): always True
    objective: float  # final full-batch objective (NaN for SGDA)
    grad_norm: float  # full batch: infinity norm of the final gradient (NaN for SGDA)
    history: dict | None  # SGDA with record_history: HISTORY_KEYS -> (T,) arrays
    last: tuple | None = None  # SGDA: the last iterate (theta, W), where partial_fit resumes
    fairness_weight: float = np.nan  # the weight solved at (full batch: "auto" resolved)
    auto: object = None  # full batch, "auto": the search (fairest.ermi._auto.AutoWeight)


def resolve_dual_learning_rate(value, fairness_weight: float) -> float:
    """``"auto"``: ``DUAL_STEP / lam`` (the lam-scaled W ascent contracts at the same rate
    for every lam), ``DUAL_STEP`` at lam = 0 (W gets no gradient); a number is kept."""
    if value != "auto":
        return float(value)
    lam = float(fairness_weight)
    return _defaults.DUAL_STEP / lam if lam > 0 else _defaults.DUAL_STEP


def resolve_dual_radius(value, n_classes: int) -> float:
    """``"auto"``: ``2 sqrt(l)``, twice the norm of the maximiser at independence (spec 3.2)."""
    if value != "auto":
        return float(value)
    return _defaults.DUAL_RADIUS_FACTOR * float(np.sqrt(n_classes))


def sgda_iterations(n_samples: int, batch_size: int, n_epochs: int) -> tuple[int, int]:
    """``(m, T)``: the minibatch size ``min(batch_size, n)`` and ``T = n_epochs ceil(n / m)``."""
    m = min(batch_size, n_samples)
    return m, n_epochs * -(-n_samples // m)


def full_batch_solve(
    theta0, X, y, s, t, weight, strata: Strata, lam, alpha, tol, max_iter, *, binary
):
    """Minimise the FERMI objective with W at its closed form, by scipy's L-BFGS-B.

    Only the objective and gradient are jitted (one compilation per data shape; lambda
    and alpha are traced); the quasi-Newton loop runs in scipy, as for every smooth
    deterministic problem in fairest. Returns ``(theta, objective, grad_inf_norm,
    n_iter, converged)``; stops when ``||grad||_inf <= tol`` or the
    relative decrease of the objective reaches 64 machine epsilons (as scikit-learn's lbfgs).
    """
    shape = theta0.shape
    args = (X, y, s, t, weight, strata, lam, alpha)

    def fun(flat):
        value, grad = fermi_value_and_grad(jax.device_put(flat), *args, binary=binary)
        return float(value), np.asarray(grad, dtype=np.float64)

    with single_threaded_blas():  # L-BFGS-B's small products: see the function
        result = scipy.optimize.minimize(
            fun,
            np.asarray(theta0, dtype=np.float64).ravel(),
            jac=True,
            method="L-BFGS-B",
            options={
                "maxiter": int(max_iter),
                "gtol": float(tol),
                "ftol": 64 * np.finfo(float).eps,
                "maxcor": 20,
            },
        )
    grad_norm = float(np.max(np.abs(fun(result.x)[1])))
    converged = bool(result.success) or grad_norm <= tol  # gtol, or no relative decrease left
    return result.x.reshape(shape), float(result.fun), grad_norm, int(result.nit), converged


def sgda_solve(
    theta0,
    W0,
    X,
    y,
    s,
    t,
    weight,
    strata: Strata,
    hyper: SGDAHyper,
    key,
    *,
    binary: bool,
    batch_size: int,
    n_epochs: int,
    batching: str,
    record_history: bool,
    random_iterate: bool,
):
    """Run T = n_epochs * ceil(n / m) DP-SGDA iterations; returns ``(theta, W, history)``.

    ``history`` is ``(batch loss, batch Psi, ||W||_F)`` per iteration when
    ``record_history`` (else ``None``). With ``random_iterate`` the returned theta is
    ``theta_tau``, tau uniform on 1..T (the iterate the theory analyses). ``X`` may be
    float32 (see :func:`_sgda_step`); everything else is float64. Batches are drawn
    from all rows of ``X``; tail averaging, padded rows and the last iterate are
    :func:`run_sgda`'s, which calls :mod:`fairest.ermi._sgda` itself. Call under
    ``jax.enable_x64``; a divergence is not refitted here (:func:`run_sgda`).

    The iterations run on the solver contract (:mod:`fairest.ermi._sgda`: a NamedTuple
    state, ``init`` / ``step`` / ``params``, jitted chunks of whole epochs through the
    constrained engine's guarded scan). The random streams are those of spec 11:
    iteration ``it`` uses ``fold_in(k, it)`` of the batch, theta-noise and W-noise keys.
    """
    n = X.shape[0]
    config = _sgda.config(binary, n, batch_size, batching, record_history, random_iterate, False)
    outcome = _sgda.drive(theta0, W0, X, y, s, t, weight, strata, hyper, key, config, n_epochs)
    return outcome.theta, outcome.W, outcome.history


def _place(X, *rows):
    """Device copies of ``X`` and its row arrays, sharded by rows over the configured
    devices; scipy sparse ``X`` becomes a :class:`~fairest._kernels._sparse.SparseRows`
    (O(nnz), never densified) on the first device, its row arrays beside it."""
    if not hasattr(X, "tocsr"):
        return place_rows([X, *rows])
    from fairest._solvers._driver import place_sparse
    from fairest.utils._devices import configured_devices

    return [
        place_sparse(sparse_rows(X, X.dtype)),
        *place_rows(rows, (configured_devices() or [])[:1]),
    ]


def _place_padded(X, *rows):
    """:func:`_place` of the rows padded with zero rows (weight 0) to a bucketed count;
    a sparse ``X`` grows by empty rows (only its row pointer). A dense ``X`` is padded
    into one aligned copy (shared with a CPU device, not copied again) while small
    (:func:`~fairest._kernels._buckets.padded_rows`); large data is not padded and goes
    to JAX's default device without a copy
    (:func:`~fairest._kernels._placement.place_dense`)."""
    n = X.shape[0]
    if not hasattr(X, "tocsr"):
        from fairest.utils._devices import configured_devices

        row_bytes = X.dtype.itemsize * X.shape[1] + sum(a.dtype.itemsize for a in rows)
        length = padded_rows(n, row_bytes)
        if length == n and configured_devices() is None:
            return [place_dense(X), *place_rows(rows)]
        return place_rows(pad_rows_to(length, X, *rows))
    from fairest._solvers._driver import place_sparse
    from fairest.utils._devices import configured_devices

    X_rows = sparse_rows(X).with_rows(bucket_size(n))
    return [place_sparse(X_rows), *place_rows(pad_rows(n, *rows), (configured_devices() or [])[:1])]


def _device_strata(strata) -> Strata:
    """The strata constants on the device, by transfer (``jnp.asarray`` of a host array
    compiles a small staging program per shape)."""
    return Strata(*(jax.device_put(a) for a in strata))


@partial(jax.jit, static_argnames="binary")
def fitted_w(theta, X, s, t, weight, strata: Strata, *, binary):
    """The closed-form maximiser W* at ``theta`` (one compiled program, not a dozen
    eager operations)."""
    return closed_form_w(probabilities(scores(theta, X), binary), s, t, weight, strata)


def run_full_batch(
    X,
    y,
    s,
    t,
    weight,
    strata,
    *,
    n_classes: int,
    fairness_weight: float | str,
    alpha: float = _defaults.ALPHA,
    tol: float = _defaults.FULL_BATCH_TOL,
    max_iter: int = _defaults.FULL_BATCH_MAX_ITER,
    progress=None,
) -> ERMIResult:
    """Exact FERMI at ``fairness_weight`` from zeros, W at its closed form.

    ``X`` (n, d), labels ``y``, groups ``s`` and strata ``t`` (int codes), ``weight`` (mean
    1) and ``strata`` (the numpy ``Strata`` constants) are host arrays. The rows are padded
    to a bucketed count (weight 0), so a new row count rarely recompiles. Newton's method
    (:class:`~fairest.ermi._newton.NewtonSolver`) solves where
    :func:`~fairest.ermi._newton.newton_applies`, finished by L-BFGS
    (:func:`full_batch_solve`) where it stops above ``tol``; elsewhere L-BFGS alone.
    ``fairness_weight="auto"`` is :func:`~fairest.ermi._auto.search_weight` on the train
    parity gap of the strata ``t`` (one stratum: demographic parity; the labels:
    equalized odds), every solve started from the nearest solved weight; the result then
    carries the chosen weight and the search (``auto``), and ``progress(solves done,
    None)`` is called after every solve of the search (its length is not known ahead).
    """
    from fairest.ermi._auto import parity_gap, predicted_codes, search_weight, train_accuracy

    binary = n_classes == 2
    n, d = X.shape
    solved = {}  # weight -> (theta, objective, grad_norm, n_iter, converged)
    # Newton's host Cholesky / eigh of a (p q)^2 Hessian: threaded BLAS only spins there
    with jax.enable_x64(True), single_threaded_blas():
        theta0 = np.zeros((d + 1, 1 if binary else n_classes))
        strata_device = _device_strata(strata)
        # bucketed rows (weight 0), sharded over the configured devices
        rows = _place_padded(X, y.astype(np.int32), s, t, weight)
        alpha_device = device_scalar(alpha)
        newton = None
        if newton_applies(n, d, theta0.shape[1]):
            newton = NewtonSolver(
                theta0,
                rows,
                gram_copy(X, rows[0].shape[0]),
                strata_device,
                alpha,
                tol,
                max_iter,
                binary=binary,
            )

        searched = isinstance(fairness_weight, str)  # "auto"

        def lbfgs(theta, lam, tol):
            return full_batch_solve(
                theta,
                *rows,
                strata_device,
                device_scalar(lam),
                alpha_device,
                tol,
                max_iter,
                binary=binary,
            )

        def solve(lam):
            # the search's fits stop at tol * max(1, lam): the penalty's gradient, and its
            # rounding, grow with the weight (at lam = 256 on 200 rows L-BFGS ends at
            # 5e-8 whatever the start)
            tol_lam = tol * max(1.0, lam) if searched else tol
            if newton is not None:
                theta, objective, grad_norm, n_iter, converged = newton.solve(lam, tol_lam)
                if not converged:  # stalled at the float32 Hessian's accuracy: L-BFGS ends
                    theta, objective, grad_norm, more, converged = lbfgs(theta, lam, tol_lam)
                    n_iter += more
                if not converged:  # no decrease left from there: L-BFGS from zeros, as
                    # the full-batch solver alone (same compiled kernel)
                    theta, objective, grad_norm, more, converged = lbfgs(theta0, lam, tol_lam)
                    n_iter += more
            else:
                nearest = min(
                    solved, key=lambda w: abs(np.log((lam + 1e-3) / (w + 1e-3))), default=None
                )
                start = theta0 if nearest is None else solved[nearest][0]
                theta, objective, grad_norm, n_iter, converged = lbfgs(start, lam, tol_lam)
            solved[lam] = (
                np.asarray(theta, dtype=np.float64),
                objective,
                grad_norm,
                n_iter,
                converged,
            )
            if searched and progress is not None:
                progress(len(solved), None)
            return solved[lam][0]

        auto = None
        if searched:
            n_groups = strata[0].shape[1]

            def evaluate(theta):
                predicted, _ = predicted_codes(theta, X)
                gap = parity_gap(theta, X, t, s, weight, n_groups)[0]
                return gap, train_accuracy(predicted, y, weight)

            majority = np.max(np.bincount(y, weights=weight, minlength=n_classes)) / weight.sum()
            auto = search_weight(solve, evaluate, float(majority))
            lam = auto.weight
        else:
            lam = float(fairness_weight)
            solve(lam)
        theta, objective, grad_norm, n_iter, converged = solved[lam]
        # on the padded rows (weight 0 there): no recompilation for a new row count
        Xp, _, sp, tp, wp = rows
        W = fitted_w(jax.device_put(theta), Xp, sp, tp, wp, strata_device, binary=binary)
    return ERMIResult(
        theta=theta,
        W=np.asarray(W, dtype=np.float64),
        n_iter=int(n_iter),
        converged=bool(converged),
        objective=float(objective),
        grad_norm=float(grad_norm),
        history=None,
        fairness_weight=lam,
        auto=auto,
    )


@partial(jax.jit, static_argnames=("n_classes", "normal", "fold"))
def _sgda_start(seed, call, radius, mask, *, n_classes, normal, fold):
    """``(key, W0)`` of SGDA in one compiled program: the root key of ``seed`` split into
    the run's key and W0's (``fold``: the run's key folded with ``call``, streaming), W0
    zeros or (``normal``) standard normal on the non-empty cells, projected on the ball."""
    key = jax.random.key(seed, impl=_defaults.PRNG_IMPL)
    key, key_w0 = jax.random.split(key)
    shape = (*mask.shape, n_classes)  # (n_strata, n_groups, n_classes)
    if normal:  # projected: every W the steps see is in the ball
        W0 = project_ball(jax.random.normal(key_w0, shape) * mask[:, :, None], radius)
    else:
        W0 = jnp.zeros(shape)
    if fold:
        key = jax.random.fold_in(key, call)
    return key, W0


def run_sgda(
    X,
    y,
    s,
    t,
    weight,
    strata,
    *,
    n_classes: int,
    fairness_weight: float,
    seed: int,
    alpha: float = _defaults.ALPHA,
    batch_size: int = _defaults.BATCH_SIZE,
    n_epochs: int = _defaults.N_EPOCHS,
    learning_rate: float = _defaults.LEARNING_RATE,
    dual_learning_rate: float | str = _defaults.DUAL_LEARNING_RATE,
    dual_radius: float | str = _defaults.DUAL_RADIUS,
    clip_sample: float = np.inf,
    clip_batch: float = np.inf,
    clip_fairness: float = np.inf,
    sigma_theta: float = 0.0,
    sigma_w: float = 0.0,
    batching: str = "uniform",
    return_iterate: str = "average",
    dual_init: str = "zeros",
    dtype: str = "float64",
    record_history: bool = False,
    start: tuple | None = None,
    call: int = 0,
    progress=None,
    owner: str = "ERMIClassifier",
) -> ERMIResult:
    """(DP-)SGDA (:func:`sgda_solve`) from ``theta = 0`` and ``W0`` per ``dual_init``.

    Host arrays as for :func:`run_full_batch`. ``clip_sample`` / ``clip_batch`` /
    ``clip_fairness`` / ``sigma_theta`` / ``sigma_w`` come from ``_dp.calibrate_privacy`` (``inf`` / 0:
    non-private). ``seed`` is the root of the random streams (spec 11): W0 (``"normal"``),
    then batches, noise and the random iterate. ``dtype="float32"`` runs the two
    minibatch products on a float32 copy of X.

    Streaming (``partial_fit``): ``start = (theta, W)`` resumes from a previous call's
    last iterate instead of the initialisation, and call ``call > 0`` runs on the streams
    of ``fold_in(key, call)``; call 0 draws exactly as :meth:`ERMIClassifier.fit`. The
    result's ``last`` is the last iterate.

    ``progress(epochs done, n_epochs)`` is called between the chunks of epochs. Iterates
    that become non-finite are refitted with smaller step sizes (the constrained engine's
    ``refit_on_divergence``; ``owner`` names the estimator in its messages), except in a
    private fit (a second run would spend the budget again), which raises.
    """
    binary = n_classes == 2
    n, d = X.shape
    m, n_iter = sgda_iterations(n, batch_size, n_epochs)
    dual_learning_rate = resolve_dual_learning_rate(dual_learning_rate, fairness_weight)
    dual_radius = resolve_dual_radius(dual_radius, n_classes)
    with jax.enable_x64(True):
        theta0 = np.zeros((d + 1, 1 if binary else n_classes))
        strata = _device_strata(strata)
        hyper = SGDAHyper(
            *(
                jnp.asarray(float(v))
                for v in (
                    fairness_weight,
                    learning_rate,
                    dual_learning_rate,
                    dual_radius,
                    clip_sample,
                    clip_batch,
                    sigma_theta,
                    sigma_w,
                    alpha,
                    clip_fairness,
                )
            )
        )
        key, W0 = _sgda_start(
            np.int64(seed),
            np.int64(call),
            device_scalar(dual_radius),
            strata.mask,
            n_classes=n_classes,
            normal=dual_init == "normal",
            fold=bool(call),
        )
        if start is not None:
            theta0, W0 = (jax.device_put(np.asarray(a, dtype=np.float64)) for a in start)
        rows = _place(
            X.astype(np.float32 if dtype == "float32" else np.float64, copy=False),
            y.astype(np.int32),
            s,
            t,
            weight,
        )  # sharded over the configured devices (padding rows are never drawn)
        config = _sgda.config(
            binary,
            n,
            m,
            batching,
            record_history,
            return_iterate == "random",
            return_iterate == "average",
        )

        def attempt(factor):
            scaled = hyper
            if factor != 1.0:
                scaled = hyper._replace(lr_theta=hyper.lr_theta * factor, lr_w=hyper.lr_w * factor)
            return _sgda.drive(theta0, W0, *rows, strata, scaled, key, config, n_epochs, progress)

        private = sigma_theta > 0 or sigma_w > 0
        theta, W, history, (theta_last, W_last), _ = _sgda.refit(
            attempt, private=private, owner=owner, X=X
        )
    if history is not None:
        history = {name: np.asarray(h) for name, h in zip(HISTORY_KEYS, history)}
    return ERMIResult(
        theta=np.asarray(theta, dtype=np.float64),
        W=np.asarray(W, dtype=np.float64),
        n_iter=n_iter,
        converged=True,
        objective=float("nan"),
        grad_norm=float("nan"),
        history=history,
        last=(np.asarray(theta_last, dtype=np.float64), np.asarray(W_last, dtype=np.float64)),
    )
