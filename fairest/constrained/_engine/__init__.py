"""Shared constrained-ERM engine (constrained spec section 1), one module per responsibility.

* :mod:`._contract`: problems, batches and the solver contract (:class:`Solver`): pure
  ``init`` / ``step`` / ``parameters`` / ``diagnostics`` functions over a solver's state
  holding a flat parameter vector (``ravel_pytree`` order: layer order, W before b);
* :mod:`._sampling`: host-side samplers (epoch shuffler, group-balanced cyclic streams,
  with-replacement) that pre-draw the indices of a whole chunk of iterations, so a chunk
  runs as one jitted ``lax.scan`` without host synchronisation;
* :mod:`._solvers`: the steps and the one table :data:`SOLVERS`: ``sgd``, ``penalty``,
  ``ssw``, ``ssl-alm`` / ``alm``, ``gda`` (generic proxy GDA) run as jitted scans;
  Stochastic Ghost (``ghost``, :mod:`._ghost_solver`, its QP in
  :mod:`fairest.constrained._ghost`) needs a QP per sample and runs a host loop over
  jitted derivative kernels;
* :mod:`._driver`: one driver (:func:`run_solver`) for all of them: samplers, guarded
  scans, finiteness checks, history, budget; :func:`solve` adds the refits after a
  divergence. Its loop, :func:`drive_chunks` (budget, clock, the stop after a
  divergence, memory release), also runs the epochs of ``PrunedFairClassifier`` (the
  solver record ``fairest.constrained._pruned_epoch.PRUNED_SOLVER``, one chunk per epoch,
  with host hooks between the chunks for its pruning masks, schedule and early stopping);
* :mod:`._runtime`: the runtime apart from the algorithms: bucket padding and placement
  of the data, and the hooks the driver calls around the chunks (memory release,
  background compilation of the final step);
* :mod:`._lanes`: :func:`run_lanes` runs a scan solver ``vmap``-ped over several values
  of its traced problem data (a tolerance path: one host loop and one set of draws for
  every value), :func:`run_fold_lanes` over folds too.

The model (:class:`~fairest.constrained._mlp.MLP`) lives in :mod:`fairest.constrained._mlp`;
its forward pass and the per-sample loss statistics (``per_sample_stats``:
:func:`fairest._kernels.cross_entropy_stats`) in :mod:`fairest._kernels`.

Problems are objects with ``objective(x, batch, aux) -> scalar`` (mean over the weighted
rows of ``batch``) and ``constraints(x, batch, aux) -> (m,)`` (written ``C(x) <= 0``);
``batch.g`` holds group codes for objective batches and constraint *cells* for constraint
draws. ``aux`` carries traced problem data (bounds, constraint matrices), so changing a
tolerance never recompiles. Sample weights reach a problem as per-row loss scales
``batch.s`` (``None`` when unweighted, which runs the unweighted code unchanged); the
samplers stay uniform. Solver parameters (``hyper``) use the public ``solver_params``
names of ``LossGapConstrainedClassifier``.

Every solver guards against divergence: the scans carry a flag, the iteration by which
the parameters were not finite (one ``isfinite`` reduction every few iterations,
:func:`guarded_scan`; no host synchronisation), and skip the iterations after it; the
host loop stops one chunk later, checks the whole final state, and :func:`run_solver`
reports the iteration as ``RunResult.extras["nonfinite_iter"]``; :func:`solve` (and
:func:`refit_on_divergence` for the phases of ``PrunedFairClassifier``) refits with
smaller steps or raises.
"""

from fairest._kernels._losses import cross_entropy_stats as per_sample_stats
from fairest._kernels._losses import group_means, weighted_mean
from fairest._solvers._guard import all_finite, guard_block, guarded_scan, refit_on_divergence
from fairest.constrained._engine._contract import (
    Batch,
    GenericProblem,
    RunResult,
    Solver,
    full_values,
    solver,
)
from fairest.constrained._engine._driver import (
    run_solver,
    scaled_step_sizes,
    solve,
)
from fairest.constrained._engine._lanes import FoldRun, run_fold_lanes, run_lanes
from fairest.constrained._engine._runtime import padded_design
from fairest.constrained._engine._sampling import (
    EpochSampler,
    GroupSampler,
    loss_scales,
    population_totals,
    spawn_rngs,
)
from fairest.constrained._engine._solvers import SOLVERS
from fairest.constrained._ghost import ghost_kappa, ghost_subproblem
from fairest.constrained._mlp import MLP, numpy_forward

__all__ = [
    "Batch",
    "MLP",
    "per_sample_stats",
    "group_means",
    "weighted_mean",
    "numpy_forward",
    "EpochSampler",
    "GroupSampler",
    "spawn_rngs",
    "GenericProblem",
    "Solver",
    "solver",
    "SOLVERS",
    "run_solver",
    "run_lanes",
    "run_fold_lanes",
    "FoldRun",
    "solve",
    "refit_on_divergence",
    "scaled_step_sizes",
    "loss_scales",
    "population_totals",
    "full_values",
    "RunResult",
    "all_finite",
    "guard_block",
    "guarded_scan",
    "padded_design",
    "ghost_subproblem",
    "ghost_kappa",
]
