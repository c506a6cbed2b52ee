"""The launched side of a local session's warm Python process (issue 16; ``fork_server`` is the
other side, ``worker_launcher`` runs this file).

Spark starts a fresh ``python -m pyspark.sql.streaming.python_streaming_source_runner`` for every
streaming query over a Python data source; most of its start is the interpreter's and pyspark's
imports (pyarrow, numpy). The launcher runs this file instead, by path and with ``-I -S`` (it
imports nothing of relaymq and no site packages, so it starts in milliseconds): it asks the
session's fork server for the same environment to run the module in a forked child with this
process's stdin, stdout, stderr, environment and working directory, waits for the child, and
ends with its exit status (a signal's death as the same signal). Where there is no such server,
or it refuses, it runs the module as the launcher would have: ``exec python -m MODULE``.

A server's identity is :func:`fingerprint`: the interpreter, the working directory and every
environment variable but the ones Spark sets afresh for each process it starts (read at run
time, not while the server imports): a child runs in an interpreter started exactly as the
plain one would have been. The launch of the data source planners' ``pyspark.daemon``
starts the server for its fingerprint, so it is warm before the session's first streaming query.

Usage (by the launcher): ``python -I -S fork_client.py DIRECTORY -m MODULE [ARGUMENT...]``.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import struct
import sys

#: The modules a fork server runs; every other launch is a plain ``exec``.
SERVED = ("pyspark.sql.streaming.python_streaming_source_runner",)
#: The launch that starts the server: the daemon of a session's Python data source planners,
#: started as a query over such a source is defined, before its runner, and with the runner's
#: environment (the daemons of other workers differ: the executors' sets OMP_NUM_THREADS).
STARTER = ("pyspark.daemon", "pyspark.sql.worker.create_data_source")
#: Variables Spark sets for each Python process it starts, each read by pyspark at run time
#: (``worker_util``, ``daemon``, ``worker``, ``util``): they do not enter a fingerprint.
PER_LAUNCH = ("PYTHON_WORKER_FACTORY_", "PYTHON_DAEMON_", "PYTHON_UDF_BATCH_SIZE", "SPARK_REUSE_WORKER",
              "SPARK_SIMPLIFIED_TRACEBACK", "SPARK_JOB_ARTIFACT_UUID")
#: A request: the length of what follows, sent with the three descriptors; an answer: the exit
#: status (negative: the signal that ended the child) or REFUSED.
HEADER = struct.Struct("!q")
STATUS = struct.Struct("!i")
REFUSED = -1000
#: The longest path a Unix socket's address holds: Linux's ``sun_path`` is 108 bytes with its NUL.
UNIX_PATH_MAX = 107


def startup_environment(environ: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """``environ`` without the variables Spark sets for each launch."""
    return {key: value for key, value in environ.items() if not key.decode("latin-1").startswith(PER_LAUNCH)}


def fingerprint(executable: str, cwd: bytes, environ: dict[bytes, bytes]) -> str:
    """What a fresh interpreter's start depends on, hashed: the server's socket name."""
    digest = hashlib.sha256(os.fsencode(executable) + b"\0" + cwd + b"\0")
    for key, value in sorted(startup_environment(environ).items()):
        digest.update(key + b"=" + value + b"\0")
    return digest.hexdigest()[:24]


def encode_request(module: str, cwd: bytes, environ: dict[bytes, bytes]) -> bytes:
    """The module, working directory and environment, NUL-separated (none may hold a NUL)."""
    return b"\0".join([module.encode(), cwd, *(key + b"=" + value for key, value in environ.items())])


def decode_request(data: bytes) -> tuple[str, bytes, dict[bytes, bytes]]:
    module, cwd, *pairs = data.split(b"\0")
    return module.decode(), cwd, dict(pair.split(b"=", 1) for pair in pairs)


def socket_path(directory: str, print_: str) -> str:
    return os.path.join(directory, f"fork-{print_}.sock")


def socket_path_fits(directory: str) -> bool:
    """Whether the servers' sockets in ``directory`` (and the name each is bound under before it
    listens, ``fork_server``) fit a Unix socket's address: a long ``TMPDIR`` may not."""
    return len(os.fsencode(socket_path(directory, "0" * 24) + ".new")) <= UNIX_PATH_MAX


def _start_server(directory: str, print_: str) -> None:
    """Start the server for this fingerprint unless another launch did (its marker file), as a
    session of its own (Spark's daemon signals its process group), its output thrown away,
    watching this process (which becomes the daemon) to end with it."""
    try:
        os.close(os.open(os.path.join(directory, f"fork-{print_}.started"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return
    import subprocess  # only here: the client's own start stays small

    with open(os.devnull, "r+b") as null:
        subprocess.Popen([sys.executable, "-m", "relaymq.pipeline.fork_server", socket_path(directory, print_),
                          str(os.getpid())],
                         stdin=null, stdout=null, stderr=null, start_new_session=True, close_fds=True)


def _served(path: str, module: str, cwd: bytes) -> int | None:
    """The child's status, or None when there is no server at ``path`` or it refused."""
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
    except OSError:
        return None
    with connection:
        request = encode_request(module, cwd, dict(os.environb))
        socket.send_fds(connection, [HEADER.pack(len(request))], [0, 1, 2])
        connection.sendall(request)
        answer = b""
        while len(answer) < STATUS.size:
            more = connection.recv(STATUS.size - len(answer))
            if not more:
                return 1  # the server went away with the child: a failed run, not one to repeat
            answer += more
    (status,) = STATUS.unpack(answer)
    return None if status == REFUSED else status


def main(directory: str, argv: list[str]) -> None:
    """Run ``python`` with ``argv`` (``-m MODULE ...``): served, or after starting the server."""
    module = argv[1]
    cwd = os.fsencode(os.getcwd())
    print_ = fingerprint(sys.executable, cwd, dict(os.environb))
    if module in SERVED and len(argv) == 2:
        status = _served(socket_path(directory, print_), module, cwd)
        if status is not None:
            if status < 0:
                signal.signal(-status, signal.SIG_DFL)
                os.kill(os.getpid(), -status)
            os._exit(status & 0xFF if status >= 0 else 128 - status)
    elif tuple(argv[1:]) == STARTER:
        _start_server(directory, print_)
    os.execv(sys.executable, [sys.executable, *argv])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
