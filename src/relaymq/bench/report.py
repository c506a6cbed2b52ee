"""Figures of a load run: rates, latency percentiles, losses; merged across worker processes.

Kept apart from the clients so the arithmetic is checked on its own (tests/bench) and the
compare script reads the same JSON the command prints.
"""

from __future__ import annotations

from array import array
from dataclasses import asdict, dataclass, field

#: How the summary names the ``persistent`` setting.
PERSISTENT_NAMES = {"": "none", "sub": "subscribers", "pub": "publishers", "all": "all"}
#: The latency percentiles reported, in percent.
PERCENTILES: tuple[float, ...] = (50.0, 90.0, 99.0, 99.9, 100.0)


def percentile(sorted_values: array | list[int], pct: float) -> int | None:
    """Nearest-rank percentile of an ascending sequence (None when empty)."""
    n = len(sorted_values)
    if not n:
        return None
    rank = max(1, -(-int(pct * n * 1000) // 100_000))  # ceil(pct/100 * n) without float error
    return int(sorted_values[min(rank, n) - 1])


@dataclass
class RunReport:
    """The result of one ``relaymq bench`` run; ``to_dict`` is the JSON output."""

    publishers: int
    subscribers: int
    qos: int
    protocol: int
    payload_size: int
    persistent: str = ""          # who had persistent sessions: "", "sub", "pub", "all"
    delivered_qos: int = 0        # min(publication QoS, subscription QoS)
    read_pause_ms: float = 0.0    # a QoS 0 subscriber's pause after a small read (client.py)
    sent: int = 0                 # PUBLISH packets written by all publishers
    completed: int = 0            # of those, acknowledged (QoS 1/2) or written (QoS 0)
    refused: int = 0              # acknowledged with a failure reason code (MQTT 5)
    expected: int = 0             # deliveries the subscribers should have had
    received: int = 0             # PUBLISH packets the subscribers got (duplicates included)
    unique: int = 0               # distinct (publisher, sequence) pairs received
    duplicates: int = 0
    lost: int = 0                 # expected - unique, never negative
    publish_seconds: float = 0.0  # first send to last completion
    receive_seconds: float = 0.0  # first send to last reception
    publish_rate: float = 0.0     # completed / publish_seconds
    receive_rate: float = 0.0     # received / receive_seconds (deliveries per second)
    stream_seconds: float = 0.0   # first reception to last reception (no start-up at all)
    stream_rate: float = 0.0      # received / stream_seconds: what a subscriber-side clock sees
    latency_us: dict[str, int | None] = field(default_factory=dict)
    latency_samples: int = 0
    #: (role, CPU seconds) per worker process: what the generator itself cost the machine
    worker_cpu_seconds: list[tuple[str, float]] = field(default_factory=list)

    def finish(self, start_ns: int, pub_end_ns: int, recv_end_ns: int,
               latencies: array, recv_start_ns: int = 0) -> RunReport:
        """Derive the rates, losses and percentiles once every worker has reported.

        ``recv_start_ns``: the first reception (0: none), for the stream figures, which
        compare with a timing taken at a subscriber only (bench/compare's C-client check)."""
        self.lost = max(0, self.expected - self.unique)
        self.publish_seconds = max(0.0, (pub_end_ns - start_ns) / 1e9)
        self.receive_seconds = max(0.0, (recv_end_ns - start_ns) / 1e9)
        self.publish_rate = self.completed / self.publish_seconds if self.publish_seconds else 0.0
        self.receive_rate = self.received / self.receive_seconds if self.receive_seconds else 0.0
        if recv_start_ns and recv_end_ns > recv_start_ns:
            self.stream_seconds = (recv_end_ns - recv_start_ns) / 1e9
            self.stream_rate = self.received / self.stream_seconds
        ordered = array(latencies.typecode, sorted(latencies))
        self.latency_samples = len(ordered)
        self.latency_us = {f"p{p:g}": percentile(ordered, p) for p in PERCENTILES}
        return self

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def summary(self) -> str:
        """A few human lines for the terminal."""
        lat = self.latency_us
        fmt = lambda v: "-" if v is None else f"{v / 1000:.2f}"  # noqa: E731
        return "\n".join([
            f"publishers {self.publishers}, subscribers {self.subscribers}, QoS {self.qos}, "
            f"MQTT level {self.protocol}, payload {self.payload_size} B, persistent sessions: "
            f"{PERSISTENT_NAMES[self.persistent]}",
            f"published  {self.completed:,} of {self.sent:,} in {self.publish_seconds:.2f} s: "
            f"{self.publish_rate:,.0f} msg/s",
            f"delivered  {self.received:,} in {self.receive_seconds:.2f} s: "
            f"{self.receive_rate:,.0f} msg/s",
            f"expected   {self.expected:,}, unique {self.unique:,}, lost {self.lost:,}, "
            f"duplicates {self.duplicates:,}",
            "latency ms " + ", ".join(f"{k} {fmt(v)}" for k, v in lat.items())
            + (f" (QoS 0: up to {self.read_pause_ms:g} ms of read pause included; "
               "--read-pause 0 for latency runs)"
               if self.read_pause_ms and self.delivered_qos == 0 else ""),  # QoS 0 only
        ])
