"""
Fairness paths: the trade-off curve of a knob in one sweep
==========================================================

:func:`fairest.fairness_path` fits one estimator at every value of its fairness knob
and scores each fitted model on training and validation data. Each point is the model a
plain refit at that value returns; the path computes them together:

* :class:`~fairest.postprocessing.GroupThresholdClassifier`'s ``tolerance``: the wrapped
  classifier is fitted and scores the data once, only the threshold search runs per value;
* :class:`~fairest.ermi.ERMIClassifier`'s ``fairness_weight``: every weight is solved in
  one compiled BFGS ``vmap``-ped over the weight.

Both paths are drawn with :func:`fairest.plot.plot_pareto_frontier`, which takes a path
(or several, through their ``to_frame()``) directly.
"""

# %%
# Data
# ----
# The bundled Adult data, 4,000 training rows and the held-out test file; ``sex`` is the
# sensitive feature (left out of the features, as are race and the census weight).
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from fairest import ERMIClassifier, GroupThresholdClassifier, fairness_path
from fairest.datasets import load_adult
from fairest.plot import plot_pareto_frontier

train = load_adult(subset="train", as_frame=True)
test = load_adult(subset="test", as_frame=True)
both = pd.get_dummies(
    pd.concat([train.data, test.data]).drop(columns=["sex", "race", "fnlwgt"]), dtype=float
)
rows = np.random.default_rng(0).choice(len(train.data), size=4000, replace=False)
scaler = StandardScaler().fit(both.iloc[rows])
X_train = scaler.transform(both.iloc[rows])
X_test = scaler.transform(both.iloc[len(train.data) :])
y_train, y_test = train.target.iloc[rows], test.target
s_train, s_test = train.sensitive["sex"].iloc[rows], test.sensitive["sex"]
validation = dict(X_val=X_test, y_val=y_test, sensitive_features_val=s_test)

# %%
# Group thresholds over ``tolerance``
# -----------------------------------
# One logistic regression, eight tolerances. ``train_unfairness`` is at most the
# tolerance at every point (the post-processor's promise); the test difference follows.
thresholds = fairness_path(
    GroupThresholdClassifier(LogisticRegression(max_iter=1000)),
    X_train,
    y_train,
    sensitive_features=s_train,
    values=[0.0, 0.01, 0.02, 0.04, 0.06, 0.1, 0.15, 0.2],
    **validation,
)
print(f"strategy: {thresholds.strategy}, {thresholds.fit_time:.2f} s")
thresholds.to_frame().round(3)

# %%
# ERMI over ``fairness_weight``
# -----------------------------
# Six weights, solved together.
ermi = fairness_path(
    ERMIClassifier(),
    X_train,
    y_train,
    sensitive_features=s_train,
    values=[0.0, 1.0, 2.0, 4.0, 8.0, 16.0],
    **validation,
)
print(f"strategy: {ermi.strategy}, {ermi.fit_time:.2f} s (compilation included)")
ermi.to_frame().round(3)

# %%
# Both trade-offs on the test file
# --------------------------------
# Every point is labelled with its knob value when it is on its method's frontier.
frame = pd.concat([thresholds.to_frame(), ermi.to_frame()], ignore_index=True)
frame["value"] = frame["tolerance"].fillna(frame["fairness_weight"])
ax = plot_pareto_frontier(frame, annotate="value", title="Adult test file: two fairness paths")
ax.set_xlabel("test demographic parity difference  (lower is fairer)")
ax.set_ylabel("test accuracy")
plt.show()
