"""bench/compare's generator check against a real Mosquitto (issue 8: the generator must reach
90% of the rate of Mosquitto's own C clients in scenario 1).

Only that the two figures are taken alike: at the subscriber, first message received to last,
after the broker has the subscription. The speed itself is bench/compare's business.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness import MOSQUITTO_BINARY

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import compare  # noqa: E402

pytestmark = pytest.mark.skipif(not Path(MOSQUITTO_BINARY).exists(),
                                reason="mosquitto not installed (bench/compare installs it)")


@pytest.mark.timeout(120)
def test_c_clients_timed_at_the_subscriber(tmp_path: Path) -> None:
    """The C pipeline's stream rate leaves out what the raw wall time includes (process start,
    connect, and mosquitto_pub -l's 100 ms sleep before its first line), so it is higher; the
    publisher starts only once Mosquitto logged the subscription, or messages would be lost
    and mosquitto_sub -C would never exit."""
    broker = compare.make_broker("mosquitto", tmp_path / "b",
                                 config={"mosquitto": {"log_type": "subscribe"}})
    with broker:
        stream, raw = compare.c_clients_rate(broker, 3000, tmp_path)
        figures = compare._load(broker, qos=0, count=3000)
    assert stream > raw > 0
    assert not list(tmp_path.glob("*.out"))          # its output file is removed
    assert figures["lost"] == 0
    assert 0 < figures["stream_seconds"] < figures["receive_seconds"]
    assert figures["stream_rate"] == pytest.approx(3000 / figures["stream_seconds"])
