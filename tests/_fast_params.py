"""Cheap settings of every estimator for the API-level tests (common checks, bad inputs).

Like scikit-learn's own checking parameters: these tests check the API and the input
handling, the family tests check the algorithms.
"""

from sklearn.linear_model import LogisticRegression

CHECK_PARAMS = {
    # tolerance 1 always certifies: the API tests need a model that predicts
    "CertifiedFairClassifier": {
        "estimator": LogisticRegression(),
        "constraints": (("demographic_parity_difference", 1.0),),
        "random_state": 0,
    },
    # group-blind mode, so that the shared tests' group-free predict(X) applies
    "GroupThresholdClassifier": {
        "estimator": LogisticRegression(),
        "group_estimator": LogisticRegression(),
    },
    "LevellingUpClassifier": {
        "estimator": LogisticRegression(),
        "min_rate": 0.5,
        "group_estimator": LogisticRegression(),
    },
    # group-blind mode, so that the shared tests' group-free predict(X) applies
    "WassersteinParityRegressor": {"group_estimator": LogisticRegression()},
    "PartialParityClassifier": {"max_iter": 10, "inner_max_iter": 100},
    "PartialParityPenaltyClassifier": {"max_iter": 300, "learning_rate": 0.5},
    "GroupAUCConstrainedClassifier": {"max_iter": 100},
    "InterGroupPairwiseConstrainedClassifier": {"max_iter": 100},
    "IntraGroupPairwiseConstrainedClassifier": {"max_iter": 100},
    "LossGapConstrainedClassifier": {
        "hidden_layer_sizes": (),
        "n_epochs": 20,
        "solver_params": {"learning_rate": 0.1},
        "random_state": 0,
    },
    "PrunedFairClassifier": {
        "hidden_layer_sizes": (8,),
        "dense_n_epochs": 30,
        "n_epochs": 4,
        "pruning_epochs": 2,
        "target_sparsity": 0.5,
        "batch_size": 16,
        "learning_rate": 0.05,
        "dense_learning_rate": 0.05,
        "random_state": 0,
    },
}


def fast_instance(cls):
    """An instance of ``cls`` with its cheap settings."""
    return cls(**CHECK_PARAMS.get(cls.__name__, {}))
