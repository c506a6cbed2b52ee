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

The launcher also drops spark-core's jar, which Spark puts on the same path and which holds no
Python module (:func:`spark_jars`), and, where the interpreter can (:func:`forks_supported`),
hands the launches of the data source planners' ``pyspark.daemon`` and of the streaming source
runner to ``fork_client``:
the runner is then forked from a warm process started with the session's daemon
(``fork_server``).
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import sys
import tempfile

from relaymq.pipeline import fork_client
from relaymq.pipeline.fork_client import SERVED, STARTER

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
    return _both_spellings(lib, names)


#: What makes an archive on ``sys.path`` a source of Python modules.
PYTHON_SUFFIXES = (".py", ".pyc", ".pyd", ".so")


def spark_jars(package_dir: str) -> list[str]:
    """The jar Spark also puts on its workers' PYTHONPATH (spark-core's, the one holding its
    ``PythonUtils``) if it holds no Python module: an entry no import can be served from, whose
    directory of some 6,000 files each worker's ``importlib.invalidate_caches()`` (pyspark's
    ``setup_spark_files``) reads again, 50-250 ms."""
    jars = os.path.join(package_dir, "jars")
    try:
        names = sorted(name for name in os.listdir(jars) if name.startswith("spark-core_") and name.endswith(".jar"))
    except OSError:
        return []
    return _both_spellings(jars, [name for name in names if not _holds_python(os.path.join(jars, name))])


def _holds_python(archive: str) -> bool:
    """Whether ``archive`` holds a Python module (or cannot be read: then it counts as one)."""
    import zipfile

    try:
        with zipfile.ZipFile(archive) as jar:
            return any(member.endswith(PYTHON_SUFFIXES) for member in jar.namelist())
    except (OSError, zipfile.BadZipFile):
        return True


def _both_spellings(directory: str, names: list[str]) -> list[str]:
    """``names`` in ``directory`` as written and with symbolic links resolved (Spark's scripts
    may name either)."""
    found: list[str] = []
    for base in dict.fromkeys((directory, os.path.realpath(directory))):
        found += [os.path.join(base, name) for name in names]
    return found


def launcher_text(python: str, dropped: list[str], fork_directory: str | None = None) -> str:
    """A POSIX shell script running ``python`` with ``dropped`` taken out of PYTHONPATH (every
    other entry kept, in order) and its arguments passed on; with ``fork_directory``, the launches
    of the modules ``fork_client`` handles go through it (its servers' sockets in that
    directory)."""
    patterns = "|".join(shlex.quote(path) for path in dropped)
    forked = ""
    if fork_directory is not None:
        launches = "|".join(shlex.quote(":".join((str(len(argv)), *argv, *[""] * (4 - len(argv))))) for argv in (
            ("-m", *STARTER), *(("-m", module) for module in SERVED)))
        client = shlex.quote(os.path.abspath(fork_client.__file__))
        forked = f"""case $#:${{1-}}:${{2-}}:${{3-}}: in
    {launches}) exec {shlex.quote(python)} -I -S {client} {shlex.quote(fork_directory)} "$@" ;;
esac
"""
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
{forked}exec {shlex.quote(python)} "$@"
"""


def forks_supported() -> bool:
    """Whether this interpreter has what a fork server and its clients need (Linux's process
    descriptors, descriptors passed over Unix sockets) and the client is a file to run."""
    import socket

    return (hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") and hasattr(os, "fork")
            and os.path.isfile(fork_client.__file__))  # the client runs by path


def fork_directory(directory: str) -> str | None:
    """``directory``, to hold the fork servers' sockets, where the interpreter can fork runners
    (:func:`forks_supported`) and those sockets' paths fit a Unix socket's address; None: every
    launch is a plain one."""
    return directory if forks_supported() and fork_client.socket_path_fits(directory) else None


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
    dropped += spark_jars(os.path.dirname(package_file))
    key = (sys.executable, tuple(dropped))
    if key not in _written:
        directory = tempfile.mkdtemp(prefix="relaymq-spark-")
        atexit.register(shutil.rmtree, directory, True)
        path = os.path.join(directory, LAUNCHER)
        with open(path, "w", encoding="utf-8") as script:
            script.write(launcher_text(sys.executable, dropped, fork_directory(directory)))
        os.chmod(path, 0o700)
        _written[key] = path
    return _written[key]
