"""The final feasibility phase of the loss-gap solvers and the warnings of a fit.

The stochastic solvers end near the constraints ``A @ L_cells <= tolerance`` but, their
constraint estimates being minibatch draws, not always inside them on the training set.
:func:`restore_feasibility` then takes full-batch Polyak steps on the squared violation

``V(x) = 1/2 ||max(0, A @ L_cells(x) - target)||^2``,  ``x <- x - (2 V / ||grad V||^2) grad V``

(the step that zeroes the linearised violation of the active constraints, the minimum
norm step for one of them), from the solver's end point, until the largest gap is within
the tolerance (or a step budget is spent; the iterate of the smallest largest gap is
returned). Each step is one forward and one backward pass over the rows (in row blocks on
large dense data, as the SSL-ALM final step), in one jitted ``while_loop``.

:func:`warn_fit` gives the :class:`~fairest.utils.FairnessWarning` of a fit that misses
its tolerance on the exact train values, or whose predictions are (nearly) one class.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from fairest.constrained import _defaults
from fairest.constrained._defaults import CONSTRAINED_TUNING
from fairest.constrained._engine import loss_scales
from fairest.constrained._engine._contract import _Ctx
from fairest.constrained._engine._runtime import device_data
from fairest.constrained._engine._solvers import _block_of, _full_step_blocks
from fairest.utils._degenerate import NEAR_CONSTANT_SHARE, plain_label
from fairest.utils._validation import FairnessWarning

__all__ = [
    "near_constant_figures",
    "restore_feasibility",
    "warn_fit",
    "weak_accuracy_figures",
]


def _violation_function(problem, ctx, block_rows: int):
    """``violation(x, A, target) -> (c, grad)``: the constraint values ``c = A @ L(x) -
    target`` of the full-data cell means ``L`` of the per-row losses and the gradient of
    ``V = 1/2 ||max(c, 0)||^2``. One forward and one backward pass (``jax.vjp``); on
    large dense data, row blocks: one pass for ``L``, one for the gradient of the fixed
    combination of the blocks' cell sums (no block's activations kept for the other), of
    ``block_rows`` rows."""
    n_cells = problem.n_cells
    batch = ctx.full_con_batch()
    n_blocks = _full_step_blocks(ctx, block_rows)
    counts = jax.ops.segment_sum(batch.w, jnp.clip(batch.g, 0, n_cells - 1), num_segments=n_cells)
    present = counts > 0
    safe = jnp.where(present, counts, 1.0)

    def sums(x, b):
        gid = jnp.clip(b.g, 0, n_cells - 1)
        return jax.ops.segment_sum(b.w * problem.losses(x, b), gid, num_segments=n_cells)

    if not n_blocks:

        def violation(x, A, target):
            means, vjp = jax.vjp(lambda z: jnp.where(present, sums(z, batch) / safe, 0.0), x)
            c = A @ means - target
            (grad,) = vjp(A.T @ jnp.maximum(c, 0.0))
            return c, grad

        return violation

    def violation(x, A, target):
        total = lax.fori_loop(
            0,
            n_blocks,
            lambda k, t: t + sums(x, _block_of(batch, k, block_rows)),
            jnp.zeros(n_cells, x.dtype),
        )
        c = A @ jnp.where(present, total / safe, 0.0) - target
        coef = jnp.where(present, (A.T @ jnp.maximum(c, 0.0)) / safe, 0.0)

        def add_grad(k, g):
            return g + jax.grad(lambda z: coef @ sums(z, _block_of(batch, k, block_rows)))(x)

        return c, lax.fori_loop(0, n_blocks, add_grad, jnp.zeros_like(x))

    return violation


@lru_cache(maxsize=16)
def _restore_function(problem, block_rows: int):
    """Jitted restoration loop of ``problem`` (cached: fits of one shape compile once);
    ``block_rows``: ``CONSTRAINED_TUNING.full_step_block_rows``, a key of the cache."""

    def run(x0, data, A, target, stop, max_steps):
        ctx = _Ctx(problem, data, {}, {}, True, True)
        violation = _violation_function(problem, ctx, block_rows)
        tiny = jnp.finfo(x0.dtype).tiny

        def cond(carry):
            return ~carry[-1]

        def body(carry):
            x, steps, best_x, best_c, _ = carry
            c, g = violation(x, A, target)
            worst = jnp.max(c)
            better = worst < best_c
            best_x = jnp.where(better, x, best_x)
            best_c = jnp.where(better, worst, best_c)
            r = jnp.maximum(c, 0.0)
            norm2 = jnp.sum(g * g)
            x_new = x - (jnp.sum(r * r) / jnp.maximum(norm2, tiny)) * g
            done = (
                (worst <= stop)
                | (steps >= max_steps)
                | (norm2 <= tiny)
                | ~jnp.all(jnp.isfinite(x_new))
            )
            x = jnp.where(done, x, x_new)
            return x, steps + jnp.where(done, 0, 1), best_x, best_c, done

        inf = jnp.asarray(jnp.inf, x0.dtype)
        start = (x0, jnp.asarray(0, jnp.int32), x0, inf, jnp.asarray(False))
        _, steps, best_x, _, _ = lax.while_loop(cond, body, start)
        return best_x, steps

    return jax.jit(run)


def restore_feasibility(
    problem, x, X, y_codes, groups, gaps, tolerance, *, sample_weight, dtype, max_steps: int
):
    """The final feasibility phase (see the module): ``(x, n_steps)``.

    ``x`` is the solver's end point (flat parameters of ``problem``'s model), ``gaps``
    the fit's :class:`~fairest.constrained._gaps.LossGapConstraints` (the unscaled ``A``
    is used), ``sample_weight`` ``None`` for unit weights. Returns the iterate of the
    smallest largest gap met (``x`` itself when no step lowers it) and the number of
    steps taken.
    """
    loss_scale, cell_scale = loss_scales(sample_weight, groups, gaps.cells, gaps.n_cells)
    data = device_data(X, y_codes, groups, gaps.cells, dtype, loss_scale, cell_scale)
    real = np.dtype(dtype)
    margin = _defaults.FEASIBILITY_MARGIN * float(tolerance)
    # in units of A @ L - target: aim at tolerance - margin, stop within tolerance - margin/2
    target = np.asarray(float(tolerance) - margin, dtype=real)
    stop = np.asarray(margin / 2, dtype=real)
    best, steps = _restore_function(problem, CONSTRAINED_TUNING.full_step_block_rows)(
        np.asarray(x, dtype=real),
        data,
        np.asarray(gaps.A, dtype=real),
        target,
        stop,
        np.asarray(max_steps, dtype=np.int32),
    )
    return np.asarray(best), int(steps)


def near_constant_figures(pred, y_codes, groups, weight, labels, classes) -> str | None:
    """A line of figures when the hard predictions ``pred`` (class codes) are (nearly)
    one class: the most predicted class holds all but at most ``NEAR_CONSTANT_SHARE`` of
    the weight while the labels do not; ``None`` otherwise."""
    weight = np.ones(pred.size) if weight is None else np.asarray(weight, dtype=np.float64)
    total = weight.sum()
    n_classes = len(classes)
    predicted = np.bincount(pred, weight, minlength=n_classes) / total
    labelled = np.bincount(y_codes, weight, minlength=n_classes) / total
    share = NEAR_CONSTANT_SHARE
    if not (predicted.max() >= 1.0 - share > labelled.max()):
        return None
    top = int(np.argmax(predicted))
    top_label = plain_label(classes[top])
    n_groups = len(labels)
    totals = np.bincount(groups, weight, minlength=n_groups)
    chosen = np.bincount(groups, weight * (pred == top), minlength=n_groups) / totals
    right = np.bincount(groups, weight * (pred == y_codes), minlength=n_groups) / totals
    parts = [
        f"{plain_label(labels[g])!r}: {chosen[g]:.3f} / {right[g]:.3f}"
        for g in range(min(n_groups, 12))
    ]
    more = f", ... ({n_groups - 12} more)" if n_groups > 12 else ""
    return (
        f"accuracy {weight @ (pred == y_codes) / total:.3f}, share predicted "
        f"{top_label!r} {predicted[top]:.3f}; by group (share predicted "
        f"{top_label!r} / accuracy): {', '.join(parts)}{more}"
    )


def weak_accuracy_figures(pred, y_codes, weight, classes) -> str | None:
    """A line of figures when the hard predictions ``pred`` (class codes) beat predicting
    the majority class by less than ``_defaults.WEAK_ACCURACY_SHARE`` of the room above it on the
    training rows (``accuracy - majority < share * (1 - majority)``): a constraint met
    by giving up nearly all that the features predict; ``None`` otherwise."""
    weight = np.ones(pred.size) if weight is None else np.asarray(weight, dtype=np.float64)
    total = weight.sum()
    accuracy = weight @ (pred == y_codes) / total
    labelled = np.bincount(y_codes, weight, minlength=len(classes)) / total
    majority = labelled.max()
    if accuracy - majority >= _defaults.WEAK_ACCURACY_SHARE * (1.0 - majority):
        return None
    return (
        f"train accuracy {accuracy:.4f} against {majority:.4f} for always predicting "
        f"{plain_label(classes[int(np.argmax(labelled))])!r}"
    )


def warn_fit(
    estimator, *, missed: str | None, constant: str | None, advice: str, weak: str | None = None
) -> None:
    """Emit the fit's :class:`~fairest.utils.FairnessWarning` s: ``missed`` (the achieved
    figures of a missed tolerance), ``constant`` (those of a near-constant model), each
    followed by ``advice``, and ``weak`` (those of a model that barely beats the majority
    class, when it is not near-constant)."""
    name = type(estimator).__name__
    if missed is not None:
        warnings.warn(f"{name}: {missed}; {advice}", FairnessWarning, stacklevel=4)
    if constant is not None:
        warnings.warn(
            f"{name}: the returned model predicts one class nearly everywhere ({constant}); "
            "a constant model is seldom what is wanted: check the features' scale, raise "
            "n_epochs or the tolerance, or merge small groups.",
            FairnessWarning,
            stacklevel=4,
        )
    elif weak is not None:
        warnings.warn(
            f"{name}: the returned model barely beats the majority class ({weak}): the "
            "constraint is met by giving up most of what the features predict (loss parity "
            "between groups whose labels are unequally predictable raises the easier "
            "groups' losses). Check held-out accuracy; raise the tolerance, or pick a "
            "constraint on rates (demographic parity, equalized odds) instead of losses.",
            FairnessWarning,
            stacklevel=4,
        )
