"""The example job with a pause in its relaymq sink: the crash test's fault hook (test code only).

The sink's commit of a micro-batch that delivered messages writes a marker file (the batch id)
once the messages were acknowledged and the ledger recorded the batch - that is, after the sink
committed and before Spark can record the batch in its commit log, since Spark waits for this
commit to return - and then waits to be killed. The test watches for the marker and SIGKILLs
the whole job (Python driver, JVM, Python workers) at that exact point.

    RELAYMQ_TEST_CRASH_MARKER=/tmp/marker relaymq pipeline run tests/pipeline/crash_job.py -- <example args>
"""

from __future__ import annotations

import os
import runpy
import time

from relaymq.pipeline.sink import RelayMQStreamWriter, deliver_batch
from relaymq.pipeline.source import RelayMQDataSource

MARKER_ENV = "RELAYMQ_TEST_CRASH_MARKER"
EXAMPLE_JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                           "telemetry-analytics", "telemetry_job.py")


class PausingWriter(RelayMQStreamWriter):
    def commit(self, messages, batchId) -> None:  # noqa: N803 - Spark's name
        sent = deliver_batch(self.options, messages, batchId)
        marker = os.environ.get(MARKER_ENV)
        if sent and marker and not os.path.exists(marker):
            with open(f"{marker}.tmp", "w", encoding="utf-8") as handle:
                handle.write(str(batchId))
            os.replace(f"{marker}.tmp", marker)
            time.sleep(3600)  # Spark cannot record this batch: the test kills the job now


class PausingSource(RelayMQDataSource):
    """format("relaymq") with the pausing writer (registered over the real one)."""

    def streamWriter(self, schema, overwrite):  # noqa: N802 - Spark's name
        return PausingWriter(self.options, schema)


def run(spark, args: list[str]) -> int:
    spark.dataSource.register(PausingSource)
    return runpy.run_path(EXAMPLE_JOB, run_name="telemetry_job")["run"](spark, args)
