"""A local session's streaming source runners forked from a warm process (issue 16: log -> Spark
-> Parquet >= 200,000 msg/s by AvailableNow too; docs/pipeline.md "Running jobs"), without
starting Spark: the test plays the JVM's side of pyspark's runner protocol on a Unix socket (the
runner connects, sends its pid, reads the Python version it must match) and checks who ran it,
with what output and exit status."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from relaymq.pipeline import fork_client
from relaymq.pipeline.worker_launcher import fork_directory, forks_supported, worker_python

pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(not forks_supported(), reason="needs pidfd_open and descriptor passing")

RUNNER = fork_client.SERVED[0]
SRC = str(Path(fork_client.__file__).resolve().parents[2])


def _environment(cwd: Path) -> dict[str, str]:
    """This process's environment without its Python settings, as the launcher passes it on
    (a shell sets PWD)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return {**env, "PYTHONPATH": SRC, "PYTHONHASHSEED": "0", "PWD": str(cwd)}


def _wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _start_server(directory: Path, cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """The server for ``env`` and ``cwd``, its socket in ``directory``, watching this process."""
    print_ = fork_client.fingerprint(sys.executable, os.fsencode(cwd), {
        os.fsencode(key): os.fsencode(value) for key, value in env.items()})
    path = fork_client.socket_path(str(directory), print_)
    server = subprocess.Popen([sys.executable, "-m", "relaymq.pipeline.fork_server", path, str(os.getpid())],
                              cwd=cwd, env=env)
    _wait_for(lambda: os.path.exists(path) or server.poll() is not None)
    assert server.poll() is None, f"the server ended with status {server.returncode}"
    return server, path


@pytest.fixture
def sockets():  # noqa: ANN201
    """A directory for the servers' sockets whose path is short (pytest's tmp_path can be too
    long for a Unix socket's address, as a long TMPDIR can: ``fork_client.socket_path_fits``)."""
    directory = Path(tempfile.mkdtemp(prefix="rmq-fork-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


class FakeJvm:
    """The JVM's end of a runner's connection: a Unix socket named by PYTHON_WORKER_FACTORY_SOCK_PATH."""

    def __init__(self, directory: Path) -> None:
        self.path = str(directory / "jvm.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.listener.settimeout(60)

    def runner_pid(self) -> tuple[socket.socket, int]:
        """Accept the runner; its pid, as it reports it first."""
        connection = self.listener.accept()[0]
        connection.settimeout(60)
        return connection, struct.unpack("!i", connection.recv(4, socket.MSG_WAITALL))[0]

    @staticmethod
    def refuse_version(connection: socket.socket) -> bytes:
        """Send a Python version the runner does not have; what it writes back (its error)."""
        connection.sendall(struct.pack("!i", 3) + b"0.0")
        received = b""
        while more := connection.recv(65536):
            received += more
        return received


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def _ended(pid: int) -> bool:
    """Whether the process is gone or a zombie (an orphan's reaper may take its time)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _launch(launcher: str, directory: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([launcher, "-m", RUNNER], cwd=directory, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_a_runner_is_forked_from_the_sessions_server_and_ends_as_a_fresh_one_would(tmp_path) -> None:
    """Through the launcher, with the server of its environment running, the runner is the
    server's child (not the launched process), talks to the "JVM" over the descriptors and
    environment of the launch, and the launched process ends with the runner's status: the
    same error and status as a runner started afresh (no server for its environment)."""
    launcher = worker_python(sys.executable)
    assert launcher is not None
    directory = Path(os.path.dirname(launcher))
    jvm = FakeJvm(tmp_path)
    env = _environment(tmp_path)
    server, path = _start_server(directory, tmp_path, env)
    try:
        launched = _launch(launcher, tmp_path, {**env, "PYTHON_WORKER_FACTORY_SOCK_PATH": jvm.path})
        connection, pid = jvm.runner_pid()
        assert pid != launched.pid and _parent(pid) == server.pid  # forked by the server
        forked_error = jvm.refuse_version(connection)
        _out, forked_stderr = launched.communicate(timeout=60)
        forked_status = launched.returncode
        # another environment (one more variable): no server of its own, a fresh runner
        fresh = _launch(launcher, tmp_path, {**env, "PYTHON_WORKER_FACTORY_SOCK_PATH": jvm.path, "OTHER": "1"})
        connection, pid = jvm.runner_pid()
        assert pid == fresh.pid  # the launched process itself, exec'd
        fresh_error = jvm.refuse_version(connection)
        _out, fresh_stderr = fresh.communicate(timeout=60)
    finally:
        server.terminate()
        server.wait(60)
        os.unlink(path)
    assert b"PYTHON_VERSION_MISMATCH" in forked_error
    assert forked_error.split(b"\n")[0] == fresh_error.split(b"\n")[0]
    assert (forked_status, forked_stderr) == (fresh.returncode, fresh_stderr) and forked_status != 0


def test_a_runner_goes_with_the_process_spark_started(tmp_path, sockets) -> None:
    """Spark ending the process it launched (destroy) ends the runner forked for it."""
    jvm = FakeJvm(tmp_path)
    env = _environment(tmp_path)
    server, _path = _start_server(sockets, tmp_path, env)
    try:
        launched = subprocess.Popen([sys.executable, "-I", "-S", fork_client.__file__, str(sockets), "-m", RUNNER],
                                    cwd=tmp_path, env={**env, "PYTHON_WORKER_FACTORY_SOCK_PATH": jvm.path})
        connection, pid = jvm.runner_pid()
        assert _parent(pid) == server.pid
        launched.send_signal(signal.SIGTERM)
        assert launched.wait(60) == -signal.SIGTERM
        assert connection.recv(1) == b""  # the runner's end closed: it is gone
        _wait_for(lambda: _ended(pid))
        assert server.poll() is None  # still serving
    finally:
        server.terminate()
        server.wait(60)


def test_the_server_ends_with_the_process_it_watches(tmp_path) -> None:
    """The server started by a session's pyspark.daemon goes when the daemon does (the session
    stopped), removing its socket."""
    path = tmp_path / "fork-x.sock"
    daemon = subprocess.Popen(  # stands for the daemon: the server's parent, ending when told
        [sys.executable, "-c", "import os, subprocess, sys, time\n"
         "server = subprocess.Popen([sys.executable, '-m', 'relaymq.pipeline.fork_server', sys.argv[1], str(os.getpid())])\n"
         "while not os.path.exists(sys.argv[1]): time.sleep(0.02)\n"
         "print(server.pid, flush=True)\nsys.stdin.read()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path, env=_environment(tmp_path))
    server = int(daemon.stdout.readline())
    assert _parent(server) == daemon.pid and path.exists()
    daemon.stdin.close()
    daemon.wait(60)
    _wait_for(lambda: _ended(server))
    assert not path.exists()


def test_sockets_are_used_up_to_the_longest_path_a_unix_socket_holds(tmp_path, sockets) -> None:
    """A directory whose servers' sockets take exactly the longest address (107 bytes) serves;
    one byte longer and the session's launcher makes only plain launches (the bind would fail:
    the server of a launch under pytest's long tmp_path did, and the runner started afresh)."""
    env = _environment(tmp_path)
    print_ = fork_client.fingerprint(sys.executable, os.fsencode(tmp_path), {
        os.fsencode(key): os.fsencode(value) for key, value in env.items()})
    room = fork_client.UNIX_PATH_MAX - len(fork_client.socket_path(str(sockets), print_) + ".new")
    longest = sockets / ("d" * (room - 1))  # its separator takes the last byte
    longest.mkdir()
    assert fork_client.socket_path_fits(str(longest)) and not fork_client.socket_path_fits(str(longest) + "d")
    assert fork_directory(str(longest)) == str(longest) and fork_directory(str(longest) + "d") is None
    server, path = _start_server(longest, tmp_path, env)
    server.terminate()
    server.wait(60)
    assert len(os.fsencode(path + ".new")) == fork_client.UNIX_PATH_MAX
