"""
ERMI: a fairness penalty with a tunable weight
==============================================

:class:`~fairest.ermi.ERMIClassifier` is logistic regression with a penalty on the
exponential Rényi mutual information (ERMI) between the predictions and the sensitive
feature. ``fairness_weight`` sets the strength of the penalty: ``0`` is plain logistic
regression, and larger values trade accuracy for demographic parity. This example walks
that path on the Adult data.
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

from fairest.datasets import load_adult
from fairest.ermi import ERMIClassifier
from fairest.metrics import demographic_parity_difference, ermi

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
# A path of penalty weights
# -------------------------
# ``metric="demographic_parity"`` penalises the dependence between the predicted class
# and the group (``"equalized_odds"`` would penalise it within each true label). Without
# privacy the model is fitted by full-batch L-BFGS; ``tol=1e-5`` (on the gradient) is
# plenty for a plot and several times faster than the default ``1e-8``. The fits of the
# path reuse the same compiled code: only the first one pays for the compilation.
rows = []
for fairness_weight in [0.0, 1.0, 2.0, 4.0, 8.0]:
    model = ERMIClassifier(fairness_weight=fairness_weight, metric="demographic_parity", tol=1e-5)
    model.fit(Z_train, y_train, sensitive_features=s_train)
    y_pred = model.predict(Z_test)
    rows.append(
        {
            "fairness_weight": fairness_weight,
            "accuracy": model.score(Z_test, y_test),
            "DP difference": demographic_parity_difference(
                y_test, y_pred, sensitive_features=s_test
            ),
            "ERMI": ermi(y_test, model.predict_proba(Z_test), sensitive_features=s_test),
        }
    )
path = pd.DataFrame(rows).set_index("fairness_weight")
print(path.round(4))

# %%
# Accuracy and unfairness along the path
# --------------------------------------
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
left.plot(path.index, path["accuracy"], "o-", color="tab:blue", label="accuracy")
left.set_xlabel("fairness_weight")
left.set_ylabel("accuracy (test)", color="tab:blue")
twin = left.twinx()
twin.plot(path.index, path["DP difference"], "s--", color="tab:red", label="DP difference")
twin.set_ylabel("demographic parity difference (test)", color="tab:red")
left.set_title("The penalty path")
left.grid(alpha=0.3)

right.plot(path["DP difference"], path["accuracy"], "o-")
for weight, row in path.iterrows():
    right.annotate(
        f"{weight:g}",
        (row["DP difference"], row["accuracy"]),
        textcoords="offset points",
        xytext=(4, 4),
        fontsize="small",
    )
right.set_xlabel("demographic parity difference (test, lower is fairer)")
right.set_ylabel("accuracy (test)")
right.set_title("Trade-off, labelled by fairness_weight")
right.grid(alpha=0.3)
plt.show()

# %%
# The demographic parity gap falls quickly with the first units of weight, then the
# accuracy starts to pay. ``fairness_weight`` is a hyper-parameter like ``alpha``: the
# :doc:`model-selection example <plot_grid_search_fairness_weight>` picks it by
# cross-validation under a bound on the unfairness. Setting ``dp_epsilon`` trains the
# same model with differential privacy for the sensitive attribute (DP-FERMI), see the
# :doc:`ERMI guide <../user_guide/ermi>`.
