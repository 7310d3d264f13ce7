"""What an ERMI fit shows while and after it runs: the progress bar of
:func:`~fairest.utils._reporting.show_progress` (SGDA's epochs, the solves of the
``"auto"`` weight search) and the ``verbose`` lines of SGDA's epochs."""

from __future__ import annotations

from fairest.utils._reporting import log_fit, report_progress, wants_progress

__all__ = ["log_epochs", "progress_hook"]


def progress_hook(estimator, unit: str):
    """``progress(done, total)`` moving the progress bar of ``estimator``'s fit by
    ``unit`` s (``total`` None when unknown), or ``None`` when no bar nor level-2 log would
    show it (the solvers then skip the calls)."""
    if not wants_progress(estimator):
        return None

    def progress(done, total):
        report_progress(estimator, done, total, unit=unit)

    return progress


def log_epochs(estimator, record, n_iter: int) -> None:
    """verbose: one line per SGDA epoch (level 2) and a summary of the last one, from
    the per-iteration ``record`` (``history_``'s columns)."""
    n_epochs = estimator.n_epochs
    steps = n_iter // n_epochs
    for e in range(n_epochs):
        part = slice(e * steps, (e + 1) * steps)
        log_fit(
            estimator,
            "epoch %d/%d: loss %.5f, saddle %.5f, ||W|| %.4f",
            e + 1,
            n_epochs,
            record["batch_loss"][part].mean(),
            record["batch_saddle"][part].mean(),
            record["w_norm"][part][-1],
            level=2,
        )
    last = slice(n_iter - steps, n_iter)
    log_fit(
        estimator,
        "SGDA: %d iterations (%d epochs), last-epoch loss %.5f, saddle %.5f, ||W|| %.4f",
        n_iter,
        n_epochs,
        record["batch_loss"][last].mean(),
        record["batch_saddle"][last].mean(),
        record["w_norm"][-1],
    )
