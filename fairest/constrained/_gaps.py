"""The loss-gap constraints of :class:`~fairest.constrained.LossGapConstrainedClassifier`.

``C = A @ L_cells - tolerance <= 0``: the matrix ``A`` of the compared pairs of groups
(or of (group, label) cells), the constraint cell of every row, the scale the
augmented-Lagrangian solvers run on. The per-row losses the exact train values are
measured with are :func:`fairest._kernels.cross_entropy_host`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "LossGapConstraints",
    "constraint_cells",
    "constraint_matrix",
    "constraint_scale",
    "loss_gap_constraints",
    "unscale_history",
]


def constraint_scale(solver: str, pairs: str, n_groups: int) -> float:
    """Factor of the constraints ``C(x) <= 0`` the augmented-Lagrangian solvers run on.

    ``sqrt(2 / G)`` for SSL-ALM / ALM with ``constraint_pairs="all"`` and ``G > 2``
    groups, 1 otherwise (two groups, ``"vs_mean"``, the other solvers): see the Notes of
    :class:`LossGapConstrainedClassifier`.
    """
    if solver in ("ssl-alm", "alm") and pairs == "all" and n_groups > 2:
        return float(np.sqrt(2.0 / n_groups))
    return 1.0


def unscale_history(history: dict, scale: float) -> dict:
    """``history_`` in the units of ``C(x) <= 0`` (the solver ran on ``scale * C``)."""
    if scale == 1.0:
        return history
    out = {}
    for key, value in history.items():
        if key.startswith(("c_", "full_c_", "slack_")):
            value = value / scale
        elif key.startswith("lambda_"):
            value = value * scale
        out[key] = value
    return out


def constraint_matrix(kind: str, pairs: str, labels, n_groups: int):
    """Matrix ``A`` (m, n_cells) with ``C = A @ L_cells - delta`` and the constraint names.

    Cells are the groups (``loss_parity``, ``loss_equal_opportunity`` on rows with y = 1),
    or (group, label) pairs with index ``2 g + y`` (``loss_equalized_odds``).
    """
    names_g = [str(label) for label in labels]
    rows, names = [], []
    n_cells = 2 * n_groups if kind == "loss_equalized_odds" else n_groups

    def unit(cell):
        e = np.zeros(n_cells)
        e[cell] = 1.0
        return e

    if n_groups == 1:  # every constraint is identically -delta (spec 5, oracle 15)
        m = 4 if kind == "loss_equalized_odds" else 2
        return np.zeros((m, n_cells)), [f"gap[{names_g[0]},{names_g[0]}]#{i}" for i in range(m)]
    if pairs == "all":
        comparisons = [(g, h) for g in range(n_groups) for h in range(g + 1, n_groups)]
    else:
        comparisons = [(g, None) for g in range(n_groups)]

    def diff(g, h, v=None):
        """Coefficients of L_g - L_h (or L_g - mean) for label v (cells 2g+v) or groups."""
        cell = (lambda k: 2 * k + v) if v is not None else (lambda k: k)
        a = unit(cell(g))
        if h is None:
            for k in range(n_groups):
                a = a - unit(cell(k)) / n_groups
        else:
            a = a - unit(cell(h))
        return a

    for g, h in comparisons:
        other = "mean" if h is None else names_g[h]
        if kind == "loss_equalized_odds":
            for s0, s1 in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                rows.append(s0 * diff(g, h, 0) + s1 * diff(g, h, 1))
                signs = ("+" if s0 > 0 else "-") + ("+" if s1 > 0 else "-")
                names.append(f"eodds[{names_g[g]},{other};{signs}]")
        else:
            rows.append(diff(g, h))
            names.append(f"gap[{names_g[g]},{other}]")
            rows.append(-diff(g, h))
            names.append(f"gap[{other},{names_g[g]}]")
    return np.array(rows), names


class LossGapConstraints(NamedTuple):
    """The loss-gap constraints ``C = A @ L_cells - tolerance <= 0`` of one fit."""

    A: np.ndarray  # (m, n_cells)
    names: list
    cells: np.ndarray  # constraint cell of every row, -1 outside every cell
    n_cells: int
    n_groups: int
    scale: float  # the solver runs on scale * C <= 0 (see constraint_scale)

    def aux(self, tolerance, dtype) -> dict:
        """Traced problem data of the solver: ``scale * A`` and ``scale * tolerance`` (a
        number, or an array of them for the lanes of a path), host arrays of ``dtype``
        (cast on the host: no eager device program)."""
        A, delta = (
            (self.A, np.asarray(tolerance, dtype=np.float64))
            if self.scale == 1.0
            else (self.scale * self.A, self.scale * np.asarray(tolerance, dtype=np.float64))
        )
        real = np.dtype(dtype)
        return {"A": np.asarray(A, dtype=real), "delta": np.asarray(delta, dtype=real)}

    def mean_losses(self, loss, groups, sample_weight=None):
        """Per-cell and per-group means of the per-row ``loss`` (weighted unless None)."""
        cells, n_groups = self.cells, self.n_groups
        in_cell = cells >= 0
        if sample_weight is None:
            cell_losses = np.bincount(
                cells[in_cell], loss[in_cell], minlength=self.n_cells
            ) / np.bincount(cells[in_cell], minlength=self.n_cells)
            group_losses = np.bincount(groups, loss, minlength=n_groups) / np.bincount(
                groups, minlength=n_groups
            )
            return cell_losses, group_losses
        weighted = sample_weight * loss
        cell_weight = np.bincount(cells[in_cell], sample_weight[in_cell], minlength=self.n_cells)
        cell_losses = np.bincount(cells[in_cell], weighted[in_cell], minlength=self.n_cells)
        group_losses = np.bincount(groups, weighted, minlength=n_groups) / np.bincount(
            groups, sample_weight, minlength=n_groups
        )
        return cell_losses / cell_weight, group_losses


def constraint_cells(metric: str, groups, y_codes) -> np.ndarray:
    """Constraint cell of every row: its group, its group on rows with y = 1 (-1 on the
    others) for ``loss_equal_opportunity``, ``2 g + y`` for ``loss_equalized_odds``."""
    if metric == "loss_equal_opportunity":
        return np.where(y_codes == 1, groups, -1).astype(np.int32)
    if metric == "loss_equalized_odds":
        return (2 * groups + y_codes).astype(np.int32)
    return groups.astype(np.int32)


def loss_gap_constraints(
    metric: str, pairs: str, solver: str, labels, groups, y_codes, n_classes: int, sample_weight
) -> LossGapConstraints:
    """Check the cells of ``metric`` (rows and weight in every one) and build its
    constraints (:func:`constraint_matrix`, :func:`constraint_scale`)."""
    n_groups = len(labels)
    if n_classes > 2 and metric != "loss_parity":
        raise ValueError(f"metric={metric!r} needs a binary target; y has {n_classes} classes.")
    cells = constraint_cells(metric, groups, y_codes)
    n_cells = 2 * n_groups if metric == "loss_equalized_odds" else n_groups
    counts = np.bincount(cells[cells >= 0], minlength=n_cells)
    if np.any(counts == 0):
        raise ValueError(
            f"metric={metric!r} needs rows in every (group, label) cell; "
            f"empty cells: {np.flatnonzero(counts == 0).tolist()}."
        )
    in_cell = cells >= 0
    cell_weight = np.bincount(cells[in_cell], sample_weight[in_cell], minlength=n_cells)
    if np.any(cell_weight == 0):
        raise ValueError(
            f"metric={metric!r} needs positive sample_weight in every "
            f"(group, label) cell; weightless cells: "
            f"{np.flatnonzero(cell_weight == 0).tolist()}."
        )
    A, names = constraint_matrix(metric, pairs, labels, n_groups)
    scale = constraint_scale(solver, pairs, n_groups)
    return LossGapConstraints(A, names, cells, n_cells, n_groups, scale)
