"""Accuracy versus unfairness: Pareto frontiers across methods and hyper-parameters."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from fairest.plot._common import finite_vector, get_axes, group_colors

__all__ = ["pareto_front_mask", "pareto_frame_from_cv_results", "plot_pareto_frontier"]


def pareto_front_mask(unfairness, accuracy):
    """Mask of the non-dominated points: lower unfairness and higher accuracy are better.

    Point ``i`` is dominated when some point ``j`` has ``unfairness[j] <= unfairness[i]``
    and ``accuracy[j] >= accuracy[i]`` with at least one of the two strict. The
    non-dominated points form the Pareto frontier. Duplicated points dominate neither
    each other, so all copies of a frontier point are kept.

    Parameters
    ----------
    unfairness : array-like of shape (n_points,)
        Unfairness of every point (lower is better). Must be finite.
    accuracy : array-like of shape (n_points,)
        Accuracy (or any score where higher is better) of every point. Must be finite.
        For a loss such as RMSE, pass its negation.

    Returns
    -------
    mask : ndarray of shape (n_points,), dtype bool
        ``True`` for the points on the frontier.

    Raises
    ------
    ValueError
        If the inputs are not 1-D, differ in length or hold NaN or infinite values.

    Notes
    -----
    One sort, ``O(n log n)``: order the points by increasing unfairness; a point is on
    the frontier when it has the best accuracy among the points of equal unfairness and a
    strictly better accuracy than every point of strictly lower unfairness.

    References
    ----------
    .. [1] Kung, Luccio and Preparata. "On Finding the Maxima of a Set of Vectors",
       Journal of the ACM 22(4), 469-476 (1975).

    Examples
    --------
    >>> from fairest.plot import pareto_front_mask
    >>> pareto_front_mask([0.1, 0.2, 0.2, 0.3], [0.80, 0.85, 0.70, 0.85]).tolist()
    [True, True, False, False]
    """
    u = finite_vector(unfairness, "unfairness")
    a = finite_vector(accuracy, "accuracy")
    if u.shape != a.shape:
        raise ValueError(
            f"unfairness and accuracy must have the same length; got {u.size} and {a.size}."
        )
    mask = np.zeros(u.shape, dtype=bool)
    if u.size == 0:
        return mask
    order = np.lexsort((-a, u))  # increasing unfairness, then decreasing accuracy
    u_sorted, a_sorted = u[order], a[order]
    starts = np.flatnonzero(np.r_[True, u_sorted[1:] != u_sorted[:-1]])
    best_in_tie = a_sorted[starts]  # first of every tie block is its best accuracy
    # best accuracy over strictly lower unfairness, per tie block
    best_before = np.r_[-np.inf, np.maximum.accumulate(best_in_tie)[:-1]]
    block = np.cumsum(np.r_[True, u_sorted[1:] != u_sorted[:-1]]) - 1
    on_front = (a_sorted == best_in_tie[block]) & (a_sorted > best_before[block])
    mask[order] = on_front
    return mask


def _split_columns(cv_results: dict, key: str) -> list[str]:
    pattern = re.compile(rf"^split(\d+)_test_{re.escape(key)}$")
    found = sorted(
        (int(match.group(1)), name)
        for name in cv_results
        if (match := pattern.match(name)) is not None
    )
    return [name for _, name in found]


def pareto_frame_from_cv_results(
    cv_results, *, accuracy="accuracy", unfairness="unfairness", method=None, negate_unfairness=True
):
    """Tidy table of a grid search for :func:`plot_pareto_frontier`.

    Turns ``GridSearchCV.cv_results_`` (multi-metric scoring with one accuracy-like and
    one unfairness scorer, e.g. from :func:`fairest.model_selection.make_fairness_scorer`)
    into one row per candidate with the mean over the CV splits, the sample standard
    deviation (``ddof=1``, recomputed from the ``split<k>_test_*`` entries) and the number
    of splits.

    Parameters
    ----------
    cv_results : dict or DataFrame
        The ``cv_results_`` of a fitted search.
    accuracy : str, default="accuracy"
        Scoring key of the accuracy-like score (higher is better).
    unfairness : str, default="unfairness"
        Scoring key of the unfairness scorer.
    method : str or array-like, default=None
        Method label of every candidate: a ``cv_results_`` key (e.g.
        ``"param_classifier"`` when the grid runs over estimators, labelled by class
        name), an array with one label per candidate, or ``None`` for a single method.
    negate_unfairness : bool, default=True
        Fairness scorers return the negated metric (greater is better); negate it back.

    Returns
    -------
    frame : DataFrame
        Columns ``method``, ``accuracy``, ``unfairness``, ``accuracy_std``,
        ``unfairness_std``, ``n_repeats``, the ``param_*`` columns and ``params``.

    Raises
    ------
    KeyError
        If ``cv_results`` has no split scores for ``accuracy`` or ``unfairness``.

    References
    ----------
    .. [1] Pedregosa et al. "Scikit-learn: Machine Learning in Python", JMLR 12 (2011)
       (the ``cv_results_`` layout).
    """
    results = (
        dict(cv_results)
        if not isinstance(cv_results, pd.DataFrame)
        else {name: cv_results[name].to_numpy() for name in cv_results.columns}
    )
    columns = {}
    for name, key in (("accuracy", accuracy), ("unfairness", unfairness)):
        splits = _split_columns(results, key)
        if not splits:
            found = sorted(m.group(1) for n in results if (m := re.match(r"^mean_test_(.+)$", n)))
            raise KeyError(
                f"cv_results has no 'split<k>_test_{key}' entries; scoring keys found: {found}."
            )
        values = np.column_stack([np.asarray(results[s], dtype=np.float64) for s in splits])
        if name == "unfairness" and negate_unfairness:
            values = -values
        columns[name] = values.mean(axis=1)
        columns[f"{name}_std"] = (
            values.std(axis=1, ddof=1) if values.shape[1] > 1 else np.zeros(values.shape[0])
        )
        columns["n_repeats"] = np.full(values.shape[0], values.shape[1])
    n_candidates = len(columns["accuracy"])
    if method is None:
        labels = np.full(n_candidates, "model", dtype=object)
    elif isinstance(method, str):
        labels = np.asarray([_label_of(value) for value in results[method]], dtype=object)
    else:
        labels = np.asarray([_label_of(value) for value in method], dtype=object)
        if labels.size != n_candidates:
            raise ValueError(f"method has {labels.size} labels for {n_candidates} candidates.")
    frame = pd.DataFrame({"method": labels, **columns})
    for name, values in results.items():
        if name.startswith("param_") or name == "params":
            frame[name] = list(values)
    return frame


def _label_of(value) -> str:
    """A readable method label: estimators by class name, everything else by ``str``."""
    if hasattr(value, "get_params") and hasattr(value, "fit"):
        return type(value).__name__
    return str(value)


def _t_quantile(confidence: float, n_repeats: np.ndarray) -> np.ndarray:
    from scipy.stats import t

    quantile = np.full(n_repeats.shape, np.nan)
    several = n_repeats > 1
    quantile[several] = t.ppf(0.5 + confidence / 2.0, n_repeats[several] - 1)
    return quantile


def _aggregate_repeats(frame, x, y, method, config, confidence):
    """Mean and t-interval half-widths over the rows sharing a method and a config."""
    keys = [method, *config]
    grouped = frame.groupby(keys, sort=False, dropna=False)
    summary = grouped[[x, y]].agg(["mean", "std", "count"])
    out = pd.DataFrame(
        {
            method: [key[0] for key in summary.index],
            x: summary[(x, "mean")].to_numpy(),
            y: summary[(y, "mean")].to_numpy(),
        }
    )
    for position, column in enumerate(config, start=1):
        out[column] = [key[position] for key in summary.index]
    n = summary[(x, "count")].to_numpy()
    quantile = _t_quantile(confidence, n) / np.sqrt(n)
    out["_x_half"] = np.nan_to_num(quantile * summary[(x, "std")].to_numpy(), nan=0.0)
    out["_y_half"] = np.nan_to_num(quantile * summary[(y, "std")].to_numpy(), nan=0.0)
    return out


def _half_widths(frame, column, n_repeats, confidence):
    if column is None:
        return np.zeros(len(frame))
    std = frame[column].to_numpy(dtype=np.float64)
    if n_repeats is None:
        raise ValueError(
            f"x_err / y_err ({column!r}) are standard deviations over repeated fits; give "
            "n_repeats (an int or a column name) to turn them into intervals."
        )
    n = (
        frame[n_repeats].to_numpy(dtype=np.float64)
        if isinstance(n_repeats, str)
        else np.full(len(frame), float(n_repeats))
    )
    return np.nan_to_num(_t_quantile(confidence, n) / np.sqrt(n) * std, nan=0.0)


def _as_frame(results, method):
    if hasattr(results, "to_frame") and hasattr(results, "estimators"):  # a FairnessPath
        results = results.to_frame()
    if isinstance(results, dict):
        results = pd.DataFrame(results)
    if not isinstance(results, pd.DataFrame):
        try:  # polars (without needing pyarrow) and other dataframe libraries
            if type(results).__module__.startswith("polars"):
                results = pd.DataFrame(results.to_dict(as_series=False))
            else:
                results = pd.DataFrame(results.to_pandas())
        except AttributeError as error:
            raise TypeError(
                "results must be a pandas DataFrame or a dict of columns; got "
                f"{type(results).__name__}."
            ) from error
    frame = results.copy()
    if method is not None and method not in frame.columns:
        if frame.index.name == method:
            frame = frame.reset_index()
        else:
            raise KeyError(
                f"results has no method column {method!r}; columns: {list(frame.columns)}."
            )
    if method is None:
        method = "_method"
        frame[method] = "model"
    frame[method] = [_label_of(value) for value in frame[method]]
    return frame.reset_index(drop=True), method


def plot_pareto_frontier(
    results,
    *,
    x="unfairness",
    y="accuracy",
    method="method",
    config=None,
    x_err=None,
    y_err=None,
    n_repeats=None,
    confidence=0.95,
    maximize_y=True,
    overall=None,
    annotate=None,
    ax=None,
    title=None,
):
    """Accuracy against unfairness, with every method's Pareto frontier.

    Each row of ``results`` is one fitted model (a method at one hyper-parameter value,
    possibly one seed). Every model is drawn as a point, coloured by method; each method's
    non-dominated points (lower unfairness, higher accuracy, see
    :func:`pareto_front_mask`) are filled and joined by a staircase: at unfairness ``u``
    the staircase is the best accuracy the method reaches with unfairness at most ``u``.
    Dominated points are drawn hollow.

    Parameters
    ----------
    results : DataFrame or dict of columns
        One row per fitted model, e.g. the table of ``fairest compare`` (methods in the
        index), :func:`pareto_frame_from_cv_results` of a grid search, a
        :class:`fairest.paths.FairnessPath` (its ``to_frame()``: validation accuracy and
        unfairness when it has them, else train), or a hand-made table with one row per
        (method, hyper-parameter, seed).
    x : str, default="unfairness"
        Column of the unfairness (lower is better).
    y : str, default="accuracy"
        Column of the accuracy (higher is better unless ``maximize_y=False``).
    method : str or None, default="method"
        Column (or index name) of the method label; ``None`` puts all rows in one method.
        Estimator objects are labelled by their class name.
    config : str or list of str, default=None
        Columns that identify a hyper-parameter setting. Rows sharing the method and
        these values are repeated fits (e.g. seeds): they are averaged into one point with
        a ``confidence`` interval of the mean (Student t, sample standard deviation) on
        both axes.
    x_err, y_err : str, default=None
        Columns of standard deviations over repeated fits, for tables that already hold
        means (e.g. ``unfairness_std`` / ``accuracy_std`` of
        :func:`pareto_frame_from_cv_results`). Drawn as ``confidence`` intervals of the
        mean, which needs ``n_repeats``.
    n_repeats : int or str, default=None
        Number of repeats behind ``x_err`` / ``y_err``: an int or a column name.
    confidence : float, default=0.95
        Coverage of the error bars.
    maximize_y : bool, default=True
        ``False`` for a loss such as RMSE, where lower ``y`` is better.
    overall : bool, default=None
        Draw the frontier of all methods together (dashed grey). Default: when there is
        more than one method.
    annotate : str, default=None
        Column whose value labels every frontier point (e.g. the hyper-parameter); with
        ``config``, one of the config columns.
    ax : matplotlib Axes, default=None
        Where to draw; by default a new :class:`matplotlib.figure.Figure` (pyplot's
        global state is never touched).
    title : str, default=None
        Axes title; a default one when ``None``, none with ``""``.

    Returns
    -------
    ax : matplotlib Axes
        The Axes drawn on. ``ax.figure.savefig(...)`` writes it to a file.

    Raises
    ------
    KeyError
        If a column is missing.
    ValueError
        If ``x_err`` / ``y_err`` are given without ``n_repeats`` or ``confidence`` is not in
        (0, 1).
    ImportError
        If matplotlib is missing from the environment.

    Warns
    -----
    UserWarning
        When rows with missing (NaN) ``x`` or ``y`` are dropped (e.g. failed fits).

    See Also
    --------
    pareto_front_mask : The frontier rule, as a pure function.

    References
    ----------
    .. [1] Kung, Luccio and Preparata. "On Finding the Maxima of a Set of Vectors",
       Journal of the ACM 22(4), 469-476 (1975).
    .. [2] Menon and Williamson. "The cost of fairness in binary classification", FAT*
       2018 (accuracy-fairness trade-off curves).
    """
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie in (0, 1); got {confidence!r}.")
    frame, method = _as_frame(results, method)
    config = [config] if isinstance(config, str) else list(config or [])
    needed = [x, y, *config] + [c for c in (x_err, y_err, annotate) if c is not None]
    if isinstance(n_repeats, str):
        needed.append(n_repeats)
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise KeyError(f"results has no columns {missing}; columns: {list(frame.columns)}.")
    if config and annotate is not None and annotate not in config:
        raise ValueError(
            f"with config, annotate must be one of the config columns {config}; got {annotate!r}."
        )
    values = frame[[x, y]].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    finite = np.isfinite(values).all(axis=1)
    if not finite.all():
        warnings.warn(
            f"dropping {int((~finite).sum())} rows with missing or infinite {x!r} / {y!r}.",
            UserWarning,
            stacklevel=2,
        )
        frame = frame.loc[finite].reset_index(drop=True)
    frame[x] = values[finite, 0]
    frame[y] = values[finite, 1]
    if config:
        frame = _aggregate_repeats(frame, x, y, method, config, float(confidence))
    else:
        frame["_x_half"] = _half_widths(frame, x_err, n_repeats, float(confidence))
        frame["_y_half"] = _half_widths(frame, y_err, n_repeats, float(confidence))

    ax = get_axes(ax)
    sign = 1.0 if maximize_y else -1.0
    methods = list(dict.fromkeys(frame[method]))
    colors = group_colors(len(methods))
    for color, label in zip(colors, methods):
        rows = frame[frame[method] == label]
        u, a = rows[x].to_numpy(), rows[y].to_numpy()
        front = pareto_front_mask(u, sign * a)
        xerr, yerr = rows["_x_half"].to_numpy(), rows["_y_half"].to_numpy()
        if (xerr > 0).any() or (yerr > 0).any():
            ax.errorbar(
                u,
                a,
                xerr=xerr if (xerr > 0).any() else None,
                yerr=yerr if (yerr > 0).any() else None,
                fmt="none",
                ecolor=color,
                alpha=0.45,
                elinewidth=1.0,
                capsize=2,
                zorder=1,
            )
        ax.scatter(
            u[~front],
            a[~front],
            facecolors="none",
            edgecolors=[color],
            s=28,
            linewidths=1.0,
            alpha=0.8,
            zorder=2,
            label="_nolegend_",
        )
        order = np.argsort(u[front], kind="stable")
        fu, fa = u[front][order], a[front][order]
        line = ax.plot(
            fu,
            fa,
            drawstyle="steps-post",
            marker="o",
            markersize=6,
            color=color,
            lw=1.8,
            zorder=3,
            # a method with one point is trivially on its own frontier: no count then
            label=label if len(u) == 1 else f"{label} ({len(fu)}/{len(u)} on its frontier)",
        )[0]
        line.set_gid(f"frontier:{label}")
        if annotate is not None:
            notes = rows[annotate].to_numpy()[front][order]
            for xi, yi, note in zip(fu, fa, notes):
                ax.annotate(
                    _format_note(note),
                    (xi, yi),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=7,
                    color=color,
                )
    if overall is None:
        overall = len(methods) > 1
    if overall:
        u, a = frame[x].to_numpy(), frame[y].to_numpy()
        front = pareto_front_mask(u, sign * a)
        order = np.argsort(u[front], kind="stable")
        line = ax.plot(
            u[front][order],
            a[front][order],
            drawstyle="steps-post",
            ls="--",
            color="0.35",
            lw=1.2,
            zorder=4,
            label="all methods: frontier",
        )[0]
        line.set_gid("frontier:overall")
    ax.set_xlabel(f"{x}  (lower is fairer)")
    ax.set_ylabel(f"{y}  ({'higher' if maximize_y else 'lower'} is better)")
    if title is None:
        title = f"{y} vs {x}: Pareto frontiers"
        if config or x_err is not None or y_err is not None:
            title += f" ({round(100 * float(confidence))}% intervals)"
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(
        fontsize="small",
        loc="best",
        title="filled: non-dominated within its method",
        title_fontsize="small",
    )
    return ax


def _format_note(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return ", ".join(f"{k.split('__')[-1]}={_format_note(v)}" for k, v in value.items())
    return str(value)
