"""BADR's upper-level objective: unfairness of the weighted refit over the simplex."""

from __future__ import annotations

import numbers

import numpy as np

from fairest.plot._common import get_axes, require_matplotlib

__all__ = ["make_simplex_evaluator", "plot_simplex_unfairness", "simplex_grid"]

# Default grid sizes: 101 points on lambda_0 for two groups, as the BADR paper's Figure 1
# grid (badr spec section 7.3); 21 levels per axis (231 points) for three groups.
_DEFAULT_RESOLUTION = {2: 101, 3: 20}
_SQRT3_2 = np.sqrt(3.0) / 2.0


def simplex_grid(n_groups, resolution):
    """Regular grid of the probability simplex.

    Parameters
    ----------
    n_groups : {2, 3}
        Dimension of the weights.
    resolution : int
        For two groups, the number of points on ``lambda_0 in [0, 1]``; for three groups,
        the number of steps per side: the points ``(i, j, k) / resolution`` with
        ``i + j + k = resolution``, ``(resolution + 1)(resolution + 2) / 2`` in all.

    Returns
    -------
    weights : ndarray of shape (n_points, n_groups)
        Non-negative rows that sum to one.

    Raises
    ------
    ValueError
        If ``n_groups`` is not 2 or 3 or ``resolution`` is too small.

    References
    ----------
    .. [1] Scheffe. "Experiments with Mixtures", Journal of the Royal Statistical
       Society B 20(2), 344-360 (1958) (the simplex-lattice design).
    """
    n_groups = _check_n_groups(n_groups)
    resolution = _check_resolution(resolution, n_groups)
    if n_groups == 2:
        lam0 = np.linspace(0.0, 1.0, resolution)
        return np.column_stack([lam0, 1.0 - lam0])
    i, j = np.meshgrid(np.arange(resolution + 1), np.arange(resolution + 1), indexing="ij")
    keep = i + j <= resolution
    i, j = i[keep], j[keep]
    return np.column_stack([i, j, resolution - i - j]) / resolution


def _check_n_groups(n_groups) -> int:
    if not isinstance(n_groups, numbers.Integral) or n_groups not in (2, 3):
        raise ValueError(
            f"the simplex can be drawn for n_groups=2 (a line) or 3 (a triangle); got {n_groups!r}."
        )
    return int(n_groups)


def _check_resolution(resolution, n_groups) -> int:
    if resolution is None:
        return _DEFAULT_RESOLUTION[n_groups]
    smallest = 2 if n_groups == 2 else 1
    if not isinstance(resolution, numbers.Integral) or resolution < smallest:
        raise ValueError(f"resolution must be an integer >= {smallest}; got {resolution!r}.")
    return int(resolution)


def _check_weights(weights, n_groups, name) -> np.ndarray:
    lam = np.asarray(weights, dtype=np.float64)
    if lam.shape != (n_groups,):
        raise ValueError(f"{name} must have shape ({n_groups},); got {lam.shape}.")
    if not np.isfinite(lam).all() or (lam < -1e-9).any() or abs(lam.sum() - 1.0) > 1e-6:
        raise ValueError(f"{name} must lie on the simplex (non-negative, sum 1); got {lam}.")
    return np.clip(lam, 0.0, None) / np.clip(lam, 0.0, None).sum()


def _to_plane(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Barycentric weights to the plane: vertex 0 at (0, 0), 1 at (1, 0), 2 on top."""
    weights = np.atleast_2d(weights)
    return weights[:, 1] + 0.5 * weights[:, 2], _SQRT3_2 * weights[:, 2]


def _lattice_triangles(resolution: int) -> np.ndarray:
    """Triangles of the lattice of :func:`simplex_grid` (indices into its rows)."""
    index = -np.ones((resolution + 1, resolution + 1), dtype=int)
    count = 0
    for i in range(resolution + 1):  # the row order of simplex_grid (i major, then j)
        for j in range(resolution + 1 - i):
            index[i, j] = count
            count += 1
    triangles = []
    for i in range(resolution):
        for j in range(resolution - i):
            triangles.append((index[i, j], index[i + 1, j], index[i, j + 1]))
            if i + j + 2 <= resolution:
                triangles.append((index[i + 1, j], index[i + 1, j + 1], index[i, j + 1]))
    return np.asarray(triangles)


def _format_weights(lam) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in lam) + ")"


def plot_simplex_unfairness(
    evaluate,
    *,
    n_groups=None,
    chosen_weights=None,
    reference_weights=None,
    resolution=None,
    group_labels=None,
    metric_label="unfairness",
    cmap="viridis",
    color_quantile=0.95,
    ax=None,
    title=None,
):
    """Unfairness of the group-weighted model over the simplex of group weights.

    BADR chooses group weights ``lambda`` on the simplex to minimise the unfairness
    ``U(theta*(lambda))`` of the weighted ERM fit ``theta*(lambda)``. This plot evaluates
    ``evaluate(lambda)`` on a regular grid: for two groups a curve over
    ``lambda_0 in [0, 1]`` (``lambda_1 = 1 - lambda_0``), for three groups a ternary
    heat map on the triangle, each vertex being all weight on one group. The chosen
    weights (e.g. BADR's ``group_weights_``) are marked with a star, the grid minimum
    with a cross.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(lam) -> float`` for ``lam`` an ndarray of shape (n_groups,) on the
        simplex, e.g. from :func:`make_simplex_evaluator`. NaN values are left blank.
    n_groups : {2, 3}, default=None
        Number of groups; by default ``evaluate.n_groups`` (set by
        :func:`make_simplex_evaluator`).
    chosen_weights : array-like of shape (n_groups,), default=None
        Weights to mark (evaluated once more).
    reference_weights : dict of str to array-like, default=None
        Other weightings to mark, e.g. ``{"uniform": ..., "balanced": ...}``.
    resolution : int, default=None
        Grid size, see :func:`simplex_grid`; default 101 points for two groups, 20 steps
        per side (231 points) for three.
    group_labels : sequence of str, default=None
        Names of the groups, in the order of the weights; by default
        ``evaluate.groups`` when present, else ``0, 1, 2``.
    metric_label : str, default="unfairness"
        Name of the plotted quantity (axis and colour bar label).
    cmap : str or Colormap, default="viridis"
        Colour map of the three-group heat map.
    color_quantile : float, default=0.95
        Three groups: the colour scale runs from the minimum to this quantile of the grid
        values (higher values share the top colour, shown by the colour bar's arrow), so
        that steep corners do not wash out the region around the minimum. ``1`` uses the
        full range.
    ax : matplotlib Axes, default=None
        Where to draw; by default a new :class:`matplotlib.figure.Figure`.
    title : str, default=None
        Axes title; a default one when ``None``, none with ``""``.

    Returns
    -------
    ax : matplotlib Axes
        The Axes drawn on. The grid and its values are stored on it as
        ``ax.simplex_weights_`` and ``ax.simplex_values_``.

    Raises
    ------
    ValueError
        If ``n_groups`` is not 2 or 3, or weights are not on the simplex.
    ImportError
        If matplotlib is missing from the environment.

    References
    ----------
    .. [1] Tanji, Vaiter and Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework" (BADR), Figure 1 and Experiment 1 (the objective
       over the simplex for two and three groups).
    .. [2] Scheffe. "Experiments with Mixtures", Journal of the Royal Statistical
       Society B 20(2), 344-360 (1958) (the simplex-lattice grid).
    """
    require_matplotlib()
    if n_groups is None:
        n_groups = getattr(evaluate, "n_groups", None)
        if n_groups is None:
            raise ValueError("give n_groups (2 or 3); evaluate has no n_groups attribute.")
    n_groups = _check_n_groups(n_groups)
    resolution = _check_resolution(resolution, n_groups)
    if not 0.0 < float(color_quantile) <= 1.0:
        raise ValueError(f"color_quantile must lie in (0, 1]; got {color_quantile!r}.")
    if group_labels is None:
        group_labels = getattr(evaluate, "groups", None)
    if group_labels is None:
        group_labels = [str(g) for g in range(n_groups)]
    group_labels = [str(g) for g in group_labels]
    if len(group_labels) != n_groups:
        raise ValueError(f"group_labels has {len(group_labels)} names for {n_groups} groups.")
    marks = {}
    if chosen_weights is not None:
        marks["chosen"] = _check_weights(chosen_weights, n_groups, "chosen_weights")
    for name, lam in (reference_weights or {}).items():
        marks[str(name)] = _check_weights(lam, n_groups, f"reference_weights[{name!r}]")

    grid = simplex_grid(n_groups, resolution)
    values = np.array([float(evaluate(lam)) for lam in grid])
    mark_values = {name: float(evaluate(lam)) for name, lam in marks.items()}
    ax = get_axes(ax, figsize=(6.4, 4.8) if n_groups == 2 else (6.4, 5.6))
    if n_groups == 2:
        _draw_line(ax, grid, values, marks, mark_values, group_labels, metric_label)
    else:
        _draw_triangle(
            ax,
            grid,
            values,
            resolution,
            marks,
            mark_values,
            group_labels,
            metric_label,
            cmap,
            float(color_quantile),
        )
    if title is None:
        title = f"{metric_label} of the weighted fit over the group-weight simplex"
    if title:
        ax.set_title(title)
    ax.simplex_weights_ = grid
    ax.simplex_values_ = values
    return ax


_MARK_STYLE = {"chosen": dict(marker="*", s=260, color="crimson", edgecolors="white", zorder=6)}
_REFERENCE_MARKERS = ["s", "D", "^", "v", "P", "h"]


def _mark_style(name, position):
    if name in _MARK_STYLE:
        return _MARK_STYLE[name]
    return dict(
        marker=_REFERENCE_MARKERS[position % len(_REFERENCE_MARKERS)],
        s=55,
        color="white",
        edgecolors="black",
        linewidths=1.0,
        zorder=5,
    )


def _grid_minimum(values):
    if not np.isfinite(values).any():
        return None
    return int(np.nanargmin(np.where(np.isfinite(values), values, np.nan)))


def _draw_marks(ax, grid, values, marks, mark_values, place):
    """The grid minimum (a black x) and the ``marks``, each drawn at ``place(lam, value)``
    (its plot coordinates); returns the minimum's index (``None`` without a finite value)."""
    best = _grid_minimum(values)
    if best is not None:
        ax.scatter(
            *place(grid[best], values[best]),
            marker="x",
            s=70,
            color="black",
            zorder=5,
            label=f"grid minimum: λ = {_format_weights(grid[best])}, {values[best]:.3g}",
        )
    for position, (name, lam) in enumerate(marks.items()):
        ax.scatter(
            *place(lam, mark_values[name]),
            **_mark_style(name, position),
            label=f"{name}: λ = {_format_weights(lam)}, {mark_values[name]:.3g}",
        )
    return best


def _draw_line(ax, grid, values, marks, mark_values, group_labels, metric_label):
    label = f"{metric_label} on a grid of {len(values)} weights"
    line = ax.plot(grid[:, 0], values, color="tab:blue", lw=1.8, label=label)[0]
    line.set_gid("simplex:curve")
    _draw_marks(ax, grid, values, marks, mark_values, lambda lam, value: (lam[0], value))
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(
        f"λ_0 = weight of group {group_labels[0]!r}   (λ_1 = 1 - λ_0 for {group_labels[1]!r})"
    )
    ax.set_ylabel(metric_label)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="best")


def _draw_triangle(
    ax,
    grid,
    values,
    resolution,
    marks,
    mark_values,
    group_labels,
    metric_label,
    cmap,
    color_quantile,
):
    from matplotlib.tri import Triangulation

    px, py = _to_plane(grid)
    triangles = _lattice_triangles(resolution)
    finite = np.isfinite(values)
    triangulation = Triangulation(px, py, triangles)
    triangulation.set_mask(~finite[triangles].all(axis=1))
    filled = np.where(finite, values, np.nanmean(values) if finite.any() else 0.0)
    vmin = float(np.nanmin(values)) if finite.any() else 0.0
    vmax_all = float(np.nanmax(values)) if finite.any() else 1.0
    vmax = float(np.nanquantile(values, color_quantile)) if finite.any() else 1.0
    if not vmax > vmin:
        vmax = vmax_all if vmax_all > vmin else vmin + 1.0
    mesh = ax.tripcolor(triangulation, filled, shading="gouraud", cmap=cmap, vmin=vmin, vmax=vmax)
    mesh.set_gid("simplex:heatmap")
    colorbar = ax.figure.colorbar(
        mesh, ax=ax, shrink=0.75, pad=0.02, extend="max" if vmax < vmax_all else "neither"
    )
    colorbar.set_label(metric_label)
    if finite.all() and vmax > vmin:
        levels = np.linspace(vmin, vmax, 8)[1:-1]
        ax.tricontour(
            triangulation, filled, levels=levels, colors="white", linewidths=0.6, alpha=0.8
        )
    corners = np.eye(3)
    cx, cy = _to_plane(np.vstack([corners, corners[:1]]))
    ax.plot(cx, cy, color="black", lw=1.2)
    for level in (0.2, 0.4, 0.6, 0.8):  # lines of constant weight, every 0.2
        for g in range(3):
            a, b = (g + 1) % 3, (g + 2) % 3
            ends = np.zeros((2, 3))
            ends[:, g] = level
            ends[0, a] = ends[1, b] = 1.0 - level
            ex, ey = _to_plane(ends)
            ax.plot(ex, ey, color="0.85", lw=0.5, ls=":", alpha=0.8)
    places = [
        (-0.03, -0.03, "right", "top"),
        (1.03, -0.03, "left", "top"),
        (0.5, _SQRT3_2 + 0.03, "center", "bottom"),
    ]
    for g, (x, y, ha, va) in enumerate(places):
        separator = "\n" if g < 2 else "  "
        ax.text(x, y, f"{group_labels[g]}{separator}(λ_{g} = 1)", ha=ha, va=va, fontsize=9)
    ax.text(
        0.5,
        -0.05,
        "dotted lines: every 0.2 of each weight; white lines: contours",
        ha="center",
        va="top",
        fontsize=7.5,
        color="0.3",
    )
    best = _draw_marks(ax, grid, values, marks, mark_values, lambda lam, _: _to_plane(lam))
    ax.set_aspect("equal")
    ax.set_xlim(-0.2, 1.2)
    ax.set_ylim(-0.1, _SQRT3_2 + 0.1)
    ax.set_axis_off()
    if marks or best is not None:
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, 0.0), framealpha=0.85)


class _SimplexEvaluator:
    """``lambda -> unfairness`` of a refit of ``estimator`` with ``weights=lambda``."""

    def __init__(
        self,
        estimator,
        X,
        y,
        sensitive_features,
        metric,
        sample_weight,
        X_eval,
        y_eval,
        sensitive_features_eval,
        weights_param,
        response_method,
        metric_params,
    ):
        from fairest.utils import encode_groups

        self.estimator = estimator
        self.X, self.y, self.sensitive_features = X, y, sensitive_features
        self.sample_weight = sample_weight
        self.X_eval = X if X_eval is None else X_eval
        self.y_eval = y if y_eval is None else y_eval
        self.sensitive_features_eval = (
            sensitive_features if sensitive_features_eval is None else sensitive_features_eval
        )
        self.metric = _resolve_metric(metric)
        self.metric_params = dict(metric_params or {})
        self.weights_param = weights_param
        self.response_method = response_method
        _, self.groups = encode_groups(sensitive_features, n_samples=len(y))
        self.n_groups = len(self.groups)
        self.n_evaluations = 0

    def fit(self, lam):
        """The estimator refitted with group weights ``lam`` (groups in sorted order)."""
        from sklearn.base import clone

        model = clone(self.estimator).set_params(**{self.weights_param: np.asarray(lam, float)})
        kwargs = {"sensitive_features": self.sensitive_features}
        if self.sample_weight is not None:
            kwargs["sample_weight"] = self.sample_weight
        return model.fit(self.X, self.y, **kwargs)

    def __call__(self, lam):
        model = self.fit(lam)
        method = self.response_method
        if method == "auto":
            method = "decision_function" if hasattr(model, "decision_function") else "predict"
        scores = getattr(model, method)(self.X_eval)
        self.n_evaluations += 1
        return float(
            self.metric(
                self.y_eval,
                scores,
                sensitive_features=self.sensitive_features_eval,
                **self.metric_params,
            )
        )


def _resolve_metric(metric):
    if callable(metric):
        return metric
    from fairest import metrics

    function = getattr(metrics, metric, None) if isinstance(metric, str) else None
    if function is None or not callable(function) or metric.startswith("smooth_"):
        raise ValueError(
            f"unknown metric {metric!r}; use a name of an exact metric of fairest.metrics "
            "(e.g. 'individual_fairness') or a callable f(y_true, scores, *, sensitive_features)."
        )
    return function


def make_simplex_evaluator(
    estimator,
    X,
    y,
    *,
    sensitive_features,
    metric,
    sample_weight=None,
    X_eval=None,
    y_eval=None,
    sensitive_features_eval=None,
    weights_param="weights",
    response_method="auto",
    metric_params=None,
):
    """Build ``evaluate(lambda)`` for :func:`plot_simplex_unfairness` from an estimator.

    ``evaluate(lam)`` clones ``estimator``, sets its group-weight parameter to ``lam``
    (e.g. :class:`fairest.GroupWeightedClassifier` ``weights=lam``, the lower level of
    BADR), fits it on ``(X, y)`` and returns ``metric(y_eval, scores,
    sensitive_features=...)`` on the evaluation data (the training data by default, as
    BADR's upper level). The weights follow the sorted group labels of
    :func:`fairest.utils.encode_groups`, the order of the estimators' ``groups_``.

    Parameters
    ----------
    estimator : estimator
        Unfitted estimator whose ``weights_param`` accepts an array of group weights.
    X : array-like of shape (n_samples, n_features)
        Training features.
    y : array-like of shape (n_samples,)
        Training target.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, k)
        Training groups.
    metric : str or callable
        Name of an exact metric of :mod:`fairest.metrics` (e.g.
        ``"individual_fairness"``) or ``f(y_true, scores, *, sensitive_features, ...)``.
    sample_weight : array-like of shape (n_samples,), default=None
        Passed to ``fit``.
    X_eval, y_eval, sensitive_features_eval : array-like, default=None
        Data the unfairness is measured on; the training data by default.
    weights_param : str, default="weights"
        Name of the estimator's group-weight parameter.
    response_method : {"auto", "decision_function", "predict", "predict_proba"}, \
default="auto"
        Which output feeds the metric; ``"auto"`` uses ``decision_function`` when the
        estimator has one (BADR's score metrics), else ``predict``. Use ``"predict"`` for
        metrics of hard predictions such as ``demographic_parity_difference``.
    metric_params : dict, default=None
        Extra keyword arguments of the metric.

    Returns
    -------
    evaluate : callable
        ``evaluate(lam) -> float``, with attributes ``groups`` (labels), ``n_groups``,
        ``n_evaluations`` and a method ``fit(lam)`` returning the refitted estimator.

    Raises
    ------
    ValueError
        If ``metric`` is not a known metric name or callable.

    References
    ----------
    .. [1] Tanji, Vaiter and Laguel. "Fairness-informed Pareto Optimization: An
       Efficient Bilevel Framework" (BADR): the upper-level objective
       ``lambda -> U(theta*(lambda))``.
    """
    return _SimplexEvaluator(
        estimator,
        X,
        y,
        sensitive_features,
        metric,
        sample_weight,
        X_eval,
        y_eval,
        sensitive_features_eval,
        weights_param,
        response_method,
        metric_params,
    )
