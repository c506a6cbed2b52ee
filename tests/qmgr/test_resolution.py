"""Resolution of put(destQM, destQ), everyplace.md item 22 exactly (seed 004 l.3586-3653,
3332-3339), and the topologies' holding queues (items 8, 24, 27)."""

from __future__ import annotations

import pytest

from relaymq.qmgr import QueueManager
from relaymq.qmgr import resolution as R
from relaymq.qmgr.errors import QueueExists, UnknownQueue, UnknownQueueManager

from .helpers import body, text_message


class Reach:
    """A stand-in for the channel part's synchronous access: records puts to reachable qmgrs."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)
        self.puts: list[tuple[str, str, str]] = []

    def reachable(self, qmgr: str) -> bool:
        return qmgr in self.names

    def put(self, qmgr: str, queue: str, message, **options) -> bytes:
        self.puts.append((qmgr, queue, body(message)))
        return b"R" * 24


def test_order_alias_exact_queue_alias_sf_discovery_fail() -> None:
    """everyplace.md item 22 in order; a remote definition beats an S&F queue (item 22, l.3332)."""
    with QueueManager.open("QM1", None) as qm:
        qm.define_queue("LQ", aliases=["LALIAS"])
        qm.define_queue("RQ", "remote", queue_manager="QM2", mode="async", aliases=["RALIAS"])
        qm.define_queue("SF", "store_and_forward", target_queue_managers=["QM2", "QM3"])
        qm.add_qmgr_alias("OLDNAME", "QM2")
        qm.add_qmgr_alias("ME", "QM1")
        assert qm.resolve("LQ").kind == R.LOCAL_QUEUE
        assert qm.resolve("LQ", "ME").target_queue == "LQ"  # alias of this qmgr, item 27
        assert qm.resolve("LALIAS").target_queue == "LQ"
        r = qm.resolve("RQ", "OLDNAME")
        assert (r.kind, r.target_qmgr, r.target_queue) == (R.REMOTE_ASYNC, "QM2", "RQ")
        assert qm.resolve("RALIAS", "QM2").target_queue == "RQ"
        r = qm.resolve("OTHER", "QM2")
        assert (r.kind, r.definition.name, r.target_queue) == (R.STORE_FORWARD, "SF", "OTHER")
        with pytest.raises(UnknownQueueManager):
            qm.resolve("X", "QM9")
        qm.remote = Reach("QM9")
        r = qm.resolve("X", "QM9")
        assert r.kind == R.DISCOVERY and r.definition is None
        with pytest.raises(UnknownQueue):
            qm.resolve("NOSUCH")


def test_qmgr_alias_chain_and_loop() -> None:
    """everyplace.md item 22: chains of queue manager aliases; a loop fails cleanly."""
    assert R.resolve_qmgr_alias("A", {"A": "B", "B": "C"}) == "C"
    with pytest.raises(UnknownQueueManager):
        R.resolve_qmgr_alias("A", {"A": "B", "B": "A"})


def test_store_and_forward_holds_with_final_destination() -> None:
    """everyplace.md item 8: S&F holds messages for its targets, invisible to applications,
    keeping the destination names (item 23)."""
    with QueueManager.open("SERVER", None) as qm:
        qm.define_queue("SF", "store_and_forward", target_queue_managers=["DEVICE"], push=False)
        qm.put("INBOX", text_message("for device"), qmgr="DEVICE")
        assert qm.pending_transmission("DEVICE") == []  # push = false: held for pull only
        (uid, queue, message), = qm.pending_transmission("DEVICE", pull=True)
        assert queue == "INBOX" and body(message) == "for device"


def test_two_sf_queues_may_not_share_a_target() -> None:
    """everyplace.md item 8: two S&F queues may not share a target."""
    with QueueManager.open("QM1", None) as qm:
        qm.define_queue("SF1", "store_and_forward", target_queue_managers=["QM2"])
        with pytest.raises(QueueExists):
            qm.define_queue("SF2", "store_and_forward", target_queue_managers=["QM3", "QM2"])


def test_sync_remote_put_goes_through_channel() -> None:
    """everyplace.md items 8, 21: a synchronous remote put needs the connection and is done
    by it, nothing is held here."""
    with QueueManager.open("QM1", None) as qm:
        qm.define_queue("RQ", "remote", queue_manager="QM2")
        qm.remote = Reach("QM2")
        qm.put("RQ", text_message("now"), qmgr="QM2")
        assert qm.remote.puts == [("QM2", "RQ", "now")]
        assert qm.transmission_targets() == []


def test_store_and_forward_and_home_server_may_not_share_a_target() -> None:
    """Seed l.611: a store-and-forward queue and a home-server queue should not have the
    same target queue manager (both would move the same messages): refused either way."""
    with QueueManager.open("QM1", None) as qm:
        qm.define_queue("HS", "home_server", queue_manager="SERVER")
        with pytest.raises(QueueExists, match="home-server"):
            qm.define_queue("SF", "store_and_forward", target_queue_managers=["SERVER"])
    with QueueManager.open("QM1", None) as qm:
        qm.define_queue("SF", "store_and_forward", target_queue_managers=["OTHER", "SERVER"])
        with pytest.raises(QueueExists, match="seed l.611"):
            qm.define_queue("HS", "home_server", queue_manager="SERVER")
        qm.define_queue("HS2", "home_server", queue_manager="THIRD")  # another target is fine
