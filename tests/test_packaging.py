"""What pyproject.toml promises installs and imports together."""

import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from conftest import REPO


def test_numpy_floor_is_2_because_the_pyarrow_datasets_resolves_refuses_numpy_1():
    """``pip install 'numpy<2' -e .`` kept numpy 1.26 beside a pyarrow built for numpy 2,
    which fails at import; no marker can tie pyarrow's version to numpy's, so the
    honest constraint is numpy 2 or later."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    numpy = next(Requirement(r) for r in project["dependencies"] if Requirement(r).name == "numpy")
    assert not numpy.specifier.contains(Version("1.26.4"))
    assert numpy.specifier.contains(Version("2.0.0"))
