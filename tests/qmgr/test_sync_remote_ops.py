"""Get, browse, browseAndLock, unlock, delete, waitForMessage, confirmGet and undo on
synchronous remote queues, over a real channel (everyplace.md items 10, 13, 14, 16, 17, 20;
seed 004 l.2015-2029 operation matrix, l.2863-3010 two-phase get, l.3012-3100 undo), by TCP
and by the HTTP adapter, directly and through an intermediate queue manager."""

from __future__ import annotations

import asyncio

import pytest

from relaymq.qmgr import QueueManager
from relaymq.qmgr.channel_auth import ChannelAuthenticator
from relaymq.qmgr.channel_service import ChannelService
from relaymq.qmgr.channel_settings import build_connections
from relaymq.qmgr.errors import NoMessage, NotAllowed, NotConnected, UnknownUID, WrongLock

from .helpers import body, linked_queue_managers, text_message

FAST = {"retry_initial_ms": 20, "retry_max_ms": 200, "timeout_ms": 5000}

#: These tests are about the protocol, not about who may use it (test_channel_security is).
OPEN = ChannelAuthenticator.anonymous()


def _run(adapter: str, scenario) -> None:
    """Start TGT (queue IN with three messages) and DEV (IN defined as a synchronous remote
    queue on TGT, connected by ``adapter``), run ``scenario(dev, tgt)`` in a worker thread."""

    def prepare(tgt: QueueManager, dev: QueueManager) -> None:
        tgt.define_queue("IN")
        for text, priority in (("low", 1), ("high", 8), ("mid", 5)):
            tgt.put("IN", text_message(text, priority, correl_id=text.encode()))
        dev.define_queue("IN", "remote", queue_manager="TGT")

    async def main() -> None:
        async with linked_queue_managers(prepare, adapter=adapter) as pair:
            await asyncio.to_thread(scenario, pair.device, pair.server)

    asyncio.run(main())


@pytest.mark.parametrize("adapter", ["tcp", "http"])
def test_browse_get_and_two_phase_get_on_a_synchronous_remote_queue(adapter: str) -> None:
    """Items 10, 15, 20: browse in priority order, filters, a get with a confirm id leaves the
    message get-unconfirmed at TGT until confirmGet; a repeated confirmGet says "already";
    undo of another get restores its message."""

    def scenario(dev: QueueManager, tgt: QueueManager) -> None:
        assert [body(m) for m in dev.browse("IN", qmgr="TGT")] == ["high", "mid", "low"]
        assert [body(m) for m in dev.browse("IN", qmgr="TGT", correl_id=b"low")] == ["low"]
        assert [body(m) for m in dev.browse("IN", qmgr="TGT", selector="JMSPriority < 5")] == ["low"]
        envelope = dev.get_envelope("IN", qmgr="TGT", confirm_id=11)
        assert body(envelope.message) == "high" and envelope.priority == 8
        assert tgt.depth("IN") == 3 and [body(m) for m in tgt.browse("IN")] == ["mid", "low"]
        assert dev.confirm_get(envelope.uid, qmgr="TGT", queue="IN") is True
        assert tgt.depth("IN") == 2
        assert dev.confirm_get(envelope.uid, qmgr="TGT", queue="IN") is False  # a retried confirm
        with pytest.raises(UnknownUID):
            dev.confirm_get("TGT:0:0", qmgr="TGT", queue="IN")
        dev.get_envelope("IN", qmgr="TGT", confirm_id=12)  # "mid", then the application gives up
        assert dev.undo("IN", 12, qmgr="TGT") == 1
        assert body(dev.get("IN", qmgr="TGT")) == "mid"  # back, and a plain get removes it
        assert [body(m) for m in tgt.browse("IN")] == ["low"]

    _run(adapter, scenario)


def test_browse_and_lock_unlock_delete_and_no_match_on_a_synchronous_remote_queue() -> None:
    """Items 13, 14: browseAndLock hides the matches at TGT and returns lock ids; only the
    lock id unlocks; delete by UID with the lock id; get on no match is None (the API's
    "no matching message"), delete of an unknown UID is NoMessage, with TGT's reason code."""

    def scenario(dev: QueueManager, tgt: QueueManager) -> None:
        locked = dev.browse_and_lock("IN", qmgr="TGT", confirm_id=21, selector="JMSPriority > 4")
        assert [body(e.message) for e in locked] == ["high", "mid"] and all(e.lock_id for e in locked)
        assert [body(m) for m in tgt.browse("IN")] == ["low"]
        with pytest.raises(WrongLock):
            dev.unlock("IN", locked[0].uid, locked[0].lock_id + 1, qmgr="TGT")
        dev.unlock("IN", locked[0].uid, locked[0].lock_id, qmgr="TGT")
        dev.delete("IN", locked[1].uid, lock_id=locked[1].lock_id, qmgr="TGT")
        assert sorted(body(m) for m in tgt.browse("IN")) == ["high", "low"] and tgt.depth("IN") == 2
        assert dev.get("IN", qmgr="TGT", correl_id=b"nothing") is None
        with pytest.raises(NoMessage):
            dev.delete("IN", "TGT:0:0", qmgr="TGT")

    _run("tcp", scenario)


def test_wait_for_message_on_a_synchronous_remote_queue() -> None:
    """Item 16 (l.2130-2151: message polling works on remote queues too): a get that waits
    returns the message put at TGT while it waits."""

    def scenario(dev: QueueManager, tgt: QueueManager) -> None:
        for _ in range(3):
            dev.get("IN", qmgr="TGT")
        import threading

        threading.Timer(0.3, lambda: tgt.put("IN", text_message("late"))).start()
        envelope = dev.wait_for_message("IN", qmgr="TGT", wait=5.0)
        assert envelope is not None and body(envelope.message) == "late"
        assert dev.get("IN", qmgr="TGT", wait=0.2) is None

    _run("tcp", scenario)


def test_remote_operations_through_an_intermediate_queue_manager_and_their_errors() -> None:
    """Item 22 at every hop (seed l.2605: synchronous delivery is end to end through the
    intermediate queue managers): DEV -> SRV (synchronous definition) -> TGT. Async remote
    queues take only put (item 10: NotAllowed); a peer that is down is NotConnected."""

    async def main() -> None:
        tgt, srv, dev = (QueueManager.open(n, None) for n in ("TGT", "SRV", "DEV"))
        tgt.define_queue("IN")
        tgt.put("IN", text_message("far"))
        srv.define_queue("IN", "remote", queue_manager="TGT")
        dev.define_queue("IN", "remote", queue_manager="TGT")
        dev.define_queue("ASYNC", "remote", queue_manager="TGT", mode="async")
        t = ChannelService(tgt, listen_host="127.0.0.1", authenticator=OPEN, listen_port=0)
        await t.start()
        s = ChannelService(srv, build_connections([{**FAST, "name": "TGT", "address": f"127.0.0.1:{t.port}"}],
                                                  "c", None),
                           listen_host="127.0.0.1", listen_port=0, authenticator=OPEN)
        await s.start()
        d = ChannelService(dev, build_connections([{**FAST, "name": "SRV", "address": f"127.0.0.1:{s.port}"},
                                                   {"name": "TGT", "via": "SRV"}], "c", None), listen_host=None)
        await d.start()
        try:
            envelope = await asyncio.to_thread(dev.get_envelope, "IN", qmgr="TGT", confirm_id=3)
            assert body(envelope.message) == "far" and tgt.browse("IN") == [] and tgt.depth("IN") == 1
            assert await asyncio.to_thread(dev.confirm_get, envelope.uid, qmgr="TGT", queue="IN") is True
            assert tgt.depth("IN") == 0
            with pytest.raises(NotAllowed):
                await asyncio.to_thread(dev.get, "ASYNC", qmgr="TGT")
            await t.stop()
            with pytest.raises(NotConnected):
                await asyncio.to_thread(dev.browse, "IN", qmgr="TGT")
        finally:
            await d.stop()
            await s.stop()
            await t.stop()
            for qm in (dev, srv, tgt):
                qm.close()

    asyncio.run(main())
