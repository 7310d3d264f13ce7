"""
Choosing ``fairness_weight`` by cross-validation
================================================

A fairness penalty's weight is a hyper-parameter like any other, but the usual "most
accurate candidate" rule would always pick the weakest penalty. This example searches
``fairness_weight`` of :class:`~fairest.ermi.ERMIClassifier` with scikit-learn's
``GridSearchCV`` on the Adult data, with

* metadata routing, so that ``sensitive_features`` reaches the estimator, the splitter
  and the fairness scorer from one argument of ``search.fit``;
* :class:`~fairest.model_selection.GroupStratifiedKFold`, which keeps every (label,
  group) cell in every fold;
* :func:`~fairest.model_selection.make_fairness_scorer`, a scorer of demographic parity
  on the test folds;
* :func:`~fairest.model_selection.constrained_refit`, which refits the most accurate
  candidate among those whose cross-validated unfairness is within a bound.
"""

# %%
# Data and pipeline
# -----------------
# The bundled Adult data, subsampled to 2,000 rows; ``sex`` is the sensitive feature.
# The search runs on 70 % of the rows, the rest is held out for the chosen model.
import matplotlib.pyplot as plt
import sklearn
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from fairest.datasets import load_adult
from fairest.ermi import ERMIClassifier
from fairest.metrics import demographic_parity_difference
from fairest.model_selection import GroupStratifiedKFold, constrained_refit, make_fairness_scorer
from fairest.plot import pareto_frame_from_cv_results, plot_pareto_frontier

sklearn.set_config(enable_metadata_routing=True)

adult = load_adult(as_frame=True)
X = adult.data.drop(columns=["sex", "race", "fnlwgt"]).sample(n=2000, random_state=0)
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
pipe = Pipeline(
    [
        ("preprocess", preprocess),
        ("clf", ERMIClassifier(metric="demographic_parity", tol=1e-5)),
    ]
)

# %%
# The search
# ----------
# The scorers return the *negated* metric (greater is better, as scikit-learn expects).
# ``constrained_refit`` keeps the candidates with a mean cross-validated demographic
# parity difference of at most 0.05 and refits the most accurate of them.
search = GridSearchCV(
    pipe,
    {"clf__fairness_weight": [0.0, 1.0, 2.0, 4.0, 8.0]},
    cv=GroupStratifiedKFold(n_splits=3, shuffle=True, random_state=0),
    scoring={
        "accuracy": "accuracy",
        "dp": make_fairness_scorer("demographic_parity_difference"),
    },
    refit=constrained_refit(accuracy="accuracy", unfairness="dp", tolerance=0.05),
)
search.fit(X_train, y_train, sensitive_features=s_train)

frame = pareto_frame_from_cv_results(search.cv_results_, accuracy="accuracy", unfairness="dp")
print(
    frame[["param_clf__fairness_weight", "accuracy", "unfairness"]].round(3).to_string(index=False)
)
print("chosen:", search.best_params_)

# %%
# The chosen model on the held-out data
# -------------------------------------
best = search.best_estimator_
y_pred = best.predict(X_test)
print(
    f"test accuracy {best.score(X_test, y_test):.3f}, "
    f"DP difference {demographic_parity_difference(y_test, y_pred, sensitive_features=s_test):.3f}"
)

# %%
# The trade-off of the grid
# -------------------------
# :func:`~fairest.plot.pareto_frame_from_cv_results` turns ``cv_results_`` into one row
# per candidate (mean and standard deviation over the folds), and
# :func:`~fairest.plot.plot_pareto_frontier` draws it with 95 % intervals of the mean
# and the Pareto frontier. The dotted line is the bound of the refit rule.
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
plot_pareto_frontier(
    frame,
    x_err="unfairness_std",
    y_err="accuracy_std",
    n_repeats="n_repeats",
    annotate="param_clf__fairness_weight",
    ax=ax,
    title="ERMIClassifier on Adult, 3-fold CV",
)
ax.axvline(0.05, color="k", ls=":", lw=1)
ax.set_xlabel("demographic parity difference (sex)")
plt.show()

# %%
# The same code searches ``tolerance`` of the constrained estimators
# (:class:`~fairest.partial.PartialParityClassifier`,
# :class:`~fairest.constrained.LossGapConstrainedClassifier`) or ``alpha`` of any of
# them. Metadata routing is a global setting; turn it off again when done:
sklearn.set_config(enable_metadata_routing=False)
