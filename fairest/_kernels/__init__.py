"""Jitted JAX building blocks shared by every family (losses, the MLP forward pass,
per-group sums, Hessians, projections, row buckets). Pure functions; hyper-parameters are
traced arguments."""

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
    cross_entropy_host,
    cross_entropy_stats,
    group_means,
    loss_derivatives,
    pointwise_loss,
    weighted_mean,
)
from fairest._kernels._mlp import host_matmul, mlp_forward, mlp_forward_host
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
    "cross_entropy_host",
    "cross_entropy_stats",
    "group_means",
    "group_sums",
    "group_to_sample_weights",
    "hessian_vector_product",
    "host_matmul",
    "is_sparse",
    "loss_derivatives",
    "mlp_forward",
    "mlp_forward_host",
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
    "weighted_mean",
]
