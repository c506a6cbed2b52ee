"""The bridge's relay without sockets (relaymq.bridge.forwarder): a QoS 1/2 publication keeps
its packet identifier, and each acknowledgement goes back only once the other side took the
publication over; what was in flight when the remote went away goes again when it is back
(issue 17: "QoS 1/2 out of the bridge must not be lost", "reconnect with back-off"). The
end-to-end proof against Mosquitto is test_bridge_mosquitto."""

from __future__ import annotations

from relaymq.bridge.client import ClientEnd
from relaymq.bridge.forwarder import BridgeCounters, Forwarder
from relaymq.bridge.settings import TopicRule
from relaymq.bridge.topic_map import TopicMap
from relaymq.mqtt import packets as p


class Ends:
    def __init__(self, remote_quota: int = 10) -> None:
        self.local_out: list[p.Packet] = []
        self.remote_out: list[p.Packet] = []
        self.local, self.remote = ClientEnd(p.MQTT_5), ClientEnd(p.MQTT_311)
        self.remote.send_quota = remote_quota
        rules = (TopicRule("a/#", "out", 1, "", "r/"), TopicRule("b/#", "in", 2, "l/", ""))
        self.fw = Forwarder(TopicMap(rules), self.local, self.remote, self.local_out.append,
                            self.remote_out.append, BridgeCounters())
        self.fw.target_up(self.fw.outbound, False)
        self.fw.target_up(self.fw.inbound, False)


def test_topic_map_applies_prefixes_both_ways() -> None:
    rules = (TopicRule("a/#", "out", 1, "", "r/"), TopicRule("b/+", "in", 0, "l/", "x/"))
    topics = TopicMap(rules)
    assert topics.to_remote("a/1/2") == "r/a/1/2" and topics.to_remote("b/1") is None
    assert topics.to_local("x/b/1") == "l/b/1" and topics.to_local("b/1") is None and topics.to_local("x/b/1/2") is None


def test_local_qos1_is_acknowledged_only_after_the_remote_puback() -> None:
    ends = Ends()
    ends.fw.local_publish(p.Publish("a/1", b"x", 1, packet_id=7))
    assert ends.remote_out == [p.Publish("r/a/1", b"x", 1, packet_id=7)]
    assert ends.local_out == []  # not yet
    ends.fw.remote_ack(p.Puback(7))
    assert ends.local_out == [p.Puback(7)]


def test_in_flight_goes_again_with_dup_to_a_kept_session_and_as_new_to_a_new_one() -> None:
    ends = Ends()
    ends.fw.local_publish(p.Publish("a/1", b"x", 1, packet_id=7))
    ends.fw.target_down(ends.fw.outbound)
    ends.fw.local_publish(p.Publish("a/2", b"y", 1, packet_id=8))  # waits: the remote is away
    assert len(ends.remote_out) == 1
    ends.fw.target_up(ends.fw.outbound, session_present=True)
    assert [(m.packet_id, m.dup) for m in ends.remote_out[1:]] == [(7, True), (8, False)]
    ends.fw.target_down(ends.fw.outbound)
    ends.fw.target_up(ends.fw.outbound, session_present=False)
    assert [(m.topic, m.dup) for m in ends.remote_out[3:]] == [("r/a/1", False), ("r/a/2", False)]
    assert ends.local_out == []


def test_the_remote_receive_maximum_holds_the_rest_back() -> None:
    ends = Ends(remote_quota=2)
    for i in range(1, 5):
        ends.fw.local_publish(p.Publish("a/x", b"", 1, packet_id=i))
    assert len(ends.remote_out) == 2
    ends.fw.remote_ack(p.Puback(1))
    assert [m.packet_id for m in ends.remote_out] == [1, 2, 3] and ends.local_out == [p.Puback(1)]


def test_a_dup_from_the_source_asks_the_target_again_and_is_acknowledged_once() -> None:
    ends = Ends()
    ends.fw.local_publish(p.Publish("a/1", b"x", 1, packet_id=7))
    ends.fw.local_publish(p.Publish("a/1", b"x", 1, dup=True, packet_id=7))
    assert [(m.packet_id, m.dup) for m in ends.remote_out] == [(7, False), (7, True)]
    ends.fw.remote_ack(p.Puback(7))
    ends.fw.remote_ack(p.Puback(7))
    assert ends.local_out == [p.Puback(7)]


def test_a_qos2_dup_past_pubrec_gets_the_pubrec_again() -> None:
    """The source lost our PUBREC with its connection and sends the PUBLISH again: without
    the PUBREC again it would never send its PUBREL (found by the kill -9 test)."""
    ends = Ends()
    ends.fw.remote_publish(p.Publish("b/1", b"z", 2, packet_id=3))
    ends.fw.local_ack(p.Pubrec(3))
    ends.fw.remote_publish(p.Publish("b/1", b"z", 2, dup=True, packet_id=3))
    assert ends.remote_out == [p.Pubrec(3), p.Pubrec(3)] and len(ends.local_out) == 1


def test_qos2_handshake_is_relayed_step_by_step_with_one_identifier() -> None:
    ends = Ends()
    ends.fw.remote_publish(p.Publish("b/1", b"z", 2, packet_id=3))
    assert ends.local_out == [p.Publish("l/b/1", b"z", 2, packet_id=3)]
    ends.fw.local_ack(p.Pubrec(3))
    assert ends.remote_out == [p.Pubrec(3)]  # this broker stored it: the remote may let go
    ends.fw.remote_ack(p.Pubrel(3))
    assert ends.local_out[-1] == p.Pubrel(3)
    ends.fw.local_ack(p.Pubcomp(3))
    assert ends.remote_out[-1] == p.Pubcomp(3)


def test_a_pubrel_after_a_restart_of_the_bridge_is_relayed_all_the_same() -> None:
    """After a crash the source sends PUBREL for a publication the bridge no longer knows:
    the target holds it, and its PUBCOMP completes the source's handshake (once only)."""
    ends = Ends()
    ends.fw.local_ack(p.Pubrel(9))
    assert ends.remote_out == [p.Pubrel(9)]
    ends.fw.remote_ack(p.Pubcomp(9))
    assert ends.local_out == [p.Pubcomp(9)]


def test_qos0_is_dropped_and_counted_while_the_other_side_is_away() -> None:
    ends = Ends()
    ends.fw.target_down(ends.fw.outbound)
    ends.fw.local_publish(p.Publish("a/1", b"x", 0))
    assert ends.remote_out == [] and ends.fw.counters.dropped_qos0 == 1


def test_a_new_source_session_orphans_what_was_carried_for_the_old_one() -> None:
    ends = Ends()
    ends.fw.local_publish(p.Publish("a/1", b"x", 1, packet_id=7))
    ends.fw.source_up(ends.fw.outbound, session_present=False)
    ends.fw.remote_ack(p.Puback(7))
    assert ends.local_out == []  # identifier 7 may name another publication now
