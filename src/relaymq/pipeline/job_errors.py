"""What a failed or interrupted Spark job tells the operator (issue 18, "the first hour"): one
line naming the cause, as the rest of the CLI does.

A streaming query that fails in the relaymq source (a message log that is not there) reaches
the driver as a StreamingQueryException whose message holds Spark's error class, a Python
traceback from the worker and a Java stack: about 190 lines with the cause on line 26. The
cause is the innermost exception line of that traceback; ``cause`` finds it. Spark's
MicroBatchExecution logs the same failure with its stack before the driver sees it:
``quiet_query_errors`` turns that logger off while the runner reports the failure itself."""

from __future__ import annotations

import re
from typing import Any

#: ``package.module.SomeError: message`` as a Python traceback's last line writes it.
_EXCEPTION_LINE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (?P<message>.+)$")
#: Spark's and Py4J's wrappers around the cause: never the cause themselves.
_WRAPPERS = ("org.apache.spark.", "py4j.", "pyspark.errors.", "java.", "scala.", "StreamingQueryException",
             "Py4JJavaError", "SparkException", "PythonException")
#: The loggers whose ERROR lines repeat a query failure the runner reports in one line.
QUERY_LOGGERS = ("org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
                 "org.apache.spark.sql.execution.streaming.MicroBatchExecution")


def cause(error: BaseException) -> str:
    """One line: the innermost non-wrapper ``Name: message`` in ``error``'s text (the last
    part of its dotted name), else its first line."""
    text = str(error).strip()
    found = None
    for line in text.splitlines():
        match = _EXCEPTION_LINE.match(line.strip())
        if match and not match.group("name").startswith(_WRAPPERS) and match.group("name") not in _WRAPPERS:
            found = match
    if found is not None:
        return f"{found.group('name').rsplit('.', 1)[-1]}: {found.group('message').strip()}"
    first = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def quiet_query_errors(spark: Any) -> None:
    """Turn off the loggers that print a failed query's stack (the runner says it in one line)."""
    try:
        jvm = spark.sparkContext._jvm  # noqa: SLF001 - log4j has no Python API
        level = jvm.org.apache.logging.log4j.Level.OFF
        for name in QUERY_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
    except Exception:  # noqa: BLE001 - another logging backend: its lines stay, nothing else changes
        pass
