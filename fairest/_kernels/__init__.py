"""Jitted JAX building blocks shared by every family (losses, per-group sums, Hessians,
projections, row buckets). Pure functions; hyper-parameters are traced arguments."""

from fairest._kernels._buckets import bucket_size, pad_rows, pad_rows_to, padded_rows
from fairest._kernels._glm import (
    Batch,
    blocked_hessian,
    group_sums,
    group_to_sample_weights,
    hessian_vector_product,
    objective,
    penalty_diagonal,
    scores,
    value_and_grad,
    value_grad_hessian,
    weighted_gram,
)
from fairest._kernels._losses import (
    LOSSES,
    PENALTY_SCALE,
    cross_entropy,
    cross_entropy_grad,
    loss_derivatives,
    pointwise_loss,
)
from fairest._kernels._projections import clip_by_norm, project_simplex
from fairest._kernels._sparse import SparseRows, is_sparse, sparse_rows

__all__ = [
    "Batch",
    "SparseRows",
    "LOSSES",
    "PENALTY_SCALE",
    "blocked_hessian",
    "bucket_size",
    "clip_by_norm",
    "cross_entropy",
    "cross_entropy_grad",
    "group_sums",
    "group_to_sample_weights",
    "hessian_vector_product",
    "is_sparse",
    "loss_derivatives",
    "objective",
    "pad_rows",
    "pad_rows_to",
    "padded_rows",
    "penalty_diagonal",
    "pointwise_loss",
    "project_simplex",
    "scores",
    "sparse_rows",
    "value_and_grad",
    "value_grad_hessian",
    "weighted_gram",
]
