"""Where the conformance data is, for every test in this directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .runner import ConformanceDataMissing, find_data_dir


@pytest.fixture(scope="session")
def conformance_data_dir() -> Path:
    """The data directory. Missing data skips (with the paths tried), or fails when CI=true:
    a CI run that silently skips the conformance suite would prove nothing."""
    try:
        return find_data_dir()
    except ConformanceDataMissing as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))
