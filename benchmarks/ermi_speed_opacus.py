"""Opacus side of ``ermi_speed.py``: DP-SGD epochs of plain logistic regression.

Runs inside the separate venv ``benchmarks/.venvs/opacus`` (torch CPU + opacus), started
as a subprocess by ``ermi_speed.py``; not meant to be run by hand. Reads ``X``, ``y``
from an ``.npz`` file and prints one JSON line with the best epoch times of

* ``opacus_dataloader``: the standard opacus recipe, ``PrivacyEngine.make_private`` on a
  ``DataLoader(TensorDataset)`` (Poisson sampling with expected batch size m, per-sample
  gradients by hooks, per-sample clipping, Gaussian noise), one pass = n / m steps;
* ``opacus_tensor``: the same private model and optimizer (``poisson_sampling=False``)
  fed with pre-sliced tensor batches of a per-epoch permutation, no DataLoader (the
  fastest way to drive opacus; the compute-bound number).

Both are timed with torch's default thread count and again with one thread
(``*_1thread``; on a loaded, shared CPU one thread can be faster).

Usage: python ermi_speed_opacus.py DATA.npz BATCH NOISE_MULTIPLIER CLIP EPOCHS REPEATS
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np
import torch
from opacus import PrivacyEngine
from torch.utils.data import DataLoader, TensorDataset


def _private(X, y, batch, noise, clip, poisson):
    model = torch.nn.Linear(X.shape[1], 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.005)
    loader = DataLoader(TensorDataset(X, y), batch_size=batch, shuffle=not poisson)
    engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=noise,
        max_grad_norm=clip,
        poisson_sampling=poisson,
    )
    return model, optimizer, loader


def _step(model, optimizer, loss_fn, xb, yb):
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(xb).squeeze(-1), yb)
    loss.backward()
    optimizer.step()


def _time_dataloader(X, y, batch, noise, clip, loss_fn, epochs, repeats):
    model, optimizer, loader = _private(X, y, batch, noise, clip, poisson=True)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(epochs):
            for xb, yb in loader:
                if len(xb) == 0:  # Poisson sampling can draw an empty batch
                    continue
                _step(model, optimizer, loss_fn, xb, yb)
        times.append((time.perf_counter() - start) / epochs)
    return min(times)


def _time_tensor(X, y, batch, noise, clip, loss_fn, epochs, repeats):
    model, optimizer, _ = _private(X, y, batch, noise, clip, poisson=False)
    generator = torch.Generator().manual_seed(0)
    n = X.shape[0]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(epochs):
            order = torch.randperm(n, generator=generator)
            for k in range(0, n, batch):
                idx = order[k : k + batch]
                _step(model, optimizer, loss_fn, X[idx], y[idx])
        times.append((time.perf_counter() - start) / epochs)
    return min(times)


def main():
    path, batch, noise, clip, epochs, repeats = sys.argv[1:7]
    batch, noise, clip = int(batch), float(noise), float(clip)
    epochs, repeats = int(epochs), int(repeats)
    data = np.load(path)
    X = torch.from_numpy(np.ascontiguousarray(data["X"], dtype=np.float32))
    y = torch.from_numpy(np.ascontiguousarray(data["y"], dtype=np.float32))
    n = X.shape[0]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    torch.manual_seed(0)
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "n": n}

    default_threads = torch.get_num_threads()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # opacus notes on secure RNG / Poisson batches
        for threads in sorted({default_threads, 1}, reverse=True):
            torch.set_num_threads(threads)
            suffix = "" if threads == default_threads else f"_{threads}thread"
            out["opacus_dataloader" + suffix] = _time_dataloader(
                X, y, batch, noise, clip, loss_fn, epochs, repeats
            )
            out["opacus_tensor" + suffix] = _time_tensor(
                X, y, batch, noise, clip, loss_fn, epochs, repeats
            )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
