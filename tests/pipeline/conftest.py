"""Fixtures of the pipeline tests: one local Spark session for all Spark tests (it takes 5-10 s
to start on this machine), and a broker process with archive rules and an HTTP port.

Spark tests are marked ``slow`` and skipped when pyspark is not installed (the ``spark`` extra).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from pipeline_helpers import ArchiveBroker, archive_toml


@pytest.fixture
def archive_broker_factory() -> Iterator[Any]:
    started: list[ArchiveBroker] = []

    def make(rules: list[dict[str, Any]], config: dict[str, Any] | None = None, **options: Any) -> ArchiveBroker:
        """A broker with these archive rules; ``config``: more TOML tables; ``options``: [archive] keys."""
        broker = ArchiveBroker(archive_toml(rules, **options), config=config)
        started.append(broker)
        return broker.start()

    yield make
    for broker in started:
        broker.stop()


#: Settings of the tests' session on a loaded, shared 2-core machine. (The wait for a Python
#: worker to connect back - "Timed out while waiting for the Python worker to connect back" -
#: is a fixed 10 s in Spark 4's PythonWorkerFactory, with no setting to raise it.)
TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.python.authenticate.socketTimeout": "120s",
    "spark.network.timeout": "600s",
    "spark.executor.heartbeatInterval": "30s",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local Spark session of the test run (local[2], no UI, 2 shuffle partitions).
    Fails with one clear line when Java 17+ is missing (bin/test installs it)."""
    pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from relaymq.pipeline.runner import JobError, build_session, check_java

    try:
        check_java()
    except JobError as error:
        pytest.fail(f"the Spark tests cannot run: {error}", pytrace=False)
    session = build_session("local[2]", app_name="relaymq-tests", conf=TEST_CONF)
    yield session
    session.stop()
