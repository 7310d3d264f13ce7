"""Worker: opacus DP-SGD logistic regression (lambda = 0) on a data file exported by fairest.

Runs inside its own venv (torch CPU + opacus; never fairest's venv), started by
``ermi_private_reference.py`` through ``_common.run_worker``; not meant to be run by hand.
The standard opacus recipe: ``PrivacyEngine(accountant="rdp").make_private_with_epsilon``
on a ``DataLoader(TensorDataset)`` (Poisson sampling of expected batch size m, per-sample
clipping at C, Gaussian noise calibrated so that ``epochs`` passes are
(epsilon, delta)-DP for one whole record, add/remove-one neighbours), plain SGD, last
iterate. Prints nothing; writes per-seed test error, demographic-parity violation
(largest gap in positive rate between groups, hard predictions at 0.5), seconds per fit,
the noise multiplier and the epsilon opacus reports.

Usage: python ermi_private_reference_opacus.py --worker OUT DATA.npz SETTINGS_JSON
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from opacus import PrivacyEngine
from torch.utils.data import DataLoader, TensorDataset


def demographic_parity(pred, groups):
    rates = [pred[groups == g].mean() for g in np.unique(groups)]
    return float(max(rates) - min(rates))


def fit_one(data, settings, seed):
    torch.manual_seed(seed)
    X = torch.from_numpy(np.ascontiguousarray(data["X_train"], dtype=np.float32))
    y = torch.from_numpy(np.asarray(data["y_train"], dtype=np.float32))
    model = torch.nn.Linear(X.shape[1], 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=settings["learning_rate"])
    loader = DataLoader(TensorDataset(X, y), batch_size=settings["batch_size"], shuffle=True)
    engine = PrivacyEngine(accountant="rdp")
    delta = settings["delta"]
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        target_epsilon=settings["epsilon"],
        target_delta=delta,
        epochs=settings["epochs"],
        max_grad_norm=settings["clip"],
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start = time.perf_counter()
    for _ in range(settings["epochs"]):
        for xb, yb in loader:
            if len(xb) == 0:  # Poisson sampling can draw an empty batch
                continue
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(xb).squeeze(-1), yb).backward()
            optimizer.step()
    seconds = time.perf_counter() - start
    Xt = torch.from_numpy(np.ascontiguousarray(data["X_test"], dtype=np.float32))
    with torch.no_grad():
        pred = (model(Xt).squeeze(-1) > 0).numpy().astype(int)
    yt = np.asarray(data["y_test"])
    return {
        "error": float(np.mean(pred != yt)),
        "dp": demographic_parity(pred, np.asarray(data["s_test"])),
        "seconds": seconds,
        "noise_multiplier": float(optimizer.noise_multiplier),
        "epsilon_spent": float(engine.get_epsilon(delta)),
    }


def main():
    out, data_path, settings_json = sys.argv[2:5]
    settings = json.loads(settings_json)
    torch.set_num_threads(int(settings.get("threads", 1)))
    data = dict(np.load(data_path, allow_pickle=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # opacus notes on secure RNG
        runs = [fit_one(data, settings, seed) for seed in range(settings["seeds"])]
    result = {key: [run[key] for run in runs] for key in runs[0]}
    result.update(torch=torch.__version__, opacus=__import__("opacus").__version__)
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
