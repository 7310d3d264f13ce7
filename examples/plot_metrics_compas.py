"""
Auditing a classifier: group metrics on COMPAS
==============================================

Before mitigating, measure. :mod:`fairest.metrics` has the exact group metrics of hard
predictions (demographic parity, equalized odds and their ratios), metrics of scores and
:func:`~fairest.metrics.group_report`, a table of per-group rates. This example audits a
plain logistic regression that predicts two-year recidivism on the ProPublica COMPAS
data, comparing African-American and Caucasian defendants.
"""

# %%
# Data
# ----
# The bundled COMPAS data with ProPublica's filter (6,172 defendants screened within 30
# days of their arrest). We keep the two largest groups of ``race`` and remove the
# sensitive columns from the features.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from fairest.datasets import load_compas
from fairest.metrics import (
    demographic_parity_difference,
    equal_opportunity_difference,
    equalized_odds_difference,
    group_report,
)
from fairest.reweighting import GroupWeightedClassifier

compas = load_compas(propublica_filter=True, as_frame=True)
race = compas.sensitive["race"]
keep = race.isin(["African-American", "Caucasian"]).to_numpy()
X = compas.data.loc[keep].drop(columns=["race", "sex", "age_cat"])
y = compas.target.loc[keep]
race = race.loc[keep].cat.remove_unused_categories()
X_train, X_test, y_train, y_test, r_train, r_test = train_test_split(
    X, y, race, test_size=0.3, stratify=y, random_state=0
)
print(pd.crosstab(race, y, normalize="index").round(3))

# %%
# A group-blind model
# -------------------
# ``GroupWeightedClassifier()`` is plain logistic regression; the groups passed to
# ``fit`` only label the rows for its bookkeeping (``groups_``).
preprocess = ColumnTransformer(
    [
        ("numeric", StandardScaler(), make_column_selector(dtype_include="number")),
        (
            "categorical",
            OneHotEncoder(handle_unknown="ignore", min_frequency=30, sparse_output=False),
            make_column_selector(dtype_include="category"),
        ),
    ]
)
model = make_pipeline(preprocess, GroupWeightedClassifier())
model.fit(X_train, y_train, groupweightedclassifier__sensitive_features=r_train)
y_pred = model.predict(X_test)
print(f"test accuracy: {model.score(X_test, y_test):.3f}")

# %%
# The audit
# ---------
# ``group_report`` gives each group's size, base rate, selection rate, true and false
# positive rates and accuracy; the difference metrics summarise the largest gaps.
report = group_report(y_test, y_pred, sensitive_features=r_test)
print(report.round(3).to_string())
print(
    "demographic parity difference:",
    round(demographic_parity_difference(y_test, y_pred, sensitive_features=r_test), 3),
)
print(
    "equal opportunity difference: ",
    round(equal_opportunity_difference(y_test, y_pred, sensitive_features=r_test), 3),
)
print(
    "equalized odds difference:    ",
    round(equalized_odds_difference(y_test, y_pred, sensitive_features=r_test), 3),
)

# %%
# Error rates per group
# ---------------------
# Equalized odds asks for equal true positive rates (recidivists flagged) and equal
# false positive rates (non-recidivists flagged) across the groups.
columns = ["base_rate", "selection_rate", "true_positive_rate", "false_positive_rate"]
fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
positions = np.arange(len(columns))
for k, group in enumerate(report.index):
    ax.bar(positions + (k - 0.5) * 0.4, report.loc[group, columns], width=0.4, label=group)
ax.set_xticks(positions, [c.replace("_", " ") for c in columns])
ax.set_ylabel("rate (test)")
ax.set_title("Logistic regression on COMPAS: rates per group")
ax.legend()
ax.grid(axis="y", alpha=0.3)
plt.show()

# %%
# The model flags African-American defendants who do not reoffend more often than
# Caucasian ones (a higher false positive rate), the disparity at the centre of the
# ProPublica analysis. A mitigation would target equalized odds, e.g.
# ``BADRClassifier(metric="equalized_odds_range")`` or ``ERMIClassifier(metric="equalized_odds")``;
# see :doc:`../user_guide/metrics` for every metric.
