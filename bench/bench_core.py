"""Instructions per message of the broker core on bench/compare rows 2 and 5 (issue 16).

The broker's event-loop work per durable QoS 1 message, without sockets or the event loop:
``publishers`` connections (row 2: 1, row 5: 100) of MQTT 3.1.1 each send ``window`` QoS 1
PUBLISH packets per read to a persistent-session subscriber (QoS 1) on the real SQLite store;
the store's commits are waited for and their callbacks run on this thread (as the loop would),
then the subscriber acknowledges what it received in one read. Run it under callgrind at two
counts and take the difference, which leaves out the start and the connects:

    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=OUT \\
        .venv/bin/python bench/bench_core.py --row s5 --messages N

The main thread's instruction count (``OUT-01``) at 2N minus at N, over N, is the core's per
message cost; the store's writer thread is apart (``OUT-02``). Prints the messages delivered.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from broker.driver import TestClient, settle, sqlite_broker  # noqa: E402

from relaymq.mqtt import packets as p  # noqa: E402
from relaymq.mqtt.codec import encode  # noqa: E402

TOPIC = "bench/core"
PAYLOAD = b"x" * 64
ROWS = {"s2": (1, 100), "s5": (100, 10)}  # publishers, PUBLISH packets per read


def run(row: str, messages: int, workdir: str) -> int:
    publishers, window = ROWS[row]
    broker, store = sqlite_broker(str(Path(workdir) / "core.db"))
    try:
        sub = TestClient(broker)
        sub.connect("core-sub", clean=False)
        sub.subscribe(TOPIC, qos=1)
        pubs = []
        for n in range(publishers):
            client = TestClient(broker)
            client.connect(f"core-pub-{n}")
            pubs.append(client)
        reads = [b"".join(encode(p.Publish(TOPIC, PAYLOAD, 1, False, False, pid, {}), 4)
                          for pid in range(1, window + 1))]
        delivered = 0
        while delivered < messages:
            for client in pubs:
                client.send_bytes(reads[0])
            settle(broker)
            due = delivered + publishers * window
            while delivered < due:  # the subscriber takes the read's messages, as many reads as its window needs
                got = sub.publishes()
                assert got, f"{due - delivered} messages not delivered"
                sub.send_bytes(b"".join(encode(p.Puback(x.packet_id), 4) for x in got))  # type: ignore[arg-type]
                settle(broker)
                delivered += len(got)
        for client in pubs:
            client.link.data.clear()
        return delivered
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--row", choices=sorted(ROWS), default="s5")
    parser.add_argument("--messages", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-core-") as workdir:
        print(run(args.row, args.messages, workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
