"""Datasets: bundled real data, fetchers reading a local cache, synthetic generators.

- **Bundled** (shipped with fairest, sha256-checked on load): :func:`load_adult`,
  :func:`load_german_credit`, :func:`load_compas`, :func:`load_ricci`.
- **Fetched** (read from the data cache, see :func:`get_data_home`, filled with
  :func:`seed_data_home`): :func:`fetch_bank_marketing`, :func:`fetch_credit_default`,
  :func:`fetch_communities_crime`, :func:`fetch_student_performance`,
  :func:`fetch_parkinsons`, :func:`fetch_law_school`, :func:`fetch_kdd_census`,
  :func:`fetch_acs_income`, :func:`fetch_acs_task`.
- **Synthetic**: :func:`make_grouped_classification`, :func:`make_grouped_regression`.

Every loader returns a scikit-learn :class:`~sklearn.utils.Bunch` with ``data``,
``target``, ``frame``, ``feature_names``, ``target_names``, ``target_column``,
``sensitive`` (a DataFrame of the usual sensitive attributes, ready for
``sensitive_features=``), ``categories`` and ``DESCR``; ``as_frame`` and ``return_X_y``
behave as in :func:`sklearn.datasets.fetch_openml`. :func:`list_datasets` lists them all.
"""

from fairest.utils._lazy import lazy_exports

# names load on first access (PEP 562), see fairest.utils._lazy
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "_base": ["clear_data_home", "get_data_home"],
        "_bundled": ["load_adult", "load_compas", "load_german_credit", "load_ricci"],
        "_catalog": ["list_datasets"],
        "_fetchers": [
            "fetch_acs_income",
            "fetch_acs_task",
            "fetch_bank_marketing",
            "fetch_communities_crime",
            "fetch_credit_default",
            "fetch_kdd_census",
            "fetch_law_school",
            "fetch_parkinsons",
            "fetch_student_performance",
            "seed_data_home",
        ],
        "_synthetic": ["make_grouped_classification", "make_grouped_regression"],
    },
)
