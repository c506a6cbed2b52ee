"""What a newcomer sees when a Spark job goes wrong or is stopped (issue 18, "the first hour"):
a job whose message log is missing printed about 190 lines of Java and Python traces with
the cause on line 26; now one line names it. Ctrl-C on ``relaymq pipeline run`` and on
``spark-submit`` (which the README tells people to use) printed four Py4J tracebacks; now
the job stops quietly. Real Spark (local mode), real processes, a real SIGINT to the process
group as a terminal's Ctrl-C sends it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from relaymq.pipeline.job_errors import cause

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "examples" / "telemetry-analytics" / "telemetry_job.py"
SPARK_SUBMIT = Path(sys.executable).with_name("spark-submit")
SPARK_WAIT = 600.0  # Spark's start on two busy cores; a guard against a hang only

STREAMING_JOB = '''
def run(spark, args):
    import time

    query = spark.readStream.format("rate").option("rowsPerSecond", 1).load().writeStream.format("noop").start()
    while query.lastProgress is None:  # a batch done: the query is running, as after minutes of work
        time.sleep(0.1)
    print("streaming", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    from relaymq.pipeline.runner import submit_main
    submit_main(run)
'''


def noise(stderr: str) -> list[str]:
    """The lines of a trace: Python tracebacks, Java stack frames, logged errors."""
    return [line for line in stderr.splitlines()
            if "Traceback" in line or line.startswith("\tat ") or " ERROR " in line or "Py4J" in line]


def test_cause_is_the_innermost_exception() -> None:
    """The line ``cause`` picks out of Spark's wrapped message (issue 18: line 26 of 190)."""
    message = ("[STREAM_FAILED] Query [id = 1] terminated with exception: [PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR]"
               " Failed when Python streaming data source perform prepareForTriggerAvailableNow: Traceback (most"
               " recent call last):\n  File \"source.py\", line 83, in access\n"
               "relaymq.pipeline.log.LogError: no message log at '/x'\n SQLSTATE: 38000\n"
               "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.pythonStreamingDataSourceRuntimeError(x)\n")
    assert cause(RuntimeError(message)) == "LogError: no message log at '/x'"
    assert cause(ValueError("plain\nsecond line")) == "ValueError: plain"


def test_missing_log_is_one_line(tmp_path: Path) -> None:
    """The telemetry example run as its README writes it, with a --log that is not there."""
    result = subprocess.run([sys.executable, "-m", "relaymq", "pipeline", "run", str(JOB), "--master", "local[1]",
                             "--", "--log", str(tmp_path / "no-log"), "--broker", "127.0.0.1:1",
                             "--out", str(tmp_path / "out"), "--once"],
                            capture_output=True, text=True, timeout=SPARK_WAIT, cwd=tmp_path)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (f"relaymq pipeline run: error: LogError: no message log at '{tmp_path / 'no-log'}' (expected a"
                    " broker's relaymq.db or a archive.sqlite3 there or in its log/ directory)"), result.stderr
    assert noise(result.stderr) == [], result.stderr


def interrupt_when_streaming(command: list[str], cwd: Path, env: dict[str, str] | None = None
                             ) -> subprocess.CompletedProcess[str]:
    """Start ``command`` in a process group of its own, wait for "streaming", then SIGINT the
    group (a terminal's Ctrl-C) and collect what it printed."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    assert proc.stdout is not None
    deadline = time.monotonic() + SPARK_WAIT
    for line in proc.stdout:
        if line.strip() == "streaming":
            break
        assert time.monotonic() < deadline
    else:
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"the job ended before streaming (status {proc.returncode}): {err}")
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def test_ctrl_c_on_pipeline_run_is_quiet(tmp_path: Path) -> None:
    job = tmp_path / "stream_job.py"
    job.write_text(STREAMING_JOB)
    result = interrupt_when_streaming([sys.executable, "-m", "relaymq", "pipeline", "run", str(job),
                                       "--master", "local[1]"], tmp_path)
    assert result.returncode == 130, result.stderr
    assert noise(result.stderr) == [], result.stderr


def test_ctrl_c_on_spark_submit_is_quiet(tmp_path: Path) -> None:
    assert SPARK_SUBMIT.exists(), SPARK_SUBMIT
    job = tmp_path / "stream_job.py"
    job.write_text(STREAMING_JOB)
    # spark-submit runs the driver with $PYSPARK_PYTHON: this interpreter, where relaymq is
    result = interrupt_when_streaming([str(SPARK_SUBMIT), "--master", "local[1]", str(job)], tmp_path,
                                      {"PYSPARK_PYTHON": sys.executable})
    assert noise(result.stderr) == [], result.stderr
