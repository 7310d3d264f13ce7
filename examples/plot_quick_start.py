"""
Quick start: a fairer classifier in a few lines
===============================================

Every fairest estimator is a scikit-learn estimator whose ``fit`` also takes the
sensitive features, ``fit(X, y, sensitive_features=groups)``; ``predict`` never needs
them. This example fits plain logistic regression and BADR, which reweights the groups
in the training loss to reduce demographic parity, on synthetic data with two groups,
and compares their accuracy and the share of positive decisions in every group.
"""

# %%
# Data with two groups
# --------------------
# :func:`~fairest.datasets.make_grouped_classification` draws features and labels whose
# distributions depend on the group, so that a plain classifier treats the groups
# differently. The groups are returned separately from the features.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from fairest import BADRClassifier, GroupWeightedClassifier
from fairest.datasets import make_grouped_classification
from fairest.metrics import demographic_parity_difference, group_report

X, y, groups = make_grouped_classification(
    n_samples=2000, n_groups=2, group_names=["A", "B"], random_state=0
)
X_train, X_test, y_train, y_test, g_train, g_test = train_test_split(
    X, y, groups, test_size=0.5, stratify=groups, random_state=0
)
print(pd.crosstab(groups, y, rownames=["group"], colnames=["label"]))

# %%
# Two models
# ----------
# ``GroupWeightedClassifier()`` with its default ``weights="pooled"`` is L2-regularised
# logistic regression, the unfair baseline. ``BADRClassifier`` chooses one weight per
# group on the Pareto front of the group losses so that the fitted model's demographic
# parity gap (the spread of the groups' positive rates) is as small as the weights allow.
models = {
    "logistic regression": GroupWeightedClassifier(),
    "BADR (demographic parity)": BADRClassifier(metric="demographic_parity_deviation"),
}
for model in models.values():
    model.fit(X_train, y_train, sensitive_features=g_train)

badr = models["BADR (demographic parity)"]
print(
    "groups:", badr.groups_.tolist(), "BADR's group weights:", badr.group_weights_.round(3).tolist()
)

# %%
# Accuracy and demographic parity on the test half
# ------------------------------------------------
# :func:`~fairest.metrics.group_report` tabulates per-group rates;
# :func:`~fairest.metrics.demographic_parity_difference` is the largest gap between the
# groups' selection rates (0 is parity).
rates, summary = {}, {}
for name, model in models.items():
    y_pred = model.predict(X_test)
    report = group_report(y_test, y_pred, sensitive_features=g_test)
    rates[name] = report["selection_rate"]
    summary[name] = {
        "accuracy": model.score(X_test, y_test),
        "DP difference": demographic_parity_difference(y_test, y_pred, sensitive_features=g_test),
    }
summary = pd.DataFrame(summary).T
print(summary.round(3))

# %%
# The positive rate of every group, and the trade-off
# ---------------------------------------------------
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
rates = pd.DataFrame(rates)
positions = np.arange(len(rates))
for k, name in enumerate(rates.columns):
    left.bar(positions + (k - 0.5) * 0.4, rates[name], width=0.4, label=name)
left.set_xticks(positions, [f"group {g}" for g in rates.index])
left.set_ylabel("share of positive predictions (test)")
left.set_title("Selection rate per group")
left.legend(loc="upper right", fontsize="small")

for name, row in summary.iterrows():
    right.scatter(row["DP difference"], row["accuracy"], s=80, label=name)
right.set_xlabel("demographic parity difference (lower is fairer)")
right.set_ylabel("accuracy")
right.set_title("Accuracy against unfairness (test)")
right.grid(alpha=0.3)
right.legend(fontsize="small")
plt.show()

# %%
# BADR halves the gap between the groups' positive rates for a few points of accuracy.
# Its weights are at a vertex of the simplex: the model fitted to one group only is, on
# these data, the fairest Pareto-efficient one.
# The :doc:`model-selection example <plot_grid_search_fairness_weight>` tunes such a
# trade-off by cross-validation, and the :doc:`comparison <plot_compare_methods>` puts
# the four families on one plot.
