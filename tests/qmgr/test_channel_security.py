"""Who may use a queue manager's channels, and what a peer can cost it (issue 15 findings 1, 7
and the channel part of 8; docs/channels.md "Peer authentication" and "Bounds"; docs/security.md
"Channels").

Every test talks to a real listener over real sockets, with the channel's own frames
(relaymq.qmgr.channel_frames): against `relaymq serve` (tests/harness.py BrokerProcess) where
the finding was made against the broker, and against a ChannelService in this process where
the test needs to see inside (the queue's listeners) or to set small bounds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import BrokerProcess, port_accepts

from relaymq.cli.main import main
from relaymq.http.server import HttpServer
from relaymq.message import Message
from relaymq.qmgr import QueueManager
from relaymq.qmgr.channel_peers import ChannelRequest
from relaymq.qmgr.channel_auth import ChannelAuthenticator
from relaymq.qmgr.channel_frames import (
    HELLO_MAX_FRAME,
    Frame,
    FrameDecoder,
    FrameType,
    encode_frame,
    hello,
    result_messages,
)
from relaymq.qmgr.channel_service import ChannelService
from relaymq.qmgr.channel_listener import HTTP_CHANNEL_PATH, ListenerLimits
from relaymq.qmgr.settings import QmgrSettings

from .helpers import text_message
from .test_rest_api import BASE, Rest

NOT_AUTHORIZED = 2035
QM2 = ("QM2", "qm2-secret")


def _password_file(path: Path, *users: tuple[str, str]) -> str:
    for n, (user, password) in enumerate(users):
        assert main(["passwd", *(["-c"] if n == 0 else []), "-b", "--cost", "4", str(path), user, password]) == 0
    return str(path)


def _until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.01)


class Peer:
    """A raw channel connection: frames out, frames in, and whether the listener closed it."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.decoder = FrameDecoder(1 << 30)
        self.frames: list[Frame] = []

    def send(self, *frames: bytes) -> Peer:
        self.sock.sendall(b"".join(frames))
        return self

    def receive(self) -> Frame:
        while not self.frames:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionResetError("closed by the listener")
            self.frames += self.decoder.feed(data)
        return self.frames.pop(0)

    def closed(self) -> bool:
        """True when the listener closed the connection (everything before the close is kept)."""
        try:
            self.receive_all()
        except (ConnectionResetError, BrokenPipeError):
            return True
        return False

    def receive_all(self) -> None:
        while True:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionResetError("closed by the listener")
            self.frames += self.decoder.feed(data)

    def login(self, qmgr: str, credentials: tuple[str, str] | None) -> Frame:
        return self.send(hello(qmgr, None, credentials)).receive()

    def close(self) -> None:
        self.sock.close()


def _get(req: int, queue: str, wait_ms: int = 0, qmgr: str = "QM1") -> bytes:
    return encode_frame(FrameType.GET, {"req": req, "qmgr": qmgr, "queue": queue, "wait_ms": wait_ms})


def _put(uid: str, queue: str, message: Message, qmgr: str = "QM1") -> bytes:
    return encode_frame(FrameType.PUT, {"uid": uid, "qmgr": qmgr, "queue": queue, "resend": False}, message.to_bytes())


def _message(text: str, user: str = "") -> Message:
    message = text_message(text)
    message.mq.md.UserIdentifier = user
    return message


def _broker(tmp_path: Path, qmgr: dict, queues: tuple[str, ...],
            access: dict | None = None, grants: list[dict] | None = None) -> tuple[BrokerProcess, int]:
    """``grants``: rows of the authorities file (docs/security.md), in the data directory."""
    broker = BrokerProcess("relaymq", config={"qmgr": qmgr, **({"access": access} if access else {})},
                           workdir=tmp_path / "broker")
    if grants:
        (broker.data_dir / "authorities.json").write_text(json.dumps({"authorities": grants}))
    for queue in queues:
        assert main(["queue", "define", queue, "--data-dir", str(broker.data_dir)]) == 0
    broker.start()
    channel_port = broker._side_ports["channel"]
    _until(lambda: port_accepts("127.0.0.1", channel_port), 30, "the channel listener accepts")
    return broker, channel_port


def test_unauthenticated_channel_peer_gets_nothing_and_changes_nothing(tmp_path):
    """Issue 15 finding 1: with a password file, allow_anonymous = false and a channel
    password file, a peer without credentials (or with wrong ones) pipelining GET, BROWSE and
    PUTs (one a psc RegSub on SYSTEM.BROKER.CONTROL.QUEUE) behind its HELLO gets one ERROR
    (2035 MQRC_NOT_AUTHORIZED, reply_to HELLO) and the connection is closed: the message stays,
    nothing is stored. The HTTP adapter's route answers 401. A peer queue manager with its
    shared credential, and a user of the broker's password file, are welcomed, and what they put
    carries their principal as MQMD.UserIdentifier, not what the message claimed."""
    peers = _password_file(tmp_path / "channel-peers", QM2)
    users = _password_file(tmp_path / "passwords", ("alice", "alice-pw"))
    # with a password file the queue authorities are enforced: alice may do anything with the
    # queues, the peer queue manager QM2 (principal qmgr:QM2) only put to OTHER
    grants = [{"type": "queue", "profile": "**", "principal": "alice", "authorities": ["all"]},
              {"type": "queue", "profile": "OTHER", "principal": "qmgr:QM2", "authorities": ["put"]}]
    broker, port = _broker(tmp_path, {"channel_password_file": peers}, ("IN", "OTHER"),
                           {"allow_anonymous": False, "password_file": users}, grants)
    rest = Rest(broker, broker.http_port, ("alice", "alice-pw"))
    try:
        _until(lambda: rest.call("GET", f"{BASE}/admin/qmgr")[0] == 200, 30, "REST answers")
        assert rest.put("IN", "secret")[0] == 201
        regsub = _message("<psc><Command>RegSub</Command><Topic>#</Topic><QName>OTHER</QName></psc>")
        attack = (_get(1, "IN"), encode_frame(FrameType.BROWSE, {"req": 2, "qmgr": "QM1", "queue": "IN"}),
                  _put("x1", "SYSTEM.BROKER.CONTROL.QUEUE", regsub), _put("x2", "OTHER", _message("planted")),
                  encode_frame(FrameType.CONFIRM, {"uid": "x2"}))
        for credentials in (None, ("QM2", "wrong"), ("nobody", "qm2-secret")):
            peer = Peer(port).send(hello("QM2", None, credentials), *attack)
            answer = peer.receive()
            assert answer.type is FrameType.ERROR and answer.header["reason"] == NOT_AUTHORIZED
            assert answer.header["reply_to"] == "HELLO"
            assert peer.closed() and peer.frames == [], credentials
            peer.close()
        assert len(json.loads(rest.call("GET", f"{BASE}/messaging/qmgr/QM1/queue/IN/messagelist")[2])["messages"]) == 1
        assert rest.browse("OTHER")[0] == 204
        request = urllib.request.Request(f"http://127.0.0.1:{broker.http_port}{HTTP_CHANNEL_PATH}",
                                         data=hello("QM2") + _get(1, "IN"), method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401

        for qmgr, credentials in (("QM2", QM2), ("alice", ("alice", "alice-pw"))):
            peer = Peer(port)
            assert peer.login(qmgr, credentials).type is FrameType.WELCOME
            peer.send(_put(f"{qmgr}-1", "OTHER", _message(f"from {qmgr}", user="admin")))
            assert peer.receive().type is FrameType.ACK
            peer.send(encode_frame(FrameType.CONFIRM, {"uid": f"{qmgr}-1"}))
            assert peer.receive().type is FrameType.CONFIRMED
            if qmgr == "QM2":
                # an authenticated peer acts with its own, limited authority: no get, no put to
                # IN; refused with 2035 for that request, the connection goes on
                for frame in (_get(7, "IN"), _put("QM2-2", "IN", _message("not allowed"))):
                    peer.send(frame)
                    refused = peer.receive()
                    assert refused.type is FrameType.ERROR and refused.header["reason"] == NOT_AUTHORIZED
                    assert "qmgr:QM2" in refused.header.get("message", json.dumps(refused.header))
            peer.close()
        listed = json.loads(rest.call("GET", f"{BASE}/messaging/qmgr/QM1/queue/OTHER/messagelist")[2])["messages"]
        assert [m.get("userIdentifier") for m in listed] == ["QM2", "alice"]
    finally:
        broker.cleanup()


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_channel_listener_binds_loopback_by_default():
    """Issue 15 finding 1 and "without a configuration every listener binds 127.0.0.1 and ::1":
    the channel listener bound 0.0.0.0 by default; now the loopback addresses only ([qmgr]
    channel_host "localhost", and ChannelService's own default), ::1 where the machine has it."""
    assert QmgrSettings().channel_host == "localhost"

    async def scenario():
        qm = QueueManager.open("QM1", None)
        service = ChannelService(qm, listen_port=0)
        await service.start()
        try:
            assert service.listener is not None
            bound = {address.rsplit(":", 1)[0] for address in service.listener.addresses()}
            assert "127.0.0.1" in bound and bound <= {"127.0.0.1", "[::1]"}
            assert ("[::1]" in bound) == _has_ipv6_loopback()
        finally:
            await service.stop()
            qm.close()

    asyncio.run(scenario())


def test_an_open_channel_listener_says_what_it_lacks(tmp_path):
    """Issue 15 "Safe defaults" for the channel listener: on loopback the start-up line says
    how to open it; on other addresses, anonymous peers and a listener without TLS are each a
    warning at start-up."""
    broker, _ = _broker(tmp_path, {"channel_host": "0.0.0.0", "channel_allow_anonymous": True}, ())
    try:
        _until(lambda: "has no TLS" in broker.log_path.read_text(errors="replace"), 30, "the TLS warning")
        assert "accepts peers that do not authenticate" in broker.log_path.read_text(errors="replace")
    finally:
        broker.cleanup()
    loopback, _ = _broker(tmp_path / "loopback", {}, ())
    try:
        _until(lambda: "[qmgr] channel_host opens it to the network" in loopback.log_path.read_text(errors="replace"),
               30, "the loopback line")
    finally:
        loopback.cleanup()


def test_eight_waiting_channel_gets_leave_rest_and_the_listener_responsive(tmp_path):
    """Issue 15 finding 7: eight channel GETs with wait_ms = 300000 held every worker thread,
    froze REST and the listener for 300 s, and SIGTERM did not finish. Now, with eight such
    GETs waiting: REST answers within 1 s, a new channel connection is welcomed and answered
    within 1 s, a message put over REST goes at once to one of the waiting GETs, and SIGTERM
    ends the broker promptly with status 0."""
    peers = _password_file(tmp_path / "channel-peers", QM2)
    broker, port = _broker(tmp_path, {"channel_password_file": peers}, ("EMPTY", "OTHER"))
    rest = Rest(broker, broker.http_port)
    waiting: list[Peer] = []
    try:
        _until(lambda: rest.call("GET", f"{BASE}/admin/qmgr")[0] == 200, 30, "REST answers")
        for n in range(8):
            peer = Peer(port)
            assert peer.login("QM2", QM2).type is FrameType.WELCOME
            waiting.append(peer.send(_get(n, "EMPTY", wait_ms=300_000)))
        started = time.monotonic()
        assert rest.put("OTHER", "still here")[0] == 201
        assert rest.browse("OTHER")[0] == 200
        assert time.monotonic() - started < 1.0
        started = time.monotonic()
        fresh = Peer(port)
        assert fresh.login("QM2", QM2).type is FrameType.WELCOME
        answer = fresh.send(_get(99, "OTHER")).receive()
        assert answer.type is FrameType.RESULT and len(result_messages(answer)) == 1
        assert time.monotonic() - started < 1.0
        fresh.close()

        assert rest.put("EMPTY", "for a waiting get")[0] == 201
        for peer in waiting:
            peer.sock.setblocking(False)
        deadline = time.monotonic() + 5
        served = []
        while not served and time.monotonic() < deadline:
            for peer in waiting:
                try:
                    peer.frames += peer.decoder.feed(peer.sock.recv(65536))
                except BlockingIOError:
                    pass
                if peer.frames:
                    served.append(peer.frames[0])
            time.sleep(0.01)
        assert len(served) == 1 and served[0].type is FrameType.RESULT
        assert [data for _, data in result_messages(served[0])] != []

        started = time.monotonic()
        assert broker.stop(timeout=15) == 0
        assert time.monotonic() - started < 5.0
    finally:
        for peer in waiting:
            peer.close()
        broker.cleanup()


def test_a_waiting_get_holds_no_thread_and_ends_when_its_peer_hangs_up(caplog):
    """Issue 15 finding 7: closing the sockets of waiting GETs freed nothing. A waiting GET is
    a listener on its queue (no thread); when the peer hangs up it is removed at once, and a
    message put afterwards stays on the queue instead of going to a dead connection."""

    async def scenario():
        qm = QueueManager.open("QM1", None)
        qm.define_queue("EMPTY")
        service = ChannelService(qm, listen_port=0, authenticator=ChannelAuthenticator.anonymous())
        await service.start()
        peers: list[Peer] = []

        def waiters() -> int:
            return qm.listener_count("EMPTY")

        try:
            for n in range(8):
                peer = await asyncio.to_thread(Peer, service.port)
                assert (await asyncio.to_thread(peer.login, "DEV", None)).type is FrameType.WELCOME
                peers.append(peer.send(_get(n, "EMPTY", wait_ms=300_000)))
            await asyncio.to_thread(_until, lambda: waiters() == 8, 5, "eight GETs wait on EMPTY")
            for peer in peers:
                peer.close()
            await asyncio.to_thread(_until, lambda: waiters() == 0, 5, "the hung-up GETs stop waiting")
            await asyncio.to_thread(qm.put, "EMPTY", _message("kept"))
            assert qm.depth("EMPTY") == 1
        finally:
            await service.stop()
            qm.close()

    asyncio.run(scenario())


def _limited_service(qm: QueueManager, limits: ListenerLimits, **options) -> ChannelService:
    return ChannelService(qm, listen_port=0, limits=limits, **options)


def test_frames_are_bounded_in_size_and_time(caplog):
    """Issue 15 finding 8 (channel part): 64 MB frames were buffered with no timeout and idle
    connections were never closed. Before the HELLO a frame may be 16 KiB; afterwards
    [qmgr] channel_max_frame; a frame length over the limit closes the connection before
    anything is buffered; a started frame must arrive whole within channel_frame_timeout_ms;
    a connection without frames for channel_idle_timeout is closed."""
    limits = ListenerLimits(max_frame=64 * 1024, frame_timeout=0.3, idle_timeout=0.5)

    async def scenario():
        qm = QueueManager.open("QM1", None)
        qm.define_queue("IN")
        service = _limited_service(qm, limits, authenticator=ChannelAuthenticator.anonymous())
        await service.start()

        def check() -> None:
            # a 64 MB length before the HELLO: closed at once, nothing buffered
            peer = Peer(service.port)
            peer.sock.sendall((64 * 1024 * 1024).to_bytes(4, "big") + b"\x01")
            assert peer.closed()
            peer = Peer(service.port)
            peer.sock.sendall((HELLO_MAX_FRAME + 1).to_bytes(4, "big"))
            assert peer.closed()
            # after the HELLO: channel_max_frame
            peer = Peer(service.port)
            assert peer.login("DEV", None).type is FrameType.WELCOME
            peer.sock.sendall((64 * 1024 + 1).to_bytes(4, "big"))
            assert peer.closed()
            # a started frame that stops half-way
            peer = Peer(service.port)
            assert peer.login("DEV", None).type is FrameType.WELCOME
            frame = _get(1, "IN")
            started = time.monotonic()
            peer.sock.sendall(frame[:7])
            assert peer.closed()
            assert 0.25 <= time.monotonic() - started < 5
            # an idle connection, after the HELLO and before it
            for login in (True, False):
                peer = Peer(service.port)
                if login:
                    assert peer.login("DEV", None).type is FrameType.WELCOME
                started = time.monotonic()
                assert peer.closed()
                assert 0.25 <= time.monotonic() - started < 5

        try:
            await asyncio.to_thread(check)
        finally:
            await service.stop()
            qm.close()

    with caplog.at_level(logging.INFO, logger="relaymq.qmgr.channel"):
        asyncio.run(scenario())
    assert "exceeds the limit" in caplog.text and "did not arrive whole" in caplog.text
    assert "Traceback" not in caplog.text


def test_connection_caps_per_address_and_per_listener_with_rate_limited_log(caplog):
    """Issue 15 finding 8: the channel listener had no connection cap. Past
    channel_max_connections_per_address (or channel_max_connections) a connection is closed at
    once; each refusal is a log line, at most five in a burst (the rest are counted in the
    next line); closing a connection makes room again."""
    limits = ListenerLimits(frame_timeout=30.0, idle_timeout=30.0, max_connections=3, max_connections_per_address=2)

    async def scenario():
        qm = QueueManager.open("QM1", None)
        service = _limited_service(qm, limits, authenticator=ChannelAuthenticator.anonymous())
        await service.start()

        def check() -> None:
            held = [Peer(service.port), Peer(service.port)]
            assert all(peer.login("DEV", None).type is FrameType.WELCOME for peer in held)
            for _ in range(12):
                extra = Peer(service.port)
                assert extra.closed()
                extra.close()
            held.pop().close()
            _until(lambda: service.listener.admission.open <= 1, 5, "the closed connection is released")
            again = Peer(service.port)
            assert again.login("DEV", None).type is FrameType.WELCOME
            again.close()
            held[0].close()

        try:
            await asyncio.to_thread(check)
        finally:
            await service.stop()
            qm.close()

    with caplog.at_level(logging.WARNING, logger="relaymq.qmgr.channel"):
        asyncio.run(scenario())
    refusals = [r for r in caplog.records if "refusing" in r.getMessage() and "per_address" in r.getMessage()]
    assert 1 <= len(refusals) <= 5


def test_nested_json_headers_are_a_protocol_error_without_memory_growth(tmp_path):
    """Issue 15 finding 8: a deeply nested JSON channel header raised an unhandled
    RecursionError (3,000 of them took RSS from 42 to 691 MB). Each is now refused as a
    protocol error - the connection closed, one log line, no traceback - and RSS stays flat."""
    from interop.test_memory_bounds import rss_mb

    broker, port = _broker(tmp_path, {}, ())
    try:
        header = b"[" * (HELLO_MAX_FRAME - 64)
        frame = b"".join(((5 + len(header)).to_bytes(4, "big"), bytes([FrameType.HELLO]),
                          len(header).to_bytes(4, "big"), header))
        for _ in range(20):  # warm-up: the first connections allocate what every one needs
            peer = Peer(port).send(frame)
            assert peer.closed()
            peer.close()
        before = rss_mb(broker.proc.pid)
        for _ in range(500):
            peer = Peer(port).send(frame)
            assert peer.closed()
            peer.close()
        assert rss_mb(broker.proc.pid) - before < 20
        assert broker.running
    finally:
        broker.stop()
        log = broker.log_path.read_text(errors="replace")
        broker.cleanup()
    assert "nests deeper than" in log and "RecursionError" not in log and "Traceback" not in log


def test_each_request_is_shown_to_the_authority_with_the_peers_principal(tmp_path):
    """Issue 15 finding 1 / seed 000 l.336-371 (the seam for queue authorities): every put,
    get and browse a channel peer asks for is first shown to ``authority`` as a ChannelRequest
    whose ``principal`` is the authenticated peer; a refusal is an ERROR 2035 for that request,
    and the connection goes on."""
    peers = _password_file(tmp_path / "channel-peers", QM2)
    seen: list[ChannelRequest] = []

    def authority(request: ChannelRequest) -> str | None:
        seen.append(request)
        return None if request.operation == "browse" else f"{request.principal} may not {request.operation}"

    async def scenario():
        from relaymq.auth.passwords import PasswordFile

        qm = QueueManager.open("QM1", None)
        qm.define_queue("IN")
        qm.put("IN", _message("m"))
        service = ChannelService(qm, listen_port=0, authority=authority,
                                 authenticator=ChannelAuthenticator(peers=PasswordFile.load(peers)))
        await service.start()

        def check() -> None:
            peer = Peer(service.port)
            assert peer.login("QM2", QM2).type is FrameType.WELCOME
            refused = peer.send(_get(1, "IN", wait_ms=1000)).receive()
            assert (refused.type, refused.header["reason"], refused.header["req"]) == \
                (FrameType.ERROR, NOT_AUTHORIZED, 1)
            browsed = peer.send(encode_frame(FrameType.BROWSE, {"req": 2, "qmgr": "QM1", "queue": "IN"})).receive()
            assert browsed.type is FrameType.RESULT and len(result_messages(browsed)) == 1
            put = peer.send(_put("u1", "IN", _message("n"))).receive()
            assert put.type is FrameType.ERROR and put.header["reason"] == NOT_AUTHORIZED
            peer.close()

        try:
            await asyncio.to_thread(check)
        finally:
            await service.stop()
            qm.close()

    asyncio.run(scenario())
    assert [(r.principal, r.peer, r.operation, r.qmgr, r.queue) for r in seen] == [
        ("QM2", "QM2", "get", "QM1", "IN"), ("QM2", "QM2", "browse", "QM1", "IN"), ("QM2", "QM2", "put", "QM1", "IN")]


def test_http_adapter_refuses_unauthenticated_peers():
    """Issue 15 finding 1: without an HTTP password file the channel route took anybody. Now
    it authenticates like the listener: no credentials, 401; anonymous only when configured."""

    async def scenario():
        qm = QueueManager.open("QM1", None)
        qm.define_queue("IN")
        http = HttpServer()
        await http.start("127.0.0.1", 0)
        service = ChannelService(qm, listen_host=None)
        await service.start(http)

        def post() -> int:
            request = urllib.request.Request(f"http://127.0.0.1:{http.port}{HTTP_CHANNEL_PATH}",
                                             data=hello("QM2") + _get(1, "IN"), method="POST")
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status
            except urllib.error.HTTPError as error:
                return error.code

        try:
            assert await asyncio.to_thread(post) == 401
        finally:
            await service.stop()
            await http.stop()
            qm.close()

    asyncio.run(scenario())


def test_links_and_synchronous_calls_authenticate_with_the_connections_credentials(tmp_path):
    """Issue 15 finding 1 with the project's own channel client: a connection's user and
    password go in its HELLO over TCP, for the pushing link and for synchronous remote calls
    alike; TARGET stores what DEV pushes with DEV's principal as MQMD.UserIdentifier. Without
    the password, or with a wrong one, the link is refused with 2035 and keeps its message."""
    from relaymq.auth.passwords import PasswordFile
    from relaymq.qmgr.channel_settings import build_connections
    from relaymq.qmgr.errors import NotConnected

    peers = _password_file(tmp_path / "channel-peers", ("DEV", "dev-secret"))
    fast = {"retry_initial_ms": 20, "retry_max_ms": 200, "timeout_ms": 5000}

    async def scenario():
        tgt = QueueManager.open("TGT", None)
        tgt.define_queue("IN")
        tgt.define_queue("SYNC")
        tgt.put("SYNC", _message("sync"))
        t = ChannelService(tgt, listen_port=0, authenticator=ChannelAuthenticator(peers=PasswordFile.load(peers)))
        await t.start()
        services = []
        try:
            for name, password in (("NOPE", None), ("WRONG", "guess"), ("DEV", "dev-secret")):
                dev = QueueManager.open("DEV", None)
                dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")
                dev.define_queue("SYNC", "remote", queue_manager="TGT")
                login = {"user": "DEV", "password": password} if password else {}
                service = ChannelService(dev, build_connections(
                    [{**fast, "name": "TGT", "address": f"127.0.0.1:{t.port}", **login}], "c", None), listen_host=None)
                services.append((service, dev))
                await service.start()
                await asyncio.to_thread(dev.put, "IN", _message(f"pushed by {name}", user="root"), qmgr="TGT")
                if name != "DEV":
                    link = service.links["TGT"]
                    await asyncio.to_thread(_until, lambda link=link: "2035" in (link.last_error or ""), 10,
                                            f"{name} refused")
                    with pytest.raises(NotConnected):
                        await asyncio.to_thread(dev.get, "SYNC", qmgr="TGT")
                    assert dev.depth("IN", qmgr="TGT") == 1 and tgt.depth("IN") == 0
                    await service.stop()
                    continue
                got = await asyncio.to_thread(dev.get, "SYNC", qmgr="TGT")
                assert got is not None and got.mq.body == b"sync"
                await asyncio.to_thread(_until, lambda: len(tgt.browse("IN")) == 1, 10, "DEV's push arrives")
                (arrived,) = tgt.browse("IN")
                assert (arrived.mq.body, arrived.mq.md.UserIdentifier.strip()) == (b"pushed by DEV", "DEV")
        finally:
            for service, dev in services:
                await service.stop()
                dev.close()
            await t.stop()
            tgt.close()

    asyncio.run(scenario())


def test_an_idle_link_reconnects_quietly_after_the_listeners_idle_timeout(caplog):
    """Issue 15 finding 8 (idle connections are closed) without noise for the links it hits: a
    link whose connection the listener closed for idleness connects again without a warning,
    and the next message goes through."""
    from relaymq.qmgr.channel_settings import build_connections

    limits = ListenerLimits(idle_timeout=0.3)

    async def scenario():
        tgt, dev = QueueManager.open("TGT", None), QueueManager.open("DEV", None)
        tgt.define_queue("IN")
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")
        t = _limited_service(tgt, limits, authenticator=ChannelAuthenticator.anonymous())
        await t.start()
        d = ChannelService(dev, build_connections([{"name": "TGT", "address": f"127.0.0.1:{t.port}",
                                                    "retry_initial_ms": 20}], "c", None), listen_host=None)
        await d.start()
        try:
            for n in range(2):
                await asyncio.to_thread(dev.put, "IN", _message(f"m{n}"), qmgr="TGT")
                await asyncio.to_thread(_until, lambda n=n: len(tgt.browse("IN")) == n + 1, 10, f"m{n} arrives")
                await asyncio.to_thread(_until, lambda: "idle timeout" in caplog.text, 10, "an idle close")
                await asyncio.to_thread(_until, lambda: d.links["TGT"].connected, 10, "the link reconnects")
                warnings.extend(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
                caplog.clear()
        finally:
            await d.stop()
            await t.stop()
            dev.close()
            tgt.close()

    warnings: list[str] = []
    with caplog.at_level(logging.INFO, logger="relaymq.qmgr.channel"):
        asyncio.run(scenario())
    assert not [w for w in warnings if "channel to TGT" in w], warnings
