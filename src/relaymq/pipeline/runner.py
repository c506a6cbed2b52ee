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

from relaymq.pipeline.job_errors import cause, quiet_query_errors

DEFAULT_MASTER = "local[*]"
#: Spark settings that suit a message pipeline on a small machine; a job may change them.
_DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    # Parquet's own timestamp (INT64, microseconds, UTC) rather than Spark's legacy INT96: the
    # log's timestamps are whole microseconds, so nothing is lost, and the writer skips the
    # per-row conversion to Julian days and nanoseconds (docs/pipeline.md, "Parquet timestamps")
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}

#: A local session (``local``, ``local[N]``, ``local[*]``) binds its driver to the loopback
#: interface: nothing of a local run is reachable from, or sent over, the network. Spark would
#: otherwise pick the first non-loopback address when the host name resolves to 127.0.0.1
#: ("Your hostname ... resolves to a loopback address ... using <eth0 address> instead").
#: Settings given by the job, the command line or SPARK_LOCAL_IP still win.
LOOPBACK = "127.0.0.1"
_LOCAL_CONF = {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}
#: A local session writes its streaming queries' checkpoints and file sinks' logs through
#: Hadoop's FileSystem API rather than FileContext (Spark's default). On the local file system
#: both write a temporary file and rename it after checking that the destination does not exist
#: (FileContext's rename there is Hadoop's generic check-then-rename, not an atomic one), but
#: FileContext's status calls start a ``readlink`` process per file checked: 50-400 ms of each
#: query's offset and commit log writes (docs/pipeline.md, "Running jobs").
_LOCAL_CHECKPOINTS = {"spark.sql.streaming.checkpointFileManagerClass":
                      "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"}
#: A local session's JVM (driver and executor in one) compiles a method only after three times
#: the calls and loops HotSpot's defaults wait for (``-XX:CompileThresholdScaling=3``): a
#: pipeline job runs each query's planning, scheduling and commit code a few hundred times and
#: its per-row code millions of times, and with the defaults the JIT's compiler threads spent
#: a third of a 200,000-message log -> Parquet job's CPU compiling the former again at higher
#: tiers; the per-row code is compiled all the same (docs/pipeline.md, "Running jobs"). A job's
#: own ``spark.driver.extraJavaOptions`` replaces it.
JIT_OPTIONS = "-XX:CompileThresholdScaling=3"
_LOCAL_JVM = {"spark.driver.extraJavaOptions": JIT_OPTIONS}


def is_local_master(master: str | None) -> bool:
    return master is not None and (master == "local" or master.startswith("local["))


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
    format registered. The executors use this interpreter unless PYSPARK_PYTHON says otherwise;
    a local master binds to the loopback interface unless SPARK_LOCAL_IP names another, and
    starts its Python workers through ``worker_launcher`` (the installed pyspark's bytecode,
    not its zip) when they run this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    local = _LOCAL_CONF if is_local_master(master) else {}
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)  # read by the JVM as it starts
        local = {**{key: os.environ["SPARK_LOCAL_IP"] for key in local}, **_LOCAL_CHECKPOINTS, **_LOCAL_JVM}
    from pyspark.sql import SparkSession

    from relaymq.pipeline.source import register
    from relaymq.pipeline.worker_launcher import worker_python

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**_DEFAULT_CONF, **local, **(conf or {})}.items():
        builder = builder.config(key, value)
    chosen = os.environ["PYSPARK_PYTHON"]
    launcher = worker_python(chosen) if local else None
    # the context reads PYSPARK_PYTHON once, as it starts; the process's own environment (what
    # the job's subprocesses inherit) keeps the interpreter
    os.environ["PYSPARK_PYTHON"] = launcher or chosen
    try:
        spark = builder.getOrCreate()
    finally:
        os.environ["PYSPARK_PYTHON"] = chosen
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


#: Exit status after Ctrl-C, as a shell reports SIGINT.
INTERRUPTED = 130


def run_job(path: str, master: str = DEFAULT_MASTER, args: Sequence[str] = (),
            conf: dict[str, str] | None = None) -> int:
    """Load the job, build the session on ``master``, run it, stop the session. Ctrl-C stops
    it quietly (status 130); any other failure propagates for the caller's one line."""
    job = load_job(path)
    check_java()
    spark = build_session(master, app_name=os.path.basename(path), conf=conf)
    return _run(job, spark, list(args))


def _run(job: Callable[..., Any], spark: Any, args: list[str]) -> int:
    """Run ``job``; Ctrl-C (SIGINT) stops it quietly with status 130.

    Why a handler of our own: PySpark's calls cancelAllJobs over Py4J from inside the signal
    handler, while the main thread waits in another Py4J call on the same connection, and both
    log their tracebacks (four of them, issue 18). Ours only notes the interrupt and cancels
    from another thread (another Py4J connection): the queries stop, the job returns or raises,
    and the session is stopped with what it still prints thrown away. Under spark-submit the
    JVM gets the SIGINT too and goes: whatever fails after the interrupt is not reported."""
    import logging
    import signal
    import threading

    interrupted = threading.Event()

    def on_interrupt(signum: int, frame: Any) -> None:
        if not interrupted.is_set():
            interrupted.set()
            logging.disable(logging.CRITICAL)  # Py4J's complaints about calls cut short
            threading.Thread(target=_cancel, args=(spark,), name="relaymq-interrupt", daemon=True).start()

    quiet_query_errors(spark)
    jvm_ignores_interrupt(spark)
    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        result = job(spark, args)
    except BaseException:
        stop_quietly(spark)
        if interrupted.is_set():
            return INTERRUPTED
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted.is_set():
        stop_quietly(spark)
        return INTERRUPTED
    spark.stop()
    return int(result or 0)


def jvm_ignores_interrupt(spark: Any) -> None:
    """Under spark-submit the JVM is the driver's parent and gets the terminal's SIGINT too: it
    would stop the context under the job (Java stacks on the way). Let this process handle it,
    as ``relaymq pipeline run``'s JVM (started by PySpark with SIGINT ignored) already does."""
    try:
        jvm = spark.sparkContext._jvm  # noqa: SLF001
        jvm.sun.misc.Signal.handle(jvm.sun.misc.Signal("INT"), jvm.sun.misc.SignalHandler.SIG_IGN)
    except Exception:  # noqa: BLE001 - a JVM without sun.misc: Ctrl-C is louder, not broken
        pass


def _cancel(spark: Any) -> None:
    """Stop the streaming queries and cancel the running jobs (off the main thread)."""
    try:
        spark.sparkContext.setLogLevel("OFF")  # the operator stopped it: no warnings about threads cut short
        for query in spark.streams.active:
            query.stop()
        spark.sparkContext.cancelAllJobs()
    except Exception:  # noqa: BLE001 - the JVM may already be gone (spark-submit's SIGINT)
        pass


def stop_quietly(spark: Any) -> None:
    """Stop the session after Ctrl-C or a failure: the queries and the context, with what they
    print on the way (Py4J's errors about calls that were cut short) thrown away, and a second
    Ctrl-C meanwhile ignored."""
    import logging
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        try:
            for query in spark.streams.active:
                query.stop()
        except Exception:  # noqa: BLE001 - the context stops them too
            pass
        try:
            spark.stop()
        except Exception:  # noqa: BLE001 - a gateway already gone
            pass
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
        signal.signal(signal.SIGINT, previous)


def submit_main(job: Callable[..., Any]) -> None:
    """Entry point of a job file run by spark-submit: the master comes from spark-submit. A
    failure is one line on stderr and status 1, Ctrl-C a quiet stop (130), as with
    ``relaymq pipeline run``."""
    spark = build_session(None)
    try:
        code = _run(job, spark, sys.argv[1:])
    except Exception as error:  # noqa: BLE001 - one line, not a Py4J trace, for the operator
        print(f"{os.path.basename(sys.argv[0])}: error: {cause(error)}", file=sys.stderr)
        code = 1
    sys.exit(code)
