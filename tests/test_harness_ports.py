"""The test harness itself: brokers started by the tests get ports no other listener was given."""

from __future__ import annotations

import contextlib
import errno
import socket

import pytest
from harness import free_port


def test_free_port_never_hands_out_a_port_twice():
    """A broker with an HTTP and a channel listener on the same port cannot start (a full run
    failed so: the OS offered a just-closed probe port again). 2,000 draws from ~28,000
    ephemeral ports would repeat some ~70 times if free_port() did not remember them."""
    ports = [free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports)


def test_free_port_is_held_until_a_listener_takes_it():
    """A run of tests/qmgr + tests/pubsub on four workers failed one time in seven:
    test_serve's broker stopped with "http: cannot listen on 127.0.0.1:56727: ... address
    already in use", a port free_port() had probed and let go, so that another worker's probe
    or port-0 listener got it first. Now the kernel keeps the port from anyone who binds
    without SO_REUSEADDR (bind(0) and connect() pass it over the same way), while the
    listener it is meant for (SO_REUSEADDR, as every broker sets) binds and accepts at once."""
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as intruder:
        with pytest.raises(OSError) as refused:
            intruder.bind(("127.0.0.1", port))
        assert refused.value.errno == errno.EADDRINUSE
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(1)
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            listener.accept()[0].close()


def test_a_broker_dies_with_the_test_process_that_started_it(tmp_path):
    """A test run killed outright runs no teardown: its brokers (sessions of their own, so a
    Ctrl-C does not reach them first) were left running, holding their ports. The harness
    starts them with the parent-death signal set (``dies_with_this_process``), so killing the
    process that started one kills the broker too."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    starter = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; sys.path.insert(0, sys.argv[1]); from harness import BrokerProcess; "
         "b = BrokerProcess(workdir=sys.argv[2]).start(); print(b.proc.pid, flush=True); time.sleep(120)",
         str(Path(__file__).parent), str(tmp_path)],
        stdout=subprocess.PIPE, text=True)
    try:
        line = starter.stdout.readline()
        assert line.strip().isdigit(), f"the starter printed {line!r}"
        broker_pid = int(line)
        assert Path(f"/proc/{broker_pid}").exists()
    finally:
        starter.kill()
        starter.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(broker_pid, 0)
        except ProcessLookupError:
            return
        # a zombie: dead, waiting to be reaped by init
        with contextlib.suppress(FileNotFoundError):
            if Path(f"/proc/{broker_pid}/stat").read_text().split(") ")[1].startswith("Z"):
                return
        time.sleep(0.05)
    os.kill(broker_pid, 9)
    raise AssertionError(f"broker {broker_pid} outlived the process that started it")
