"""The benchmark harness (benchmarks/_common.py) measures what it says; no timing asserts."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _common


def test_time_calls_splits_cold_and_warm():
    calls = []
    timing = _common.time_calls(lambda: calls.append(1), repeats=4)
    assert len(calls) == 5 and timing.repeats == 4
    assert timing.warm_min_s <= timing.warm_s and timing.peak_rss_mb > 0


def test_ratio_row_is_anchor_over_fairest():
    ours = _common.Timing(2.0, 1.0, 1.0, 1.0, 3, 0.0, 10.0)
    anchor = _common.Timing(8.0, 5.0, 5.0, 5.0, 3, 0.0, 20.0)
    row = _common.ratio_row("case", ours, anchor, n=10)
    assert row["warm_ratio"] == 5.0 and row["cold_ratio"] == 4.0 and row["n"] == 10
    assert _common.markdown_table([row], ["case", "warm_ratio"]).splitlines()[-1] == "| case | 5 |"


def test_run_worker_returns_the_workers_json_with_process_figures(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(_common.__file__).parent)!r})\n"
        "import _common\n"
        "out = sys.argv[sys.argv.index('--worker') + 1]\n"
        "_common.write_worker_result(out, {'answer': int(sys.argv[-1]) * 2})\n"
    )
    result = _common.run_worker(script, ["21"], timeout=60)
    assert result["answer"] == 42 and result["process_wall_s"] > 0


def test_run_worker_reports_a_failure_with_its_stderr(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("raise SystemExit('worker broke')\n")
    with pytest.raises(RuntimeError, match="worker broke"):
        _common.run_worker(script, [], timeout=60)
