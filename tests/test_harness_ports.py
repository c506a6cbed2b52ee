"""The test harness itself: brokers started by the tests get ports no other listener was given."""

from __future__ import annotations

from harness import free_port


def test_free_port_never_hands_out_a_port_twice():
    """A broker with an HTTP and a channel listener on the same port cannot start (a full run
    failed so: the OS offered a just-closed probe port again). 2,000 draws from ~28,000
    ephemeral ports would repeat some ~70 times if free_port() did not remember them."""
    ports = [free_port() for _ in range(2000)]
    assert len(set(ports)) == len(ports)
