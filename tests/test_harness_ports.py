"""The test harness itself: brokers started by the tests get ports no other listener was given."""

from __future__ import annotations

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
