"""
Certified fairness: how much data a guarantee needs
===================================================

:class:`~fairest.certified.CertifiedFairClassifier` returns a model only when a held-out
test certifies, with probability at least ``1 - delta``, that its demographic parity
difference on the population is within the tolerance; otherwise it reports "no solution
found" (NSF) and why. This example follows the protocol of Thomas et al. (Science 2019)
on the Adult data: as the training data grow, the NSF rate falls, the certified bound
tightens and the certified model gets more accurate. The last panel shows how many rows
per group each confidence bound needs to certify a perfectly fair model.
"""

# %%
# Data and wrapped estimator
# --------------------------
# The bundled Adult training file, one-hot encoded (a stateless encoding); the candidates
# are logistic regressions with a decreasing weight of the positive class, which lowers
# both groups' selection rates and so the parity gap. The UCI test file judges the models.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairest.certified import CertifiedFairClassifier, rows_needed
from fairest.datasets import load_adult
from fairest.metrics import demographic_parity_difference

train = load_adult(subset="train", as_frame=True)
test = load_adult(subset="test", as_frame=True)
columns = ["sex", "race", "fnlwgt"]
both = pd.get_dummies(pd.concat([train.data, test.data]).drop(columns=columns), dtype=float)
X_train, X_test = both.iloc[: len(train.data)], both.iloc[len(train.data) :]
y_train, y_test = train.target.to_numpy(), test.target.to_numpy()
s_train, s_test = train.sensitive["sex"].to_numpy(), test.sensitive["sex"].to_numpy()

estimator = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
grid = {"logisticregression__class_weight": [{0: 1, 1: w} for w in (0.1, 0.2, 0.35, 0.6, 1.0)]}

# %%
# Growing training sets
# ---------------------
# Two runs per size (the benchmark ``benchmarks/certified_adult.py`` runs many more).
sizes = [500, 2000, 8000, 32561]
nsf_rate, bound, accuracy = [], [], []
for n in sizes:
    outcomes = []
    for run in range(2):
        rows = np.random.default_rng(run).permutation(len(y_train))[:n]
        model = CertifiedFairClassifier(
            estimator,
            constraints=[("demographic_parity_difference", 0.1)],
            param_grid=grid,
            random_state=run,
        ).fit(X_train.iloc[rows], y_train[rows], sensitive_features=s_train[rows])
        test_gap = np.nan
        test_accuracy = np.nan
        if model.certified_:
            predicted = model.predict(X_test)
            test_gap = demographic_parity_difference(y_test, predicted, sensitive_features=s_test)
            test_accuracy = np.mean(predicted == y_test)
        outcomes.append(
            (model.certified_, model.certificate_.constraints[0].upper_bound, test_accuracy)
        )
    certified, upper, accuracies = map(np.array, zip(*outcomes))
    nsf_rate.append(1 - certified.mean())
    bound.append(upper.mean())
    accuracy.append(np.nanmean(accuracies) if certified.any() else np.nan)
    print(f"n={n}: NSF rate {nsf_rate[-1]:.2f}, bound {bound[-1]:.3f}, accuracy {accuracy[-1]:.3f}")

# %%
# Rows needed per bound
# ---------------------
bounds = ["clopper-pearson", "hoeffding", "bernstein", "student-t"]
needed = [rows_needed("demographic_parity_difference", 0.05, 0.05, b) for b in bounds]

fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
axes[0].plot(sizes, nsf_rate, "o-")
axes[0].set(xscale="log", xlabel="training rows", ylabel="NSF rate", title="No solution found")
axes[1].plot(sizes, bound, "o-", label="certified upper bound")
axes[1].axhline(0.1, color="gray", ls="--", label="tolerance")
axes[1].set(xscale="log", xlabel="training rows", title="Demographic parity difference")
axes[1].legend()
axes[2].bar(range(len(bounds)), needed)
axes[2].set_xticks(range(len(bounds)), bounds, rotation=20)
axes[2].set(ylabel="rows per group", title="DP <= 0.05 at delta = 0.05")
fig.tight_layout()
plt.show()
