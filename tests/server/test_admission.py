"""relaymq.http.admission: the connection caps of a listener and the rate limit of their
log lines (issue 15 finding 8: "per-listener and per-source-address connection caps; one log
line per refused connection, rate-limited"). Through real brokers: tests/interop/
test_mqtt_front_door.py and test_http_front_door.py."""

from __future__ import annotations

import asyncio
import logging

from relaymq.ratelog import RefusalLog
from relaymq.http.admission import UNLIMITED, Admission, peer_host


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


def test_sockets_from_one_address_share_its_string() -> None:
    """A listener keeps each socket's address while the socket lives (``Listener.protocols``,
    the admission's count): one string per address, not one per socket (issue 16, bench/compare
    row 6, RSS with 10,000 idle connections from one address)."""

    async def main() -> list[str]:
        hosts: list[str] = []
        accepted = asyncio.Event()

        def on_accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            hosts.append(peer_host(writer.get_extra_info("peername")))
            writer.close()
            if len(hosts) == 2:
                accepted.set()

        server = await asyncio.start_server(on_accept, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await asyncio.wait_for(accepted.wait(), 10)
        for _, writer in clients:
            writer.close()
        server.close()
        await server.wait_closed()
        return hosts

    first, second = asyncio.run(main())
    assert first == second == "127.0.0.1"
    assert first is second
