"""The MQTT load generator behind ``relaymq bench`` and ``bench/compare`` (issue 8).

It works against any MQTT broker. ``wire`` holds the sans-I/O hot path (stamped PUBLISH batches,
a fast receive scan), ``client`` the asyncio connections, ``runner`` the multi-process load runs,
``scenarios`` the special measurements of the comparison (idle connections, retained topics,
persistent-session backlog) and ``report`` the figures.
"""

from relaymq.bench.client import BenchError, Connection
from relaymq.bench.report import RunReport
from relaymq.bench.runner import BenchSpec, run

__all__ = ["BenchError", "BenchSpec", "Connection", "RunReport", "run"]
