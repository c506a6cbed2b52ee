"""One publisher -> one subscriber throughput, 64-byte payloads, QoS 0 and QoS 1.

    .venv/bin/python bench/bench_throughput.py [--messages N] [--brokers relaymq,mosquitto]

The load generator is built not to be the bottleneck: the publisher and the subscriber are
separate processes speaking raw MQTT 3.1.1 with pre-encoded packets (the publisher writes
PUBLISH packets in batches; the QoS 1 subscriber answers PUBACKs in batches). Running the same
load against Mosquitto (a C broker) shows the ceiling of the load itself: if Mosquitto goes
much faster than relaymq, the figures measure relaymq, not the load.

Prints messages per second received by the subscriber. Asserts nothing: speed targets live
in the benchmark issue, never in the test suite.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import socket
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from harness import BrokerProcess  # noqa: E402

TOPIC = b"bench/t"
PAYLOAD = b"x" * 64


def connect_packet(client_id: bytes) -> bytes:
    var = b"\x00\x04MQTT\x04\x02\x00\x00"  # level 4, clean session, keep alive 0
    body = var + struct.pack("!H", len(client_id)) + client_id
    return bytes([0x10, len(body)]) + body


def publish_packet(qos: int, packet_id: int) -> bytes:
    body = struct.pack("!H", len(TOPIC)) + TOPIC
    if qos:
        body += struct.pack("!H", packet_id)
    body += PAYLOAD
    return bytes([0x30 | (qos << 1), len(body)]) + body


def open_client(port: int, client_id: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(connect_packet(client_id))
    ack = recv_exact(s, 4)
    assert ack == b"\x20\x02\x00\x00", ack
    return s


def recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        data += chunk
    return data


def subscriber(port: int, qos: int, count: int, ready, result) -> None:
    s = open_client(port, b"bench-sub")
    body = struct.pack("!H", 1) + struct.pack("!H", len(TOPIC)) + TOPIC + bytes([qos])
    s.sendall(bytes([0x82, len(body)]) + body)
    recv_exact(s, 5)  # SUBACK
    ready.set()
    size = len(publish_packet(qos, 1))
    got = 0
    buf = bytearray()
    first = None
    while got < count:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        if first is None:
            first = time.perf_counter()
        buf += chunk
        n = len(buf) // size
        if qos:
            acks = bytearray()
            for i in range(n):
                off = i * size + 2 + 2 + len(TOPIC)
                acks += b"\x40\x02" + buf[off:off + 2]
            s.sendall(acks)
        del buf[: n * size]
        got += n
    result.put((got, first, time.perf_counter()))
    s.close()


def publisher(port: int, qos: int, count: int, window: int) -> None:
    s = open_client(port, b"bench-pub")
    if qos == 0:
        batch = publish_packet(0, 0) * 500
        for _ in range(count // 500):
            s.sendall(batch)
        s.sendall(publish_packet(0, 0) * (count % 500))
    else:
        sent = acked = 0
        buf = bytearray()
        while acked < count:
            room = min(window - (sent - acked), count - sent)
            if room > 0:
                s.sendall(b"".join(publish_packet(1, (sent + i) % 65535 + 1) for i in range(room)))
                sent += room
            buf += s.recv(1 << 16)
            n = len(buf) // 4  # PUBACK = 40 02 id id
            del buf[: n * 4]
            acked += n
    time.sleep(0.5)
    s.close()


def run_once(kind: str, qos: int, count: int, window: int) -> float:
    with BrokerProcess(kind, config={"limits": {"max_queued_messages": 100000,
                                                "max_inflight": 1000}}) as broker:
        ctx = mp.get_context("spawn")
        ready, result = ctx.Event(), ctx.Queue()
        sub = ctx.Process(target=subscriber, args=(broker.port, qos, count, ready, result))
        sub.start()
        ready.wait(30)
        start = time.perf_counter()
        pub = ctx.Process(target=publisher, args=(broker.port, qos, count, window))
        pub.start()
        got, first, end = result.get(timeout=300)
        pub.join(60)
        sub.join(60)
        elapsed = end - start
        return got / elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--window", type=int, default=500, help="QoS 1 publisher window")
    ap.add_argument("--brokers", default="relaymq,mosquitto")
    args = ap.parse_args()
    rows = []
    for kind in args.brokers.split(","):
        for qos in (0, 1):
            rate = run_once(kind, qos, args.messages, args.window)
            rows.append((kind, qos, rate))
            print(f"{kind:10s} QoS {qos}: {rate:10,.0f} msg/s ({args.messages:,} x 64 B)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
