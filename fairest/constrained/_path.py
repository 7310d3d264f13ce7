"""A loss-gap classifier fitted at every ``tolerance`` of a path in one compiled sweep.

The tolerance ``delta`` of :class:`~fairest.constrained.LossGapConstrainedClassifier`
reaches the solver as traced problem data (``aux["delta"]`` of the constraints ``A L -
delta <= 0``), so the engine's jitted epoch scan is ``vmap``-ped over a vector of
tolerances (:func:`fairest.constrained._engine.run_lanes`): one pass of the host loop, one
set of minibatch and constraint draws and one compiled program serve every value. The
draws are those a refit with the same ``random_state`` makes (every lane starts from the
same initialisation and reads the same sampler streams), so each lane is the model of
``clone(estimator).set_params(tolerance=value).fit(...)`` to float rounding.

A lane whose iterates became non-finite is fitted again by the estimator's own ``fit``
(its divergence guard refits with smaller steps, as a refit would).

:func:`score_linear_points` gives :func:`fairest.fairness_path` the train and validation
accuracy and loss gap of every linear point from one product of ``X`` with all their
weights, not one pass over ``X`` per point. The lanes keep the solvers' own step: vmap
folds them into one ``(B, d) @ (d, n_lanes)`` product per batch, so a lane needs no step
of its own.

With ``cv`` (:func:`_fit_folds`), every (fold, value) pair is a lane of one sweep over the
shared rows, and every lane's logits on all the rows are one host product, which serves
both the points' training statistics and the path's fold scores
(:func:`score_linear_folds`: per fold, correctness and clipped log losses once, each
train / test part a row weighting). These small host products run on one BLAS thread:
OpenBLAS's spinning threads cost more CPU than the products. The final full step's
program compiles in a thread while the chunks run. Timings against GridSearchCV:
benchmarks/results/fairness_path_cv.md.
"""

from __future__ import annotations

import copy

import jax
import numpy as np
import scipy.sparse as sp
from scipy.special import expit, softmax
from sklearn.base import clone
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import validate_data

from fairest._kernels._mlp import host_matmul
from fairest._solvers._lbfgs import single_threaded_blas
from fairest.constrained._common import (
    _column_names,
    prepare_predict,
    split_sensitive_columns,
    unravel_params,
)
from fairest.constrained._engine import SOLVERS, FoldRun, run_fold_lanes, run_lanes
from fairest.utils._linear import positive_scores
from fairest.utils._validation import frame_of_mapping

__all__ = [
    "fit_tolerance_path",
    "fit_tolerance_path_folds",
    "score_linear_folds",
    "score_linear_points",
    "tolerance_path_supported",
]


def tolerance_path_supported(estimator) -> bool:
    """Whether :func:`fit_tolerance_path` computes ``estimator``'s points in one sweep:
    a scan solver (not ``"ghost"``, a host loop), no history, no time budget (whose
    chunk count depends on the clock), and a linear model or ``dtype="float64"``.

    A float32 MLP is refitted: its hidden layers become batched products under ``vmap``,
    whose float32 rounding differs from the refit's, and thousands of stochastic steps
    amplify it (on Adult, 5 epochs of the default (64, 32) network: parameters 0.05 and
    probabilities 0.13 apart); float64 lanes agree to 2e-15, and
    float32 linear lanes to float32 rounding, 1.2e-6)."""
    solver = estimator._solver_name()
    return (
        solver in SOLVERS
        and not SOLVERS[solver].host
        and not estimator.record_history
        and estimator.eval_every is None
        and estimator.max_time is None
        and (len(tuple(estimator.hidden_layer_sizes)) == 0 or estimator.dtype == "float64")
    )


def fit_tolerance_path(estimator, X, y, tolerances, *, sensitive_features=None, sample_weight=None):
    """``estimator`` fitted at every value of ``tolerances``, the solver run once for all.

    Parameters
    ----------
    estimator : LossGapConstrainedClassifier
        Unfitted template (cloned, never modified); :func:`tolerance_path_supported`
        must hold.
    X, y, sensitive_features, sample_weight
        As for :meth:`~fairest.constrained.LossGapConstrainedClassifier.fit`.
    tolerances : sequence of float
        The values of ``tolerance``, each set on its point as given.

    Returns
    -------
    points : list of LossGapConstrainedClassifier
        One fitted estimator per value: ``clone(estimator)`` with ``tolerance`` set,
        fitted attributes equal to a refit's up to float rounding.

    References
    ----------
    .. [1] Kliachkin, Lepšová, Bareilles, Marecek. "Benchmarking Stochastic Approximation
       Algorithms for Fairness-Constrained Training of Deep Neural Networks", 2025.
    """
    _check_path(estimator, tolerances, "fit_tolerance_path")
    template = clone(estimator)
    setup = template._fit_setup(X, y, sensitive_features, sample_weight)
    aux = setup.gaps.aux(np.asarray(tolerances, dtype=np.float64), setup.dtype)
    args, kwargs = setup.solver_args()
    with jax.enable_x64(template.dtype == "float64"):
        results = run_lanes(
            *args,
            **kwargs,
            n_epochs=setup.n_epochs,
            lane_keys=("delta",),
            **{
                **template._run_options(setup.gaps, setup.batch_size, setup.dtype, setup.weight),
                "aux": aux,
            },
        )
    fit = dict(sensitive_features=sensitive_features, sample_weight=sample_weight)
    return _finish_points(template, setup, results, tolerances, lambda: (X, y, fit))


def _check_path(estimator, tolerances, caller: str) -> None:
    """Raise unless ``estimator`` runs as lanes and every tolerance is valid for it
    (scikit-learn's ``InvalidParameterError``)."""
    if not tolerance_path_supported(estimator):
        raise ValueError(
            f"{caller} needs a scan solver (not 'ghost'), record_history=False, "
            "eval_every=None, max_time=None, and hidden_layer_sizes=() or dtype='float64'."
        )
    probe = clone(estimator)
    for value in tolerances:
        probe.tolerance = value
        probe._validate_params()


def _finish_points(template, setup, results, tolerances, data, logits=None, design=None) -> list:
    """The fitted point of every lane's result (``copy.deepcopy(template)`` with its
    ``tolerance``); a lane whose iterates were not finite is refitted on ``data()``
    (``(X, y, fit keywords)``) by the estimator's own ``fit``. ``logits``: the lanes'
    training logits when the caller computed them (a linear model), shape ``(n, n_lanes,
    n_outputs)``; ``design()``: the validated training ``X`` when ``setup.X`` is ``None``
    (a point's final feasibility phase reads it, as its refit's does)."""
    if logits is None:
        logits = _linear_logits(setup, results)
    points = []
    for k, (value, result) in enumerate(zip(tolerances, results)):
        point = copy.deepcopy(template)
        point.tolerance = value  # set_params(tolerance=value), validated by the caller
        if result.extras["nonfinite_iter"] is not None:  # the refit's divergence guard
            X, y, fit = data()
            point = clone(point).fit(X, y, **fit)
        else:
            point._fit_finish(
                setup, result, 1.0, None if logits is None else logits[:, k], design=design
            )
        points.append(point)
    return points


def fit_tolerance_path_folds(
    estimator, X, y, tolerances, folds, *, sensitive_features=None, sample_weight=None
):
    """``estimator`` fitted at every value of ``tolerances`` on every fold's training rows,
    the solver run once for all the (fold, value) pairs.

    Parameters
    ----------
    estimator : LossGapConstrainedClassifier
        Unfitted template (cloned, never modified); :func:`tolerance_path_supported`
        must hold.
    X, y, sensitive_features, sample_weight
        All the rows, as for :meth:`~fairest.constrained.LossGapConstrainedClassifier.fit`
        (``sensitive_features`` group labels, or column names of a DataFrame ``X``).
    tolerances : sequence of float
        The values of ``tolerance``, each set on its point as given.
    folds : sequence of array of int
        The training rows of every fold.

    Returns
    -------
    points : list of list of LossGapConstrainedClassifier
        ``points[k][f]``: the model of ``tolerances[k]`` fitted on fold ``f``'s rows,
        fitted attributes equal to those of
        ``clone(estimator).set_params(tolerance=tolerances[k]).fit(X[rows], y[rows],
        sensitive_features=..., sample_weight=...)`` up to float rounding.

    Notes
    -----
    Each fold is set up as its own fit sets itself up (validation, class, group and
    constraint-cell codes of its rows, initial parameters and random streams from
    ``random_state``), and its draws are those of that fit over its own row count
    (:func:`fairest.constrained._engine.run_fold_lanes`): the lanes of all the folds run
    in one host loop and one compiled program. Folds whose fits differ in shape (a class
    or group missing from one, sparse ``X``) run one tolerance sweep per fold instead.

    References
    ----------
    .. [1] Kliachkin, Lepšová, Bareilles, Marecek. "Benchmarking Stochastic Approximation
       Algorithms for Fairness-Constrained Training of Deep Neural Networks", 2025.
    """
    return _fit_folds(estimator, X, y, tolerances, folds, sensitive_features, sample_weight)[0]


def _fit_folds(estimator, X, y, tolerances, folds, sensitive_features, sample_weight) -> tuple:
    """:func:`fit_tolerance_path_folds` and, where the folds ran as lanes of one sweep on
    the rows of a linear model, every point's logits on all the rows, shape ``(n,
    n_folds * n_values, n_outputs)`` (column ``j * n_values + i``: value ``i``, fold
    ``j``; one host product that serves the points' training statistics and the path's
    scores), else ``None``."""
    _check_path(estimator, tolerances, "fit_tolerance_path_folds")

    def fold_data(rows) -> tuple:
        return _fold_fit_data(X, y, sensitive_features, sample_weight, rows)

    templates, setups, sparse = [], [], False
    for rows in folds:  # a fold's copy of X is freed before the next one is made
        template = clone(estimator)
        setup = template._fit_setup(*fold_data(rows))
        sparse = sparse or sp.issparse(setup.X)
        if not setup.hidden:  # a linear point's statistics read the lanes' shared logits
            setup = setup._replace(X=None)
        templates.append(template)
        setups.append(setup)
    shared = None if sparse else _shared_rows(estimator, X, sensitive_features, setups)
    if shared is None:  # folds of different shapes: one sweep per fold
        per_fold = [
            fit_tolerance_path(
                estimator, Xf, yf, tolerances, sensitive_features=gf, sample_weight=wf
            )
            for Xf, yf, gf, wf in map(fold_data, folds)
        ]
        return [list(points) for points in zip(*per_fold)], None
    first = setups[0]
    runs = [
        FoldRun(np.asarray(rows), s.y_codes, s.groups, s.gaps.cells, s.x0, s.rngs, s.weight)
        for rows, s in zip(folds, setups)
    ]
    options = templates[0]._run_options(first.gaps, first.batch_size, first.dtype, None)
    with jax.enable_x64(estimator.dtype == "float64"):
        results = run_fold_lanes(
            first.solver,
            first.problem,
            shared,
            runs,
            hyper=first.hyper,
            aux=first.gaps.aux(np.asarray(tolerances, dtype=np.float64), first.dtype),
            lane_keys=("delta",),
            n_epochs=first.n_epochs,
            batch_size=first.batch_size,
            constraint_batch_size=options["constraint_batch_size"],
            constraint_sampler=options["constraint_sampler"],
            max_iter=options["max_iter"],
            dtype=first.dtype,
        )
    logits = None
    if not first.hidden:  # every lane's logits on all the rows, one host product
        logits = _lane_logits(first.model, shared, [r for rs in results for r in rs])
    n_values, per_fold = len(tolerances), []
    for j, (template, setup, fold_results) in enumerate(zip(templates, setups, results)):

        def refit(rows=folds[j]) -> tuple:  # a diverged lane's data (its fold's rows)
            Xf, yf, gf, wf = fold_data(rows)
            return Xf, yf, dict(sensitive_features=gf, sample_weight=wf)

        lanes = slice(j * n_values, (j + 1) * n_values)
        fold_logits = None if logits is None else logits[np.asarray(folds[j]), lanes]
        points = _finish_points(
            template,
            setup,
            fold_results,
            tolerances,
            refit,
            fold_logits,
            design=lambda rows=folds[j]: shared[np.asarray(rows)],
        )
        per_fold.append(points)
        for k, (point, result) in enumerate(zip(points, fold_results)):
            moved = result.extras["nonfinite_iter"] is not None or point.n_feasibility_steps_
            if logits is not None and moved:
                with single_threaded_blas():  # refitted or restored: its own model's logits
                    logits[:, j * n_values + k] = _stacked_logits(shared, point.params_)[:, 0]
    return [list(points) for points in zip(*per_fold)], logits


def _fold_fit_data(X, y, sensitive_features, sample_weight, rows) -> tuple:
    """``(X, y, sensitive_features, sample_weight)`` of ``rows`` (column names of a
    DataFrame ``X`` given as ``sensitive_features`` stay names)."""
    names = sensitive_features is not None and _column_names(X, sensitive_features) is not None
    groups = (
        sensitive_features
        if names or sensitive_features is None
        else _safe_indexing(frame_of_mapping(sensitive_features), rows)
    )
    weight = None if sample_weight is None else _safe_indexing(np.asarray(sample_weight), rows)
    return _safe_indexing(X, rows), _safe_indexing(y, rows), groups, weight


def _shared_rows(estimator, X, sensitive_features, setups):
    """The validated ``X`` of all the rows, which every fold's rows index, when the folds'
    fits share one compiled problem (same model, constraints, solver settings; the caller
    checks that X is dense); ``None`` otherwise."""
    first = setups[0]
    same = all(
        s.problem == first.problem
        and s.solver == first.solver
        and s.hyper == first.hyper
        and s.batch_size == first.batch_size
        and s.n_epochs == first.n_epochs
        and s.gaps.scale == first.gaps.scale
        and np.array_equal(s.gaps.A, first.gaps.A)
        for s in setups
    )
    if not same:
        return None
    probe = clone(estimator)
    shared, _, _ = split_sensitive_columns(X, sensitive_features)[:3]
    shared = validate_data(probe, shared, dtype=np.float64, accept_sparse=False, reset=True)
    return shared


def _linear_logits(setup, results):
    """Training logits of every lane's linear model in one host product, shape
    ``(n, n_lanes, n_outputs)`` (float64, as :func:`~fairest.constrained._engine.
    numpy_forward` computes them one by one); ``None`` for a hidden layer."""
    return None if setup.hidden else _lane_logits(setup.model, setup.X, results)


def _lane_logits(model, X, results):
    """The logits on ``X`` of every result's linear ``model`` (its parameters ``x``),
    one host product on one BLAS thread."""
    layers = [unravel_params(model, np.asarray(r.x))[0] for r in results]
    with single_threaded_blas():
        return _stacked_logits(X, layers)


def score_linear_points(points, X, y, sensitive_features, sample_weight=None) -> list:
    """``(accuracy, loss gap)`` of every linear point on ``(X, y)``, from one product of
    ``X`` with all the points' weights (``X`` validated once).

    The values of ``accuracy_score(y, point.predict(X), sample_weight=...)`` and of the
    path's loss gap (:func:`fairest.metrics.loss_gap` of ``point.predict_proba(X)``
    within the label strata of ``point.metric``), for every point at once: the points'
    logits are one ``(n, n_points, n_outputs)`` array, the groups' mean log losses one
    weighted one-hot product per stratum.
    """
    X = prepare_predict(points[0], X)
    y = np.asarray(y)
    weight = np.ones(y.size) if sample_weight is None else np.asarray(sample_weight, np.float64)
    with single_threaded_blas():
        logits = _stacked_logits(X, [point.params_[0] for point in points])
        scorer = _PartScorer(points[0], y, sensitive_features)
        return scorer.scores(*scorer.outcomes(logits), weight, np.ones(y.size))


def score_linear_folds(
    estimators, X, y, sensitive_features, sample_weight, splits, logits=None
) -> tuple:
    """:func:`score_linear_points` of a cross-validated path's points on every fold's
    training rows (weighted) and test rows (unweighted): ``X`` validated once, the logits
    of every (value, fold) point on all the rows one product, each fold's correctness and
    log losses computed once on all the rows, and each of its parts a row weighting of
    them (0 off the part). ``estimators[i][j]``: value ``i``, fold ``j``; ``logits``: those
    of every point on all the rows when computed already (the second result of
    :func:`_fit_folds`); returns ``(train, val)``, per fold a list of ``(accuracy, loss
    gap)``."""
    sensitive_features = split_sensitive_columns(X, sensitive_features)[1]  # names: columns
    X = prepare_predict(estimators[0][0], X)
    y = np.asarray(y)
    n, n_values = y.size, len(estimators)
    weight = np.ones(n) if sample_weight is None else np.asarray(sample_weight, np.float64)
    train, val = [], []
    with single_threaded_blas():  # small products: spinning BLAS threads cost more
        if logits is None:  # column j * n_values + i: value i, fold j
            layers = [row[j].params_[0] for j in range(len(splits)) for row in estimators]
            logits = _stacked_logits(X, layers)
        scorer = _PartScorer(estimators[0][0], y, sensitive_features)
        for j, (train_rows, test_rows) in enumerate(splits):
            correct, losses = scorer.outcomes(logits[:, j * n_values : (j + 1) * n_values])
            for rows, scores, rows_weight in (
                (train_rows, train, weight[train_rows]),
                (test_rows, val, np.ones(len(test_rows))),
            ):
                rows = np.asarray(rows)
                part_weight = np.bincount(rows, rows_weight, minlength=n)  # 0 off the part
                part_count = np.bincount(rows, minlength=n).astype(np.float64)
                scores.append(scorer.scores(correct, losses, part_weight, part_count))
    return train, val


class _PartScorer:
    """Accuracy and loss gap of stacked points on weighted parts of the rows ``y``."""

    def __init__(self, first, y, sensitive_features):
        from fairest.metrics._checks import encode_sensitive_features

        classes = first.classes_
        position = np.minimum(np.searchsorted(classes, y), classes.size - 1)
        if not np.all(classes[position] == y):
            raise ValueError("y contains labels that are not in the points' classes_.")
        self.position = position
        codes, labels = encode_sensitive_features(sensitive_features, y.size)
        member = (codes[:, None] == np.arange(len(labels))).astype(np.float64)
        # (n, n_strata * n_groups): the one-hot groups within each label stratum
        self.cells = np.concatenate([member * rows[:, None] for rows in _loss_strata(first, y)], 1)
        self.n_groups = len(labels)

    def outcomes(self, logits) -> tuple:
        """Every point's correctness (0 / 1) and clipped log loss on every row, from
        their stacked ``logits`` of shape ``(n, n_points, n_outputs)``."""
        position = self.position
        if logits.shape[2] == 1:
            z = logits[:, :, 0]
            predicted = positive_scores(z)  # ScoreClassifierMixin.predict's rule
            correct = predicted == (position == 1)[:, None]
            positive = expit(z)
            p_true = np.where((position == 1)[:, None], positive, 1.0 - positive)
        else:
            correct = np.argmax(logits, axis=2) == position[:, None]
            p_true = np.take_along_axis(softmax(logits, axis=2), position[:, None, None], 2)
            p_true = p_true[..., 0]
        eps = np.finfo(np.float64).eps
        losses = -np.log(np.clip(p_true, eps, 1.0 - eps))  # fairest.metrics.loss_gap's clipping
        return correct.astype(np.float64), losses

    def scores(self, correct, losses, part_weight, part_count) -> list:
        """``(accuracy, loss gap)`` of every point on the rows weighted by
        ``part_weight`` (the rows of the part: ``part_count > 0``)."""
        accuracy = part_weight @ correct / part_weight.sum()
        present = (part_count @ self.cells).reshape(-1, self.n_groups) > 0  # rows there
        mass = (part_weight @ self.cells).reshape(-1, self.n_groups)
        group_loss = ((self.cells * part_weight[:, None]).T @ losses).reshape(*mass.shape, -1)
        gaps = []
        for stratum in range(mass.shape[0]):
            keep = present[stratum]
            if not keep.any():  # no row of this label in the part
                continue
            if not np.all(mass[stratum, keep] > 0):
                raise ValueError("every group needs positive total weight in its label strata.")
            group = group_loss[stratum, keep] / mass[stratum, keep, None]
            gaps.append(group.max(axis=0) - group.min(axis=0))
        unfairness = np.max(gaps, axis=0)
        return [(float(a), float(u)) for a, u in zip(accuracy, unfairness)]


def _stacked_logits(X, layers):
    """Logits of the linear layers ``[(W, b), ...]`` on ``X`` in one host product (float64),
    shape ``(n, n_layers, n_outputs)``."""
    W = np.concatenate([np.asarray(w, dtype=np.float64) for w, _ in layers], axis=1)
    b = np.concatenate([np.asarray(b, dtype=np.float64) for _, b in layers])
    n_outputs = layers[0][1].size
    with np.errstate(all="ignore"):  # a diverged lane's column (refitted, never read)
        return (host_matmul(X, W) + b).reshape(-1, len(layers), n_outputs)


def _loss_strata(point, y) -> list:
    """Row masks of the label strata within which ``point.metric`` compares group losses
    (the rows of each label for equalized odds, the positives for equal opportunity); a
    stratum without rows is skipped by the scores."""
    if point.metric == "loss_equal_opportunity":
        strata = [y == point.classes_[-1]]
    elif point.metric == "loss_equalized_odds":
        strata = [y == label for label in point.classes_]
    else:
        strata = [np.ones(y.size, dtype=bool)]
    return strata
