"""Memory near the data size (issue 19.3): the objective stream's chunks are slices of the
epochs' draws (no per-iteration row objects), and the final full step's XLA temporaries
are those of one block of ``CONSTRAINED_TUNING.full_step_block_rows`` rows."""

import numpy as np
import pytest

from fairest import LossGapConstrainedClassifier
from fairest.constrained._defaults import CONSTRAINED_TUNING
from fairest.constrained._engine import _driver, _sampling

_FINAL_FUNCTION = _driver._final_function  # the cached one (the tests spy on it)


def _take_by_iteration(stream, L):
    """The objective stream's ``take`` one iteration at a time (the reference)."""
    idx_out, w_out, epoch, t = [], [], np.zeros(L, np.int64), np.zeros(L, np.int64)
    for i in range(L):
        if stream.epoch_no < 0 or stream._t >= stream.T:
            stream.epoch_no += 1
            stream._t = 0
            stream._idx, stream._w = stream.sampler.epoch()
        epoch[i], t[i] = stream.epoch_no, stream._t
        if stream._idx is not None:
            idx_out.append(stream._idx[stream._t])
            w_out.append(stream._w[stream._t])
        stream._t += 1
    if not idx_out:
        return None, None, epoch, t
    return np.stack(idx_out), np.stack(w_out), epoch, t


def _sampler(kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "balanced":
        groups = np.random.default_rng(9).integers(0, 3, 50)
        return _sampling._BalancedEpochSampler(groups, 3, 6, rng)
    n, batch = {"epochs": (37, 5), "full": (10, None), "one": (12, 12)}[kind]
    return _sampling.EpochSampler(n, batch, rng)


@pytest.mark.parametrize("kind", ["epochs", "full", "one", "balanced"])
def test_take_slices_equal_the_iteration_stream(kind):
    sliced = _sampling._ObjectiveStream(_sampler(kind, 0))
    reference = _sampling._ObjectiveStream(_sampler(kind, 0))
    for L in (3, 20, 7, 64, 8, 1):  # chunks ending inside, at and across epoch ends
        got, want = sliced.take(L), _take_by_iteration(reference, L)
        for a, b in zip(got, want):
            if b is None:
                assert a is None
            else:
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)


def _final_step_temporaries(monkeypatch, block_rows, n=2**16, d=12):
    """XLA's temporary bytes of the final full step of a LossGap fit on ``n`` rows."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    g = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * g + rng.normal(size=n) > 0.25).astype(int)
    temporaries = []
    final_function = _FINAL_FUNCTION

    def spied(*args, **kwargs):
        final = final_function(*args, **kwargs)

        def run(*call_args):
            analysis = final.lower(*call_args).compile().memory_analysis()
            temporaries.append(analysis.temp_size_in_bytes)
            return final(*call_args)

        return run

    monkeypatch.setattr(_driver, "_final_function", spied)
    final_function.cache_clear()  # the spy sees a fresh compilation
    try:
        with CONSTRAINED_TUNING.override(full_step_block_rows=block_rows):
            LossGapConstrainedClassifier(max_iter=2, random_state=0).fit(X, y, sensitive_features=g)
    finally:
        final_function.cache_clear()
    assert len(temporaries) == 1
    return temporaries[0]


def test_final_step_temporaries_are_one_block(monkeypatch):
    """Blocks four times smaller hold about a quarter of the temporaries: they are the
    block's, not the data's (1e6 x 100, float32: 97 MiB with 65,536-row blocks, 24 MiB
    with the 16,384 rows of ``full_step_block_rows``)."""
    block = CONSTRAINED_TUNING.full_step_block_rows
    small = _final_step_temporaries(monkeypatch, block // 4)
    large = _final_step_temporaries(monkeypatch, block)
    assert small <= 0.4 * large
