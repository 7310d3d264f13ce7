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
    est = LossGapConstrainedClassifier(
        hidden_layer_sizes=(), solver="ssl_alm", n_epochs=1, random_state=0
    )
    ref = LossGapConstrainedClassifier(
        hidden_layer_sizes=(), solver="ssl-alm", n_epochs=1, random_state=0
    )
    np.testing.assert_array_equal(
        est.fit(X, y, sensitive_features=g).coef_, ref.fit(X, y, sensitive_features=g).coef_
    )
    ghost = LossGapConstrainedClassifier(
        hidden_layer_sizes=(),
        solver="ghost",
        max_iter=3,
        random_state=0,
        solver_params={"qp_backend": "dual"},
        record_history=True,
    )
    ghost.fit(X, y, sensitive_features=g)
    assert ghost.n_iter_ == 3 and ghost.n_qp_failures_ == 0
    assert {"kappa", "N_geom"} <= set(ghost.history_)


def test_constrained_dataframe_column_sensitive_features_and_pickle():
    X, y, g = _data()
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(group=np.where(g, "u", "v"))
    est = LossGapConstrainedClassifier(
        hidden_layer_sizes=(4,), n_epochs=1, random_state=0, record_history=7
    )
    est.fit(df, y, sensitive_features="group")
    assert list(est.feature_names_in_) == ["a", "b", "c", "d"]
    assert list(est.groups_) == ["u", "v"]
    pred = est.predict(df)  # the sensitive column is dropped again, not needed
    np.testing.assert_array_equal(pred, est.predict(df.drop(columns="group")))
    assert len(est.history_["iter"]) == int(np.ceil(est.n_iter_ / 7))
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
        LossGapConstrainedClassifier(hidden_layer_sizes=(), metric="loss_equal_opportunity").fit(
            X, y3, sensitive_features=g
        )
    with pytest.raises(ValueError, match="unknown solver_params"):
        LossGapConstrainedClassifier(solver="ssw", solver_params={"dual_learning_rate": 1.0}).fit(
            X, y, sensitive_features=g
        )
    with pytest.raises(ValueError, match="cell"):
        LossGapConstrainedClassifier(hidden_layer_sizes=(), metric="loss_equal_opportunity").fit(
            X, np.where(g == 1, 0, y), sensitive_features=g
        )
    with pytest.raises(ValueError, match="hidden_layer_sizes"):
        LossGapConstrainedClassifier(hidden_layer_sizes=(0,)).fit(X, y, sensitive_features=g)


def test_constrained_multiclass_and_more_groups():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    g = rng.integers(0, 3, 300)
    est = LossGapConstrainedClassifier(
        hidden_layer_sizes=(), n_epochs=1, random_state=0, constraint_pairs="all"
    ).fit(X, y, sensitive_features=g)
    assert len(est.constraint_names_) == 6 and est.predict_proba(X).shape == (300, 3)
    vs_mean = LossGapConstrainedClassifier(
        hidden_layer_sizes=(), n_epochs=1, random_state=0, constraint_pairs="vs_mean"
    )
    vs_mean.fit(X, y, sensitive_features=g)
    L = vs_mean.group_losses_
    np.testing.assert_allclose(
        vs_mean.constraint_values_[0], L[0] - L.mean() - 0.005, rtol=1e-5, atol=1e-6
    )
    yb = (y > 0).astype(int)
    eo = LossGapConstrainedClassifier(
        hidden_layer_sizes=(),
        n_epochs=1,
        random_state=0,
        metric="loss_equalized_odds",
        dtype="float64",
    )
    eo.fit(X, yb, sensitive_features=g)
    assert len(eo.constraint_names_) == 12
    z = eo.decision_function(X)
    loss = np.logaddexp(0, z) - yb * z
    a = [loss[(g == 0) & (yb == v)].mean() - loss[(g == 1) & (yb == v)].mean() for v in (0, 1)]
    np.testing.assert_allclose(
        eo.constraint_values_[:4].max(), abs(a[0]) + abs(a[1]) - 0.005, rtol=1e-10
    )


def test_constrained_predict_without_groups_warns_only_at_fit():
    X, y, _ = _data()
    with pytest.warns(FairnessWarning):
        est = LossGapConstrainedClassifier(hidden_layer_sizes=(), n_epochs=1, random_state=0).fit(
            X, y
        )
    assert est.predict(X).shape == y.shape


@pytest.mark.parametrize("frame", [True, False], ids=["dataframe", "numpy"])
def test_constrained_list_of_str_labels_are_groups_not_columns(frame):
    """A plain list of group labels (length n_samples) is labels, even when its entries
    are column names of a DataFrame X (repeated entries cannot name columns)."""
    X, y, g = _data()
    labels = ["a" if v else "b" for v in g]
    Xf = pd.DataFrame(X, columns=["a", "b", "c", "d"]) if frame else X
    kw = dict(hidden_layer_sizes=(), n_epochs=1, random_state=0)
    est = LossGapConstrainedClassifier(**kw).fit(Xf, y, sensitive_features=labels)
    ref = LossGapConstrainedClassifier(**kw).fit(X, y, sensitive_features=np.array(labels))
    assert list(est.groups_) == ["a", "b"] and est.n_features_in_ == 4
    assert est.sensitive_columns_ is None
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    if frame:  # a list of distinct column names still names columns
        cols = LossGapConstrainedClassifier(**kw).fit(
            Xf.assign(s=labels), y, sensitive_features=["s"]
        )
        assert cols.sensitive_columns_ == ("s",) and list(cols.groups_) == ["a", "b"]
        np.testing.assert_array_equal(cols.coef_, ref.coef_)


def test_constrained_history_only_with_record_history(caplog):
    import logging

    X, y, g = _data()
    kw = dict(hidden_layer_sizes=(), n_epochs=1, random_state=0)
    est = LossGapConstrainedClassifier(**kw).fit(X, y, sensitive_features=g)
    assert not hasattr(est, "history_")
    est.set_params(record_history=True, eval_every=10).fit(X, y, sensitive_features=g)
    assert isinstance(est.history_, dict)
    assert all(isinstance(v, np.ndarray) for v in est.history_.values())
    assert len(est.history_["iter"]) == est.n_iter_
    full = est.history_["full_objective"]
    assert np.isfinite(full[9::10]).all() and np.isnan(full[:9]).all()
    est.set_params(record_history=False)
    with pytest.raises(ValueError, match="eval_every.*record_history"):
        est.fit(X, y, sensitive_features=g)
    est.set_params(eval_every=None).fit(X, y, sensitive_features=g)
    assert not hasattr(est, "history_")  # no stale history from the previous fit
    with caplog.at_level(logging.INFO, logger="fairest"):
        est.set_params(verbose=1).fit(X, y, sensitive_features=g)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("fairest")]
    assert len(lines) == 1 and lines[0].startswith("[LossGapConstrainedClassifier] solver=")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fairest"):
        est.set_params(verbose=2).fit(X, y, sensitive_features=g)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("fairest")]
    assert len(lines) == 2 and "iteration" in lines[0]
