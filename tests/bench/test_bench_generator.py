"""``relaymq bench`` against real brokers: the counts and losses it reports must be right.

Small counts (the speed itself is bench/compare's business, never a test's). Each case runs
against relaymq and, when installed, Mosquitto: a generator that miscounted would disagree with
one of them, and the known losses of the ACL case show losses are counted, not assumed away.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import MOSQUITTO_BINARY, BrokerProcess
from relaymq.bench import BenchSpec, Connection, run
from relaymq.bench import scenarios
from relaymq.bench.wire import PublishTemplates, ReceiveTally

KINDS = ["relaymq"] + (["mosquitto"] if Path(MOSQUITTO_BINARY).exists() else [])
# Room for every message of a case: a default queue limit would make the losses legitimate.
# Port 0 for relaymq's other listeners (HTTP, MQ channels): their fixed default ports clash
# between tests running at the same time; Mosquitto ignores these sections.
CONFIG = {"limits": {"max_inflight": 100, "max_queued_messages": 100_000},
          "http": {"port": 0}, "qmgr": {"channel_port": 0}}


@pytest.fixture(params=KINDS)
def bench_broker(request: pytest.FixtureRequest, tmp_path: Path):
    with BrokerProcess(request.param, config=CONFIG, workdir=tmp_path) as broker:
        yield broker


@pytest.mark.timeout(120)
@pytest.mark.parametrize("qos,level,publishers,subscribers,count", [
    (0, 4, 1, 1, 2000),
    (1, 5, 2, 2, 300),
    (2, 4, 1, 2, 200),
])
def test_counts_without_loss(bench_broker: BrokerProcess, qos: int, level: int,
                             publishers: int, subscribers: int, count: int) -> None:
    """mqtt.md items 7-9 (seed 000 l.699-741): with room in the broker, every QoS 0/1/2
    publication reaches every subscriber exactly once (QoS 0 over loopback with no limit hit),
    and the generator reports exactly that: sent, completed, expected, received, no loss."""
    report = run(BenchSpec(port=bench_broker.port, qos=qos, protocol=level,
                           publishers=publishers, subscribers=subscribers, count=count,
                           processes=2, drain_timeout=10))
    sent = publishers * count
    assert report.sent == sent and report.completed == sent and report.refused == 0
    assert report.expected == sent * subscribers
    assert report.received == report.unique == report.expected
    assert report.lost == 0 and report.duplicates == 0
    assert report.latency_samples == report.received
    assert report.latency_us["p50"] <= report.latency_us["p100"]
    assert report.receive_rate > 0 and report.publish_rate > 0
    assert sorted(role for role, _ in report.worker_cpu_seconds) == ["pub", "sub"] or (
        publishers + subscribers > 2)
    assert all(cpu > 0 for _, cpu in report.worker_cpu_seconds)


@pytest.mark.timeout(120)
def test_losses_are_counted(tmp_path: Path) -> None:
    """mqtt.md item 8 with the ACL of docs/configuration.md ("everything not granted is
    refused"): publications to the topic without a write rule are refused with PUBACK 0x87
    (MQTT 5) and never delivered, so exactly half are reported refused and lost."""
    acl = tmp_path / "acl"
    acl.write_text("topic read bench/acl/#\ntopic readwrite bench/acl/0\n")
    config = {**CONFIG, "access": {"allow_anonymous": True, "acl_file": str(acl)}}
    with BrokerProcess("relaymq", config=config, workdir=tmp_path / "b") as broker:
        report = run(BenchSpec(port=broker.port, qos=1, protocol=5, topic="bench/acl",
                               topics=2, count=400, drain_timeout=2))
    assert report.sent == 400 and report.refused == 200
    assert report.expected == 400 and report.unique == 200 and report.lost == 200


@pytest.mark.timeout(120)
def test_command_line_json(tmp_path: Path) -> None:
    """The ``relaymq bench`` command (issue 8): JSON output with the figures (and the read
    pause that QoS 0 latencies include), exit status 0; a payload too small for the stamp is a
    usage error (2)."""
    with BrokerProcess("relaymq", config=CONFIG, workdir=tmp_path) as broker:
        base = [sys.executable, "-m", "relaymq", "bench", "-p", str(broker.port)]
        done = subprocess.run(base + ["-q", "1", "-n", "300", "--sub", "2", "--json", "-"],
                              capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, done.stderr
        figures = json.loads(done.stdout)
        assert (figures["sent"], figures["expected"], figures["unique"], figures["lost"]) == \
            (300, 600, 600, 0)
        assert (figures["delivered_qos"], figures["read_pause_ms"]) == (1, 1)
        # QoS 0: the summary says its latencies include the read pause, and how to avoid it
        zero = subprocess.run(base + ["-n", "200", "--progress"], capture_output=True,
                              text=True, timeout=90)
        assert zero.returncode == 0 and "1 ms of read pause included" in zero.stdout
        latency = subprocess.run(base + ["-n", "200", "--read-pause", "0", "--json", "-"],
                                 capture_output=True, text=True, timeout=90)
        assert json.loads(latency.stdout)["read_pause_ms"] == 0
        bad = subprocess.run(base + ["-s", "8"], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "payload size" in bad.stderr


@pytest.mark.timeout(180)
def test_scenario_helpers(bench_broker: BrokerProcess) -> None:
    """The comparison's special scenarios on a real broker, small: mqtt.md item 31 (retained
    messages to a new '#' subscriber, seed 000 l.843), item 26 (QoS 1 messages for a
    disconnected persistent session are kept, l.1227-1229, and survive a restart with a
    persistent store: mqtt.md item 6) and idle connections held open."""
    port = bench_broker.port
    stored, timing = scenarios.retained_round_trip("127.0.0.1", port, 150)
    assert stored > 0 and timing.retained == timing.received == timing.unique == 150
    scenarios.queue_backlog("127.0.0.1", port, "bench-t", "bench/t", 120)
    drained = scenarios.drain_session("127.0.0.1", port, "bench-t", 120, idle_timeout=10)
    assert drained.session_present and drained.unique == 120
    scenarios.queue_backlog("127.0.0.1", port, "bench-r", "bench/r", 80)
    bench_broker.stop()
    bench_broker.start()
    seconds, present = scenarios.wait_for_session("127.0.0.1", port, "bench-r")
    assert present and seconds >= 0
    after = scenarios.drain_session("127.0.0.1", port, "bench-r", 80, idle_timeout=10)
    assert after.unique == 80
    with scenarios.IdleConnections("127.0.0.1", port, 40, processes=2) as idle:
        assert idle.connected == 40 and not idle.errors


@pytest.mark.timeout(120)
def test_a_drain_reports_the_window_the_broker_kept(tmp_path: Path) -> None:
    """bench/compare row 8 prints each broker's largest burst: how many messages one read of the
    drain brought unacknowledged. relaymq keeps a persistent session's backlog to its
    configured in-flight window (``limits.max_inflight``, MQTT 5 Receive Maximum's role for
    every level), so a drain of 300 under a window of 10 never sees more than 10 at once."""
    config = {**CONFIG, "limits": {**CONFIG["limits"], "max_inflight": 10}}
    with BrokerProcess("relaymq", config=config, workdir=tmp_path) as broker:
        scenarios.queue_backlog("127.0.0.1", broker.port, "bench-w", "bench/w", 300)
        drained = scenarios.drain_session("127.0.0.1", broker.port, "bench-w", 300, idle_timeout=10)
    assert drained.unique == 300
    assert 1 <= drained.largest_burst <= 10


@pytest.mark.timeout(120)
def test_duration_and_rate_mode(tmp_path: Path) -> None:
    """``--duration`` with ``--rate`` (issue 8: rate or as fast as possible, duration or
    count): whatever number was sent in the time, QoS 1 delivers each exactly once and the
    report's expected/unique/lost agree with what the publisher says it sent."""
    with BrokerProcess("relaymq", config=CONFIG, workdir=tmp_path) as broker:
        report = run(BenchSpec(port=broker.port, qos=1, count=None, duration=1.0, rate=400,
                               publishers=2, drain_timeout=1.0))
    assert report.sent > 0 and report.completed == report.sent
    assert report.expected == report.sent == report.unique and report.lost == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("level", [4, 5])
def test_persistent_session_is_new_durable_and_removed(bench_broker: BrokerProcess,
                                                       level: int) -> None:
    """mqtt.md item 26 (seed 000 l.1227-1229; 5.0 §3.1.2.4, §3.1.2.11.2): ``--persistent``
    sessions outlive their connection, so QoS 1 messages are queued for them while they are
    away; a leftover session under the same client id is discarded first (a run never gets an
    older run's messages), and ``end_session`` leaves no session behind."""
    host, port, cid = "127.0.0.1", bench_broker.port, f"bench-ps{level}"

    async def main() -> None:
        sub = await Connection.open_session(host, port, cid, level, persistent=True)
        assert sub.persistent and not sub.session_present
        await sub.subscribe("bench/ps", 1)
        await sub.close()                           # away; the session stays
        pub = await Connection.open(host, port, f"{cid}-pub", level)
        await pub.publish(PublishTemplates(["bench/ps"], 64, 1, level), 0, count=5)
        await pub.close()
        back = await Connection.open(host, port, cid, level, clean=False,
                                     session_expiry=60 if level == 5 else None)
        assert back.session_present
        tally = await back.receive(ReceiveTally(), lambda t: t.unique >= 5, idle_timeout=5)
        assert tally.unique == 5
        await back.close()                          # the session is kept again
        fresh = await Connection.open_session(host, port, cid, level, persistent=True)
        assert not fresh.session_present            # the leftover was discarded
        await fresh.end_session()
        probe = await Connection.open(host, port, cid, level, clean=False,
                                      session_expiry=60 if level == 5 else None)
        assert not probe.session_present            # end_session removed it
        probe.persistent = True                     # the probe made one: remove it too
        await probe.end_session()

    asyncio.run(main())


@pytest.mark.timeout(120)
def test_run_with_persistent_subscribers(bench_broker: BrokerProcess) -> None:
    """Issue 8 scenarios 2/5 with the durable path: QoS 1 to persistent-session subscribers
    with fixed client ids arrives exactly once, the report says who was persistent, and the
    sessions are gone afterwards (mqtt.md item 26: a clean session 0 reconnect would find
    them)."""
    spec = BenchSpec(port=bench_broker.port, qos=1, subscribers=2, count=300, processes=2,
                     persistent="sub", client_prefix="bench-fixed", drain_timeout=10)
    report = run(spec)
    assert report.persistent == "sub"
    assert report.expected == report.unique == 600 and report.lost == 0

    async def leftover(cid: str) -> bool:
        conn = await Connection.open("127.0.0.1", bench_broker.port, cid, 4, clean=False)
        present = conn.session_present
        await conn.close()
        await (await Connection.open("127.0.0.1", bench_broker.port, cid, 4)).close()
        return present

    assert not any(asyncio.run(leftover(f"bench-fixed-s{i}")) for i in range(2))


def test_persistent_option_is_checked() -> None:
    """Bad ``--persistent``/``--session-expiry`` values are usage errors, not runs."""
    with pytest.raises(ValueError, match="persistent"):
        BenchSpec(persistent="everyone").resolved()
    with pytest.raises(ValueError, match="session expiry"):
        BenchSpec(persistent="sub", session_expiry=0).resolved()


@pytest.mark.timeout(60)
def test_receive_ends_on_idle_and_on_stop(bench_broker: BrokerProcess) -> None:
    """The subscriber loop (relaymq.bench.client.Connection.receive) without a timer per
    read: it still returns after ``idle_timeout`` silent seconds with what it got, and as soon
    as ``stop()`` turns true; a cancellation from outside still cancels."""
    port = bench_broker.port

    async def main() -> None:
        sub = await Connection.open("127.0.0.1", port, "bench-idle", 4)
        await sub.subscribe("bench/idle", 1)
        pub = await Connection.open("127.0.0.1", port, "bench-idle-pub", 4)
        await pub.publish(PublishTemplates(["bench/idle"], 64, 1, 4), 0, count=10)
        started = time.monotonic()
        tally = await sub.receive(ReceiveTally(), lambda t: False, idle_timeout=0.3)
        assert tally.unique == 10 and 0.3 <= time.monotonic() - started < 5
        flag = {"stop": False}
        asyncio.get_running_loop().call_later(0.2, flag.update, {"stop": True})
        started = time.monotonic()
        await sub.receive(tally, lambda t: False, stop=lambda: flag["stop"])
        assert 0.2 <= time.monotonic() - started < 5
        task = asyncio.create_task(sub.receive(tally, lambda t: False))
        await asyncio.sleep(0)                        # the task runs until it waits on its read
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await sub.close()
        await pub.close()

    asyncio.run(main())


@pytest.mark.timeout(60)
def test_partial_packet_is_kept_between_receive_calls() -> None:
    """mqtt.md item 16 (seed 000 l.853-864): a PUBLISH split by TCP at the moment a receive
    call ends is completed by the next call, not dropped (which would misframe everything
    after it). A scripted peer on a real socket controls where the split falls."""
    packet = PublishTemplates(["bench/split"], 64, 0, 4).batch(0, 0, 2, time.monotonic_ns())
    half = len(packet) // 2 + 10          # the first packet whole, the second cut

    async def main() -> None:
        sent_rest = asyncio.Event()

        async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1024)                       # CONNECT
            writer.write(b"\x20\x02\x00\x00" + packet[:half])
            await sent_rest.wait()
            writer.write(packet[half:])
            await reader.read(1024)

        server = await asyncio.start_server(peer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = await Connection.open("127.0.0.1", port, "bench-split", 4)
        tally = await conn.receive(ReceiveTally(), lambda t: False, idle_timeout=0.2)
        assert tally.unique == 1
        sent_rest.set()
        await conn.receive(tally, lambda t: t.unique >= 2, idle_timeout=5)
        assert (tally.received, tally.unique, tally.unstamped) == (2, 2, 0)
        await conn.close()
        server.close()

    asyncio.run(main())


def _scripted_peer(packets: list[bytes], gap: float, acks: list[float] | None = None,
                   finished: asyncio.Event | None = None):
    """A broker stand-in on a real socket: CONNACK, then ``packets`` one write each, ``gap``
    seconds apart; for QoS 1 ones it waits for the PUBACK first (its arrival time goes to
    ``acks``). ``finished`` is set once it has read the client's last bytes (DISCONNECT)."""
    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)                       # CONNECT
        writer.write(b"\x20\x02\x00\x00")
        for packet in packets:
            writer.write(packet)
            await writer.drain()
            if acks is not None:
                assert (await reader.readexactly(4))[0] == 0x40
                acks.append(time.monotonic())
            await asyncio.sleep(gap)
        await reader.read(1024)
        if finished is not None:
            finished.set()
    return peer


@pytest.mark.timeout(60)
def test_qos0_reads_pause_after_small_reads() -> None:
    """Issue 8 (the generator must not be the bottleneck): a QoS 0 subscriber with a read
    pause reads at most once per pause while the broker trickles packets one write each, so
    one read takes several; every message is still counted once."""
    messages = PublishTemplates(["bench/trickle"], 64, 0, 4).batch(0, 0, 60,
                                                                   time.monotonic_ns())
    size = len(messages) // 60
    packets = [messages[i:i + size] for i in range(0, len(messages), size)]
    pause = 0.05

    async def main() -> None:
        finished = asyncio.Event()
        server = await asyncio.start_server(_scripted_peer(packets, 0.002, finished=finished), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = await Connection.open("127.0.0.1", port, "bench-trickle", 4)
        reads: list[float] = []
        tally = await conn.receive(ReceiveTally(), lambda t: t.unique >= 60, idle_timeout=5,
                                   progress=lambda n: reads.append(time.monotonic()),
                                   read_pause=pause)
        assert (tally.received, tally.unique, tally.duplicates) == (60, 60, 0)
        # reads[0] may be a packet that came with the CONNACK (no read of receive's own);
        # from the first read on, each next read waits out the pause. 60 packets 2 ms apart
        # (>= 120 ms): without the pause, about one read each, 2 ms apart
        gaps = [b - a for a, b in zip(reads[1:], reads[2:], strict=False)]
        assert len(reads) < 60 and gaps and min(gaps) >= pause * 0.8
        await conn.close()
        await asyncio.wait_for(finished.wait(), 10)   # the peer sees the DISCONNECT
        server.close()

    asyncio.run(main())


@pytest.mark.timeout(60)
def test_qos1_reads_are_answered_without_pause() -> None:
    """A read that carries QoS 1 messages is acknowledged and followed at once, whatever the
    read pause: a publisher waiting for its PUBACKs (window 1) is never held by the
    subscriber's pause (20 round trips with a 100 ms pause would take about 2 s)."""
    messages = PublishTemplates(["bench/acked"], 64, 1, 4).batch(0, 0, 20, time.monotonic_ns())
    size = len(messages) // 20
    packets = [messages[i:i + size] for i in range(0, len(messages), size)]

    async def main() -> None:
        acks: list[float] = []
        finished = asyncio.Event()
        server = await asyncio.start_server(_scripted_peer(packets, 0, acks, finished), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        conn = await Connection.open("127.0.0.1", port, "bench-acked", 4)
        started = time.monotonic()
        tally = await conn.receive(ReceiveTally(), lambda t: t.unique >= 20, idle_timeout=5,
                                   read_pause=0.1)
        deadline = time.monotonic() + 10
        while len(acks) < 20 and time.monotonic() < deadline:  # the last PUBACK reaches the peer
            await asyncio.sleep(0.01)
        assert tally.unique == 20 and len(acks) == 20
        assert acks[-1] - started < 1.0
        await conn.close()
        await asyncio.wait_for(finished.wait(), 10)   # the peer sees the DISCONNECT
        server.close()

    asyncio.run(main())


def test_read_pause_option() -> None:
    """``--read-pause MS`` becomes the spec's seconds; out of range is a usage error."""
    from relaymq.cli.main import build_parser
    from relaymq.cli.bench import spec_from_args
    args = build_parser().parse_args(["bench", "--read-pause", "0"])
    assert spec_from_args(args).read_pause == 0
    args = build_parser().parse_args(["bench"])
    assert spec_from_args(args).resolved().read_pause == 0.001
    with pytest.raises(ValueError, match="read pause"):
        BenchSpec(read_pause=0.5).resolved()
