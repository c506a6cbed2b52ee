"""The broker's memory stays bounded with its default limits (issue 2, "Limits": "A subscriber
that stops reading must not make the broker's memory grow without bound"; docs/configuration.md
[limits]: max_queued_bytes, max_outbound_buffer, MAX_PENDING_ACKS).

Measured as the broker process's resident set (VmRSS in /proc/<pid>/status) while clients
that never read are fed. Audit figures before the fix: a stuck clean-session QoS 1 subscriber
and 400 x 1 MB publications took the broker from 41 MB to 438 MB; a publisher that never read
its PUBACKs, from 40 MB to 432 MB.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from harness import BrokerProcess

from .clients import paho_client, unique
from .raw import packet

pytestmark = pytest.mark.interop

MB = 1 << 20
DEFAULT_MAX_QUEUED_BYTES = 64  # MB, limits.max_queued_bytes
#: What else a busy broker may hold at once: the socket buffers (max_outbound_buffer, 4 MB),
#: messages being routed, the allocator's slack. Generous: the failure mode is hundreds of MB.
MARGIN = 48


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class Sampler:
    """The broker's RSS, sampled in a thread while a test feeds it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(rss_mb(self.pid))
            self._stop.wait(0.1)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(rss_mb(self.pid))


def _raw_client(broker: BrokerProcess, client_id: bytes, clean: bool = True) -> socket.socket:
    """A 3.1.1 client on a raw socket with a tiny receive buffer (it will stop reading)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(broker.address)
    flags = b"\x02" if clean else b"\x00"
    sock.sendall(packet(0x10, b"\x00\x04MQTT\x04" + flags + b"\x00\x00"
                         + len(client_id).to_bytes(2, "big") + client_id))
    assert sock.recv(4)[:1] == b"\x20"
    return sock


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "persistent"])
def test_stuck_qos1_subscriber_does_not_grow_memory_past_the_queue_limit(broker_factory, clean: bool) -> None:
    """A QoS 1 subscriber that stops reading, fed 300 x 1 MB QoS 1 publications: the broker
    grows by at most max_queued_bytes (64 MB by default) plus a margin, not by 300 MB. A
    persistent session keeps what does not fit in the store (every publication acknowledged);
    a clean session, full, holds the publisher back (issue 14: by default nothing acknowledged
    is dropped), so the publisher has only about 64 of its 300 acknowledgements."""
    broker = broker_factory(store="sqlite" if not clean else "memory")
    topic = unique("stuck")
    sub = _raw_client(broker, b"stuck-" + unique("s").encode()[-8:], clean=clean)
    body = b"\x00\x01" + len(topic + "/#").to_bytes(2, "big") + (topic + "/#").encode() + b"\x01"
    sub.sendall(packet(0x82, body))
    assert sub.recv(5)[:1] == b"\x90"
    time.sleep(0.5)
    before = rss_mb(broker.proc.pid)
    publisher = paho_client(broker, "v311")
    acked = threading.Semaphore(0)
    publisher.client.on_publish = lambda *args: acked.release()
    payload = b"x" * MB
    count = 0
    try:
        with Sampler(broker.proc.pid) as rss:
            for _ in range(300):
                publisher.client.publish(f"{topic}/a", payload, 1)
            # until the acknowledgements stop coming (all 300, or the publisher held back)
            while count < 300 and acked.acquire(timeout=3 if count else 60):
                count += 1
    finally:
        publisher.disconnect()
        sub.close()
    grown = max(rss.samples) - before
    assert grown < DEFAULT_MAX_QUEUED_BYTES + MARGIN, (
        f"broker RSS grew by {grown:.0f} MB (from {before:.0f} MB) for a stuck subscriber")
    if clean:
        assert 60 <= count <= 100, f"{count} of 300 acknowledged: the publisher was not held back"
    else:
        assert count == 300


@pytest.mark.slow
def test_publisher_that_never_reads_its_pubacks_is_slowed_not_buffered(broker: BrokerProcess) -> None:
    """A 3.1.1 publisher floods QoS 1 publications and never reads: once its acknowledgements
    fill the socket buffers the broker stops reading from it (TCP back-pressure), so the
    publisher blocks and the broker's memory stays flat instead of holding every PUBACK."""
    sock = _raw_client(broker, b"never-reads")
    body = b"\x00\x01z\x00\x01" + b"p" * 60  # topic "z", packet id 1, a 60-byte payload
    chunk = memoryview(packet(0x32, body) * 1000)
    time.sleep(0.5)
    before = rss_mb(broker.proc.pid)
    sock.setblocking(False)
    sent = offset = 0
    last_progress = started = time.monotonic()
    with Sampler(broker.proc.pid) as rss:
        while time.monotonic() - last_progress < 3 and time.monotonic() - started < 120:
            try:
                n = sock.send(chunk[offset:])
            except BlockingIOError:
                time.sleep(0.01)
                continue
            sent += n
            offset = (offset + n) % len(chunk)
            last_progress = time.monotonic()
    sock.close()
    assert time.monotonic() - started < 120, "the broker kept reading: no back-pressure"
    grown = max(rss.samples) - before
    assert grown < 24, f"broker RSS grew by {grown:.0f} MB while {sent // MB} MB were sent unread"
