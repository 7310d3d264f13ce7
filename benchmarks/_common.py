"""Helpers shared by the benchmark scripts: timing, machine description, result files."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def best_time(function, repeats: int = 3) -> float:
    """Best wall-clock time of ``function()`` over ``repeats`` runs, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def machine() -> dict:
    """What the numbers were measured on."""
    import jax
    import sklearn

    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jax_backend": jax.default_backend(),
        "scikit-learn": sklearn.__version__,
    }


def write_results(name: str, rows: list[dict], columns: list[str], notes: str = "") -> Path:
    """Write ``results/<name>.json`` and a markdown table ``results/<name>.md``."""
    RESULTS.mkdir(exist_ok=True)
    payload = {"machine": machine(), "rows": rows, "notes": notes}
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2))
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = [f"{row[c]:.4g}" if isinstance(row[c], float) else str(row[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    text = f"# {name}\n\n{notes}\n\nMachine: {payload['machine']}\n\n" + "\n".join(lines) + "\n"
    path = RESULTS / f"{name}.md"
    path.write_text(text)
    return path
