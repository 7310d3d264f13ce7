"""Worker: the DP-FERMI authors' own training script on a data file exported by fairest.

Runs inside its own venv (torch CPU, numpy, pandas, tqdm, torchvision; never fairest's
venv), started by ``ermi_private_reference.py`` through ``_common.run_worker``; not meant
to be run by hand. Nothing of the authors' code is copied here: their unmodified
``dp_fermi.py`` is executed from their own checkout (``runpy``), with three adapters
around it so that it trains on fairest's split instead of re-splitting its CSV:

* ``dataloader.GeneralData`` is replaced by :class:`ExportedData`, which serves the
  exported train / test arrays in the shape the script expects (features, one-hot
  sensitive, label, sensitive index) and computes ``P_S^{-1/2}`` from the training
  groups. ``group_order`` decides which group gets index 0: the authors' binary ERMI is
  truncated to that group (spec ``ermi.md`` 13.1), so both orders are run.
* ``torch.utils.data.DataLoader`` is replaced by :class:`TensorLoader`: the same batches
  (a fresh ``torch.randperm`` per epoch when ``shuffle``, the last batch partial) drawn
  from tensors instead of one pandas row at a time (the original pipeline spends most of
  its time in ``DataFrame.iloc``).
* ``torchvision`` is imported by their modules but used only by the image pipelines
  (UTK-Face, CNN); when it is not installed (its wheels must match the torch build) an
  empty stand-in module is registered so that the imports succeed.
* ``metrics.equalized_opportunity_violation_binary``: the script calls it after every
  fit, but ``metrics.py`` of that commit (and of the later HEAD) does not define it, so
  the committed script stops with a ``NameError`` after its first fit. A stand-in
  returning NaN is registered (that metric is not reported here).
* ``args.Args`` keeps its own ``assign`` / ``calculate_noise`` (the paper's closed-form
  stds) but gets the run's settings (epsilon, lambdas, seeds, C = W radius = the clip of
  the batch-mean gradient, learning rates, epochs).

Per-fit seconds are the intervals between the script's ``torch.manual_seed(seed)`` calls
(one per fit; each interval is one fit and its test evaluation).

Usage: python ermi_private_reference_dpfermi.py --worker OUT DATA.npz CHECKOUT SETTINGS_JSON
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


class ExportedDataset(torch.utils.data.Dataset):
    """One split as tensors, items shaped like the authors' ``TabularDataset``."""

    def __init__(self, X, y, groups, order):
        index = np.array([order.index(g) for g in groups])
        self.features = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float64))
        self.labels = torch.from_numpy(np.asarray(y, dtype=np.int64))
        self.group_index = torch.from_numpy(index.astype(np.int64))
        self.sensitive = torch.nn.functional.one_hot(self.group_index, len(order)).float()
        self.count_attr = [len(order), 1]

    def __len__(self):
        return self.features.shape[0]

    def __getitem__(self, i):
        return self.features[i], self.sensitive[i], self.labels[i], self.group_index[i]


class ExportedData:
    """Stands in for ``dataloader.GeneralData`` (same methods, the exported split)."""

    def __init__(self, data, order):
        self.train = ExportedDataset(data["X_train"], data["y_train"], data["s_train"], order)
        self.test = ExportedDataset(data["X_test"], data["y_test"], data["s_test"], order)

    def getTrain(self):
        return self.train

    def getTest(self):
        return self.test

    def calculateP_s(self, demographic_parity=True):
        if not demographic_parity:
            raise NotImplementedError("only the demographic-parity runs are driven here")
        frequencies = self.train.sensitive.mean(dim=0)
        return torch.diag(frequencies**-0.5)


class TensorLoader:
    """Minibatches of a dataset's tensors: the batches ``DataLoader`` would give."""

    def __init__(self, dataset, batch_size=1, shuffle=False, **_ignored):
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle

    def __len__(self):
        return -(-len(self.dataset) // self.batch_size)

    def __iter__(self):
        n = len(self.dataset)
        order = torch.randperm(n) if self.shuffle else torch.arange(n)
        d = self.dataset
        for start in range(0, n, self.batch_size):
            idx = order[start : start + self.batch_size]
            yield d.features[idx], d.sensitive[idx], d.labels[idx], d.group_index[idx]


def stub_torchvision():
    """Register empty ``torchvision`` modules when the real one is absent (unused for LR)."""
    try:
        import torchvision  # noqa: F401
    except ImportError:
        import types

        stub = types.ModuleType("torchvision")
        stub.transforms = types.ModuleType("torchvision.transforms")
        stub.models = types.ModuleType("torchvision.models")
        sys.modules.update(
            {"torchvision": stub, "torchvision.transforms": stub.transforms},
        )
        sys.modules["torchvision.models"] = stub.models


def configure(checkout, data, settings):
    """Import the authors' modules from their checkout and wire the adapters in."""
    sys.path.insert(0, str(checkout))
    stub_torchvision()
    torch.utils.data.DataLoader = TensorLoader
    import dataloader  # the authors' module

    exported = ExportedData(data, settings["group_order"])
    dataloader.GeneralData = lambda *args, **kwargs: exported
    import args as args_module  # the authors' module (star-imports dataloader)

    args_module.GeneralData = dataloader.GeneralData
    import metrics  # the authors' module

    if not hasattr(metrics, "equalized_opportunity_violation_binary"):
        metrics.equalized_opportunity_violation_binary = lambda *args: float("nan")
    original_init = args_module.Args.__init__
    noise = {}

    def init(self):
        original_init(self)
        self.dataset = "adult"
        self.debug, self.tuning = False, False
        self.epsilon_list = [settings["epsilon"]]
        self.lambd_list = list(settings["lambdas"])
        self.num_models_train = int(settings["seeds"])
        self.epochs = int(settings["epochs"])
        self.C = self.lipschitz_theta = float(settings["clip"])
        self.lr_theta, self.lr_W = float(settings["lr_theta"]), float(settings["lr_w"])

    original_noise = args_module.Args.calculate_noise

    def calculate_noise(self):
        original_noise(self)
        noise.update(std_theta=float(self.std_theta), std_w=float(self.std_W))

    args_module.Args.__init__ = init
    args_module.Args.calculate_noise = calculate_noise
    return noise


def fit_times():
    """Record the time of every ``torch.manual_seed`` call (one per fit in the script)."""
    stamps = []
    original = torch.manual_seed

    def seed(value):
        stamps.append(time.perf_counter())
        return original(value)

    torch.manual_seed = seed
    return stamps


def main():
    out, data_path, checkout, settings_json = sys.argv[2:6]
    settings = json.loads(settings_json)
    torch.set_num_threads(int(settings.get("threads", 1)))
    data = dict(np.load(data_path, allow_pickle=True))
    noise = configure(Path(checkout), data, settings)
    stamps = fit_times()
    os.environ.setdefault("TQDM_DISABLE", "1")
    with tempfile.TemporaryDirectory(prefix="dpfermi_run_") as work:
        os.chdir(work)
        Path("PlotConstructionData/FERMI/adult").mkdir(parents=True)  # the script saves there
        start = time.perf_counter()
        runpy.run_path(str(Path(checkout) / "dp_fermi.py"), run_name="__main__")
        end = time.perf_counter()
        eps = settings["epsilon"]
        table = torch.load(
            f"PlotConstructionData/FERMI/adult/eps_{eps}_logistic-regression.pt",
            weights_only=False,
        )
    seconds = np.diff(np.append(stamps, end)).tolist()
    runs = {
        str(lam): {
            "error": table[lam]["misclassification_error_list"].tolist(),
            "dp": table[lam]["demographic_parity_list"].tolist(),
        }
        for lam in settings["lambdas"]
    }
    result = {
        "runs": runs,
        "fit_seconds": seconds,
        "total_seconds": end - start,
        "torch": torch.__version__,
        **noise,
    }
    Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
