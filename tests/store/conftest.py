"""The ``engine`` fixture: every test that takes it runs once per storage engine (memory, sqlite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_helpers import Engine


@pytest.fixture(params=["memory", "sqlite"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    eng = Engine(request.param, tmp_path / "relaymq.db")
    yield eng
    for store in eng.opened:
        try:
            store.close()
        except Exception:
            pass  # a test that made the store fail has already checked what close() says
