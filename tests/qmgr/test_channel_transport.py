"""Channels over real sockets in one event loop: TCP push through a store-and-forward hop
with a via connection, the HTTP adapter, home-server pull, reconnect after the peer starts
late (everyplace.md items 18, 22-24, 29-30; seed 004 l.3143-3795, 2385-2589, 3955-4490)."""

from __future__ import annotations

import asyncio

import pytest

from relaymq.qmgr import QueueManager
from relaymq.qmgr.channel_auth import ChannelAuthenticator
from relaymq.qmgr.channel_service import ChannelService
from relaymq.qmgr.channel_settings import ConnectionSettings, build_connections

from .helpers import body, linked_queue_managers, text_message

FAST = {"retry_initial_ms": 20, "retry_max_ms": 200, "timeout_ms": 5000}

#: These tests are about the protocol, not about who may use it (test_channel_security is).
OPEN = ChannelAuthenticator.anonymous()


async def _wait_depth(qm: QueueManager, queue: str, depth: int, timeout: float = 20.0) -> None:
    """Wait until ``depth`` messages are visible (confirmed) on ``queue``, and no more are
    unconfirmed there."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(qm.browse(queue)) < depth or qm.depth(queue) != len(qm.browse(queue)):
        if loop.time() > deadline:
            raise AssertionError(f"{queue} on {qm.name} has {len(qm.browse(queue))} of {depth} messages")
        await asyncio.sleep(0.02)


async def _wait_empty(qm: QueueManager, queue: str, qmgr: str | None = None, timeout: float = 20.0) -> None:
    """Wait until the sender removed its copies (it does when CONFIRMED arrives, item 18)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while qm.depth(queue, qmgr=qmgr):
        if loop.time() > deadline:
            raise AssertionError(f"{queue} on {qm.name} still holds {qm.depth(queue, qmgr=qmgr)} messages")
        await asyncio.sleep(0.02)


def _conn(**table) -> ConnectionSettings:
    return build_connections([{**FAST, **table}], "connection", None)[0]


def test_push_through_store_and_forward_with_via_connection():
    """Items 22-23: DEV puts to async remote queue IN@TGT; its connection TGT goes via SRV;
    SRV keeps it on a store-and-forward queue for TGT and pushes; order is priority then FIFO
    (item 15) and each message arrives once."""

    async def scenario():
        tgt, srv, dev = (QueueManager.open(n, None) for n in ("TGT", "SRV", "DEV"))
        tgt.define_queue("IN")
        srv.define_queue("SF", "store_and_forward", target_queue_managers=["TGT"])
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")
        t = ChannelService(tgt, listen_host="127.0.0.1", authenticator=OPEN, listen_port=0)
        await t.start()
        s = ChannelService(srv, (_conn(name="TGT", address=f"127.0.0.1:{t.port}"),),
                           listen_host="127.0.0.1", authenticator=OPEN, listen_port=0)
        await s.start()
        connections = build_connections([{**FAST, "name": "SRV", "address": f"127.0.0.1:{s.port}"},
                                         {"name": "TGT", "via": "SRV"}], "connection", None)
        d = ChannelService(dev, connections, listen_host=None)
        await d.start()
        try:
            for i in range(30):
                await asyncio.to_thread(dev.put, "IN", text_message(f"m{i}", priority=i % 3), qmgr="TGT")
            await _wait_depth(tgt, "IN", 30)
            got = [body(tgt.get("IN")) for _ in range(30)]
            expected = sorted((f"m{i}" for i in range(30)), key=lambda b: (-(int(b[1:]) % 3), int(b[1:])))
            assert got == expected
            await _wait_empty(dev, "IN", "TGT")
            await _wait_empty(srv, "SF")
        finally:
            for service in (d, s, t):
                await service.stop()
            for qm in (dev, srv, tgt):
                qm.close()

    asyncio.run(scenario())


def test_http_adapter_carries_the_same_frames():
    """Item 30 (seed l.2385-2589): each HTTP POST carries frames; PUT+CONFIRM over HTTP."""

    def prepare(tgt: QueueManager, dev: QueueManager) -> None:
        tgt.define_queue("IN")
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")

    async def scenario():
        async with linked_queue_managers(prepare, adapter="http") as pair:
            tgt, dev = pair.server, pair.device
            for i in range(5):
                await asyncio.to_thread(dev.put, "IN", text_message(f"h{i}"), qmgr="TGT")
            await _wait_depth(tgt, "IN", 5)
            assert [body(m) for m in tgt.browse("IN")] == [f"h{i}" for i in range(5)]
            await _wait_empty(dev, "IN", "TGT")

    asyncio.run(scenario())


def test_home_server_pull_takes_only_messages_for_the_puller():
    """Item 24 (l.3360-3390): the server holds messages on a non-pushing store-and-forward
    queue and needs no connection to the client; the client pulls only its own."""

    def prepare(srv: QueueManager, dev: QueueManager) -> None:
        srv.define_queue("HOLD", "store_and_forward", target_queue_managers=["DEV", "OTHER"], push=False)
        dev.define_queue("INBOX")
        dev.define_queue("HOLD", "home_server", queue_manager="SRV", poll_interval=50)
        srv.put("INBOX", text_message("for-dev"), qmgr="DEV")
        srv.put("INBOX", text_message("for-other"), qmgr="OTHER")

    async def scenario():
        async with linked_queue_managers(prepare, server="SRV") as pair:
            srv, dev = pair.server, pair.device
            await _wait_depth(dev, "INBOX", 1)
            assert body(dev.get("INBOX")) == "for-dev"
            # the server removes its copy when DEV's CONFIRMED reaches it, a moment after DEV
            # made the message visible; the other queue manager's message stays
            deadline = asyncio.get_running_loop().time() + 10
            while srv.depth("HOLD") != 1:
                assert asyncio.get_running_loop().time() < deadline, f"HOLD has {srv.depth('HOLD')} messages"
                await asyncio.sleep(0.02)
            assert [p.message.mq.body for p in srv.pending_messages("OTHER", pull=True)] == [b"for-other"]

    asyncio.run(scenario())


def test_link_retries_until_the_peer_starts():
    """Issue 5: async remote queues transmit when a connection exists, with backoff; messages
    put while the target is down wait and then go."""

    async def scenario():
        from harness import free_port

        port = free_port()
        tgt, dev = QueueManager.open("TGT", None), QueueManager.open("DEV", None)
        tgt.define_queue("IN")
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")
        d = ChannelService(dev, (_conn(name="TGT", address=f"127.0.0.1:{port}"),), listen_host=None)
        await d.start()
        t = ChannelService(tgt, listen_host="127.0.0.1", authenticator=OPEN, listen_port=port)
        try:
            await asyncio.to_thread(dev.put, "IN", text_message("late"), qmgr="TGT")
            deadline = asyncio.get_running_loop().time() + 10
            while d.links["TGT"].last_error is None:  # the link has tried the absent peer
                assert asyncio.get_running_loop().time() < deadline, "the link never tried the peer"
                await asyncio.sleep(0.02)
            assert d.links["TGT"].last_error is not None and dev.depth("IN", qmgr="TGT") == 1
            await t.start()
            await _wait_depth(tgt, "IN", 1)
            await _wait_empty(dev, "IN", "TGT")
        finally:
            await d.stop()
            await t.stop()
            dev.close()
            tgt.close()

    asyncio.run(scenario())


def test_connection_settings_errors_name_the_key():
    """Config rule (house rules): errors name the exact key."""
    from relaymq.config import ConfigError

    with pytest.raises(ConfigError, match=r"connection\[1\]\.via"):
        build_connections([{"name": "A", "address": "h:1"}, {"name": "B", "via": "C"}], "connection", None)
    with pytest.raises(ConfigError, match=r"connection\[0\]\.address"):
        build_connections([{"name": "A", "address": "nohost"}], "connection", None)
    with pytest.raises(ConfigError, match=r"connection\[0\]\.via: via loop"):
        build_connections([{"name": "A", "via": "B"}, {"name": "B", "via": "A"}], "connection", None)


def test_synchronous_remote_queue_and_discovery():
    """Items 8, 21, 22: a synchronous remote queue works only while connected and reports the
    target's errors to the application; discovery finds a queue manager with a connection
    definition; with the peer down the put fails with NotConnected (nothing stored)."""
    from relaymq.qmgr.errors import MessageTooBig, NotConnected

    def prepare(tgt: QueueManager, dev: QueueManager) -> None:
        tgt.define_queue("IN")
        tgt.define_queue("TINY", max_message_size=10)
        tgt.define_queue("OTHER_Q")
        dev.define_queue("IN", "remote", queue_manager="TGT")  # mode sync (the default)

    async def scenario():
        async with linked_queue_managers(prepare) as pair:
            tgt, dev = pair.server, pair.device
            msg_id = await asyncio.to_thread(dev.put, "IN", text_message("sync"), qmgr="TGT")
            got = tgt.get("IN")
            assert body(got) == "sync" and got.mq.md.MsgId == msg_id
            await asyncio.to_thread(dev.put, "OTHER_Q", text_message("x"), qmgr="TGT")  # discovery
            assert body(tgt.get("OTHER_Q")) == "x"
            with pytest.raises(Exception) as refused:
                await asyncio.to_thread(dev.put, "TINY", text_message("far too long"), qmgr="TGT")
            assert isinstance(refused.value, MessageTooBig)
            await pair.server_channels.stop()
            with pytest.raises(NotConnected):
                await asyncio.to_thread(dev.put, "IN", text_message("down"), qmgr="TGT")

    asyncio.run(scenario())


def _certificates(directory) -> tuple[str, str, str]:
    """A throw-away CA and a certificate for DNS:localhost (openssl CLI)."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    (directory / "san.ext").write_text("subjectAltName=DNS:localhost\n")
    for step in (
        ["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=channel CA", "-days", "2"],
        ["req", *ec, "-keyout", "qm.key", "-out", "qm.csr", "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", "qm.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "qm.pem",
         "-days", "2", "-extfile", "san.ext"],
    ):
        subprocess.run(["openssl", *step], check=True, capture_output=True, cwd=directory, timeout=30)
    return str(directory / "ca.pem"), str(directory / "qm.pem"), str(directory / "qm.key")


def _client_certificate(directory, common_name: str) -> tuple[str, str]:
    """A certificate for ``common_name`` signed by the CA of :func:`_certificates` (same
    directory): what a queue manager presents to a listener that requires one."""
    import subprocess

    stem = f"client-{common_name}"
    for step in (
        ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{stem}.key",
         "-out", f"{stem}.csr", "-subj", f"/CN={common_name}"],
        ["x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", f"{stem}.pem", "-days", "2"],
    ):
        subprocess.run(["openssl", *step], check=True, capture_output=True, cwd=directory, timeout=30)
    return str(directory / f"{stem}.pem"), str(directory / f"{stem}.key")


def test_client_certificate_must_name_the_queue_manager(tmp_path):
    """everyplace.md item 26 (security hop by hop): on a listener that requires client
    certificates, a HELLO from queue manager DEV is accepted with a certificate whose CN is
    DEV, or one ChannelIdentities lists for DEV; with any other CN it is refused with 2035
    (MQRC_NOT_AUTHORIZED) and the message stays on the sender."""
    import ssl

    from relaymq.qmgr.channel_peers import ChannelIdentities

    ca, cert, key = _certificates(tmp_path)
    names = {cn: _client_certificate(tmp_path, cn) for cn in ("DEV", "OTHER", "gateway")}

    async def scenario():
        tgt, dev = QueueManager.open("TGT", None), QueueManager.open("DEV", None)
        tgt.define_queue("IN")
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        context.load_verify_locations(ca)
        context.verify_mode = ssl.CERT_REQUIRED
        t = ChannelService(tgt, listen_host="127.0.0.1", listen_port=0, ssl_context=context,
                           identities=ChannelIdentities({"gateway": ["DEV"]}))
        await t.start()
        services = []
        try:
            await asyncio.to_thread(dev.put, "IN", text_message("m1"), qmgr="TGT")
            for cn, expected in (("OTHER", 0), ("DEV", 1), ("gateway", 1)):
                client_cert, client_key = names[cn]
                link = _conn(name="TGT", address=f"localhost:{t.port}", tls=True, tls_ca=ca, tls_cert=client_cert,
                             tls_key=client_key, retry_initial_ms=20)
                service = ChannelService(dev, (link,), listen_host=None)
                services.append(service)
                await service.start()
                if expected == 0:
                    for _ in range(100):
                        if service.links["TGT"].last_error:
                            break
                        await asyncio.sleep(0.05)
                    error = service.links["TGT"].last_error or ""
                    assert "2035" in error and "certificate CN 'OTHER' may not speak for queue manager 'DEV'" in error
                    assert tgt.depth("IN") == 0 and dev.depth("IN", qmgr="TGT") == 1
                else:
                    await _wait_depth(tgt, "IN", 1)
                    assert body(tgt.get("IN")) == "m1"
                    await asyncio.to_thread(dev.put, "IN", text_message("m1"), qmgr="TGT")
                await service.stop()
        finally:
            for service in services:
                await service.stop()
            await t.stop()

    asyncio.run(scenario())


def test_tls_channel_verifies_the_server_certificate(tmp_path):
    """Issue 5: the channel frames over TLS; a sender without the CA does not deliver."""
    import ssl

    ca, cert, key = _certificates(tmp_path)

    async def scenario():
        tgt, dev = QueueManager.open("TGT", None), QueueManager.open("DEV", None)
        tgt.define_queue("IN")
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        t = ChannelService(tgt, listen_host="127.0.0.1", listen_port=0, ssl_context=context,
                           authenticator=OPEN)
        await t.start()
        untrusted = ChannelService(dev, (_conn(name="TGT", address=f"localhost:{t.port}", tls=True),),
                                   listen_host=None)
        await untrusted.start()
        try:
            await asyncio.to_thread(dev.put, "IN", text_message("secret"), qmgr="TGT")
            deadline = asyncio.get_running_loop().time() + 10
            while untrusted.links["TGT"].last_error is None:  # the link has tried the handshake
                assert asyncio.get_running_loop().time() < deadline, "the link never tried the peer"
                await asyncio.sleep(0.02)
            assert "CERTIFICATE_VERIFY_FAILED" in (untrusted.links["TGT"].last_error or "")
            assert tgt.depth("IN") == 0
            await untrusted.stop()
            trusted = ChannelService(dev, (_conn(name="TGT", address=f"localhost:{t.port}", tls=True, tls_ca=ca),),
                                     listen_host=None)
            await trusted.start()
            await _wait_depth(tgt, "IN", 1)
            assert body(tgt.get("IN")) == "secret"
            await trusted.stop()
        finally:
            await untrusted.stop()
            await t.stop()
            dev.close()
            tgt.close()

    asyncio.run(scenario())


def test_home_server_queue_pulls_only_from_the_store_queue_of_its_name():
    """Seed l.3369-3371 (the home-server queue points at one store queue on its server) and
    l.622 (a pulled message that cannot be delivered goes to the client's dead-letter
    queue): DEV's home-server queue HOLD pulls from SRV's store-and-forward queue HOLD, not
    from SRV's other store queue that also holds messages for DEV."""

    def prepare(srv: QueueManager, dev: QueueManager) -> None:
        srv.define_queue("HOLD", "store_and_forward", target_queue_managers=["DEV"], push=False)
        srv.define_queue("OTHER", "store_and_forward", target_queue_managers=["DEV2"], push=False)
        dev.define_queue("INBOX")
        dev.define_queue("HOLD", "home_server", queue_manager="SRV", poll_interval=50)
        srv.put("INBOX", text_message("from HOLD"), qmgr="DEV")
        srv.put("NOSUCHQ", text_message("undeliverable"), qmgr="DEV")
        srv.put("INBOX", text_message("not for DEV"), qmgr="DEV2")

    async def scenario():
        async with linked_queue_managers(prepare, server="SRV") as pair:
            srv, dev = pair.server, pair.device
            await _wait_depth(dev, "INBOX", 1)
            await _wait_depth(dev, "SYSTEM.DEAD.LETTER.QUEUE", 1)
            await _wait_empty(srv, "HOLD")
            assert body(dev.get("INBOX")) == "from HOLD"
            dead = dev.get("SYSTEM.DEAD.LETTER.QUEUE")
            (dlh,) = dead.mq.headers
            assert (dlh.Reason, dlh.DestQName.strip(), dlh.DestQMgrName.strip()) == (2085, "NOSUCHQ", "DEV")
            assert dead.mq.body == b"undeliverable" and dead.mq.body_format.strip() == "MQSTR"
            assert srv.depth("OTHER") == 1

    asyncio.run(scenario())


def test_pull_naming_a_missing_store_queue_is_reported_not_fatal():
    """Seed l.3371 ("able to pull only if there is a store and forward queue"): a home-server
    queue whose name is no store-and-forward queue on the server gets a clear answer, and
    the link stays up for the rest of its work."""

    def prepare(srv: QueueManager, dev: QueueManager) -> None:
        srv.define_queue("IN")
        dev.define_queue("WRONG", "home_server", queue_manager="SRV", poll_interval=50)
        dev.define_queue("OUT", "remote", queue_manager="SRV", mode="async")

    async def scenario():
        async with linked_queue_managers(prepare, server="SRV", link=FAST) as pair:
            srv, dev, d = pair.server, pair.device, pair.device_channels
            await asyncio.to_thread(dev.put, "OUT", text_message("still sent"), qmgr="SRV")
            await _wait_depth(srv, "IN", 0)
            for _ in range(1000):
                if d.links["SRV"].last_pull_error:
                    break
                await asyncio.sleep(0.02)
            assert "no store-and-forward queue 'WRONG'" in d.links["SRV"].last_pull_error

    asyncio.run(scenario())


@pytest.mark.parametrize("dead_letter", [True, False])
def test_push_to_an_unknown_queue_is_dead_lettered_at_its_destination(dead_letter: bool):
    """MQ's practice (seed l.618-620) behind [qmgr] dead_letter_undeliverable (default true):
    a pushed message for a queue that does not exist on its destination goes to that queue
    manager's dead-letter queue with an MQDLH naming reason 2085 and the destination, so it
    does not block the route (item 25) for the messages after it; with the option off it
    stays on the sender and blocks, as the seed's MQe does."""

    def prepare(tgt: QueueManager, dev: QueueManager) -> None:
        tgt.define_queue("IN")
        dev.define_queue("SF", "store_and_forward", target_queue_managers=["TGT"])
        dev.put("TYPO", text_message("lost address"), qmgr="TGT")
        dev.put("IN", text_message("behind it"), qmgr="TGT")

    async def scenario():
        async with linked_queue_managers(prepare, link=FAST,
                                         server_options={"dead_letter_undeliverable": dead_letter}) as pair:
            tgt, dev, d = pair.server, pair.device, pair.device_channels
            if dead_letter:
                await _wait_depth(tgt, "IN", 1)
                await _wait_empty(dev, "SF")
                (dlh,) = tgt.get("SYSTEM.DEAD.LETTER.QUEUE").mq.headers
                assert (dlh.Reason, dlh.DestQName.strip()) == (2085, "TYPO")
            else:
                for _ in range(500):
                    if "MQRC_UNKNOWN_OBJECT_NAME" in (d.links["TGT"].last_error or ""):
                        break
                    await asyncio.sleep(0.02)
                assert "MQRC_UNKNOWN_OBJECT_NAME" in (d.links["TGT"].last_error or "")
                assert dev.depth("SF") == 2 and tgt.browse("IN") == []  # at most held unconfirmed

    asyncio.run(scenario())


def test_home_server_pull_over_http():
    """Item 24 with the HTTP adapter (item 30: each request a POST carrying frames): the
    client's PULL is answered in the response body with a batch of PUTs, its ACKs come in the
    next request and are answered with CONFIRMs, its CONFIRMEDs in the one after that, which
    brings the next batch. 250 messages in batches of 100 arrive exactly once in order; an
    undeliverable one goes to the client's dead-letter queue; another client's stay."""

    def prepare(srv: QueueManager, dev: QueueManager) -> None:
        srv.define_queue("HOLD", "store_and_forward", target_queue_managers=["DEV", "DEV2"], push=False)
        dev.define_queue("INBOX")
        dev.define_queue("HOLD", "home_server", queue_manager="SRV", poll_interval=100)
        for i in range(250):
            srv.put("INBOX", text_message(f"m{i:03d}", priority=i % 2), qmgr="DEV")
        srv.put("MISSING", text_message("dead"), qmgr="DEV")
        srv.put("INBOX", text_message("for DEV2"), qmgr="DEV2")

    async def scenario():
        async with linked_queue_managers(prepare, server="SRV", link=FAST, adapter="http") as pair:
            srv, dev, d = pair.server, pair.device, pair.device_channels
            await _wait_depth(dev, "INBOX", 250)
            await _wait_depth(dev, "SYSTEM.DEAD.LETTER.QUEUE", 1)
            got = [body(m) for m in dev.browse("INBOX")]
            assert got == [f"m{i:03d}" for i in range(1, 250, 2)] + [f"m{i:03d}" for i in range(0, 250, 2)]
            for _ in range(500):  # SRV removes each batch when the client's CONFIRMEDs arrive
                if srv.depth("HOLD") == 1 and d.links["SRV"].pulled == 251:
                    break
                await asyncio.sleep(0.02)
            assert srv.depth("HOLD") == 1 and d.links["SRV"].pulled == 251

    asyncio.run(scenario())
