"""The launcher of a local session's Python workers (issue 16: log -> Spark -> Parquet >= 200,000
msg/s, AvailableNow included; docs/pipeline.md "Running jobs"), without starting Spark: it runs
the same interpreter with Spark's copies of pyspark and Py4J (zips, compiled at every start)
taken off PYTHONPATH, every other entry kept, and only where that changes nothing else."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from relaymq.pipeline.worker_launcher import spark_jars, spark_zips, worker_python

pyspark = pytest.importorskip("pyspark")
PACKAGE = os.path.dirname(pyspark.__file__)
PROBE = "import os, pyspark; print(pyspark.__file__); print(os.environ.get('PYTHONPATH', '<unset>'))"


def _run(python: str, pythonpath: str | None) -> list[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([python, "-c", PROBE], env=env, capture_output=True, text=True, check=True,
                          timeout=120).stdout.splitlines()


def test_the_workers_import_the_installed_pyspark_instead_of_sparks_zip(tmp_path) -> None:
    """What Spark gives its workers (its zips first) makes the plain interpreter compile pyspark
    from the zip; through the launcher the same command imports the installed package, and
    every other PYTHONPATH entry stays, in order, spaces and glob characters included."""
    zips = spark_zips(PACKAGE)
    if not zips:
        pytest.skip("this pyspark is not a pip-installed package with python/lib/pyspark.zip")
    others = [str(tmp_path / "a"), str(tmp_path / "with space"), str(tmp_path / "glob*[x]")]
    pythonpath = ":".join(zips[:2] + spark_jars(PACKAGE)[:1] + others)
    plain = _run(sys.executable, pythonpath)
    assert ".zip" in plain[0]  # the cost the launcher removes
    launcher = worker_python(sys.executable)
    assert launcher is not None and worker_python(sys.executable) == launcher  # one per process
    launched = _run(launcher, pythonpath)
    assert launched[0] == pyspark.__file__
    assert launched[1] == ":".join(others)
    assert _run(launcher, ":".join(zips[:2]))[1] == "<unset>"
    assert _run(launcher, None)[1] == "<unset>"


def test_workers_of_another_interpreter_are_left_alone(tmp_path) -> None:
    """A PYSPARK_PYTHON naming another interpreter may not have pyspark installed: its workers
    keep Spark's zips (no launcher)."""
    other = tmp_path / "python3"
    other.write_text("#!/bin/sh\nexec python3 \"$@\"\n")
    other.chmod(0o755)
    assert worker_python(str(other)) is None
    assert spark_zips(str(tmp_path)) == []  # a directory without Spark's python/lib


def test_sparks_core_jar_leaves_the_path_only_when_it_holds_no_python(tmp_path) -> None:
    """Spark's core jar on the workers' PYTHONPATH serves no import but costs each worker a read
    of its directory per importlib.invalidate_caches(): the launcher drops it, unless it holds
    a Python module (then an import could come from it)."""
    import zipfile

    assert any(jar.endswith(".jar") for jar in spark_jars(PACKAGE))  # the installed pyspark's
    jars = tmp_path / "jars"
    jars.mkdir()
    with zipfile.ZipFile(jars / "spark-core_2.13-9.9.jar", "w") as jar:
        jar.writestr("org/apache/spark/api/python/PythonUtils.class", b"\xca\xfe")
    assert spark_jars(str(tmp_path)) == [str(jars / "spark-core_2.13-9.9.jar")]
    with zipfile.ZipFile(jars / "spark-core_2.13-9.9.jar", "a") as jar:
        jar.writestr("helper.py", "x = 1\n")
    assert spark_jars(str(tmp_path)) == []
