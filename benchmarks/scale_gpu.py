"""Every estimator family at 1e6 and 1e7 rows on the default JAX backend (a GPU when one is
lent), optionally against the same fit on the CPU, and the two PyTorch references on the
same device: ERMI (DP-FERMI) vs opacus DP-SGD, LossGap vs humancompatible-train.

Cases (synthetic data generated on the fly in each worker, float32, ``d`` features
(default 32), ``--groups`` groups (default 3), labels from a noisy linear rule that
depends on the group): ``group-weighted`` (``GroupWeightedClassifier(weights="balanced")``),
``badr`` (``BADRClassifier(solver="sgd")``), ``ermi-full-batch``, ``ermi-sgda``
(``ERMIClassifier``), ``loss-gap`` (``LossGapConstrainedClassifier``, MLP (16,), minibatch
1024), ``pruned`` (``PrunedFairClassifier``, MLP (16,)), ``partial``
(``PartialParityClassifier``). Each case is fitted in a fresh worker process
(:func:`_common.run_worker`): cold (first) and warm (median) wall seconds, CPU seconds,
load, peak host RSS, device memory (``jax.local_devices()[0].memory_stats()``:
``peak_bytes_in_use``, None where the backend does not report it, e.g. CPU), and, on
an evaluation slice (the first ``--eval-rows`` rows), the training log loss, accuracy,
demographic-parity difference and loss gap (``fairest.metrics``) of the fitted model.
With ``--compare-cpu`` the same worker runs again with ``JAX_PLATFORMS=cpu`` and the row
gains ``jaxcpu_*`` columns and ``jaxcpu_over_default`` (CPU warm seconds / default-backend
warm seconds; > 1: the default backend is faster). The markdown table shows the main
columns, the JSON file all of them.

References (``--references``, torch side in the venv of ``--torch-python``, default
``benchmarks/.venvs/torch/bin/python``, git-ignored; it needs torch, opacus and
humancompatible-train 0.4.2), on ``--reference-rows`` rows (default 1e6, 2 groups):

* ``ermi-vs-opacus``: fairest ``ERMIClassifier(dp_epsilon=1, solver="sgda")`` seconds per
  epoch (``ermi_speed.time_fairest``) vs opacus DP-SGD on a linear model with the same
  batch, clip and noise (``ermi_speed_opacus._time_tensor``: pre-sliced tensor batches;
  the DataLoader recipe too when torch runs on the CPU); the torch model and data are put
  on ``cuda`` when ``torch.cuda.is_available()`` in that venv.
* ``loss-gap-vs-hct``: ``constrained_speed.run_fairest`` vs ``constrained_speed.run_reference``
  (paper B settings, MLP 64-32, objective batch 8, 1 epoch): seconds per epoch and train
  violation. The reference runs on ``--reference-device`` (default ``auto``: ``cuda`` when
  torch in that venv sees a GPU, else the CPU; recorded in ``torch_device``).

Memory: X is n x d float32 (1e7 x 32: 1.3 GB); the estimators copy it (float64 for the
linear families: 2.6 GB) and keep per-sample vectors, so 1e7 rows need about 8-12 GB of
host RAM per worker and the same order of device memory; 1e6 rows about a tenth. The CPU
comparison at 1e7 rows takes tens of minutes per case on a small machine.

Run (GPU): ``python benchmarks/scale_gpu.py --compare-cpu --references`` (writes
``results/scale_gpu.{json,md}``). Smoke (CPU, 2,000 rows, < 2 min): ``python
benchmarks/scale_gpu.py --smoke --compare-cpu --references --torch-python PATH``
(writes ``results/scale_gpu_smoke.{json,md}``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
NAME = "scale_gpu"
DEFAULT_TORCH_PYTHON = HERE / ".venvs" / "torch" / "bin" / "python"  # git-ignored
CASES = (
    "group-weighted",
    "badr",
    "ermi-full-batch",
    "ermi-sgda",
    "loss-gap",
    "pruned",
    "partial",
)
TABLE_COLUMNS = (
    "case", "n", "backend", "cold_s", "warm_s", "cpu_warm_s", "load", "peak_rss_mb",
    "device_peak_mb", "log_loss", "accuracy", "dp_difference", "loss_gap", "jaxcpu_cold_s",
    "jaxcpu_warm_s", "jaxcpu_over_default", "fairest_s_per_epoch", "reference_s_per_epoch",
    "reference_over_fairest", "torch_device", "fairest_train_violation",
    "reference_train_violation",
)  # fmt: skip
SMOKE_HEADER = "**CPU smoke run, not a GPU measurement** (tiny sizes, few iterations)."


# ------------------------------------------------------------------------------------------
# data and estimators (fairest side)
# ------------------------------------------------------------------------------------------


def make_data(n: int, d: int, n_groups: int, seed: int = 0):
    """Synthetic float32 ``X``, binary ``y`` and integer groups, group-dependent labels."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n)
    X = rng.standard_normal(size=(n, d), dtype=np.float32)
    X[:, 0] += (0.5 * groups).astype(np.float32)
    score = X[:, 0] + 0.5 * X[:, 1] + 0.7 * groups + rng.standard_normal(n, dtype=np.float32)
    y = (score > 0.8 + 0.35 * n_groups).astype(int)
    return X, y, groups


def make_estimator(case: str, smoke: bool):
    """The estimator of ``case``; ``smoke`` cuts iterations and epochs."""
    from fairest import (
        BADRClassifier,
        ERMIClassifier,
        GroupWeightedClassifier,
        LossGapConstrainedClassifier,
        PartialParityClassifier,
        PrunedFairClassifier,
    )

    epochs = 1 if smoke else 3
    net = dict(hidden_layer_sizes=(16,), batch_size=1024, random_state=0)
    factories = {
        "group-weighted": lambda: GroupWeightedClassifier(weights="balanced"),
        "badr": lambda: BADRClassifier(
            solver="sgd", batch_size=4096, max_iter=50 if smoke else 1000, random_state=0
        ),
        "ermi-full-batch": lambda: ERMIClassifier(
            2.0, solver="full-batch", max_iter=50 if smoke else 1000
        ),
        "ermi-sgda": lambda: ERMIClassifier(
            2.0, solver="sgda", n_epochs=epochs, batch_size=1024, random_state=0
        ),
        "loss-gap": lambda: LossGapConstrainedClassifier(preset="paper", n_epochs=epochs, **net),
        "pruned": lambda: PrunedFairClassifier(
            dense_n_epochs=epochs, n_epochs=epochs + 1, pruning_epochs=1, **net
        ),
        "partial": lambda: PartialParityClassifier(max_iter=5 if smoke else 200, n_grid=5),
    }
    return factories[case]()


def quality(model, X, y, groups) -> dict:
    """Log loss, accuracy, demographic-parity difference and loss gap of a fitted model."""
    from fairest.metrics import demographic_parity_difference, loss_gap

    proba = np.clip(model.predict_proba(X)[:, 1], 1e-12, 1 - 1e-12)
    predicted = (proba > 0.5).astype(int)
    return {
        "log_loss": float(-np.mean(y * np.log(proba) + (1 - y) * np.log1p(-proba))),
        "accuracy": float(np.mean(predicted == y)),
        "dp_difference": float(
            demographic_parity_difference(y, predicted, sensitive_features=groups)
        ),
        "loss_gap": float(loss_gap(y, proba, sensitive_features=groups)),
    }


def device_memory() -> dict:
    """Peak and current bytes of the first local device, None where not reported."""
    import jax

    stats = jax.local_devices()[0].memory_stats() or {}
    return {
        "device_peak_mb": stats["peak_bytes_in_use"] / 2**20
        if "peak_bytes_in_use" in stats
        else None,
        "device_in_use_mb": stats["bytes_in_use"] / 2**20 if "bytes_in_use" in stats else None,
    }


def worker(
    out: str, case: str, n: int, d: int, n_groups: int, repeats: int, smoke: bool, eval_rows: int
):
    import jax
    from _common import time_calls, write_worker_result

    X, y, groups = make_data(n, d, n_groups)
    fitted = {}

    def fit():
        fitted["model"] = make_estimator(case, smoke).fit(X, y, sensitive_features=groups)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of the cut-down smoke settings
        timing = time_calls(fit, repeats=repeats)
    rows = slice(0, min(n, eval_rows))
    result = {
        "backend": jax.default_backend(),
        "device": str(jax.local_devices()[0].device_kind),
        **timing.as_row(),
        **device_memory(),
        **quality(fitted["model"], X[rows], y[rows], groups[rows]),
    }
    write_worker_result(out, result)


@contextlib.contextmanager
def environment(**values):
    """Set environment variables for the child processes started inside the block."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def family_rows(args, sizes) -> list[dict]:
    from _common import run_worker

    rows = []
    for n in sizes:
        for case in args.cases.split(","):
            worker_args = [
                case,
                n,
                args.d,
                args.groups,
                args.repeats,
                int(args.smoke),
                args.eval_rows,
            ]
            default = run_worker(__file__, worker_args, timeout=args.timeout)
            row = {"case": case, "n": n, "d": args.d, "groups": args.groups, **default}
            if args.compare_cpu:
                with environment(JAX_PLATFORMS="cpu"):
                    cpu = run_worker(__file__, worker_args, timeout=args.timeout)
                row.update({f"jaxcpu_{key}": value for key, value in cpu.items()})
                if "warm_s" in cpu and "warm_s" in default:
                    row["jaxcpu_over_default"] = cpu["warm_s"] / default["warm_s"]
            rows.append(row)
            print(json.dumps(row, default=str), file=sys.stderr, flush=True)
    return rows


# ------------------------------------------------------------------------------------------
# torch side (runs inside the --torch-python venv: torch, opacus, humancompatible-train)
# ------------------------------------------------------------------------------------------


def torch_runner(argv: list[str]) -> None:
    """``--torch-runner opacus DATA.npz BATCH NOISE CLIP EPOCHS REPEATS``: opacus seconds
    per epoch on cuda when torch sees one, else on the CPU (one JSON line)."""
    import ermi_speed_opacus as opacus_side
    import torch

    _, path, batch, noise, clip, epochs, repeats = argv
    batch, noise, clip, epochs, repeats = (
        int(batch),
        float(noise),
        float(clip),
        int(epochs),
        int(repeats),
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    build_private = opacus_side._private

    def private_on_device(*args, **kwargs):
        with torch.device(device):  # the model (and optimizer state) on the device
            return build_private(*args, **kwargs)

    opacus_side._private = private_on_device
    data = np.load(path)
    X = torch.from_numpy(np.ascontiguousarray(data["X"], dtype=np.float32))
    y = torch.from_numpy(np.ascontiguousarray(data["y"], dtype=np.float32))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    torch.manual_seed(0)
    out = {"torch": torch.__version__, "torch_device": device}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["opacus_tensor"] = opacus_side._time_tensor(
            X.to(device), y.to(device), batch, noise, clip, loss_fn, epochs, repeats
        )
        if device == "cpu":  # the DataLoader yields host tensors
            out["opacus_dataloader"] = opacus_side._time_dataloader(
                X, y, batch, noise, clip, loss_fn, epochs, repeats
            )
    print(json.dumps(out))


# ------------------------------------------------------------------------------------------
# reference comparisons (fairest side drives the torch venv)
# ------------------------------------------------------------------------------------------


def ermi_vs_opacus(args, n: int) -> dict:
    import ermi_speed

    X, y, groups = make_data(n, args.d, 2, seed=1)
    batch, epochs = args.reference_batch, args.reference_epochs
    seconds, _, cold, _, model = ermi_speed.time_fairest(X, y, groups, batch, epochs, args.repeats)
    noise = model.sigma_theta_ * min(batch, n) / ermi_speed.CLIP  # same std on the mean gradient
    with tempfile.TemporaryDirectory(prefix="fairest_gpu_") as tmp:
        path = Path(tmp) / "data.npz"
        np.savez(path, X=X, y=y)
        command = [
            str(args.torch_python), __file__, "--torch-runner", "opacus", str(path), str(batch),
            repr(float(noise)), repr(ermi_speed.CLIP), str(epochs), str(args.repeats),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"opacus runner failed:\n{done.stderr[-3000:]}")
    torch_side = json.loads(done.stdout.strip().splitlines()[-1])
    fastest = min(v for k, v in torch_side.items() if k.startswith("opacus_"))
    return {
        "case": "ermi-vs-opacus",
        "n": n,
        "d": args.d,
        "fairest_s_per_epoch": seconds,
        "fairest_cold_s": cold,
        "reference_s_per_epoch": fastest,
        "reference_over_fairest": fastest / seconds,
        **{k: v for k, v in torch_side.items() if k != "torch"},
        "torch": torch_side["torch"],
    }


def loss_gap_vs_hct(args, n: int) -> dict:
    import constrained_speed

    X, y, groups = make_data(n + n // 4, min(args.d, 16), 2, seed=2)
    data = {"X_train": X[:n], "y_train": y[:n], "g_train": groups[:n]}
    data.update({"X_test": X[n:], "y_test": y[n:], "g_test": groups[n:]})
    constrained_speed.run_fairest("ssl-alm", 1, 0, data)  # compile (not timed)
    fairest_side = constrained_speed.run_fairest("ssl-alm", args.reference_epochs, 0, data)
    with tempfile.TemporaryDirectory(prefix="fairest_gpu_") as workdir:
        path = Path(workdir) / "train.npz"
        np.savez(path, X=data["X_train"], y=data["y_train"], g=data["g_train"])
        reference = constrained_speed.run_reference(
            args.torch_python,
            "ssl-alm",
            args.reference_epochs,
            0,
            path,
            workdir,
            data,
            (1,),
            device=args.reference_device,
        )
    return {
        "case": "loss-gap-vs-hct",
        "n": n,
        "d": min(args.d, 16),
        "fairest_s_per_epoch": fairest_side["s_per_epoch"],
        "reference_s_per_epoch": reference["s_per_epoch"],
        "reference_over_fairest": reference["s_per_epoch"] / fairest_side["s_per_epoch"],
        "fairest_train_violation": fairest_side["train_violation"],
        "reference_train_violation": reference["train_violation"],
        "torch": reference["torch"],
        "torch_device": reference["torch_device"],
    }


# ------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------


def parse_args():
    from _common import base_parser

    parser = base_parser(__doc__, name=NAME)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--groups", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--eval-rows", type=int, default=200_000, help="rows scored after fit")
    parser.add_argument("--compare-cpu", action="store_true", help="also fit with JAX on CPU")
    parser.add_argument("--references", action="store_true", help="opacus and hct comparisons")
    parser.add_argument("--torch-python", type=Path, default=DEFAULT_TORCH_PYTHON)
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--reference-batch", type=int, default=256)
    parser.add_argument("--reference-epochs", type=int, default=1)
    parser.add_argument(
        "--reference-device",
        default="auto",
        choices=("cpu", "cuda", "auto"),
        help="torch device of the humancompatible-train reference (auto: cuda if available)",
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per worker")
    parser.add_argument("--smoke", action="store_true", help="2,000 rows, few iterations")
    return parser.parse_known_args()


def main() -> None:
    from _common import write_results

    args, rest = parse_args()
    if args.worker:
        case, n, d, n_groups, repeats, smoke, eval_rows = rest
        worker(
            args.worker,
            case,
            int(n),
            int(d),
            int(n_groups),
            int(repeats),
            smoke == "1",
            int(eval_rows),
        )
        return
    if args.smoke:
        os.environ["JAX_PLATFORMS"] = "cpu"  # the default backend of the workers, too
        args.repeats, args.reference_epochs = 1, 2
        if args.name == NAME:
            args.name = f"{NAME}_smoke"
    sizes = [2_000] if args.smoke else [int(n) for n in args.sizes]
    reference_rows = 2_000 if args.smoke else args.reference_rows
    rows = family_rows(args, sizes)
    if args.references:
        # JAX in this process: no 75 % preallocation, leave the GPU to the torch runners too
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        for compare in (ermi_vs_opacus, loss_gap_vs_hct):
            rows.append(compare(args, reference_rows))
            print(json.dumps(rows[-1], default=str), file=sys.stderr, flush=True)
    notes = (SMOKE_HEADER + "\n\n" if args.smoke else "") + (__doc__ or "").strip()
    notes += ("\n\n" + args.extra_notes).rstrip()
    present = {key for row in rows for key in row}
    columns = [key for key in TABLE_COLUMNS if key in present]
    print(write_results(args.name, rows, columns, notes=notes).read_text())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-runner":
        torch_runner(sys.argv[2:])
    else:
        main()
