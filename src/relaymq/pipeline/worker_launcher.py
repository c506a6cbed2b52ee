"""The command a local Spark session starts its Python workers with (issue 16).

Spark starts its Python processes - the executors' daemon, the planner workers, and for every
streaming query over a Python data source such as ``relaymq`` a fresh
``python_streaming_source_runner`` - with ``$SPARK_HOME/python/lib/pyspark.zip`` and Py4J's zip
first on ``PYTHONPATH``. With pyspark installed by pip, ``SPARK_HOME`` is the ``pyspark``
package itself, so those zips hold the very modules installed beside them; but Python keeps no
bytecode for modules imported from a zip: each such process compiles every pyspark module it
imports from source, and the worker's ``importlib.invalidate_caches()`` re-reads the zip's
directory once per package imported from it. For a streaming query that process cost 0.9-1.1
CPU-seconds before its first micro-batch could start, 0.35-0.45 on the installed package
(``bench/README.md``, "The data pipeline").

So :func:`worker_python` writes a launcher that removes exactly those two zips from
``PYTHONPATH`` and runs the interpreter it names: the workers then import the installed pyspark
with its compiled bytecode - the same files. It does so only where that cannot change what the
workers run: a POSIX machine, the workers' interpreter is the driver's own (they then import
what the driver imports), and the driver's pyspark is a package directory holding the zips.
Anywhere else (a cluster, another interpreter, a Spark distribution's own ``python/lib``) it
returns None and Spark starts the workers as it always does.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import sys
import tempfile

#: The launcher's file name in its directory.
LAUNCHER = "python"

_written: dict[tuple[str, tuple[str, ...]], str] = {}


def spark_zips(package_dir: str) -> list[str]:
    """The zips Spark puts first on its workers' PYTHONPATH when SPARK_HOME is the pip-installed
    ``pyspark`` package at ``package_dir`` (as written and with symbolic links resolved, since
    Spark's scripts may name either); none when there is no such zip."""
    lib = os.path.join(package_dir, "python", "lib")
    try:
        names = sorted(name for name in os.listdir(lib)
                       if name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith("-src.zip")))
    except OSError:
        return []
    if "pyspark.zip" not in names:
        return []
    found: list[str] = []
    for base in dict.fromkeys((lib, os.path.realpath(lib))):
        found += [os.path.join(base, name) for name in names]
    return found


def launcher_text(python: str, dropped: list[str]) -> str:
    """A POSIX shell script running ``python`` with ``dropped`` taken out of PYTHONPATH (every
    other entry kept, in order) and its arguments passed on."""
    patterns = "|".join(shlex.quote(path) for path in dropped)
    return f"""#!/bin/sh
# Written by relaymq.pipeline.worker_launcher: Spark's Python workers import the installed
# pyspark (compiled bytecode) instead of the same modules from its zips (compiled at every start).
set -f
kept= sep=
IFS=:
for entry in ${{PYTHONPATH-}}; do
    case $entry in
        {patterns}) ;;
        *) kept=$kept$sep$entry; sep=: ;;
    esac
done
unset IFS
set +f
if [ -n "$kept" ]; then PYTHONPATH=$kept; export PYTHONPATH; else unset PYTHONPATH; fi
exec {shlex.quote(python)} "$@"
"""


def worker_python(python: str) -> str | None:
    """The command for Spark's Python workers of a local session whose workers would run
    ``python`` (PYSPARK_PYTHON): a launcher (see the module's docstring) when it applies, else
    None. The launcher lives in a private temporary directory removed when this process exits."""
    if os.name != "posix" or os.path.abspath(shutil.which(python) or python) != os.path.abspath(sys.executable):
        return None
    package = sys.modules.get("pyspark")
    package_file = getattr(package, "__file__", None)
    if not package_file or not os.path.isfile(package_file):
        return None  # pyspark imported from a zip or not a package: nothing to gain
    dropped = spark_zips(os.path.dirname(package_file))
    if not dropped:
        return None
    key = (sys.executable, tuple(dropped))
    if key not in _written:
        directory = tempfile.mkdtemp(prefix="relaymq-spark-")
        atexit.register(shutil.rmtree, directory, True)
        path = os.path.join(directory, LAUNCHER)
        with open(path, "w", encoding="utf-8") as script:
            script.write(launcher_text(sys.executable, dropped))
        os.chmod(path, 0o700)
        _written[key] = path
    return _written[key]
