"""
Comparing the four families on one trade-off plot
=================================================

fairest implements four families of fairness methods: group reweighting (BADR), partial
fairness, ERMI penalties and constrained training. Each one optimises its own notion of
fairness, but they can be compared on a common yardstick. This example fits each of them
at a few hyper-parameter values on the Adult data and draws test accuracy against the
demographic parity difference between women and men, with every method's Pareto
frontier.
"""

# %%
# Data
# ----
# The bundled Adult data, subsampled to 3,000 rows; ``sex`` is the sensitive feature.
import matplotlib.pyplot as plt
import pandas as pd
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from fairest.constrained import LossGapConstrainedClassifier
from fairest.datasets import load_adult
from fairest.ermi import ERMIClassifier
from fairest.metrics import demographic_parity_difference
from fairest.partial import PartialParityClassifier
from fairest.plot import plot_pareto_frontier
from fairest.reweighting import BADRClassifier, GroupWeightedClassifier

adult = load_adult(as_frame=True)
X = adult.data.drop(columns=["sex", "race", "fnlwgt"]).sample(n=3000, random_state=0)
y = adult.target.loc[X.index]
sex = adult.sensitive["sex"].loc[X.index]
X_train, X_test, y_train, y_test, s_train, s_test = train_test_split(
    X, y, sex, test_size=0.3, stratify=y, random_state=0
)
preprocess = ColumnTransformer(
    [
        ("numeric", StandardScaler(), make_column_selector(dtype_include="number")),
        (
            "categorical",
            OneHotEncoder(handle_unknown="ignore", min_frequency=20, sparse_output=False),
            make_column_selector(dtype_include="category"),
        ),
    ]
)
Z_train = preprocess.fit_transform(X_train)
Z_test = preprocess.transform(X_test)

# %%
# The candidates
# --------------
# One list of ``(method, setting, estimator)``. The group-weighted baselines and BADR
# have no trade-off parameter; the others sweep theirs: the penalty weight of ERMI, the
# bound of partial parity (here on the whole score range, ``interval=(0, 1)``) and the
# bound on the loss gap of the constrained logistic regression.
candidates = [
    ("logistic regression", "pooled", GroupWeightedClassifier(weights="pooled")),
    ("logistic regression", "balanced", GroupWeightedClassifier(weights="balanced")),
    ("BADR", "DP", BADRClassifier(metric="demographic_parity_deviation")),
]
candidates += [
    (
        "ERMI",
        f"{weight:g}",
        ERMIClassifier(fairness_weight=weight, metric="demographic_parity", tol=1e-5),
    )
    for weight in (1.0, 2.0, 4.0, 8.0)
]
candidates += [
    (
        "partial parity",
        f"{bound:g}",
        PartialParityClassifier(
            interval=(0.0, 1.0), tolerance=bound, max_iter=20, inner_max_iter=200
        ),
    )
    for bound in (0.1, 0.2)
]
candidates += [
    (
        "loss-gap constrained",
        f"{bound:g}",
        LossGapConstrainedClassifier(
            hidden_layer_sizes=(), tolerance=bound, n_epochs=10, random_state=0
        ),
    )
    for bound in (0.01, 0.03, 0.1)
]

rows = []
for method, setting, estimator in candidates:
    estimator.fit(Z_train, y_train, sensitive_features=s_train)
    y_pred = estimator.predict(Z_test)
    rows.append(
        {
            "method": method,
            "setting": setting,
            "accuracy": estimator.score(Z_test, y_test),
            "unfairness": demographic_parity_difference(y_test, y_pred, sensitive_features=s_test),
        }
    )
results = pd.DataFrame(rows)
print(results.round(3).to_string(index=False))

# %%
# The trade-off
# -------------
# :func:`~fairest.plot.plot_pareto_frontier` colours the points by method, fills each
# method's non-dominated points and joins them by a staircase; the dashed grey line is
# the frontier of all methods together.
fig, ax = plt.subplots(figsize=(8, 5.5), layout="constrained")
plot_pareto_frontier(
    results,
    annotate="setting",
    ax=ax,
    title="Adult (3,000 rows): test accuracy against demographic parity",
)
ax.set_xlabel("demographic parity difference between women and men (test)")
plt.show()

# %%
# The methods that target demographic parity (BADR with
# ``metric="demographic_parity"``, ERMI) trace the frontier. The loss-gap constraint
# reduces demographic parity only as a side effect of equalising the group losses.
# Partial parity, here on the whole score range, bounds the distance between the
# groups' score distributions, a stronger requirement than equal positive rates at one
# threshold; with 20 outer iterations its solver is also far from converged (raise
# ``max_iter`` for accuracy). The choice of a method is first the choice of the fairness
# notion: see :doc:`../choosing_a_method`.
