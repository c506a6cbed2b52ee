"""relaymq.http.admission: the connection caps of a listener and the rate limit of their
log lines (issue 15 finding 8: "per-listener and per-source-address connection caps; one log
line per refused connection, rate-limited"). Through real brokers: tests/interop/
test_mqtt_front_door.py and test_http_front_door.py."""

from __future__ import annotations

import logging

from relaymq.ratelog import RefusalLog
from relaymq.http.admission import UNLIMITED, Admission


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_caps_count_per_address_and_release_gives_the_place_back(caplog) -> None:
    admission = Admission("listener 'x'", 3, 2, RefusalLog(logging.getLogger("t.adm")))
    assert admission.admit("a") and admission.admit("a")
    assert not admission.admit("a")  # per address
    assert admission.admit("b")
    assert not admission.admit("c")  # per listener
    admission.release("a")
    assert admission.admit("a")  # its place back
    assert admission.by_address == {"a": 2, "b": 1} and admission.open == 3
    assert admission.refused_total == 2
    assert "max_connections_per_address (2) reached for a" in caplog.text
    assert "max_connections (3) reached" in caplog.text


def test_unlimited_caps_admit_everything() -> None:
    admission = Admission("HTTP", UNLIMITED, UNLIMITED, RefusalLog(logging.getLogger("t.adm")))
    assert all(admission.admit("a") for _ in range(10_000))


def test_refusal_lines_are_rate_limited_and_the_next_line_counts_the_rest(caplog) -> None:
    clock = Clock()
    refusals = RefusalLog(logging.getLogger("t.rate"), burst=3, window=10.0, clock=clock)
    logged = [refusals.refused("refused %d", n) for n in range(50)]
    assert logged.count(True) == 3 and refusals.suppressed == 47
    clock.now = 10.0
    assert refusals.refused("refused %d", 50)
    assert len(caplog.records) == 4
    assert "refused 50 (47 more refused and not logged)" in caplog.text
