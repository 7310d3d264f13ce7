"""Row-count buckets: pad data to a few fixed sizes so that fits on slightly different n
(cross-validation folds, grid searches) reuse the same compiled code.

Padding rows are zeros with weight 0, so they change no sum in any kernel. Padding copies
the data, so large data (above ``KERNEL_TUNING.pad_max_bytes``) is not padded (:func:`padded_rows`): one
more compilation for its exact row count costs little next to a fit that reads that many
bytes a few dozen times, and the fit then holds no second copy of ``X``.
"""

from __future__ import annotations

import numpy as np

from fairest._kernels._defaults import KERNEL_TUNING

__all__ = [
    "aligned_empty",
    "bucket_size",
    "pad_rows",
    "pad_rows_to",
    "padded_rows",
]

_STEPS_PER_OCTAVE_BITS = 3  # 8 sizes per doubling: at most 12.5 % padding
_MIN_BUCKET = 64  # multiple of 8, so a bucket always splits over 1, 2, 4 or 8 devices


def bucket_size(n_rows: int) -> int:
    """Smallest bucket >= ``n_rows``: ``m * 2**k`` with ``8 <= m < 16`` (at least 64)."""
    if n_rows <= _MIN_BUCKET:
        return _MIN_BUCKET
    granularity = 2 ** (int(n_rows - 1).bit_length() - 1 - _STEPS_PER_OCTAVE_BITS)
    return -(-n_rows // granularity) * granularity


def pad_rows(n_rows: int, *arrays: np.ndarray) -> list[np.ndarray]:
    """Pad each array with zero rows up to ``bucket_size(n_rows)``."""
    extra = bucket_size(n_rows) - n_rows
    return [
        np.concatenate([a, np.zeros((extra,) + a.shape[1:], dtype=a.dtype)]) if extra else a
        for a in arrays
    ]


def padded_rows(n_rows: int, row_bytes: int) -> int:
    """Row count a fit runs on: ``bucket_size(n_rows)`` when the padded data (``row_bytes``
    per row) takes at most ``KERNEL_TUNING.pad_max_bytes``, else ``n_rows`` itself (no padding copy)."""
    bucket = bucket_size(n_rows)
    return bucket if bucket * row_bytes <= KERNEL_TUNING.pad_max_bytes else n_rows


def pad_rows_to(length: int, *arrays: np.ndarray) -> list[np.ndarray]:
    """Pad each array with zero rows up to ``length`` rows; arrays already that long are
    returned as they are (no copy). The padded copies are 64-byte aligned
    (:func:`aligned_empty`), so ``jax.device_put`` on a CPU device shares them instead of
    copying them a second time."""
    return [_padded_copy(a, length) if a.shape[0] < length else a for a in arrays]


# jax.device_put shares a host buffer with a CPU device only at this alignment; numpy's
# large buffers start 16 bytes into a page, so np.concatenate's result is copied again.
DEVICE_ALIGNMENT = 64


def aligned_empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a ``DEVICE_ALIGNMENT``
    byte boundary (a view into a slightly larger byte buffer)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + DEVICE_ALIGNMENT, dtype=np.uint8)
    offset = -raw.ctypes.data % DEVICE_ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def _padded_copy(array: np.ndarray, length: int) -> np.ndarray:
    out = aligned_empty((length,) + array.shape[1:], array.dtype)
    out[: array.shape[0]] = array
    out[array.shape[0] :] = 0
    return out
