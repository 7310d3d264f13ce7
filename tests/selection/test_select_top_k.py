"""select_top_k: optimality against brute force and scipy's MILP, feasibility, ties, errors."""

import itertools

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

from fairest.selection import select_top_k
from fairest.utils import FairnessWarning


def _brute_force(scores, codes, k, lower, upper):
    """Best total score over every k-subset within the count bounds (None if none)."""
    best = None
    for subset in itertools.combinations(range(len(scores)), k):
        counts = np.bincount(codes[list(subset)], minlength=len(lower))
        if np.all(counts >= lower) and np.all(counts <= upper):
            value = scores[list(subset)].sum()
            best = value if best is None else max(best, value)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_bounds_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 11))
    n_groups = int(rng.integers(2, 4))
    codes = rng.integers(0, n_groups, n)
    codes[:n_groups] = np.arange(n_groups)  # every group present
    scores = rng.integers(0, 6, n).astype(float)  # ties on purpose
    k = int(rng.integers(1, n))
    lower = rng.integers(0, 3, n_groups)
    upper = lower + rng.integers(0, 4, n_groups)
    best = _brute_force(scores, codes, k, lower, upper)
    min_share = {g: int(lower[g]) for g in range(n_groups)}
    max_share = {g: int(upper[g]) for g in range(n_groups)}
    if best is None:
        with pytest.raises(ValueError, match="min_share|max_share"):
            select_top_k(scores, codes, k, min_share=min_share, max_share=max_share)
        return
    mask = select_top_k(scores, codes, k, min_share=min_share, max_share=max_share)
    counts = np.bincount(codes[mask], minlength=n_groups)
    assert mask.sum() == k
    assert np.all(counts >= lower) and np.all(counts <= np.minimum(upper, np.bincount(codes)))
    assert scores[mask].sum() == best


@pytest.mark.parametrize(
    ("n", "k", "lower", "upper"),
    [
        (300, 60, [20, 0, 5, 0, 0], [25, 30, 10, 30, 8]),
        # k small against n: the greedy runs on a prefix of the score order; group 0 (the
        # lowest scores) has too few rows in it, the caps make the prefix double
        (3000, 40, [15, 0, 0, 0, 0], [40, 2, 3, 40, 40]),
        (3000, 40, [0, 10, 0, 0, 0], [40, 40, 40, 3, 1]),
        (3000, 40, [0, 0, 0, 0, 0], [40, 40, 40, 40, 40]),
    ],
)
def test_bounds_match_milp(n, k, lower, upper):
    rng = np.random.default_rng(7)
    n_groups = 5
    codes = rng.integers(0, n_groups, n)
    scores = rng.normal(size=n) + 1.5 * codes
    lower, upper = np.array(lower), np.array(upper)
    onehot = (codes[None, :] == np.arange(n_groups)[:, None]).astype(float)
    result = milp(
        -scores,
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
        constraints=[
            LinearConstraint(np.ones((1, n)), k, k),
            LinearConstraint(onehot, lower, upper),
        ],
    )
    mask = select_top_k(
        scores,
        codes,
        k,
        min_share=dict(enumerate(lower.tolist())),
        max_share=dict(enumerate(upper.tolist())),
    )
    assert scores[mask].sum() == pytest.approx(-result.fun, abs=1e-9)
    assert np.array_equal(mask, result.x > 0.5)  # continuous scores: a unique optimum
    indices = select_top_k(
        scores,
        codes,
        k,
        min_share=dict(enumerate(lower.tolist())),
        max_share=dict(enumerate(upper.tolist())),
        return_indices=True,
    )
    assert np.array_equal(np.sort(indices), np.flatnonzero(mask))
    assert np.all(np.diff(scores[indices]) <= 0)  # best first


def test_ties_at_the_prefix_cut_prefer_earlier_rows():
    scores = np.zeros(1000)
    scores[[5, 900]] = 1.0
    group = np.arange(1000) % 2
    indices = select_top_k(scores, group, 4, min_share={1: 1}, return_indices=True)
    assert indices.tolist() == [5, 900, 0, 1]
    assert select_top_k(scores, group, 0).sum() == 0


def test_unconstrained_is_the_top_k_and_ties_prefer_earlier_rows():
    scores = np.array([1.0, 3.0, 3.0, 2.0, 3.0])
    group = np.array(["a", "b", "a", "b", "a"])
    assert select_top_k(scores, group, 2, return_indices=True).tolist() == [1, 2]
    assert select_top_k(np.zeros(6), group.tolist() + ["b"], 3).tolist() == [1, 1, 1, 0, 0, 0]


def test_shares_counts_and_fraction_k():
    scores = np.arange(20, 0, -1, dtype=float)
    group = np.array(["a"] * 14 + ["b"] * 6)
    # k = 0.35 of 20 rows = 7 seats; a share of 3/7 rounds to exactly 3 seats
    mask = select_top_k(scores, group, 0.35, min_share={"b": 3 / 7})
    assert mask.sum() == 7 and mask[14:].sum() == 3 and mask[:4].all()
    assert np.array_equal(mask, select_top_k(scores, group, 7, min_share={"b": 3}))
    # a minimum share rounds up, a maximum share down
    assert select_top_k(scores, group, 7, min_share={"b": 0.3})[14:].sum() == 3
    assert select_top_k(scores, group, 7, max_share={"a": 0.5})[:14].sum() == 3
    # a scalar bounds every group; a maximum above a group's size is capped by it
    mask = select_top_k(scores, group, 12, max_share=10)
    assert mask[:14].sum() == 10 and mask[14:].sum() == 2


def test_intersectional_groups_and_dict_keys():
    scores = np.arange(8, 0, -1, dtype=float)
    features = np.array([["x", 0], ["x", 1], ["y", 0], ["y", 1]] * 2, dtype=object)
    mask = select_top_k(scores, features, 4, min_share={("y", 1): 2})
    assert mask[[3, 7]].all()


def _brute_force_strata(scores, codes, strata, k):
    order = np.argsort(-scores, kind="stable")
    seats = np.bincount(strata[order[:k]], minlength=strata.max() + 1)
    best = None
    for subset in itertools.combinations(range(len(scores)), k):
        chosen = np.zeros(len(scores), dtype=bool)
        chosen[list(subset)] = True
        ok = True
        for s in range(strata.max() + 1):
            in_s = strata == s
            if chosen[in_s].sum() != seats[s]:
                ok = False
                break
            for g in np.unique(codes[in_s]):
                cell = in_s & (codes == g)
                quota = seats[s] * cell.sum() / in_s.sum()
                if chosen[cell].sum() not in (np.floor(quota), np.ceil(quota)):
                    ok = False
        if ok:
            value = scores[chosen].sum()
            best = value if best is None else max(best, value)
    return best


@pytest.mark.parametrize("seed", range(25))
def test_strata_match_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 11))
    codes = rng.integers(0, 2, n)
    strata = rng.integers(0, 2, n)
    strata[:2] = [0, 1]
    scores = rng.integers(0, 8, n) + 3.0 * strata
    k = int(rng.integers(1, n))
    mask = select_top_k(scores, codes, k, strata=strata)
    assert mask.sum() == k
    assert scores[mask].sum() == _brute_force_strata(scores, codes, strata, k)


def test_strata_equalise_rates_within_strata():
    rng = np.random.default_rng(3)
    n = 20_000
    group = rng.integers(0, 2, n)
    stratum = rng.integers(0, 3, n)
    scores = stratum + rng.normal(size=n) + 0.8 * group
    mask = select_top_k(scores, group, 3_000, strata=stratum)
    for s in range(3):
        rates = [mask[(stratum == s) & (group == g)].mean() for g in (0, 1)]
        # every count is within one seat of its quota k_s n_sg / n_s
        slack = sum(1.0 / ((stratum == s) & (group == g)).sum() for g in (0, 1))
        assert abs(rates[0] - rates[1]) < slack
    plain = select_top_k(scores, group, 3_000)
    assert [mask[stratum == s].sum() for s in range(3)] == [
        plain[stratum == s].sum() for s in range(3)
    ]


def test_large_input_is_exact_per_group():
    rng = np.random.default_rng(0)
    n, k = 200_000, 2_000
    group = rng.integers(0, 10, n)
    scores = rng.normal(size=n) + 0.1 * group
    mask = select_top_k(scores, group, k, min_share=0.1, max_share=0.1)
    assert np.bincount(group[mask]).tolist() == [200] * 10
    for g in range(10):  # each group's seats are its best scores
        ours = scores[(group == g) & mask]
        assert ours.min() >= np.sort(scores[group == g])[-200]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"k": 3, "min_share": {"b": 3}},
            r"min_share asks for 3 seats for group 'b'.*2 candidates",
        ),
        ({"k": 3, "min_share": 2}, r"min_share asks for 4 seats in all, more than k=3"),
        ({"k": 4, "max_share": 1}, r"max_share .* allows 2 seats in all, fewer than k=4"),
        ({"k": 3, "min_share": {"a": 2}, "max_share": {"a": 1}}, r"group 'a'.*raise max_share"),
        ({"k": 3, "min_share": {"c": 1}}, r"min_share names groups .*\['c'\]"),
        ({"k": 3, "max_share": 1.5}, r"max_share=1.5 as a float is a share"),
        ({"k": 3, "min_share": -1}, r"min_share=-1 must be a non-negative count"),
        ({"k": 5}, r"k=5 must lie in \[0, 4\]"),
        ({"k": 1.2}, r"k=1.2 as a float"),
        ({"k": 2, "min_share": 1, "strata": [0, 0, 1, 1]}, r"not both"),
    ],
)
def test_errors_name_the_argument_and_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        select_top_k([4.0, 3.0, 2.0, 1.0], ["a", "a", "b", "b"], **kwargs)


def test_type_errors_and_bad_scores():
    with pytest.raises(TypeError, match="k must be an int"):
        select_top_k([1.0, 2.0], ["a", "b"], "1")
    with pytest.raises(TypeError, match=r"min_share\['a'\] must be an int"):
        select_top_k([1.0, 2.0], ["a", "b"], 1, min_share={"a": "1"})
    with pytest.raises(ValueError, match=r"scores must be finite; scores\[1\]"):
        select_top_k([1.0, np.nan], ["a", "b"], 1)
    with pytest.raises(ValueError, match="sensitive_features has 3 rows"):
        select_top_k([1.0, 2.0], ["a", "b", "c"], 1)
    with pytest.raises(ValueError, match="strata has 1 rows"):
        select_top_k([1.0, 2.0], ["a", "b"], 1, strata=[0])


def test_single_group_warns():
    with pytest.warns(FairnessWarning, match="single group"):
        mask = select_top_k([1.0, 3.0, 2.0], ["a", "a", "a"], 2)
    assert mask.tolist() == [False, True, True]
