"""Where a warm BADR-SLSQP fit spends its time (issue 3, speed goals).

Same data as ``benchmarks/badr_vs_reference.py`` (``make_grouped_classification``, d = 10,
seed 0, 80/20 split stratified by group, train split only), ``BADRClassifier`` at its
defaults (SLSQP, logistic, alpha = 1e-3, safeguard on) with demographic parity. One fresh
process per case: a cold fit, then ``--repeats`` warm fits, the profiled one being the last.

Counted: SLSQP iterations, oracle calls (lower-level solves), Newton steps per call.
Timed (wall, each jitted part followed by ``block_until_ready`` so that the split is
exact; the blocking itself adds little since the next call needs the result anyway):
the lower-level Newton solves, the metric + adjoint part, the rest of the oracle calls
(host: cache, device-to-host copies), the safeguard's baselines (their oracle calls
included), the solver runs (their oracle calls included, restarts counted apart) and the
rest of ``fit`` (validation, padding, final exact metric). ``os.getloadavg()`` and the
process CPU time are recorded with each fit (2 shared cores).

Run: ``python benchmarks/badr_profile.py`` (n = 200,000, d = 10, G in {2, 5}); options
``--n-samples``, ``--n-features``, ``--groups``, ``--metric``, ``--repeats``, ``--name``
(results file name, default ``badr_profile``), ``--extra-notes``. Each worker also times
fairest's ERM (``GroupWeightedClassifier(weights="uniform")``) on the same rows.

``--compare N:G,N:G,...`` (issue 19, BADR within 3 ERM fits) instead times, in ONE
process, fairest's ERM and BADR with the two-group segment search of
``fairest.reweighting._segment`` off (``ORACLE_TUNING.segment_search = False``: SLSQP) and on,
interleaved warm fits, for every training size N and group count G; it
counts oracle calls, hypergradients (adjoint solves) and Newton steps and checks that
both select the same weights. ``--compare-name`` names the results file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# the paper's settings (badr spec): smoothing temperature 1, the whole simplex
PAPER = {"metric_params": {"temperature": 1.0}, "max_weight_ratio": None}

HERE = Path(__file__).resolve().parent
N_FEATURES = 10
TEST_SIZE = 0.2
SEED = 0


def train_split(n_samples: int, num_groups: int, n_features: int = N_FEATURES):
    from sklearn.model_selection import train_test_split

    from fairest.datasets import make_grouped_classification

    X, y, groups = make_grouped_classification(
        n_samples=n_samples, n_features=n_features, n_groups=num_groups, random_state=SEED
    )
    X, _, y, _, groups, _ = train_test_split(
        X, y, groups, test_size=TEST_SIZE, stratify=groups, random_state=SEED
    )
    return X, y, groups


class Probe:
    """Timers wrapped around the fit's stages (module attributes patched in place)."""

    def __init__(self):
        import jax

        from fairest.reweighting import _bilevel, _oracle, _solve

        self.jax, self.bilevel = jax, _bilevel
        self.reset()
        self._wrap(_bilevel, "lower_level", "lower_s", block=True)
        self._wrap(_bilevel, "_lower_on_rows", "lower_s", block=True)  # one-group vertices
        self._wrap(_bilevel, "upper_level", "adjoint_s", block=True)
        self._wrap(_oracle.ImplicitOracle, "evaluate", "oracle_s", miss_only=True)
        self._wrap(_solve, "evaluate_baselines", "baselines_s")
        self._wrap(_solve, "run_solver", "solver_s", runs=True)

    def reset(self):
        self.times = {
            "lower_s": 0.0,
            "adjoint_s": 0.0,
            "oracle_s": 0.0,
            "baselines_s": 0.0,
            "solver_s": 0.0,
            "restarts_s": 0.0,
        }
        self.steps = []  # Newton steps of each oracle call
        self.solver_runs = 0

    def _wrap(self, owner, name, key, block=False, miss_only=False, runs=False):
        original = getattr(owner, name)
        probe = self

        def timed(*args, **kwargs):
            if miss_only:  # cache hits cost nothing worth timing
                orc, lam = args[0], np.asarray(args[1], dtype=np.float64)
                lam = np.where(lam > 0.0, lam, 0.0)  # the oracle's cache key
                if lam.tobytes() in orc._cache:
                    return original(*args, **kwargs)
            start = time.perf_counter()
            out = original(*args, **kwargs)
            if block:
                probe.jax.block_until_ready(out)
            elapsed = time.perf_counter() - start
            if runs:
                probe.solver_runs += 1
                key_now = "solver_s" if probe.solver_runs == 1 else "restarts_s"
                probe.times[key_now] += elapsed
            else:
                probe.times[key] += elapsed
            if name in ("lower_level", "_lower_on_rows"):
                probe.steps.append(int(out.n_iter))
            return out

        setattr(owner, name, timed)


def time_erm(X, y, groups, repeats: int) -> tuple[float, float]:
    """Best warm wall and CPU times of fairest's own ERM on the same rows:
    ``GroupWeightedClassifier`` with uniform group weights (the lower level at BADR's
    starting point)."""
    from fairest.reweighting import GroupWeightedClassifier

    erm = GroupWeightedClassifier(weights="uniform")
    wall, cpu = [], []
    for _ in range(1 + repeats):
        cpu_start, start = time.process_time(), time.perf_counter()
        erm.fit(X, y, sensitive_features=groups)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    return min(wall[1:]), min(cpu[1:])


def worker(
    n_samples: int, num_groups: int, metric: str, repeats: int, out_path: str, n_features: int
) -> None:
    X, y, groups = train_split(n_samples, num_groups, n_features)
    probe = Probe()
    from fairest.reweighting import BADRClassifier

    erm_warm, erm_cpu = time_erm(X, y, groups, repeats)

    fits = []
    for _ in range(1 + repeats):
        probe.reset()
        load = list(os.getloadavg())
        cpu, start = time.process_time(), time.perf_counter()
        model = BADRClassifier(metric=metric, **PAPER).fit(X, y, sensitive_features=groups)
        fits.append(
            {
                "wall_s": time.perf_counter() - start,
                "cpu_s": time.process_time() - cpu,
                "loadavg": load,
            }
        )
    times = dict(probe.times)
    total = fits[-1]["wall_s"]
    row = {
        "n": n_samples,
        "d": n_features,
        "G": num_groups,
        "metric": metric,
        "cold_s": fits[0]["wall_s"],
        "warm_s": total,
        "warm_cpu_s": fits[-1]["cpu_s"],
        "warm_best_s": min(f["wall_s"] for f in fits[1:]),
        "erm_warm_s": erm_warm,
        "badr_over_erm": min(f["wall_s"] for f in fits[1:]) / erm_warm,
        "erm_cpu_s": erm_cpu,
        "badr_over_erm_cpu": min(f["cpu_s"] for f in fits[1:]) / erm_cpu,
        "slsqp_iter": int(model.n_iter_),
        "oracle_calls": int(model.n_evaluations_),
        "newton_steps": int(sum(probe.steps)),
        "newton_steps_per_call": probe.steps,
        "lower_s": times["lower_s"],
        "adjoint_s": times["adjoint_s"],
        "oracle_host_s": times["oracle_s"] - times["lower_s"] - times["adjoint_s"],
        "baselines_s": times["baselines_s"],
        "solver_s": times["solver_s"],
        "restarts_s": times["restarts_s"],
        "rest_of_fit_s": total - times["baselines_s"] - times["solver_s"] - times["restarts_s"],
        "unfairness": float(model.unfairness_),
        "unfairness_exact": float(model.unfairness_exact_),
        "group_weights": model.group_weights_.tolist(),
        "selected": str(model.selected_),
        "fits": fits,
    }
    Path(out_path).write_text(json.dumps(row))


NOTES = """\
Warm BADRClassifier(solver="slsqp") fit (defaults: logistic, alpha = 1e-3, safeguard on,
inner_tol 1e-10), demographic parity (temperature = 1), data of `badr_vs_reference.py` (d = 10, seed 0,
train split = 80 %). One fresh process per case: cold fit, then warm fits; the profiled fit is
the last one (`warm_s`; `warm_best_s` = best warm fit). Split of the profiled fit (wall):
`lower_s` Newton solves, `adjoint_s` metric + adjoint, `oracle_host_s` the rest of the oracle
calls, `baselines_s` the safeguard's baselines (their oracle calls included), `solver_s` the
SLSQP run (its oracle calls included), `restarts_s` further solver runs, `rest_of_fit_s`
validation, padding, final exact metric. `newton_steps` = Newton steps over all oracle calls
(a call makes steps + 1 kernel passes plus rejected line-search trials). `erm_warm_s` /
`erm_cpu_s`: best warm wall / CPU seconds of fairest's own ERM on the same rows
(`GroupWeightedClassifier(weights="uniform")`, fitted in the same process just before);
`badr_over_erm` and `badr_over_erm_cpu` divide BADR's best warm fit by it (issue 19 target:
at most 3 at n = 1e6). 2 shared cores: the 1-min load of every fit is in the JSON (`fits`);
under load the CPU ratio is the steadier one."""


class OracleCounter:
    """The last ImplicitOracle built (its counters are read after a fit)."""

    def __init__(self):
        from fairest.reweighting import _oracle

        self.last = None
        original = _oracle.ImplicitOracle.__init__
        counter = self

        def init(orc, *args, **kwargs):
            original(orc, *args, **kwargs)
            counter.last = orc

        _oracle.ImplicitOracle.__init__ = init


class CallRecorder:
    """Every lower-level solve (``ImplicitOracle._solve``) and every hypergradient added
    later (``_add_gradient``) of a fit: phase (baselines / solver / rest of the fit),
    weights, Newton tolerance, steps, whether the adjoint ran, CPU seconds (each call
    ends with a device-to-host copy, so it is synchronous)."""

    def __init__(self):
        from fairest.reweighting import _oracle, _solve

        self.calls, self.phase = [], "fit"
        recorder = self
        solve, add_gradient = _oracle.ImplicitOracle._solve, _oracle.ImplicitOracle._add_gradient

        def timed_solve(orc, lam, tol, with_grad=True):
            steps, cpu = orc.inner_iter, time.process_time()
            out = solve(orc, lam, tol, with_grad)
            recorder.calls.append(
                {
                    "phase": recorder.phase,
                    "lam": np.round(lam, 6).tolist(),
                    "tol": tol,
                    "steps": orc.inner_iter - steps,
                    "adjoint": out[1] is not None,
                    "cpu_s": time.process_time() - cpu,
                }
            )
            return out

        def timed_gradient(orc, key, lam, cached):
            cpu = time.process_time()
            out = add_gradient(orc, key, lam, cached)
            recorder.calls.append(
                {
                    "phase": recorder.phase,
                    "lam": np.round(lam, 6).tolist(),
                    "tol": None,
                    "steps": 0,
                    "adjoint": True,
                    "cpu_s": time.process_time() - cpu,
                }
            )
            return out

        _oracle.ImplicitOracle._solve = timed_solve
        _oracle.ImplicitOracle._add_gradient = timed_gradient
        for name, phase in (("evaluate_baselines", "baselines"), ("run_solver", "solver")):
            setattr(_solve, name, self._in_phase(getattr(_solve, name), phase))

    def _in_phase(self, function, phase):
        def wrapped(*args, **kwargs):
            previous, self.phase = self.phase, phase
            try:
                return function(*args, **kwargs)
            finally:
                self.phase = previous

        return wrapped


def _eager_rows(problem) -> bool:
    """``--before eager_rows``: no GatheredRows, a one-group vertex's rows gathered as a
    copy (within the 128 MiB cap) or not at all (the code before the lazy row blocks)."""
    return False


def compare_setting(
    n_train: int, num_groups: int, d: int, metric: str, repeats: int, before: str
) -> list:
    """ERM, then BADR before / after interleaved (one warm-up fit each), in this process."""
    import jax

    from fairest.reweighting import BADRClassifier, _bilevel
    from fairest.reweighting._defaults import ORACLE_TUNING

    counter, recorder = OracleCounter(), CallRecorder()
    default_search = ORACLE_TUNING.segment_search
    default_lazy = _bilevel.reads_rows_lazily
    X, y, groups = train_split(int(round(n_train / (1 - TEST_SIZE))), num_groups, d)
    jax.clear_caches()
    erm_wall, erm_cpu = time_erm(X, y, groups, repeats + 1)
    runs = {"before": [], "after": []}
    models = {}
    for rep in range(1 + repeats):
        for code in ("before", "after"):
            if code == "before" and before == "segment_off":
                ORACLE_TUNING.segment_search = False
            if code == "before" and before == "eager_rows":
                _bilevel.reads_rows_lazily = _eager_rows
            recorder.calls = []
            try:
                load = os.getloadavg()[0]
                cpu, start = time.process_time(), time.perf_counter()
                model = BADRClassifier(metric=metric, **PAPER).fit(X, y, sensitive_features=groups)
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            finally:
                ORACLE_TUNING.segment_search = default_search
                _bilevel.reads_rows_lazily = default_lazy
            orc = counter.last
            if rep:  # the first fit of each compiles
                runs[code].append(
                    {
                        "wall_s": wall,
                        "cpu_s": cpu,
                        "load1": load,
                        "oracle_calls": int(orc.nfev),
                        "gradients": int(orc.gradients),
                        "newton_steps": int(orc.inner_iter),
                        "calls": recorder.calls,
                    }
                )
            models[code] = model
    rows = []
    for code, fits in runs.items():
        model = models[code]
        best = min(fits, key=lambda f: f["cpu_s"])
        rows.append(
            {
                "n": X.shape[0],
                "d": d,
                "G": num_groups,
                "code": code,
                "warm_best_cpu_s": best["cpu_s"],
                "erm_cpu_s": erm_cpu,
                "badr_over_erm_cpu": best["cpu_s"] / erm_cpu,
                "warm_best_s": min(f["wall_s"] for f in fits),
                "erm_warm_s": erm_wall,
                "badr_over_erm": min(f["wall_s"] for f in fits) / erm_wall,
                "oracle_calls": best["oracle_calls"],
                "gradients": best["gradients"],
                "newton_steps": best["newton_steps"],
                "slsqp_iter": int(model.n_iter_),
                "selected": str(model.selected_),
                "unfairness": float(model.unfairness_),
                "unfairness_exact": float(model.unfairness_exact_),
                "weight_diff_vs_before": float(
                    np.max(np.abs(model.group_weights_ - models["before"].group_weights_))
                ),
                "unfairness_exact_diff_vs_before": abs(
                    float(model.unfairness_exact_) - float(models["before"].unfairness_exact_)
                ),
                "load1": best["load1"],
                "group_weights": model.group_weights_.tolist(),
                "calls_of_best_fit": best["calls"],
                "fits": [{k: v for k, v in f.items() if k != "calls"} for f in fits],
            }
        )
        print(
            {k: v for k, v in rows[-1].items() if k not in ("fits", "calls_of_best_fit")},
            flush=True,
        )
        for call in best["calls"]:
            print("   ", call, flush=True)
    return rows


COMPARE_NOTES = """\
Issue 19: BADR within 3 ERM fits at n = 1e6. ONE process (`--compare`), data of
`badr_vs_reference.py` (`make_grouped_classification`, seed 0, train split 80 %; n = training
rows, d = 20), demographic parity, `BADRClassifier()` defaults (SLSQP, logistic, alpha = 1e-3,
safeguard on, inner_tol 1e-10). Per setting (JAX caches cleared first): fairest's ERM
(`GroupWeightedClassifier(weights="uniform")`, best warm fit), then BADR `before` / `after`
interleaved, one warm-up fit each and `--repeats` timed ones; `before` = this tree with
(`--before segment_off`, the default) `ORACLE_TUNING.segment_search = False` (SLSQP at every G: the
outer solver of commit c115f3b; G > 2 runs the same code both ways) or (`--before
eager_rows`) no `GatheredRows` (a one-group vertex solved on its rows only through a gathered
copy of at most 128 MiB, else on all rows: the code before the lazy row blocks); `after` =
defaults (at G = 2 the bracket search of `fairest/reweighting/_segment.py`). Columns: best warm CPU
(`time.process_time`, both cores) and wall seconds, their ratio to ERM's, `oracle_calls`
(lower-level solves), `gradients` (adjoint solves), `newton_steps` (over all solves, each
solve is steps + 1 passes), `load1` the 1-minute load before the best fit (2 shared cores:
read the CPU ratio), `weight_diff_vs_before` = max |group_weights_ after - before|,
`unfairness_exact_diff_vs_before` likewise for the exact train unfairness. The JSON lists every
lower-level solve of the best fit (`calls_of_best_fit`: phase, weights, Newton tolerance,
steps, whether the adjoint ran, CPU s; `tol` None = a hypergradient added to a point solved
before without it)."""


def main_compare(args) -> None:
    sys.path.insert(0, str(HERE))
    from _common import write_results

    rows = []
    for item in args.compare.split(","):
        n, g = item.split(":")
        rows += compare_setting(
            int(float(n)), int(g), args.n_features, args.metric, args.repeats, args.before
        )
    columns = [
        "n",
        "d",
        "G",
        "code",
        "warm_best_cpu_s",
        "erm_cpu_s",
        "badr_over_erm_cpu",
        "warm_best_s",
        "erm_warm_s",
        "badr_over_erm",
        "oracle_calls",
        "gradients",
        "newton_steps",
        "slsqp_iter",
        "unfairness_exact",
        "weight_diff_vs_before",
        "unfairness_exact_diff_vs_before",
        "load1",
    ]
    notes = COMPARE_NOTES + ("\n" + args.extra_notes if args.extra_notes else "")
    print(write_results(args.compare_name, rows, columns, notes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n-samples", type=int, default=200_000)
    parser.add_argument("--n-features", type=int, default=N_FEATURES)
    parser.add_argument("--groups", type=int, nargs="*", default=[2, 5])
    parser.add_argument("--metric", default="demographic_parity")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--name", default="badr_profile")
    parser.add_argument("--extra-notes", default="")
    parser.add_argument("--worker", nargs=6)
    parser.add_argument("--compare", default="", help="N:G,N:G,... in one process")
    parser.add_argument("--compare-name", default="badr_profile_1e6")
    parser.add_argument(
        "--before",
        choices=("segment_off", "eager_rows"),
        default="segment_off",
        help="what --compare's `before` turns off (see COMPARE_NOTES)",
    )
    args = parser.parse_args()
    if args.compare:
        main_compare(args)
        return
    if args.worker:
        n, g, metric, repeats, out, d = args.worker
        worker(int(n), int(g), metric, int(repeats), out, int(d))
        return
    sys.path.insert(0, str(HERE))
    from _common import write_results

    rows = []
    out = HERE / ".venvs" / "badr_profile_row.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for num_groups in args.groups:
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                str(args.n_samples),
                str(num_groups),
                args.metric,
                str(args.repeats),
                str(out),
                str(args.n_features),
            ],
            check=True,
        )
        row = json.loads(out.read_text())
        rows.append(row)
        print(
            {k: v for k, v in row.items() if k not in ("fits", "newton_steps_per_call")}, flush=True
        )
    columns = [
        "n",
        "d",
        "G",
        "metric",
        "cold_s",
        "warm_s",
        "warm_best_s",
        "erm_warm_s",
        "badr_over_erm",
        "warm_cpu_s",
        "slsqp_iter",
        "oracle_calls",
        "newton_steps",
        "lower_s",
        "adjoint_s",
        "oracle_host_s",
        "baselines_s",
        "solver_s",
        "restarts_s",
        "rest_of_fit_s",
        "unfairness",
    ]
    notes = NOTES + ("\n" + args.extra_notes if args.extra_notes else "")
    print(write_results(args.name, rows, columns, notes))


if __name__ == "__main__":
    main()
