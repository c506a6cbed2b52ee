"""Synchronous routes at an intermediate queue manager and synchronous assured put, over real
sockets (everyplace.md items 18-22; seed 004 l.2597-2700, 3586-3653): a message that reaches
a queue manager whose route onwards is synchronous (a synchronous remote definition, or only
a connection: discovery) crosses it two-phase end to end and arrives exactly once, also when
both links are cut mid-transfer and mid-confirm; an old (version 1) sender is refused clearly
and keeps the message; an application's assured put to a synchronous remote queue is held
unconfirmed at the destination until it confirms (or undoes) it."""

from __future__ import annotations

import asyncio
import random

import pytest

from relaymq.qmgr import QueueManager
from relaymq.qmgr.channel import ChannelReceiver, ChannelSender, Outgoing, Refused
from relaymq.qmgr.channel_auth import ChannelAuthenticator
from relaymq.qmgr.channel_frames import PROTOCOL, FrameType, decode_all, encode_frame
from relaymq.qmgr.channel_service import ChannelService
from relaymq.qmgr.channel_settings import build_connections
from relaymq.qmgr.errors import NotAllowed

from .helpers import body, linked_queue_managers, text_message
from .proxy import CuttingProxy

FAST = {"retry_initial_ms": 20, "retry_max_ms": 200, "timeout_ms": 5000, "batch": 20}

#: These tests are about the protocol, not about who may use it (test_channel_security is).
OPEN = ChannelAuthenticator.anonymous()


async def _until(condition, timeout: float, describe) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(describe())
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("middle", ["sync_definition", "discovery"])
def test_async_messages_cross_a_synchronous_hop_exactly_once_through_cuts(middle: str) -> None:
    """Items 18-19, 22 (seed l.2597-2611, 3632-3645): DEV -> SRV -> TGT where SRV reaches TGT
    only synchronously. Before the fix SRV answered ACK after a one-shot put onwards and
    then failed the CONFIRM, so DEV resent forever (3 messages became 612 copies). Now the
    PUT and the CONFIRM are relayed to TGT: every message arrives exactly once, in priority
    then FIFO order, though both links are cut in PUTs and after CONFIRMs."""

    async def scenario() -> None:
        tgt, srv, dev = (QueueManager.open(n, None) for n in ("TGT", "SRV", "DEV"))
        tgt.define_queue("IN")
        if middle == "sync_definition":
            srv.define_queue("IN", "remote", queue_manager="TGT")  # mode sync
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")
        t = ChannelService(tgt, listen_host="127.0.0.1", authenticator=OPEN, listen_port=0)
        await t.start()
        to_tgt = CuttingProxy(t.port, random.Random(7), 0.03, plan=("put", "confirm")).start()
        s = ChannelService(srv, build_connections([{**FAST, "name": "TGT", "address": f"127.0.0.1:{to_tgt.port}"}],
                                                  "c", None),
                           listen_host="127.0.0.1", listen_port=0, authenticator=OPEN)
        await s.start()
        to_srv = CuttingProxy(s.port, random.Random(8), 0.03, plan=("confirm", "put")).start()
        d = ChannelService(dev, build_connections([{**FAST, "name": "SRV", "address": f"127.0.0.1:{to_srv.port}"},
                                                   {"name": "TGT", "via": "SRV"}], "c", None), listen_host=None)
        try:
            sent = []
            for i in range(60):
                priority = i % 3
                await asyncio.to_thread(dev.put, "IN", text_message(f"{i}", priority=priority), qmgr="TGT")
                sent.append((i, priority))
            await d.start()
            await _until(lambda: dev.depth("IN", qmgr="TGT") == 0, 60,
                         lambda: f"DEV still holds {dev.depth('IN', qmgr='TGT')}; TGT has {tgt.depth('IN')};"
                                 f" link: {d.links['SRV'].last_error}")
            assert min(to_tgt.cuts.values()) > 0 and min(to_srv.cuts.values()) > 0
            got = [int(body(m)) for m in tgt.browse("IN")]
            assert tgt.depth("IN") == len(got) == 60, f"{tgt.depth('IN')} on TGT: duplicates or unconfirmed copies"
            assert got == [i for i, _ in sorted(sent, key=lambda s: (-s[1], s[0]))]
            assert srv.depth("SYSTEM.DEFAULT.LOCAL.QUEUE") == 0 and not srv.transmission_targets()
        finally:
            await d.stop()
            await s.stop()
            await t.stop()
            to_srv.close()
            to_tgt.close()
            for qm in (dev, srv, tgt):
                qm.close()

    asyncio.run(scenario())


def test_version_1_sender_over_a_synchronous_route_is_refused_and_keeps_the_message() -> None:
    """Item 18 ("a message whose route is wrong stays on the sending queue manager"): a
    version 1 sender's CONFIRM does not name the destination, so SRV cannot relay it; the
    PUT is refused with MQRC_OPTION_NOT_VALID_FOR_TYPE naming the reason, nothing is stored
    at SRV and nothing is sent on."""
    with QueueManager.open("SRV", None) as srv:
        srv.define_queue("IN", "remote", queue_manager="TGT")

        class Far:  # reachable but must never be called
            def reachable(self, qmgr: str) -> bool:
                return True

            def put(self, *args, **kwargs):  # pragma: no cover - the point is that it is not called
                raise AssertionError("relayed a version 1 PUT")

        srv.remote = Far()
        receiver = ChannelReceiver(srv, principal="")
        old_hello = encode_frame(FrameType.HELLO, {"protocol": PROTOCOL, "versions": [1], "qmgr": "DEV"})
        (welcome,) = decode_all(receiver.handle(decode_all(old_hello)[0]))
        assert welcome.header["version"] == 1
        sender = ChannelSender("DEV")
        sender.receive(welcome)
        wire = sender.send_batch([Outgoing("DEV:1:1", "TGT", "IN", text_message("x").to_bytes())])
        (reply,) = decode_all(b"".join(receiver.handle(f) for f in decode_all(wire)))
        events, _ = sender.receive(reply)
        assert isinstance(events[0], Refused) and events[0].reason == NotAllowed.reason
        assert "version 2" in events[0].message
        assert srv.depth("SYSTEM.DEFAULT.LOCAL.QUEUE") == 0


def test_assured_put_to_a_synchronous_remote_queue_waits_for_the_applications_confirm() -> None:
    """Seed l.2640-2700 (synchronous assured put) and item 17: put with a confirm id leaves
    the message locked and invisible at the destination; confirm_put(uid, qmgr, queue)
    makes it visible there, a repeated confirm answers "already"; undo(queue, confirm_id,
    qmgr) deletes an unconfirmed one (l.3040: undo works on remote queues)."""

    def prepare(tgt: QueueManager, dev: QueueManager) -> None:
        tgt.define_queue("IN")
        dev.define_queue("IN", "remote", queue_manager="TGT")

    async def scenario() -> None:
        async with linked_queue_managers(prepare, link={"batch": FAST["batch"]}) as pair:
            tgt, dev = pair.server, pair.device
            await asyncio.to_thread(dev.put, "IN", text_message("assured"), qmgr="TGT", confirm_id=5, uid="DEV:app:1")
            assert tgt.depth("IN") == 1 and tgt.browse("IN") == []
            assert await asyncio.to_thread(dev.confirm_put, "DEV:app:1", qmgr="TGT", queue="IN") is True
            assert [body(m) for m in tgt.browse("IN")] == ["assured"]
            assert await asyncio.to_thread(dev.confirm_put, "DEV:app:1", qmgr="TGT", queue="IN") is False
            await asyncio.to_thread(dev.put, "IN", text_message("undone"), qmgr="TGT", confirm_id=6, uid="DEV:app:2")
            assert tgt.depth("IN") == 2
            assert await asyncio.to_thread(dev.undo, "IN", 6, qmgr="TGT") == 1
            assert tgt.depth("IN") == 1

    asyncio.run(scenario())
