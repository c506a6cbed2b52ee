"""Rules (everyplace.md item 32; seed 004 l.4980-6225): queue manager, queue and transmission
rules called at the seed's points, vetoing by raising; the seed's cheap-rate example."""

from __future__ import annotations

import datetime
import importlib.util
import sys
import types
from pathlib import Path

import pytest

from relaymq.qmgr import QueueManager, QueueManagerRule, QueueRule
from relaymq.qmgr.errors import BadProperty, RuleVeto

from .helpers import body, linked_queue_managers, text_message

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qmgr-rules" / "cheap_rate.py"


class Recorder(QueueManagerRule):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def activate(self, qm):
        self.calls.append("activate")

    def close(self, qm):
        self.calls.append("close")

    def queue_added(self, qm, definition):
        self.calls.append(f"add {definition.name}")

    def queue_removed(self, qm, definition):
        self.calls.append(f"remove {definition.name}")

    def put(self, qm, definition, message, target_qmgr):
        if body(message) == "forbidden":
            raise ValueError("no forbidden words")
        self.calls.append(f"put {definition.name}")

    def get(self, qm, definition, envelope):
        self.calls.append(f"get {definition.name}")

    def delete(self, qm, definition, uid):
        self.calls.append("delete")

    def undo(self, qm, definition, confirm_id):
        self.calls.append(f"undo {confirm_id}")


class NoGets(QueueRule):
    def get(self, definition, envelope):
        raise PermissionError("this queue is write-only")

    def attribute_changed(self, old, new):
        NoGets.changes.append((old.max_depth, new.max_depth))


NoGets.changes = []  # type: ignore[attr-defined]
_mod = types.ModuleType("qmgr_test_rules_mod")
_mod.NoGets = NoGets  # type: ignore[attr-defined]
_mod.Recorder = Recorder  # type: ignore[attr-defined]
sys.modules[_mod.__name__] = _mod


def test_queue_manager_rule_points_and_veto() -> None:
    """everyplace.md item 32: activate, close, queue add/remove, put, get, delete, undo; a rule
    vetoes by raising and nothing changes."""
    rule = Recorder()
    qm = QueueManager("QM1", rule=rule, define_system_queues=False)
    qm.define_queue("Q")
    qm.put("Q", text_message("fine"))
    with pytest.raises(RuleVeto) as err:
        qm.put("Q", text_message("forbidden"))
    assert err.value.reason == 3304 and "no forbidden words" in str(err.value)
    assert qm.depth("Q") == 1
    qm.get("Q", confirm_id=2)
    qm.undo("Q", 2)
    qm.delete("Q", qm.browse_envelopes("Q")[0].uid)
    qm.delete_queue("Q")
    qm.close()
    assert rule.calls == ["activate", "add Q", "put Q", "get Q", "undo 2", "delete", "remove Q", "close"]


def test_queue_manager_rule_vetoes_each_put_of_a_put_all() -> None:
    """everyplace.md item 32: the put rule sees each put of a run of puts (``put_all``: a
    publication's copies for queue subscribers, issue 14, which skips the call for a rule that
    does not look at puts); a vetoed one is refused and the others are made."""
    rule = Recorder()
    qm = QueueManager("QM1", rule=rule, define_system_queues=False)
    qm.define_queue("A")
    qm.define_queue("B")
    results = qm.put_all([("A", text_message("fine")), ("B", text_message("forbidden")), ("B", text_message("ok"))])
    assert isinstance(results[1], RuleVeto) and all(isinstance(r, bytes) for r in (results[0], results[2]))
    assert (qm.depth("A"), qm.depth("B")) == (1, 1)
    assert rule.calls == ["activate", "add A", "add B", "put A", "put B"]
    qm.close()


def test_queue_rule_veto_keeps_message_and_attribute_change() -> None:
    """everyplace.md item 32: queue rules on get (veto) and attribute change."""
    with QueueManager.open("QM1", None) as qm:
        qm.define_queue("W", rule="qmgr_test_rules_mod:NoGets")
        qm.put("W", text_message("kept"))
        with pytest.raises(RuleVeto):
            qm.get("W")
        assert qm.depth("W") == 1
        qm.alter_queue("W", max_depth=10)
        assert NoGets.changes[-1] == (-1, 10)


def test_rule_by_name_must_exist_and_be_a_rule() -> None:
    """Rules are named 'module:Class'; a wrong name is refused when the queue is defined."""
    with QueueManager.open("QM1", None) as qm:
        with pytest.raises(BadProperty):
            qm.define_queue("A", rule="no_such_module:X")
        with pytest.raises(BadProperty):
            qm.define_queue("B", rule="qmgr_test_rules_mod:Recorder")  # not a QueueRule
        assert "A" not in qm.queue_names() and "B" not in qm.queue_names()


def _cheap_rate_module():
    spec = importlib.util.spec_from_file_location("cheap_rate", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("hour,open_", [(8, True), (9, False), (12, False), (17, False), (18, True), (23, True)])
def test_cheap_rate_blocks_transmission_during_the_day(hour: int, open_: bool) -> None:
    """everyplace.md item 32 example: transmit only outside 09:00-18:00 (seed 004 l.5444-5512)."""
    cheap = _cheap_rate_module()
    rule = cheap.CheapRateRule(now=lambda: datetime.datetime(2024, 5, 15, hour, 30))
    rule.trigger_interval = None  # the background thread is tested below
    with QueueManager("DEVICE", rule=rule) as qm:
        qm.define_queue("OUT", "remote", queue_manager="SERVER", mode="async")
        qm.put("OUT", text_message("report"), qmgr="SERVER")
        triggered: list[tuple] = []
        qm.add_transmission_listener(lambda target, fields, forced: triggered.append((target, forced)))
        assert qm.trigger_transmission() is open_
        assert len(qm.pending_transmission("SERVER")) == (1 if open_ else 0)
        assert triggered == ([(None, True)] if open_ else [])  # agreed: every link transmits now
        assert qm.depth("OUT", qmgr="SERVER") == 1  # held, never lost


def test_cheap_rate_background_trigger_thread_starts_and_stops() -> None:
    """Seed 004 l.5516: a thread started at activate triggers transmission; stopped at close."""
    import threading

    cheap = _cheap_rate_module()
    rule = cheap.CheapRateRule(now=lambda: datetime.datetime(2024, 5, 15, 22, 0))
    rule.trigger_interval = 0.01
    fired = threading.Event()
    qm = QueueManager("DEVICE", rule=rule)
    qm.define_queue("OUT", "remote", queue_manager="SERVER", mode="async")
    qm.put("OUT", text_message("x"), qmgr="SERVER")
    qm.add_transmission_listener(lambda target, fields, forced: fired.set())  # after the put: only a trigger fires it
    assert fired.wait(30)
    qm.close()
    assert not rule._thread.is_alive()


def test_queue_manager_rule_named_in_text() -> None:
    """[qmgr] rule = "module:Class" (everyplace.md item 32) is loaded by name."""
    qm = QueueManager.open("QM1", None, rule="qmgr_test_rules_mod:Recorder")
    assert isinstance(qm.rule, Recorder) and qm.rule.calls[0] == "activate"
    qm.close()
    with pytest.raises(BadProperty):
        QueueManager.open("QM1", None, rule="qmgr_test_rules_mod:NoGets")  # a queue rule, not a qmgr rule


class NoBrowse(QueueRule):
    def browse(self, definition, envelopes):
        raise PermissionError("no browsing here")


_mod.NoBrowse = NoBrowse  # type: ignore[attr-defined]


def test_browse_veto_changes_nothing_not_even_browse_and_lock() -> None:
    """everyplace.md item 32 (seed l.5860: the queue rule is called when the queue is
    browsed; a rule vetoes by raising and nothing changes): a vetoed browse is RuleVeto,
    and a vetoed browseAndLock leaves the message unlocked for the next get."""
    with QueueManager.open("QM1", None) as qm:
        qm.define_queue("B", rule="qmgr_test_rules_mod:NoBrowse")
        qm.put("B", text_message("visible"))
        with pytest.raises(RuleVeto):
            qm.browse("B")
        with pytest.raises(RuleVeto):
            qm.browse_and_lock("B", confirm_id=5)
        assert body(qm.get("B")) == "visible"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLE.parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class MoreThan(_example("pending_threshold").PendingThresholdRule):  # type: ignore[misc]
    """examples/qmgr-rules/pending_threshold.py (the seed's "more than 10 pending" rule,
    l.5339-5356) with a threshold of 3, recording what it was asked."""

    threshold = 3

    def __init__(self) -> None:
        self.asked: list[tuple[int, dict]] = []

    def trigger_transmission(self, qm, count, fields):
        self.asked.append((count, fields))
        return super().trigger_transmission(qm, count, fields)


def test_links_ask_the_trigger_transmission_rule_before_transmitting() -> None:
    """everyplace.md item 32 (seed l.5314-5360): a link transmits only when the queue
    manager rule's trigger_transmission(count, fields) agrees; count is the number of
    messages pending, fields are the fields of the message whose put triggered it."""
    import asyncio

    rule = MoreThan()

    def prepare(tgt: QueueManager, dev: QueueManager) -> None:
        tgt.define_queue("IN")
        dev.define_queue("IN", "remote", queue_manager="TGT", mode="async")

    async def scenario() -> None:
        async with linked_queue_managers(prepare, device_options={"rule": rule}) as pair:
            tgt, dev = pair.server, pair.device
            for i in range(3):
                await asyncio.to_thread(dev.put, "IN", text_message(f"m{i}", priority=6), qmgr="TGT")
            deadline = asyncio.get_running_loop().time() + 10
            while len(rule.asked) < 4:  # the three puts' triggers and at least one periodic look
                assert asyncio.get_running_loop().time() < deadline, rule.asked
                await asyncio.sleep(0.02)
            assert tgt.depth("IN") == 0 and dev.depth("IN", qmgr="TGT") == 3
            assert rule.asked and all(count <= 3 for count, _ in rule.asked)
            await asyncio.to_thread(dev.put, "IN", text_message("m3", priority=6), qmgr="TGT")
            for _ in range(1000):  # confirmed (visible), not only arrived
                if len(tgt.browse("IN")) == 4:
                    break
                await asyncio.sleep(0.02)
            assert [body(m) for m in tgt.browse("IN")] == ["m0", "m1", "m2", "m3"]
            assert any(c == 4 and f.get("DestQ") == "IN" and f.get("DestQMgr") == "TGT" and f.get("Priority") == 6
                       and body(f.get("Message")) == "m3" for c, f in rule.asked)

    asyncio.run(scenario())
