"""Shared plumbing of the dataset loaders: data home, checksummed reads, Bunch assembly."""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

__all__ = ["get_data_home", "clear_data_home"]

#: Environment variable that overrides the default cache folder.
DATA_HOME_ENV = "FAIREST_DATA"
#: Default cache folder (expanded with :func:`os.path.expanduser`).
DEFAULT_DATA_HOME = os.path.join("~", "fairest_data")


def get_data_home(data_home: str | os.PathLike | None = None) -> str:
    """Return the path of the fairest data cache folder, creating it if needed.

    The folder holds the files read by the ``fetch_*`` functions. It is chosen, in order,
    from the ``data_home`` argument, the ``FAIREST_DATA`` environment variable, and
    ``~/fairest_data``. A leading ``~`` is expanded to the user's home folder.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The cache folder. ``None`` means ``$FAIREST_DATA`` or else ``~/fairest_data``.

    Returns
    -------
    data_home : str
        The absolute path of the (existing) cache folder.

    See Also
    --------
    clear_data_home : Delete the cache folder.
    seed_data_home : Copy dataset files from a local folder into the cache.

    Examples
    --------
    >>> from fairest.datasets import get_data_home
    >>> path = get_data_home()  # doctest: +SKIP
    """
    path = resolve_data_home(data_home)
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def resolve_data_home(data_home=None) -> Path:
    """The cache folder's absolute path, without creating it."""
    if data_home is None:
        data_home = os.environ.get(DATA_HOME_ENV) or DEFAULT_DATA_HOME
    return Path(os.path.expanduser(os.fspath(data_home))).resolve()


def clear_data_home(data_home: str | os.PathLike | None = None) -> None:
    """Delete the fairest data cache folder and everything in it.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The cache folder, resolved as in :func:`get_data_home`.
    """
    shutil.rmtree(get_data_home(data_home))


# --------------------------------------------------------------------------- checksums
def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_verified_xz(path: str | os.PathLike, expected_sha256: str) -> bytes:
    """Decompress an ``.xz`` file and check the sha256 of its uncompressed bytes.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    OSError
        If the file cannot be decompressed or its checksum differs from the expected one.
    """
    path = Path(path)
    try:
        data = lzma.decompress(path.read_bytes())
    except lzma.LZMAError as exc:
        raise OSError(
            f"{path} is not a valid xz file ({exc}); the file is corrupted. Delete it and "
            "copy it again from its source."
        ) from exc
    actual = _sha256(data)
    if actual != expected_sha256:
        raise OSError(
            f"Checksum mismatch for {path}: the sha256 of its uncompressed bytes is "
            f"{actual}, expected {expected_sha256}. The file is corrupted or is not the "
            "expected version; delete it and copy it again from its source."
        )
    return data


_BUNDLED_PACKAGE = "fairest.datasets"


def _bundled_checksums() -> dict:
    text = resources.files(_BUNDLED_PACKAGE).joinpath("data", "checksums.json").read_text()
    return json.loads(text)


def read_bundled(filename: str) -> bytes:
    """Uncompressed bytes of a bundled ``data/<filename>`` file, sha256-checked."""
    checksums = _bundled_checksums()
    if filename not in checksums:
        raise KeyError(f"{filename!r} is not a bundled fairest data file.")
    resource = resources.files(_BUNDLED_PACKAGE).joinpath("data", filename)
    with resources.as_file(resource) as path:
        if not Path(path).is_file():
            raise FileNotFoundError(
                f"The bundled data file {filename} is missing from the fairest "
                "installation; reinstall fairest."
            )
        return read_verified_xz(path, checksums[filename])


# ----------------------------------------------------------------------- bunch assembly
def age_group(age, edges, labels) -> pd.Series:
    """Ordered categorical age groups: ``labels[i]`` covers ``edges[i] <= age < edges[i+1]``."""
    age = pd.Series(age)
    cut = pd.cut(age, bins=[-np.inf, *edges, np.inf], right=False, labels=labels)
    return cut.astype(pd.CategoricalDtype(categories=list(labels), ordered=True))


def as_category(values, categories=None) -> pd.Series:
    """Categorical Series with sorted (or the given) categories."""
    values = pd.Series(values)
    if categories is None:  # pandas sorts the observed values
        return values.astype("category")
    return values.astype(pd.CategoricalDtype(categories=list(categories)))


def _check_flags(**flags):
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool; got {value!r}.")


def make_bunch(
    frame: pd.DataFrame,
    *,
    feature_names: list[str],
    target_column: str,
    target: np.ndarray,
    target_names,
    sensitive: pd.DataFrame,
    descr: str,
    as_frame: bool,
    return_X_y: bool,
    **extra,
):
    """Assemble the sklearn-style return value of every loader.

    ``frame`` holds every stored column (features, target, auxiliary columns) with
    categorical columns as pandas ``category``. ``target`` is the numeric target.
    """
    frame = frame.reset_index(drop=True)
    sensitive = sensitive.reset_index(drop=True)
    target = np.asarray(target)
    X_frame = frame[feature_names]
    categorical = [c for c in feature_names if isinstance(X_frame[c].dtype, pd.CategoricalDtype)]
    if as_frame:
        data = X_frame.copy()
        y = pd.Series(target, name=target_column)
        frame_out = frame.copy()
        frame_out[target_column] = y
        categories = None
    else:
        columns = []
        for name in feature_names:
            col = X_frame[name]
            if name in categorical:
                codes = col.cat.codes.to_numpy(dtype=np.float64)
                codes[codes < 0] = np.nan
                columns.append(codes)
            else:
                columns.append(col.to_numpy(dtype=np.float64, na_value=np.nan))
        data = np.column_stack(columns) if columns else np.empty((len(frame), 0))
        y = target
        frame_out = None
        categories = {c: X_frame[c].cat.categories.tolist() for c in categorical}
    if return_X_y:
        return data, y
    return Bunch(
        data=data,
        target=y,
        frame=frame_out,
        feature_names=list(feature_names),
        target_names=target_names,
        target_column=target_column,
        sensitive=sensitive,
        categories=categories,
        DESCR=descr,
        **extra,
    )
