"""scikit-learn API of the constrained estimators (constrained spec section 5, oracle 25)."""

import pickle

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairest.constrained import LossGapConstrainedClassifier
from fairest.utils import FairnessWarning


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    g = rng.integers(0, 2, n)
    y = (X[:, 0] + 0.5 * g + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y, g



def test_constrained_spec_solver_names_are_aliases():
    X, y, g = _data()
    est = LossGapConstrainedClassifier(hidden_layer_sizes=(), solver="ssl_alm", n_epochs=1, random_state=0)
    ref = LossGapConstrainedClassifier(hidden_layer_sizes=(), solver="ssl-alm", n_epochs=1, random_state=0)
    np.testing.assert_array_equal(est.fit(X, y, sensitive_features=g).coef_,
                                  ref.fit(X, y, sensitive_features=g).coef_)
    ghost = LossGapConstrainedClassifier(hidden_layer_sizes=(), solver="ghost", max_iter=3, random_state=0,
                                         solver_params={"qp_backend": "dual"})
    ghost.fit(X, y, sensitive_features=g)
    assert ghost.n_iter_ == 3 and ghost.n_qp_failures_ == 0
    assert {"kappa", "N_geom"} <= set(ghost.history_.columns)


def test_constrained_dataframe_column_sensitive_features_and_pickle():
    X, y, g = _data()
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(group=np.where(g, "u", "v"))
    est = LossGapConstrainedClassifier(hidden_layer_sizes=(4,), n_epochs=1, random_state=0,
                                       log_every=7)
    est.fit(df, y, sensitive_features="group")
    assert list(est.feature_names_in_) == ["a", "b", "c", "d"]
    assert list(est.groups_) == ["u", "v"]
    pred = est.predict(df)  # the sensitive column is dropped again, not needed
    np.testing.assert_array_equal(pred, est.predict(df.drop(columns="group")))
    assert len(est.history_) == int(np.ceil(est.n_iter_ / 7))
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.predict_proba(df), est.predict_proba(df))
    assert est.multipliers_.shape == est.slacks_.shape == (2,)


@pytest.mark.parametrize("routing", [False, True])
def test_constrained_pipeline_and_grid_search_route_sensitive_features(routing):
    X, y, g = _data()
    grid = {"lossgapconstrainedclassifier__tolerance": [0.01, 0.1]}
    with sklearn.config_context(enable_metadata_routing=routing):
        est = LossGapConstrainedClassifier(hidden_layer_sizes=(), n_epochs=2, random_state=0)
        if routing:
            est = est.set_fit_request(sensitive_features=True)
        search = GridSearchCV(make_pipeline(StandardScaler(), est), grid, cv=2)
        if routing:
            search.fit(X, y, sensitive_features=g)
        else:
            search.fit(X, y, lossgapconstrainedclassifier__sensitive_features=g)
    fitted = search.best_estimator_[-1]
    assert fitted.groups_.tolist() == [0, 1]


def test_constrained_clear_errors():
    X, y, g = _data()
    est = LossGapConstrainedClassifier(hidden_layer_sizes=(), n_epochs=1)
    with pytest.raises(ValueError, match="same length|rows"):
        est.fit(X, y, sensitive_features=g[:-1])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(Xn, y, sensitive_features=g)
    y3 = y.copy()
    y3[:10] = 2
    with pytest.raises(ValueError, match="binary"):
        LossGapConstrainedClassifier(hidden_layer_sizes=(), constraint="loss_equal_opportunity"
                                     ).fit(X, y3, sensitive_features=g)
    with pytest.raises(ValueError, match="unknown solver_params"):
        LossGapConstrainedClassifier(solver="ssw", solver_params={"lr": 1.0}).fit(
            X, y, sensitive_features=g)
    with pytest.raises(ValueError, match="cell"):
        LossGapConstrainedClassifier(hidden_layer_sizes=(), constraint="loss_equal_opportunity"
                                     ).fit(X, np.where(g == 1, 0, y), sensitive_features=g)
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        LossGapConstrainedClassifier(hidden_layer_sizes=(0,)).fit(X, y, sensitive_features=g)


def test_constrained_multiclass_and_more_groups():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    g = rng.integers(0, 3, 300)
    est = LossGapConstrainedClassifier(hidden_layer_sizes=(), n_epochs=1, random_state=0,
                                       constraint_pairs="all").fit(X, y, sensitive_features=g)
    assert len(est.constraint_names_) == 6 and est.predict_proba(X).shape == (300, 3)
    vs_mean = LossGapConstrainedClassifier(hidden_layer_sizes=(), n_epochs=1, random_state=0,
                                           constraint_pairs="vs_mean")
    vs_mean.fit(X, y, sensitive_features=g)
    L = vs_mean.group_losses_
    np.testing.assert_allclose(vs_mean.constraint_values_[0], L[0] - L.mean() - 0.005,
                               rtol=1e-5, atol=1e-6)
    yb = (y > 0).astype(int)
    eo = LossGapConstrainedClassifier(hidden_layer_sizes=(), n_epochs=1, random_state=0,
                                      constraint="loss_equalized_odds", dtype="float64")
    eo.fit(X, yb, sensitive_features=g)
    assert len(eo.constraint_names_) == 12
    z = eo.decision_function(X)
    loss = np.logaddexp(0, z) - yb * z
    a = [loss[(g == 0) & (yb == v)].mean() - loss[(g == 1) & (yb == v)].mean() for v in (0, 1)]
    np.testing.assert_allclose(eo.constraint_values_[:4].max(), abs(a[0]) + abs(a[1]) - 0.005,
                               rtol=1e-10)


def test_constrained_predict_without_groups_warns_only_at_fit():
    X, y, _ = _data()
    with pytest.warns(FairnessWarning):
        est = LossGapConstrainedClassifier(hidden_layer_sizes=(), n_epochs=1,
                                           random_state=0).fit(X, y)
    assert est.predict(X).shape == y.shape
