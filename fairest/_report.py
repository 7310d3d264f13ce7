"""The report of ``fairest compare``: ``report.md``, a self-contained ``report.html``, PNGs.

The table gives each test metric with its percentile bootstrap interval; a *Notes*
section lists the warnings a fit raised (a fairness target missed, a solver stopped
early), one line per method. Figures:

- ``pareto.png``: test accuracy vs demographic parity difference, one point per method;
- ``paths.png``: the fairness paths of the methods that have one (test accuracy vs test
  unfairness along the knob, each point labelled with its value; the values in
  ``paths.csv``);
- ``cdf_<method>.png``: per-group CDFs of the test scores of every method with a
  percentile interval (partial fairness), the interval shaded.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["markdown_table", "write_report"]


@dataclass(frozen=True)
class Figure:
    """A PNG of the report and the sentence that says what it shows."""

    path: Path
    caption: str


def markdown_table(table: pd.DataFrame, floatfmt: str = "{:.4f}") -> str:
    """A pipe table of ``table`` (index included), with no dependency beyond pandas."""
    header = [table.index.name or "", *map(str, table.columns)]
    rows = [
        [str(index), *(floatfmt.format(v) if isinstance(v, float) else str(v) for v in values)]
        for index, values in zip(table.index, table.itertuples(index=False))
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _summary(data, table: pd.DataFrame) -> str:
    intervals = [c for c in table.columns if c.endswith(" CI")]
    text = (
        f"Train rows: {len(data.y_train)}, test rows: {len(data.y_test)}, task: {data.task}, "
        f"sensitive: {', '.join(data.s_train.columns)}. Metrics on the test split"
    )
    if intervals:
        text += (
            f"; the CI columns are {intervals[0].split()[-2]} percentile bootstrap intervals "
            "(test rows resampled, the same replicates for every method)"
        )
    return text + "."


SETTINGS_INTRO = (
    "Rows whose settings differ from the estimator's defaults (cheaper budgets, so the "
    "whole comparison takes about a minute of CPU on Adult; change them with "
    "`--set METHOD.PARAM=VALUE`):"
)


def _settings(comparison) -> list[str]:
    """One line per method whose compare settings are not its estimator's defaults."""
    settings = getattr(comparison, "settings", None) or {}
    return [f"{label}: {text}" for label, text in settings.items()]


def _notes(table: pd.DataFrame) -> list[str]:
    """One line per method whose fit warned."""
    if "note" not in table.columns:
        return []
    return [f"{label}: {note}" for label, note in table["note"].items() if note]


def write_report(comparison, data, output: Path) -> Path:
    """Write ``report.md``, ``report.html``, ``results.csv`` and the PNGs; return report.md."""
    output.mkdir(parents=True, exist_ok=True)
    table = comparison.table
    table.to_csv(output / "results.csv")
    paths = getattr(comparison, "paths", None) or {}
    if paths:
        pd.concat(paths.values(), ignore_index=True).to_csv(output / "paths.csv", index=False)
    figures = _figures(comparison, data, output)
    title = f"fairest compare: {data.name}"
    shown = table.drop(columns="note", errors="ignore")
    lines = [f"# {title}", "", _summary(data, table), "", markdown_table(shown), ""]
    settings = _settings(comparison)
    if settings:
        lines += ["## Settings", "", SETTINGS_INTRO, "", *(f"- {line}" for line in settings), ""]
    notes = _notes(table)
    if notes:
        lines += ["## Notes", "", *(f"- {note}" for note in notes), ""]
    for figure in figures:
        lines += [f"![{figure.caption}]({figure.path.name})", ""]
    report = output / "report.md"
    report.write_text("\n".join(lines), encoding="utf-8")
    page = _html(title, _summary(data, table), shown, notes, figures, settings)
    (output / "report.html").write_text(page, encoding="utf-8")
    return report


def _html(
    title: str, summary: str, table: pd.DataFrame, notes, figures: list[Figure], settings=()
) -> str:
    """One self-contained page: the table, the notes and the PNGs inlined as base64."""
    images = "".join(
        f'<figure><img alt="{html.escape(f.caption)}" src="data:image/png;base64,'
        f'{base64.b64encode(f.path.read_bytes()).decode()}"/>'
        f"<figcaption>{html.escape(f.caption)}</figcaption></figure>"
        for f in figures
    )
    formatted = table.to_html(float_format=lambda v: f"{v:.4f}", border=0, classes="results")
    if settings:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in settings)
        intro = html.escape(SETTINGS_INTRO.replace("`", ""))
        formatted += f"<h2>Settings</h2><p>{intro}</p><ul>{items}</ul>"
    if notes:
        items = "".join(f"<li>{html.escape(note)}</li>" for note in notes)
        formatted += f"<h2>Notes</h2><ul>{items}</ul>"
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:80em}"
        "table.results{border-collapse:collapse}"
        "table.results td,table.results th{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:right}"
        "table.results td:last-child{text-align:left}"
        "img{max-width:100%}figcaption{color:#555;margin-bottom:2em}"
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"/>'
        f"<title>{html.escape(title)}</title><style>{style}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(summary)}</p>{formatted}{images}"
        "</body></html>\n"
    )


def _figures(comparison, data, output: Path) -> list[Figure]:
    figures = []
    if data.task == "classification":
        figures.append(_pareto_figure(comparison.table, data, output))
    if getattr(comparison, "paths", None):
        figures.append(_paths_figure(comparison.paths, data, output))
    for name, pipeline in comparison.fitted.items():
        if getattr(pipeline[-1], "interval_", None) is not None:
            figures.append(_cdf_figure(name, pipeline, data, output))
    return figures


def _pareto_figure(table: pd.DataFrame, data, output: Path) -> Figure:
    from fairest.plot import plot_pareto_frontier

    ax = plot_pareto_frontier(
        table, x="demographic parity diff", y="accuracy", title=f"fairest compare: {data.name}"
    )
    ax.figure.set_size_inches(12, 5)
    legend = ax.get_legend()  # one entry per method: beside the axes, not over the points
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize="small",
        title=legend.get_title().get_text() if legend is not None else None,
    )
    path = output / "pareto.png"
    ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return Figure(path, "accuracy vs demographic parity difference")


def _paths_figure(paths: dict, data, output: Path) -> Figure:
    """Every method's fairness path on the test split, each frontier point labelled."""
    from fairest.plot import plot_pareto_frontier

    frame = pd.concat(paths.values(), ignore_index=True)
    frame["method"] = frame["name"] + ": path over " + frame["param"]
    metrics = ", ".join(sorted(set(frame["unfairness metric"])))
    caption = f"fairness paths: test accuracy vs test {metrics} along each method's knob"
    ax = plot_pareto_frontier(
        frame, x="unfairness", y="accuracy", annotate="value", title=f"{data.name}: {caption}"
    )
    ax.set_xlabel(f"test {metrics}  (lower is fairer)")
    ax.set_ylabel("test accuracy  (higher is better)")
    ax.figure.set_size_inches(12, 5)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    path = output / "paths.png"
    ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return Figure(path, caption)


def _cdf_figure(name: str, pipeline, data, output: Path) -> Figure:
    """Per-group CDFs of the test scores, the fitted percentile interval shaded."""
    from fairest.plot import plot_group_score_cdfs

    estimator = pipeline[-1]
    alpha, beta = estimator.interval_
    scores = np.asarray(pipeline.decision_function(data.X_test))
    caption = (
        f"{name}: per-group CDFs of the test scores, percentile interval "
        f"[{alpha:.2f}, {beta:.2f}] shaded"
    )
    ax = plot_group_score_cdfs(
        scores,
        sensitive_features=data.s_test.astype(str).to_numpy(),
        interval=(alpha, beta),
        threshold=getattr(estimator, "threshold", None),
        title=caption,
    )
    ax.figure.set_size_inches(9, 5)
    path = output / f"cdf_{name}.png"
    ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return Figure(path, caption)
