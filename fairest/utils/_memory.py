"""Handing freed host memory back to the operating system between the phases of a fit.

glibc's ``malloc`` keeps the pages of freed blocks (those below its mmap threshold, which
rises to 32 MiB once large blocks have been freed) in its heaps for later allocations:
the resident set does not shrink when a fit's temporaries (validation copies, row
arrays, the compiler's working memory) are freed. A fit about to allocate its one large
buffer (the float32 copy of ``X``) calls :func:`release_free_memory` first, so that the
pages of what the earlier phases freed (a compilation's working memory above all) are not
resident beside it. ``malloc_trim(0)`` only returns free pages; elsewhere
than on glibc (macOS, musl) it is absent and nothing happens.
"""

from __future__ import annotations

import ctypes
import sys
from functools import lru_cache

__all__ = ["release_free_memory"]


@lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # no glibc (musl)
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Return the free pages of the C heap to the operating system (glibc's
    ``malloc_trim(0)``); ``True`` when some memory was released. A no-op elsewhere."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False
