"""Running a pipeline job: ``relaymq pipeline run FILE [--master ...]`` or ``spark-submit FILE``.

A job is a Python file with ``def run(spark, args) -> int | None``; it ends with::

    if __name__ == "__main__":
        from relaymq.pipeline.runner import submit_main
        submit_main(run)

so the same file runs under ``relaymq pipeline run`` (which builds a session on ``--master``,
``local[*]`` by default) and under ``spark-submit`` on any cluster (which supplies the master).
Either way the session has the ``relaymq`` format registered.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Callable, Sequence
from typing import Any

DEFAULT_MASTER = "local[*]"
#: Spark settings that suit a message pipeline on a small machine; a job may change them.
_DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
}


#: PySpark 4 runs on Java 17 or newer.
JAVA_MINIMUM = 17


class JobError(Exception):
    """The job file cannot be run (missing, no ``run`` function, no suitable Java)."""


def java_version(java: str | None = None) -> int | None:
    """The major version of the Java that Spark would start (``$JAVA_HOME/bin/java``, else
    ``java`` on the PATH); None when there is none. 1.8 counts as 8."""
    import re
    import shutil
    import subprocess

    home = os.environ.get("JAVA_HOME")
    java = java or (os.path.join(home, "bin", "java") if home else shutil.which("java"))
    if not java or not os.path.exists(java):
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(?:1\.)?(\d+)', out.stderr + out.stdout)
    return int(found.group(1)) if found else None


def check_java() -> None:
    """Raise JobError (one line) unless Java 17+ is there: without it PySpark fails with an
    obscure "Java gateway process exited" error."""
    version = java_version()
    if version is None:
        raise JobError(f"Spark needs Java {JAVA_MINIMUM} or newer and none was found (set JAVA_HOME or put java "
                       f"on the PATH; Debian: apt-get install openjdk-17-jre-headless)")
    if version < JAVA_MINIMUM:
        raise JobError(f"Spark needs Java {JAVA_MINIMUM} or newer; the java found is version {version}")


def build_session(master: str | None = None, app_name: str = "relaymq-pipeline",
                  conf: dict[str, str] | None = None) -> Any:
    """A SparkSession (``master`` None: whatever spark-submit configured) with the ``relaymq``
    format registered. The executors use this interpreter unless PYSPARK_PYTHON says otherwise."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from relaymq.pipeline.source import register

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**_DEFAULT_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def load_job(path: str) -> Callable[..., Any]:
    """The ``run`` function of a job file."""
    if not os.path.isfile(path):
        raise JobError(f"no such job file: {path}")
    namespace = runpy.run_path(path, run_name="relaymq_job")
    run = namespace.get("run")
    if not callable(run):
        raise JobError(f"{path} has no run(spark, args) function")
    return run


def run_job(path: str, master: str = DEFAULT_MASTER, args: Sequence[str] = (),
            conf: dict[str, str] | None = None) -> int:
    """Load the job, build the session on ``master``, run it, stop the session."""
    job = load_job(path)
    check_java()
    spark = build_session(master, app_name=os.path.basename(path), conf=conf)
    try:
        result = job(spark, list(args))
    finally:
        spark.stop()
    return int(result or 0)


def submit_main(job: Callable[..., Any]) -> None:
    """Entry point of a job file run by spark-submit: the master comes from spark-submit."""
    spark = build_session(None)
    try:
        code = int(job(spark, sys.argv[1:]) or 0)
    finally:
        spark.stop()
    sys.exit(code)
