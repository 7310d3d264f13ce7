"""How the certified wrapper splits its rows and picks the candidate it certifies."""

from __future__ import annotations

import numpy as np

__all__ = ["stratified_safety_split", "choose_candidate", "fixed_sequence", "seed_of"]


def stratified_safety_split(strata: np.ndarray, safety_fraction: float, seed) -> np.ndarray:
    """Boolean mask of the safety rows: ``round(safety_fraction * n_s)`` random rows of
    every stratum ``s`` (vectorised: one sort by stratum and random key)."""
    rng = np.random.default_rng(seed)
    keys = rng.random(strata.shape[0])
    order = np.lexsort((keys, strata))
    sorted_strata = strata[order]
    counts = np.bincount(strata)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(strata.shape[0]) - starts[sorted_strata]
    safety_sorted = rank < np.round(safety_fraction * counts)[sorted_strata]
    mask = np.empty(strata.shape[0], dtype=bool)
    mask[order] = safety_sorted
    return mask


def choose_candidate(results) -> int:
    """The most accurate candidate whose predicted bound passes, else the closest one."""
    passing = np.flatnonzero(results["predicted_pass"])
    if passing.size:
        return int(passing[np.argmax(results["accuracy"][passing])])
    return int(np.argmin(results["predicted_margin"]))


def fixed_sequence(results, safety_test):
    """Learn-then-Test's fixed-sequence procedure (Angelopoulos et al. 2021).

    The candidates are ordered by their predicted margin (computed on the candidate part
    only, so the order is fixed before the safety part is looked at), most likely to pass
    first, and tested one after the other at the full delta until the first failure. The
    family-wise error stays at most delta, so every candidate that passed is certified
    at once and the most accurate of them is kept, without a Bonferroni factor.

    Returns
    -------
    index : int
        The kept candidate (the first tested one when none passed).
    outcome : list of ConstraintResult
        Its safety test.
    tested : ndarray of bool
        Which candidates were tested on the safety part.
    """
    order = np.argsort(results["predicted_margin"], kind="stable")
    tested = np.zeros(order.size, dtype=bool)
    passed = {}
    first = None
    for index in order:
        tested[index] = True
        outcome = safety_test(index)
        if first is None:
            first = (index, outcome)
        if not all(result.passed for result in outcome):
            break
        passed[index] = outcome
    if not passed:
        return first[0], first[1], tested
    best = max(passed, key=lambda index: results["accuracy"][index])
    return int(best), passed[best], tested


def seed_of(random_state):
    """An integer seed (or ``None``) of ``random_state``: ints and ``None`` as they are, one
    draw of a ``RandomState``."""
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return random_state
    return int(random_state.randint(np.iinfo(np.int32).max))
