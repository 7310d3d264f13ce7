"""The worked ACS example of docs/user_guide/deployment.md, on the shared real data.

A model certified on Pennsylvania's ACSIncome rows (demographic parity by sex at most
0.12) is deployed to Georgia, whose race mix differs. The shift-aware certificate, for a
box of +-0.02 around Georgia's race shares, still certifies, with a wider bound than the
i.i.d. certificate, and that bound holds on Georgia's rows. Skipped without the shared
datasets folder.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fairest.certified import DemographicShift, certify_fairness
from fairest.datasets import fetch_acs_income, seed_data_home
from fairest.metrics import demographic_parity_difference


@pytest.fixture(scope="module")
def acs(shared_datasets, tmp_path_factory):
    if not (shared_datasets / "acs").is_dir():
        pytest.skip("the shared ACS files are absent")
    home = tmp_path_factory.mktemp("acs_home")
    seed_data_home(shared_datasets, home, datasets=["acs_income"], verify=False)
    return fetch_acs_income(states=["PA", "GA"], data_home=home)


@pytest.mark.filterwarnings("ignore::fairest.utils.FairnessWarning")
def test_certificate_under_a_race_shift_from_pennsylvania_to_georgia(acs):
    keep = [i for i, name in enumerate(acs.feature_names) if name != "SEX"]
    X, y = acs.data[:, keep], acs.target
    sex = acs.sensitive["sex"].astype(str).to_numpy()
    race = acs.sensitive["race"].astype(str).to_numpy()
    state = np.asarray(acs.state, dtype=str)
    source = np.flatnonzero(state == "PA")
    fit_rows, held = train_test_split(source, test_size=0.6, random_state=0)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(X[fit_rows], y[fit_rows])

    target = state == "GA"
    shares = pd.Series(race[target]).value_counts(normalize=True)
    margins = {value: float(shares.get(value, 0.0)) for value in sorted(set(race))}
    constraints = [("demographic_parity_difference", 0.12)]
    iid = certify_fairness(
        model, X[held], y[held], sensitive_features=sex[held], constraints=constraints
    )
    shifted = certify_fairness(
        model,
        X[held],
        y[held],
        sensitive_features=sex[held],
        constraints=constraints,
        shift=DemographicShift.around(margins, 0.02),
        shift_features=race[held],
    )
    true_gap = demographic_parity_difference(
        y[target], model.predict(X[target]), sensitive_features=sex[target]
    )
    bound, iid_bound = shifted.constraints[0].upper_bound, iid.constraints[0].upper_bound
    assert shifted.passed and bound <= 0.12
    assert bound > iid_bound  # the worst case over the declared race mixes costs width
    assert true_gap <= bound  # and the promise holds on the target state's rows
    assert "P(X, Y, S | " in shifted.promise()  # the sentence states the assumption
