from importlib.metadata import version

import fairest


def test_version_has_one_source():
    assert fairest.__version__ == version("fairest")


def test_show_versions_prints_fairest_python_jax_and_dependencies(capsys):
    fairest.show_versions()
    out = capsys.readouterr().out
    for name in (
        "fairest",
        "python",
        "numpy",
        "scipy",
        "scikit-learn",
        "pandas",
        "jax",
        "cvxpy",
        "jax backend",
        "jax devices",
    ):
        assert f"{name}:" in out
    assert fairest.__version__ in out
