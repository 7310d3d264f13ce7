"""``fairest compare --dataset`` for the practitioner tasks of benchmarks/practitioner.py.

Fixture folders hold a few hundred synthetic rows in the data cache's layout (the real
file names, xz-compressed); their checksums are registered for the test only.
"""

import hashlib
import lzma

import numpy as np
import pandas as pd
import pytest

from fairest import cli
from fairest._compare_data import PRACTITIONER, cap_rows, load_practitioner
from fairest.cli import main
from fairest.datasets import _fetchers

RELPATHS = {
    "acs_public_coverage": "acs/acs_folktables_aequitas/ACSPublicCoverage.test.csv",
    "kdd_census": "uci/census-income.data",
    "bank_marketing": "uci/bank-full.csv",
    "credit_default": "uci/default_of_credit_card_clients.csv",
}
GROUPS = {  # the benchmark's sensitive feature and its number of groups
    "acs_public_coverage": ("race", 9),
    "kdd_census": ("race", 5),
    "bank_marketing": ("age band", 3),
    "credit_default": ("sex", 2),
}


@pytest.fixture(autouse=True)
def no_persistent_cache(monkeypatch):
    """The CLI turns on JAX's disk cache for its own process; keep tests hermetic."""
    monkeypatch.setenv("FAIREST_NO_COMPILATION_CACHE", "1")


def _label(rng, signal):
    return (signal + rng.normal(size=signal.size) > np.median(signal)).astype(int)


def _acs(rng, n):
    # 9 race codes (0-based), the last three rare: 8 rows each, 4 of each label
    race = np.concatenate([rng.choice(6, size=n - 24, p=[0.5, 0.2, 0.1, 0.1, 0.05, 0.05])])
    race = np.concatenate([race, np.repeat([6, 7, 8], 8)])
    columns = "DEAR SEX ESP DEYE MIL DIS ANC SCHL MIG ESR NATIVITY FER DREM MAR CIT".split()
    frame = pd.DataFrame({c: rng.integers(1, 4, size=n) for c in columns})
    frame.insert(0, "RAC1P", race)
    frame["AGEP"] = rng.integers(18, 90, size=n)
    frame["PINCP"] = rng.integers(0, 90_000, size=n)
    label = _label(rng, frame["AGEP"] / 30.0 - frame["PINCP"] / 40_000)
    label[n - 24 :] = np.tile([0, 1], 12)
    frame.insert(0, "PUBCOV", label)
    frame.insert(0, "index", np.arange(n))
    return frame.to_csv(index=False)


def _kdd(rng, n):
    numeric = {
        "age",
        "detailed_industry_recode",
        "detailed_occupation_recode",
        "wage_per_hour",
        "capital_gains",
        "capital_losses",
        "dividends_from_stocks",
        "instance_weight",
        "num_persons_worked_for_employer",
        "own_business_or_self_employed",
        "veterans_benefits",
        "weeks_worked_in_year",
        "year",
    }
    races = ["White", "Black", "Asian or Pacific Islander", "Other", "Amer Indian Aleut or Eskimo"]
    frame = {}
    for column in _fetchers.KDD_COLUMNS[:-1]:
        if column in numeric:
            frame[column] = rng.integers(0, 60, size=n)
        elif column == "race":
            frame[column] = rng.choice(races, size=n, p=[0.6, 0.15, 0.1, 0.1, 0.05])
        elif column == "sex":
            frame[column] = rng.choice(["Female", "Male"], size=n)
        else:  # string categories, some missing ("?")
            frame[column] = rng.choice(["Not in universe", "Yes", "No", "?"], size=n)
    label = _label(rng, frame["age"] / 20.0)
    frame["income"] = np.where(label == 1, "50000+.", "- 50000.")
    return pd.DataFrame(frame).to_csv(header=False, index=False, sep=",")


def _bank(rng, n):
    frame = pd.DataFrame(
        {
            "age": np.concatenate([rng.integers(18, 90, size=n - 12), np.repeat([22, 45, 70], 4)]),
            "job": rng.choice(["admin.", "technician", "retired"], size=n),
            "marital": rng.choice(["married", "single", "divorced"], size=n),
            "education": rng.choice(["primary", "secondary", "tertiary"], size=n),
            "default": rng.choice(["no", "yes"], size=n),
            "balance": rng.integers(-500, 5000, size=n),
            "housing": rng.choice(["no", "yes"], size=n),
            "loan": rng.choice(["no", "yes"], size=n),
            "contact": rng.choice(["cellular", "unknown"], size=n),
            "day": rng.integers(1, 29, size=n),
            "month": rng.choice(["may", "jun"], size=n),
            "duration": rng.integers(0, 600, size=n),
            "campaign": rng.integers(1, 5, size=n),
            "pdays": rng.integers(-1, 100, size=n),
            "previous": rng.integers(0, 3, size=n),
            "poutcome": rng.choice(["unknown", "success"], size=n),
        }
    )
    label = _label(rng, frame["balance"] / 2000.0)
    label[n - 12 :] = np.tile([0, 1], 6)
    frame["y"] = np.where(label == 1, "yes", "no")
    return frame.to_csv(index=False, sep=";")


def _credit(rng, n):
    frame = pd.DataFrame(
        {
            "ID": np.arange(1, n + 1),
            "LIMIT_BAL": rng.integers(10, 500, size=n) * 1000,
            "SEX": rng.choice([1, 2], size=n, p=[0.4, 0.6]),
            "EDUCATION": rng.choice([1, 2, 3, 4], size=n),
            "MARRIAGE": rng.choice([1, 2, 3], size=n),
            "AGE": rng.integers(21, 70, size=n),
        }
    )
    for month in ["PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6"]:
        frame[month] = rng.integers(-2, 4, size=n)
    for k in range(1, 7):
        frame[f"BILL_AMT{k}"] = rng.integers(0, 100_000, size=n)
    for k in range(1, 7):
        frame[f"PAY_AMT{k}"] = rng.integers(0, 10_000, size=n)
    frame[_fetchers.CREDIT_TARGET] = _label(rng, frame["PAY_0"] - frame["LIMIT_BAL"] / 2e5)
    return frame.to_csv(index=False)


WRITERS = {
    "acs_public_coverage": _acs,
    "kdd_census": _kdd,
    "bank_marketing": _bank,
    "credit_default": _credit,
}


@pytest.fixture
def fixture_home(tmp_path, monkeypatch):
    """A data home with every practitioner task: 400 synthetic rows each."""
    rng = np.random.default_rng(0)
    home = tmp_path / "data_home"
    for name, relpath in RELPATHS.items():
        raw = WRITERS[name](rng, 400).encode()
        path = home / (relpath + ".xz")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(lzma.compress(raw))
        monkeypatch.setitem(_fetchers.FILE_SHA256, relpath, hashlib.sha256(raw).hexdigest())
    return home


def _load(name, home, *options):
    """The split ``fairest compare`` makes of ``--dataset name`` with ``options``."""
    args = cli._parser().parse_args(
        ["compare", "--dataset", name, "--data-home", str(home), *options]
    )
    sensitive = args.sensitive.split(",") if args.sensitive else None
    return load_practitioner(args.dataset, args.data_home, sensitive, args.test_size, args.seed)


@pytest.mark.parametrize("name", PRACTITIONER)
def test_each_task_loads_from_its_files(fixture_home, name):
    data = _load(name, fixture_home)
    column, n_groups = GROUPS[name]
    assert data.name == name and data.task == "classification"
    assert list(data.s_train.columns) == [column]
    assert data.s_train[column].nunique() == n_groups == data.s_test[column].nunique()
    assert len(data.y_train) == 280 and len(data.y_test) == 120  # --test-size 0.3
    assert set(np.unique(data.y_train)) == {0, 1}
    categories = data.X_train.select_dtypes(exclude="number").columns
    numbers = data.X_train.select_dtypes(include="number").columns
    if name == "acs_public_coverage":  # integer codes become categories, amounts stay
        assert set(numbers) == {"AGEP", "PINCP"} and "RAC1P" in categories
    if name == "kdd_census":  # string categories with their missing values, as given
        assert "race" in categories and data.X_train[categories].isna().any().any()
    if name == "credit_default":
        assert {"SEX", "EDUCATION", "MARRIAGE"} <= set(categories) and "AGE" in numbers
    if name == "bank_marketing":
        assert set(data.s_train[column]) == {"under 30", "30-59", "60+"}


def test_sensitive_may_name_the_fetchers_other_columns(fixture_home, capsys):
    data = _load("credit_default", fixture_home, "--sensitive", "sex,age_group")
    assert list(data.s_train.columns) == ["sex", "age_group"]
    with pytest.raises(cli.UserError, match=r"unknown sensitive column\(s\) \['colour'\]"):
        _load("kdd_census", fixture_home, "--sensitive", "colour")


@pytest.mark.parametrize("name", PRACTITIONER)
def test_missing_file_names_it_and_data_home(tmp_path, capsys, name):
    empty = tmp_path / "empty"
    empty.mkdir()
    status = main(["compare", "--dataset", name, "--data-home", str(empty), "--methods", "erm"])
    assert status == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("fairest: error:")
    assert "--data-home" in error and f"{RELPATHS[name]}.xz" in error and str(empty) in error


def test_max_rows_caps_each_side_and_keeps_every_group(fixture_home):
    data = _load("acs_public_coverage", fixture_home)
    full_groups = data.s_train["race"].value_counts()
    assert full_groups.min() <= 6  # the three rare races: about 6 train rows each
    capped = cap_rows(data, 60, seed=0)
    assert len(capped.y_train) == 60 and len(capped.y_test) == 60
    assert set(capped.s_train["race"]) == set(full_groups.index)  # every group kept
    cells = pd.crosstab(capped.s_train["race"], capped.y_train)
    assert (cells >= 2).all().all()  # both labels of each group, 2 rows each at least
    # the rows are rows of the split, with their own labels and groups
    assert capped.X_train.index.isin(data.X_train.index).all()
    position = data.X_train.index.get_indexer(capped.X_train.index)
    assert np.array_equal(capped.y_train, data.y_train[position])
    assert "sampled by label and group from 280 train / 120 test rows" in capped.name
    assert "--max-rows 60" in capped.name
    assert cap_rows(data, 0, seed=0) is data and cap_rows(data, 280, seed=0) is data


def test_compare_credit_default_end_to_end(fixture_home, tmp_path, capsys):
    output = tmp_path / "report"
    arguments = ["compare", "--dataset", "credit_default", "--data-home", str(fixture_home)]
    options = ["--methods", "erm,erm-balanced", "--n-boot", "0", "--no-paths"]
    status = main([*arguments, *options, "--max-rows", "150", "--output", str(output)])
    assert status == 0
    captured = capsys.readouterr()
    header = (
        "fairest compare: credit_default, sampled by label and group from 280 train / 120 "
        "test rows (--max-rows 150) (150 train / 120 test rows, sensitive: sex)"
    )
    assert header in captured.err
    results = pd.read_csv(output / "results.csv", index_col=0)
    assert len(results) == 2 and "ERM (logistic regression)" in results.index
    assert results["accuracy"].between(0.4, 1.0).all()
    assert "sampled by label and group" in (output / "report.md").read_text()


def test_default_cap_applies_to_the_practitioner_tasks_only(fixture_home, tmp_path, capsys):
    """Without --max-rows a practitioner task is capped at DEFAULT_MAX_ROWS (lowered here
    to bind on the fixture), a bundled dataset is not."""
    import fairest.cli

    common = ["--methods", "erm", "--n-boot", "0", "--no-paths"]
    try:
        fairest.cli.DEFAULT_MAX_ROWS = 100
        status = main(
            ["compare", "--dataset", "bank_marketing", "--data-home", str(fixture_home)]
            + [*common, "--output", str(tmp_path / "bank")]
        )
        assert status == 0
        assert "(--max-rows 100) (100 train / 100 test rows" in capsys.readouterr().err
        status = main(
            ["compare", "--dataset", "ricci", *common, "--output", str(tmp_path / "ricci")]
        )
        assert status == 0
        assert "sampled" not in capsys.readouterr().err
    finally:
        fairest.cli.DEFAULT_MAX_ROWS = 20_000


def test_option_errors_are_one_line(fixture_home, capsys):
    home = ["--data-home", str(fixture_home)]
    for arguments, message in [
        (["--dataset", "kdd_census", *home, "--max-rows", "-5"], "--max-rows must be 0"),
        (["--dataset", "kdd_census", *home, "--state", "AL"], "--state applies to"),
        (["--dataset", "census"], "from the data cache: acs_income, acs_public_coverage"),
    ]:
        assert main(["compare", *arguments, "--methods", "erm"]) == 2
        error = capsys.readouterr().err
        assert message in error and error.count("\n") == 1


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "name, n_rows",
    [
        ("acs_public_coverage", 227_658),
        ("kdd_census", 199_523),
        ("bank_marketing", 45_211),
        ("credit_default", 30_000),
    ],
)
def test_real_task_loads_from_the_shared_datasets(shared_datasets, name, n_rows):
    data = load_practitioner(name, str(shared_datasets), None, 0.3, 0)
    column, n_groups = GROUPS[name]
    assert len(data.y_train) + len(data.y_test) == n_rows
    capped = cap_rows(data, 20_000, seed=0)
    assert len(capped.y_train) == min(20_000, len(data.y_train))
    assert capped.s_train[column].nunique() == n_groups
    assert 0.02 < capped.y_train.mean() < 0.5  # minority positive class in every task
