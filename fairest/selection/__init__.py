"""Selection at a budget and fair rankings.

:func:`select_top_k` selects ``k`` candidates by score under per-group minimum / maximum
shares or parity of selection rates within qualification strata, exactly.
:func:`fair_ranking` builds FA*IR's ranking (Zehlike et al. 2017), whose every prefix
passes the ranked group fairness test of :func:`fair_ranking_table`;
:func:`is_ranked_group_fair` applies that test to any ranking. :func:`group_exposure`,
:func:`exposure_difference`, :func:`exposure_ratio` and :func:`ndcg_loss` measure how a
ranking spreads attention over the groups and what it costs in utility.
"""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_topk": ["select_top_k"],
        "_fair_ranking": ["fair_ranking", "fair_ranking_table", "is_ranked_group_fair"],
        "_exposure": ["exposure_difference", "exposure_ratio", "group_exposure", "ndcg_loss"],
    },
)
