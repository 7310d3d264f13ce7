import numpy as np
import pandas as pd
import pytest

from fairest.cli import main


@pytest.fixture(autouse=True)
def no_persistent_cache(monkeypatch):
    """The CLI turns on JAX's disk cache for its own process; keep tests hermetic."""
    monkeypatch.setenv("FAIREST_NO_COMPILATION_CACHE", "1")


@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
            "colour": rng.choice(["red", "blue"], size=n),
            "sex": rng.choice(["f", "m"], size=n),
        }
    )
    frame["label"] = np.where(
        frame.x1 + 0.5 * (frame.sex == "m") + rng.normal(size=n) > 0, "yes", "no"
    )
    frame["amount"] = 2 * frame.x1 + rng.normal(size=n)
    frame["colour3"] = rng.choice(["red", "green", "blue"], size=n)
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


def test_compare_on_csv_writes_report(csv_file, tmp_path, capsys):
    output = tmp_path / "out"
    status = main(
        [
            "compare",
            "--data",
            str(csv_file),
            "--target",
            "label",
            "--sensitive",
            "sex",
            "--methods",
            "erm,erm-balanced,erm-minimax,erm-best-group",
            "--output",
            str(output),
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "accuracy" in printed and "demographic parity diff" in printed and "fit time" in printed
    report = (output / "report.md").read_text()
    assert "| ERM (logistic regression) |" in report
    assert "![accuracy vs demographic parity difference](pareto.png)" in report
    assert (output / "pareto.png").stat().st_size > 10_000
    results = pd.read_csv(output / "results.csv", index_col=0)
    assert results["accuracy"].between(0.5, 1.0).all()
    assert results.loc["Group-balanced logistic regression", "fitted"].startswith(
        "group weights f: 0."
    )
    assert "what the methods chose:" in printed
    # bootstrap intervals of the test metrics: in the report, the CSV and the terminal
    assert "| accuracy 95% CI |" in report
    for metric in ("accuracy", "demographic parity diff", "equalized odds diff"):
        bounds = results[f"{metric} 95% CI"].str.strip("[]").str.split(", ", expand=True)
        low, high = bounds[0].astype(float), bounds[1].astype(float)
        assert ((0 <= low) & (low <= high) & (high <= 1)).all()
        assert (low <= results[metric] + 0.05).all() and (results[metric] - 0.05 <= high).all()
    assert "95% percentile bootstrap" in report
    page = (output / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "ERM (logistic regression)" in page
    assert page.count('src="data:image/png;base64,') == 1  # self-contained: the PNG is inlined


def test_compare_report_shows_partial_interval_and_group_cdfs(csv_file, tmp_path, capsys):
    output = tmp_path / "partial"
    status = main(
        [
            "compare",
            "--data",
            str(csv_file),
            "--target",
            "label",
            "--sensitive",
            "sex",
            "--methods",
            "partial-sp",
            "--output",
            str(output),
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "interval [" in printed
    report = (output / "report.md").read_text()
    assert "![partial-sp: per-group CDFs of the test scores, percentile interval [" in report
    assert "(cdf_partial-sp.png)" in report
    assert (output / "cdf_partial-sp.png").stat().st_size > 10_000
    assert (output / "report.html").read_text().count("data:image/png;base64,") == 2


class _WarnsAfterFit:
    """A method whose fit misses its fairness target (and says so, as the estimators do)."""

    @staticmethod
    def make(seed):
        import warnings

        from fairest import GroupWeightedClassifier
        from fairest.utils import FairnessWarning

        class Warns(GroupWeightedClassifier):
            def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
                super().fit(X, y, sensitive_features=sensitive_features)
                warnings.warn(
                    "the exact training demographic_parity of the returned model is 0.2345 > "
                    "tolerance=0.1 after 3 solves; raise tolerance.\nSecond line.",
                    FairnessWarning,
                    stacklevel=2,
                )
                return self

        return Warns()


def test_fairness_warning_of_a_fit_becomes_a_one_line_note(csv_file, tmp_path, capsys, monkeypatch):
    """No warning escapes (the suite turns warnings into errors); the report says it."""
    from fairest._compare import METHODS, Method

    monkeypatch.setitem(
        METHODS, "warns", Method("Warns after fit", "classification", _WarnsAfterFit.make)
    )
    output = tmp_path / "warns"
    arguments = ["--data", str(csv_file), "--target", "label", "--sensitive", "sex"]
    status = main(["compare", *arguments, "--methods", "warns,erm", "--output", str(output)])
    assert status == 0
    printed = capsys.readouterr().out
    note = (
        "Warns after fit: FairnessWarning: the exact training demographic_parity of the "
        "returned model is 0.2345 > tolerance=0.1 after 3 solves"
    )
    assert "notes:\n  " + note + "\n" in printed
    assert "- " + note + "\n" in (output / "report.md").read_text()
    results = pd.read_csv(output / "results.csv", index_col=0, keep_default_na=False)
    assert results.loc["ERM (logistic regression)", "note"] == ""


def test_compare_without_bootstrap_has_no_interval_columns(csv_file, tmp_path, capsys):
    arguments = ["--data", str(csv_file), "--target", "label", "--sensitive", "sex"]
    output = tmp_path / "plain"
    assert (
        main(["compare", *arguments, "--methods", "erm", "--n-boot", "0", "--output", str(output)])
        == 0
    )
    assert not [c for c in pd.read_csv(output / "results.csv").columns if c.endswith("CI")]
    assert main(["compare", *arguments, "--n-boot", "-1", "--output", str(output)]) == 2
    assert "--n-boot" in capsys.readouterr().err


@pytest.mark.shared_data
def test_compare_on_shared_acs_income(shared_datasets, tmp_path, capsys):
    if not (shared_datasets / "acs" / "acs_income_2018_by_state" / "WY.csv.xz").is_file():
        pytest.skip("ACSIncome WY not in the shared datasets")
    output = tmp_path / "acs"
    status = main(
        [
            "compare",
            "--dataset",
            "acs_income",
            "--state",
            "wy",
            "--data-home",
            str(shared_datasets),
            "--sensitive",
            "sex,race",
            "--methods",
            "erm,erm-balanced",
            "--output",
            str(output),
        ]
    )
    assert status == 0
    captured = capsys.readouterr()
    assert "acs_income (WY) (2144 train / 920 test rows, sensitive: sex, race)" in captured.err
    assert (output / "pareto.png").stat().st_size > 10_000
    results = pd.read_csv(output / "results.csv", index_col=0)
    # folktables' logistic baseline is about 0.77 on ACSIncome
    assert 0.72 <= results.loc["ERM (logistic regression)", "accuracy"] <= 0.85
    assert results["accuracy"].between(0.6, 0.9).all()


def test_compare_acs_income_errors_are_one_line(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    for arguments, message in [
        (["--dataset", "acs_income"], "needs --state"),
        (["--dataset", "acs_income", "--state", "ZZ"], "no ACS data for state 'ZZ'"),
        (["--dataset", "acs_income", "--state", "WY", "--data-home", str(empty)], "not found"),
    ]:
        assert main(["compare", *arguments, "--output", str(tmp_path / "o")]) == 2
        error = capsys.readouterr().err
        assert message in error and "Traceback" not in error
        assert len(error.strip().splitlines()) == 1 and len(error) < 500


def test_compare_regression_target(csv_file, tmp_path, capsys):
    status = main(
        [
            "compare",
            "--data",
            str(csv_file),
            "--target",
            "amount",
            "--sensitive",
            "sex,colour",
            "--output",
            str(tmp_path / "r"),
        ]
    )
    assert status == 0
    assert "RMSE" in capsys.readouterr().out
    results = pd.read_csv(tmp_path / "r" / "results.csv", index_col=0)
    assert results["RMSE 95% CI"].str.match(r"^\[\d+\.\d{4}, \d+\.\d{4}\]$").all()
    # the regression methods include the barycenter post-processor, which wraps the ridge
    # row's fitted model and brings the groups' test prediction distributions closer
    ks = results["KS gap"]
    assert ks.between(0, 1).all()
    parity = "Wasserstein parity on ridge (group prediction distributions made equal)"
    assert ks[parity] < ks["ERM (ridge)"]


def test_compare_bundled_small_dataset(tmp_path, capsys):
    assert (
        main(["compare", "--dataset", "ricci", "--methods", "erm", "--output", str(tmp_path)]) == 0
    )
    assert "ERM (logistic regression)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--data", "missing.csv", "--target", "a", "--sensitive", "b"], "no such file"),
        (["--data", "{csv}", "--target", "nope", "--sensitive", "sex"], "not in"),
        (
            ["--data", "{csv}", "--target", "label", "--sensitive", "sex", "--methods", "magic"],
            "unknown method",
        ),
        (["--data", "{csv}", "--target", "label"], "--sensitive"),
        (["--dataset", "iris"], "unknown dataset"),
        (["--data", "{bad}", "--target", "a", "--sensitive", "b"], "could not read"),
        (["--data", "{one}", "--target", "label", "--sensitive", "sex"], "single value"),
        (["--data", "{csv}", "--target", "colour3", "--sensitive", "sex"], "3 classes"),
    ],
)
def test_compare_user_errors_exit_2_without_traceback(
    arguments, message, csv_file, tmp_path, capsys
):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\xff\xfe\x00garbage\x00")
    one = tmp_path / "one.csv"
    pd.DataFrame({"x": [1, 2, 3], "sex": ["f", "m", "f"], "label": ["a", "a", "a"]}).to_csv(
        one, index=False
    )
    arguments = [a.format(csv=csv_file, bad=bad, one=one) for a in arguments]
    assert main(["compare", *arguments, "--output", str(tmp_path / "o")]) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_datasets_lists_bundled(capsys):
    assert main(["datasets"]) == 0
    printed = capsys.readouterr().out
    for name in ("adult", "compas", "german", "ricci"):
        assert name in printed


def test_compare_includes_fairlearn_anchor(csv_file, tmp_path, capsys):
    import warnings

    pytest.importorskip("fairlearn")
    with warnings.catch_warnings():  # fairlearn's own pandas-4 deprecation noise
        warnings.simplefilter("ignore", getattr(pd.errors, "Pandas4Warning", FutureWarning))
        status = main(
            [
                "compare",
                "--data",
                str(csv_file),
                "--target",
                "label",
                "--sensitive",
                "sex",
                "--methods",
                "fairlearn-eg",
                "--output",
                str(tmp_path / "eg"),
            ]
        )
    assert status == 0
    assert "fairlearn ExponentiatedGradient" in capsys.readouterr().out


def test_compare_lists_its_methods(capsys):
    from fairest._compare import METHODS

    assert main(["compare", "--methods", "list"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == list(METHODS)
    assert any(line.startswith("badr-dp ") and "classification" in line for line in printed)


def _bad_csvs(csv_file, tmp_path) -> dict:
    """Bad inputs that used to end in a traceback (or a silent drop), each as a CSV path."""
    frame = pd.read_csv(csv_file)
    paths = {}
    lonely = frame.copy()
    lonely.loc[0, "sex"] = "x"  # a group with one row
    infinite = frame.copy()
    infinite.loc[3, "x2"] = np.inf
    for name, data in {"lonely": lonely, "infinite": infinite, "tiny": frame.head(6)}.items():
        paths[name] = tmp_path / f"{name}.csv"
        data.to_csv(paths[name], index=False)
    return paths


@pytest.mark.parametrize(
    "arguments, message",
    [
        (
            ["--data", "{csv}", "--target", "label", "--sensitive", "sex", "--test-size", "1.5"],
            "--test-size",
        ),
        (
            ["--data", "{csv}", "--target", "label", "--sensitive", "sex", "--test-size", "0"],
            "--test-size",
        ),
        (["--data", "{folder}", "--target", "label", "--sensitive", "sex"], "is a directory"),
        (
            ["--data", "{lonely}", "--target", "label", "--sensitive", "sex"],
            "at least 2 training rows",
        ),
        (["--data", "{infinite}", "--target", "label", "--sensitive", "sex"], "infinite"),
        (["--data", "{tiny}", "--target", "label", "--sensitive", "sex"], "at least 20"),
        (
            [
                "--data",
                "{csv}",
                "--target",
                "label",
                "--sensitive",
                "sex",
                "--output",
                "{blocked}/o",
            ],
            "cannot write",
        ),
    ],
)
def test_compare_bad_inputs_are_one_line_exit_2_before_any_fit(
    arguments, message, csv_file, tmp_path, capsys, monkeypatch
):
    import fairest._compare

    def no_fit(*args, **kwargs):
        raise AssertionError("a fit ran before the input was checked")

    monkeypatch.setattr(fairest._compare, "run_comparison", no_fit)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a folder is needed")
    paths = _bad_csvs(csv_file, tmp_path)
    arguments = [
        a.format(csv=csv_file, folder=tmp_path, blocked=blocked, **paths) for a in arguments
    ]
    if "--output" not in arguments:
        arguments += ["--output", str(tmp_path / "o")]
    assert main(["compare", *arguments]) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert len(error.strip().splitlines()[-1]) < 500


def test_compare_counts_dropped_missing_targets_and_prints_plain_class(
    csv_file, tmp_path, capsys, monkeypatch
):
    import fairest._compare

    frame = pd.read_csv(csv_file)
    frame["label01"] = (frame["label"] == "yes").astype(float)
    frame.loc[[1, 5, 9], "label01"] = np.nan
    path = tmp_path / "missing_target.csv"
    frame.drop(columns=["label"]).to_csv(path, index=False)
    seen = {}

    def record(data, names, **kwargs):
        seen["n"] = len(data.y_train) + len(data.y_test)
        raise SystemExit(0)

    monkeypatch.setattr(fairest._compare, "run_comparison", record)
    with pytest.raises(SystemExit):
        main(
            [
                "compare",
                "--data",
                str(path),
                "--target",
                "label01",
                "--sensitive",
                "sex",
                "--output",
                str(tmp_path / "o"),
            ]
        )
    error = capsys.readouterr().err
    assert "dropped 3 row(s) with a missing 'label01'" in error
    assert "positive class of 'label01': 1 (coded 1)" in error
    assert seen["n"] == len(frame) - 3


def test_compare_post_processor_rows_paths_and_certified_row(csv_file, tmp_path, capsys):
    output = tmp_path / "out"
    arguments = ["--data", str(csv_file), "--target", "label", "--sensitive", "sex"]
    methods = "erm,threshold-erm"
    assert (
        main(["compare", *arguments, "--methods", methods, "--certified", "--output", str(output)])
        == 0
    )
    printed = capsys.readouterr().out
    assert "Group thresholds on logistic regression" in printed
    assert "Certified group thresholds" in printed and "no solution found" in printed
    results = pd.read_csv(output / "results.csv", index_col=0)
    assert len(results) == 3
    paths = pd.read_csv(output / "paths.csv")
    assert set(paths["name"]) == {"threshold-erm"}
    assert list(paths["value"]) == [0.0, 0.01, 0.02, 0.05, 0.1, 0.2]
    # the path (the row's fitted classifier, thresholds re-searched per tolerance)
    # reproduces the row's own test scores at the row's tolerance, 0.02
    row = results.loc[results.index.str.startswith("Group thresholds on logistic")].iloc[0]
    at_row = paths.loc[paths["value"] == 0.02].iloc[0]
    assert at_row["val_accuracy"] == pytest.approx(row["accuracy"])
    assert at_row["val_unfairness"] == pytest.approx(row["demographic parity diff"])
    assert (paths["train_unfairness"] <= paths["value"] + 1e-9).all()
    report = (output / "report.md").read_text()
    assert "(paths.png)" in report and (output / "paths.png").stat().st_size > 10_000
    # the certified row only when asked, the paths unless --no-paths
    bare = tmp_path / "bare"
    options = ["--methods", "threshold-erm", "--no-paths", "--output", str(bare)]
    assert main(["compare", *arguments, *options]) == 0
    assert len(pd.read_csv(bare / "results.csv")) == 1
    assert not (bare / "paths.png").exists() and not (bare / "paths.csv").exists()


def test_compare_certified_needs_a_classification_task(csv_file, tmp_path, capsys):
    arguments = ["--data", str(csv_file), "--target", "amount", "--sensitive", "sex"]
    assert main(["compare", *arguments, "--certified", "--output", str(tmp_path)]) == 2
    assert "--certified has no method for regression" in capsys.readouterr().err


THRESHOLD_ERM = "Group thresholds on logistic regression (demographic parity, tolerance 0.02)"


def test_compare_shares_one_preprocessing_and_reuses_the_erm_fit(csv_file):
    from fairest._compare import run_comparison
    from fairest.cli import _load_csv

    data = _load_csv(str(csv_file), "label", ["sex"], 0.3, 0)
    names = ["erm", "threshold-erm", "threshold-hgb"]
    comparison = run_comparison(data, names, n_boot=0, params={"erm": {"alpha": 0.01}})
    erm, thresholds, boosted = (comparison.fitted[name] for name in names)
    assert erm[0] is thresholds[0]  # one frozen preprocessing for the one-hot methods
    assert boosted[0] is not erm[0]  # trees get one integer code per category
    assert boosted[0].transform(data.X_test).shape[1] == data.X_test.shape[1]
    # the thresholds wrap the ERM row's fitted model as is (no refit), its path too
    assert thresholds[-1].estimator_ is erm[-1] and thresholds[-1].prefit
    assert erm[-1].alpha == 0.01  # params reach the estimator
    assert "not refitted" in comparison.table.loc[THRESHOLD_ERM, "fitted"]
    assert set(comparison.settings) == {
        "ERM (logistic regression)",
        comparison.table.index[2],  # the boosted row: integer codes
    }
    # alone, the row fits its own logistic regression
    alone = run_comparison(data, ["threshold-erm"], n_boot=0, paths=False)
    assert not alone.fitted["threshold-erm"][-1].prefit


def test_compare_set_overrides_a_method_parameter_and_reports_it(csv_file, tmp_path, capsys):
    arguments = ["--data", str(csv_file), "--target", "label", "--sensitive", "sex"]
    output = tmp_path / "out"
    options = ["--methods", "erm,threshold-erm", "--no-paths", "--n-boot", "0"]
    setting = ["--set", "threshold-erm.tolerance=0.2"]
    assert main(["compare", *arguments, *options, *setting, "--output", str(output)]) == 0
    report = (output / "report.md").read_text()
    assert "## Settings" in report and f"- {THRESHOLD_ERM}: set: tolerance=0.2" in report
    assert "<h2>Settings</h2>" in (output / "report.html").read_text()
    capsys.readouterr()
    for bad, message in [
        ("threshold-erm.tolerance", "METHOD.PARAM=VALUE"),
        ("nope.tolerance=1", "unknown method 'nope'"),
        ("partial-sp.max_iter=3", "not in this run"),
        ("threshold-erm.no_such=1", "--set threshold-erm"),
        ("threshold-erm.tolerance=-1", "--set threshold-erm"),
    ]:
        assert main(["compare", *arguments, *options, "--set", bad, "--output", str(output)]) == 2
        error = capsys.readouterr().err
        assert message in error and len(error) < 500 and "Traceback" not in error


def test_tree_preprocessing_codes_missing_and_unseen_categories():
    from fairest._compare import _preprocessor

    train = pd.DataFrame(
        {"x": [1.0, np.nan, 3.0, 5.0] * 5, "c": pd.Categorical(["a", "b", None, "a"] * 5)}
    )
    test = pd.DataFrame({"x": [np.nan, 2.0], "c": pd.Categorical(["z", None])})
    codes = _preprocessor("ordinal").fit(train).transform(test)
    assert codes.tolist() == [[3.0, -2.0], [2.0, -1.0]]  # median 3; unseen -2, missing -1


@pytest.fixture
def coded_csv(csv_file, tmp_path):
    """The CSV with integer targets: ``grade`` (3 class codes) and ``count`` (40 values)."""
    frame = pd.read_csv(csv_file)
    rng = np.random.default_rng(1)
    frame["grade"] = np.digitize(frame["x1"], [-0.5, 0.5])
    frame["count"] = rng.integers(0, 40, len(frame))
    path = tmp_path / "coded.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "arguments, messages",
    [
        (  # whole-number class codes were read as a regression target
            ["--target", "grade", "--sensitive", "sex"],
            ["target 'grade' has 3 classes (0, 1, 2)", "binary", "--positive 2", "--task"],
        ),
        (
            ["--target", "grade", "--sensitive", "sex", "--task", "classification"],
            ["3 classes", "--positive"],
        ),
        (["--target", "label", "--sensitive", "label"], ["--sensitive 'label' is the target"]),
        (["--target", "label", "--sensitive", "sex,label"], ["is the target column"]),
        (  # an empty list used to run every method
            ["--target", "label", "--sensitive", "sex", "--methods", ""],
            ["--methods is empty", "erm, erm-balanced", "threshold-erm"],
        ),
        (["--target", "label", "--sensitive", "sex", "--methods", " , "], ["--methods is empty"]),
        (
            ["--target", "amount", "--sensitive", "sex", "--methods", "erm"],
            ["do not handle regression; available for regression: ridge"],
        ),
        (["--target", "grade", "--sensitive", "sex", "--positive", "7"], ["not a class"]),
        (["--target", "label", "--sensitive", "sex", "--task", "regression"], ["numeric"]),
        (
            ["--target", "grade", "--sensitive", "sex", "--task", "regression", "--positive", "1"],
            ["--positive binarises"],
        ),
    ],
)
def test_compare_target_sensitive_and_methods_are_judged_before_any_fit(
    arguments, messages, coded_csv, tmp_path, capsys, monkeypatch
):
    import fairest._compare

    def no_fit(*args, **kwargs):
        raise AssertionError("a fit ran before the input was checked")

    monkeypatch.setattr(fairest._compare, "run_comparison", no_fit)
    output = ["--output", str(tmp_path / "o")]
    assert main(["compare", "--data", str(coded_csv), *arguments, *output]) == 2
    error = capsys.readouterr().err
    assert all(message in error for message in messages), error
    assert "Traceback" not in error and len(error.strip().splitlines()[-1]) < 600


def test_compare_task_and_positive_apply_to_csv_files_only(tmp_path, capsys):
    assert (
        main(["compare", "--dataset", "ricci", "--positive", "1", "--output", str(tmp_path)]) == 2
    )
    assert "--task and --positive apply to a CSV file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments, task, positives",
    [
        (["--target", "grade", "--positive", "2"], "classification", "grade == 2"),
        (["--target", "grade", "--task", "regression"], "regression", None),
        (["--target", "count"], "regression", None),  # 40 whole numbers: a quantity
        (["--target", "label", "--methods", "erm, erm,threshold-erm"], "classification", None),
    ],
)
def test_compare_reads_the_target_as_asked(
    arguments, task, positives, coded_csv, tmp_path, capsys, monkeypatch
):
    import fairest._compare

    seen = {}

    def record(data, names, **kwargs):
        seen.update(data=data, names=names)
        raise SystemExit(0)

    monkeypatch.setattr(fairest._compare, "run_comparison", record)
    with pytest.raises(SystemExit):
        main(
            ["compare", "--data", str(coded_csv), "--sensitive", "sex", *arguments]
            + ["--output", str(tmp_path / "o")]
        )
    data = seen["data"]
    assert data.task == task
    if positives is not None:
        frame = pd.read_csv(coded_csv)
        y = np.concatenate([data.y_train, data.y_test])
        assert set(y) == {0, 1} and y.sum() == (frame["grade"] == 2).sum()
        assert "positive class of 'grade': 2 (coded 1), the other 2 classes coded 0" in (
            capsys.readouterr().err
        )
    if "--methods" in arguments:
        assert seen["names"] == ["erm", "threshold-erm"]


def test_run_comparison_refuses_what_cannot_run():
    from fairest._compare import CompareData, run_comparison

    X = pd.DataFrame({"x": np.arange(30.0)})
    s = pd.DataFrame({"sex": ["f", "m"] * 15})
    y = np.arange(30) % 3
    data = CompareData("three", X, y, s, X, y, s, "classification")
    with pytest.raises(ValueError, match="method_names is empty; name at least one of erm"):
        run_comparison(data, [])
    with pytest.raises(ValueError, match="y_train has 3 classes; the compared methods are binary"):
        run_comparison(data, ["erm"])
    with pytest.raises(ValueError, match=r"do not handle classification"):
        run_comparison(data, ["ridge"])
