"""The pub/sub service end to end in one process: MQTT clients on the real broker core, psc
commands put through the real queue manager, the service as the broker starts it (issue 4:
the seed's scenarios; pubsub.md items 16, 21-25, 35, 38, 44, 45)."""

from __future__ import annotations

import asyncio
import datetime
import json
import time
import xml.etree.ElementTree as ET

from relaymq.pubsub import psc
from relaymq.pubsub import reasons as r
from relaymq.pubsub.topics import topic_matches

from stack import STREAM, Stack, run, topic_of


def test_scenario_stock_prices_subscription_points(tmp_path):
    """pubsub.md item 16; seed 003 l.1935-1962: dollar prices at the default point, pound
    prices at "Pounds"; each subscriber gets the currency of the point it chose; MQTT
    subscribers are at the default point; an MQTT publication reaches a psc subscriber."""
    async def scenario():
        stack = await Stack(tmp_path, {"input_queues": [STREAM, "STOCK.POUNDS:Pounds"]}).start()
        try:
            mqtt = stack.mqtt("watcher")
            mqtt.subscribe("Stock/#")
            assert await stack.command("RegSub", Topic="Stock/IBM", QName="DOLLARS") == ("ok", [])
            assert await stack.command("RegSub", Topic="Stock/IBM", QName="POUNDS", SubPoint="Pounds") == ("ok", [])
            assert await stack.command("Publish", Topic="Stock/IBM", body=b"100") == ("ok", [])
            assert await stack.command("Publish", Topic="Stock/IBM", body=b"80", queue="STOCK.POUNDS") == ("ok", [])
            (dollars,) = await stack.messages("DOLLARS", 1)
            (pounds,) = await stack.messages("POUNDS", 1)
            assert (dollars.mq.body, pounds.mq.body) == (b"100", b"80")
            assert pounds.mq.first_rfh2().get("psc.SubPoint") == "Pounds"
            assert [m.payload for m in mqtt.publishes()] == [b"100"]
            seller = stack.mqtt("seller")
            seller.publish("Stock/IBM", b"101", qos=1, properties={"user_property": [("exchange", "NYSE")]})
            (from_mqtt,) = await stack.messages("DOLLARS", 1)
            assert from_mqtt.mq.body == b"101" and from_mqtt.mq.md.Persistence == 1
            assert from_mqtt.mq.first_rfh2().get("usr.exchange") == "NYSE"
            assert topic_of(from_mqtt) == "Stock/IBM"
        finally:
            await stack.stop()
    run(scenario())


def test_scenario_soccer_results(tmp_path):
    """pubsub.md items 21-25 and 28; seed 003 l.5839-6765 (the Sport/Soccer examples):
    retained latest scores, a PubOnReqOnly subscriber with CorrelAsId asking for an update,
    Delete Publication, and the usr folder reaching MQTT 5 subscribers as user properties."""
    score = "Sport/Soccer/State/LatestScore/Team1 Team2"
    async def scenario():
        stack = await Stack(tmp_path).start()
        try:
            fan = stack.mqtt("fan")
            fan.subscribe("Sport/Soccer/#")
            assert await stack.command("Publish", Topic="Sport/Soccer/Event/MatchStarted") == ("ok", [])
            assert await stack.command("Publish", Topic=score, PubOpt="RetainPub", body=b"0-0",
                                       usr={"minute": "1"}) == ("ok", [])
            assert await stack.command("Publish", Topic=score, PubOpt="RetainPub", body=b"1-0",
                                       usr={"minute": "23"}) == ("ok", [])
            live = fan.publishes()
            assert [m.topic for m in live] == ["Sport/Soccer/Event/MatchStarted", score, score]
            assert live[-1].properties.get("user_property") == [("minute", "23")]
            assert await stack.command("RegSub", Topic="Sport/Soccer/State/LatestScore/#", QName="SCORES",
                                       RegOpt=["PubOnReqOnly", "CorrelAsId"], correl_id=b"fan-7") == ("ok", [])
            assert await stack.command("RegSub", Topic="Sport/Soccer/State/LatestScore/#", QName="TICKER",
                                       RegOpt="InformIfRet") == ("ok", [])
            (first,) = await stack.messages("TICKER", 1)
            assert first.mq.body == b"1-0" and first.mq.first_rfh2().get("psc.PubOpt") == "IsRetainedPub"
            await stack.settle()
            assert await stack.aio.get("SCORES") is None  # PubOnReqOnly: nothing until asked
            assert await stack.command("ReqUpdate", Topic="Sport/Soccer/State/LatestScore/#", QName="SCORES",
                                       RegOpt="CorrelAsId", correl_id=b"fan-7") == ("ok", [])
            (update,) = await stack.messages("SCORES", 1)
            assert update.mq.body == b"1-0" and update.mq.md.CorrelId == b"fan-7".ljust(24, b"\0")
            late = stack.mqtt("late")
            late.subscribe("Sport/Soccer/State/#")
            assert [(m.payload, m.retain) for m in late.publishes()] == [(b"1-0", True)]
            assert await stack.command("DeletePub", Topic=score, DelOpt="Local") == ("ok", [])
            assert await stack.command("ReqUpdate", Topic="Sport/Soccer/State/LatestScore/#", QName="SCORES",
                                       RegOpt="CorrelAsId", correl_id=b"fan-7") == ("error", [r.NO_RETAINED_MSG])
            assert await stack.command("DeregSub", Topic="Sport/Soccer/State/LatestScore/#", QName="SCORES",
                                       RegOpt="CorrelAsId", correl_id=b"fan-7") == ("ok", [])
        finally:
            await stack.stop()
    run(scenario())


STREAM_ACL = {
    "topic_security": True,
    "groups": {"PDefault": ["pd"], "SDefault": ["sd"], "PStreamX": ["px"], "SStreamX": ["sx"]},
    "acl": [
        {"topic": "", "principal": "PublicGroup", "publish": "deny", "subscribe": "deny", "persistent": "deny"},
        {"topic": "", "principal": "PDefault", "publish": "allow"},
        {"topic": "", "principal": "SDefault", "subscribe": "allow"},
        {"topic": "$SYS/STREAM/", "principal": "PDefault", "publish": "deny"},
        {"topic": "$SYS/STREAM/", "principal": "SDefault", "subscribe": "deny"},
        {"topic": "$SYS/STREAM/StreamX/", "principal": "PStreamX", "publish": "allow"},
        {"topic": "$SYS/STREAM/StreamX/", "principal": "SStreamX", "subscribe": "allow"},
    ],
}


def test_scenario_stream_acls(tmp_path):
    """pubsub.md item 38; seed 003 l.2422-2486: the stream ACL scenario configured in
    [pubsub], for psc users and MQTT users alike."""
    x_topic = "$SYS/STREAM/StreamX/News"
    async def scenario():
        stack = await Stack(tmp_path, STREAM_ACL).start()
        try:
            assert await stack.command("RegSub", Topic=x_topic, QName="SX.Q", user_id="sx") == ("ok", [])
            assert await stack.command("RegSub", Topic=x_topic, QName="SD.Q", user_id="sd") == ("error", [r.NOT_AUTHORIZED])
            assert await stack.command("Publish", Topic=x_topic, body=b"a", user_id="pd") == ("error", [r.NOT_AUTHORIZED])
            assert await stack.command("Publish", Topic=[x_topic, "News"], body=b"b", user_id="px") == \
                ("warning", [r.NOT_AUTHORIZED])
            (got,) = await stack.messages("SX.Q", 1)
            assert got.mq.body == b"b"
            reader = stack.mqtt("reader", username="sd")
            reader.subscribe("#")
            writer = stack.mqtt("writer", username="pd")
            writer.publish("News", b"c")
            writer.publish(x_topic, b"d")  # refused: PDefault is denied on $SYS/STREAM/
            assert [m.payload for m in reader.publishes()] == [b"c"]
            (nothing_more,) = [await stack.aio.get("SX.Q")]
            assert nothing_more is None
        finally:
            await stack.stop()
    run(scenario())


def test_item_23_retained_psc_publication_keeps_its_psc_attributes_at_the_default_point(tmp_path):
    """pubsub.md items 21-23, 28; seed 5995-6019, 5930-5946: a psc publication retained at the
    default point is kept in the broker's MQTT store, and its PubTime, SeqNum and Priority (and
    typed usr) still reach a later subscriber (IsRetainedPub with InformIfRet), also after a
    restart; once an MQTT client replaces the retained message they no longer apply."""
    from relaymq.pubsub import psc

    async def publish(stack, **params):
        message = psc.command_message("Publish", reply_to="REPLY.Q", persistence=1, **params)
        message.mq.md.Priority = 7
        stack.ensure_queue("REPLY.Q")
        await stack.aio.put(STREAM, message)
        assert psc.reply_reasons(await stack.aio.get("REPLY.Q", wait=10.0)) == ("ok", [])

    def psc_of(message):
        return {c.name: c.value for c in message.mq.first_rfh2().folder("psc").children}

    async def scenario():
        first = await Stack(tmp_path, store="sqlite").start()
        await publish(first, Topic="Sport/Score", PubOpt="RetainPub", PubTime="2026112312000000", SeqNum="42",
                      body=b"2-1")
        assert await first.command("RegSub", Topic="Sport/#", QName="FAN", RegOpt="InformIfRet") == ("ok", [])
        (copy,) = await first.messages("FAN", 1)
        assert psc_of(copy) == {"Command": "Publish", "Topic": "Sport/Score", "PubOpt": "IsRetainedPub",
                                "PubTime": "2026112312000000", "SeqNum": "42"}
        assert (copy.mq.md.Priority, copy.mq.md.Persistence, copy.mq.body) == (7, 1, b"2-1")
        await first.stop()
        second = await Stack(tmp_path, store="sqlite").start()  # a restart on the same database
        try:
            assert await second.command("RegSub", Topic="Sport/Score", QName="LATE", RegOpt="PubOnReqOnly") == ("ok", [])
            assert await second.command("ReqUpdate", Topic="Sport/Score", QName="LATE") == ("ok", [])
            (update,) = await second.messages("LATE", 1)
            assert (psc_of(update)["PubTime"], psc_of(update)["SeqNum"], update.mq.md.Priority) == \
                ("2026112312000000", "42", 7)
            second.mqtt("scorer").publish("Sport/Score", b"3-1", qos=1, retain=True)
            assert await second.command("ReqUpdate", Topic="Sport/Score", QName="LATE") == ("ok", [])
            (newer,) = await second.messages("LATE", 1)
            assert newer.mq.body == b"3-1" and "PubTime" not in psc_of(newer) and newer.mq.md.Priority == 0
        finally:
            await second.stop()
    run(scenario())


def test_item_22_subscriptions_and_retained_survive_restart(tmp_path):
    """pubsub.md items 19 and 22; seed 003 l.2618-2622, 2789-2793: subscriptions stay until
    removed and retained publications (of a named point here) are kept across a restart."""
    async def scenario():
        settings = {"input_queues": [STREAM, "P.IN:Point"]}
        first = await Stack(tmp_path, settings, store="sqlite").start()
        assert await first.command("RegSub", Topic="T", QName="SUBQ") == ("ok", [])
        assert await first.command("Publish", Topic="T", body=b"kept", PubOpt="RetainPub", queue="P.IN") == ("ok", [])
        await first.stop()
        second = await Stack(tmp_path, settings, store="sqlite").start()  # a restart on the same database
        try:
            assert await second.command("Publish", Topic="T", body=b"after") == ("ok", [])
            (after,) = await second.messages("SUBQ", 1)
            assert after.mq.body == b"after"
            assert await second.command("RegSub", Topic="T", QName="POINTQ", SubPoint="Point") == ("ok", [])
            (kept,) = await second.messages("POINTQ", 1)
            assert kept.mq.body == b"kept"
        finally:
            await second.stop()
    run(scenario())


async def _collect(client, topic: str, count: int = 1, limit: float = 10.0) -> list:
    """The publications on ``topic`` that ``client`` receives within ``limit`` seconds (stops
    once ``count`` arrived)."""
    got = []
    for _ in range(int(limit / 0.02)):
        got += [m for m in client.publishes() if topic_matches(topic, m.topic)]
        if len(got) >= count:
            break
        await asyncio.sleep(0.02)
    return got


def test_item_44_statistics_report(tmp_path):
    """pubsub.md item 44; seed 003 l.2871-2932, 3199-3370: with statsInterval > 0 an XML report
    on $SYS/Broker/<broker>/ExecutionGroup/<eg>/Statistics: the Broker section (name, execution
    group, client, neighbour and subscription counts - every subscription: MQTT, the default
    point's and a named point's queue subscriptions - and a time stamp), the Client section
    (totals, and per connected client its queue and what its connection moved; nothing it cannot count is
    reported) and an empty Neighbor section."""
    topic = "$SYS/Broker/B1/ExecutionGroup/eg1/Statistics"
    settings = {"broker_name": "B1", "execution_group": "eg1", "stats_interval_ms": 30,
                "input_queues": [STREAM, "GOLD.IN:Gold"]}

    async def scenario():
        stack = await Stack(tmp_path, settings).start()
        try:
            watcher = stack.mqtt("watcher")
            watcher.subscribe(topic)
            sensor = stack.mqtt("sensor", username="alice")
            sensor.subscribe("plant/#")
            sensor.subscribe("$share/g/plant/+/t", packet_id=2)
            assert await stack.command("RegSub", Topic="plant/#", QName="SUBQ") == ("ok", [])
            assert await stack.command("RegSub", Topic="gold/#", QName="GOLDQ", SubPoint="Gold") == ("ok", [])
            for n in range(3):
                sensor.publish(f"plant/{n}/t", b"21.5")
            watcher.publishes()  # forget reports made before all of this happened
            before = time.time()
            (message, *_) = await _collect(watcher, topic)
            report = ET.fromstring(message.payload)
            assert message.properties.get("content_type") == "application/xml"
            assert [child.tag for child in report] == ["Broker", "Client", "Neighbor"]
            broker = report.find("Broker").attrib
            assert {k: broker[k] for k in ("Name", "ExecutionGroup", "ClientCount", "NeighborCount",
                                           "SubscriptionCount")} == {
                "Name": "B1", "ExecutionGroup": "eg1", "ClientCount": "2", "NeighborCount": "0",
                "SubscriptionCount": "5"}  # watcher 1 + sensor 2 + queue subscriptions 2
            stamp = datetime.datetime.strptime(broker["TimeStamp"], "%Y-%m-%dT%H:%M:%S.%fZ")
            assert abs(stamp.replace(tzinfo=datetime.UTC).timestamp() - before) < 5
            client = report.find("Client")
            assert int(client.get("MessagesReceived")) >= 3 and int(client.get("MessagesSent")) >= 3
            assert int(client.get("BytesReceived")) > 0 and int(client.get("BytesSent")) > 0
            connections = {c.get("ClientId"): c.attrib for c in client.findall("Connection")}
            assert sorted(connections) == ["sensor", "watcher"]
            assert connections["sensor"]["UserId"] == "alice"
            assert set(connections["sensor"]) == {"ClientId", "UserId", "BytesQueued", "MessagesQueued",
                                                  "MessagesDropped", "BytesDropped", "DisconnectMessagesDropped",
                                                  "DisconnectBytesDropped", "MessagesSent", "BytesSent",
                                                  "BytesCutThrough", "MessagesReceived", "BytesReceived"}
            # per connection, what it moved: the sensor published its 3 and got them back
            # (plant/# and the shared subscription); the watcher published nothing
            sensor_counts = connections["sensor"]
            assert sensor_counts["MessagesReceived"] == "3"
            assert int(sensor_counts["MessagesSent"]) >= 3
            assert int(sensor_counts["BytesReceived"]) >= 3 * len(b"plant/0/t21.5")
            assert int(sensor_counts["BytesSent"]) >= 3 * len(b"plant/0/t21.5")
            assert connections["watcher"]["MessagesReceived"] == "0"
            assert int(client.get("MessagesReceived")) >= int(sensor_counts["MessagesReceived"])
            assert report.find("Neighbor").attrib == {} and list(report.find("Neighbor")) == []
        finally:
            await stack.stop()
    run(scenario())


def test_item_45_queue_subscription_events(tmp_path):
    """pubsub.md item 45 (seed 4523-4556): queue subscriptions added and removed are announced
    on $SYS/Broker/<broker>/Subscriptions/Added and .../Removed with the removal's cause."""
    async def scenario():
        stack = await Stack(tmp_path, {"broker_name": "B1"}).start()
        try:
            watcher = stack.mqtt("watcher")
            watcher.subscribe("$SYS/Broker/B1/Subscriptions/+")
            assert await stack.command("RegSub", Topic="T", QName="SUBQ", SubName="feed") == ("ok", [])
            assert await stack.command("DeregSub", Topic="T", QName="SUBQ") == ("ok", [])
            events = await _collect(watcher, "$SYS/Broker/B1/Subscriptions/+", 3)
            added, removed = [m for m in events if "queue" in json.loads(m.payload)]  # not the watcher's own
            assert (added.topic, removed.topic) == ("$SYS/Broker/B1/Subscriptions/Added",
                                                    "$SYS/Broker/B1/Subscriptions/Removed")
            assert json.loads(added.payload) == {"topic": "T", "subPoint": "", "filter": "", "qmgr": "QM1",
                                                 "queue": "SUBQ", "user": "", "subName": "feed"}
            assert json.loads(removed.payload)["cause"] == "deregistered"
        finally:
            await stack.stop()
    run(scenario())


def test_item_45_mqtt_subscribe_and_unsubscribe_events(tmp_path):
    """pubsub.md item 45 (seed 4523-4556) for MQTT clients: SUBSCRIBE (with its content filter
    and QoS), UNSUBSCRIBE (cause unsubscribed) and the end of a clean session (cause
    session_ended) raise the same Added/Removed events as queue subscriptions; re-subscribing
    to the same filter is no change (with a new filter: replaced); shared subscriptions are
    announced per group."""
    from relaymq.mqtt import packets as p

    async def scenario():
        stack = await Stack(tmp_path, {"broker_name": "B1"}).start()
        try:
            watcher = stack.mqtt("watcher")
            watcher.subscribe("$SYS/Broker/B1/Subscriptions/+")
            (own,) = await _collect(watcher, "$SYS/Broker/B1/Subscriptions/Added")
            assert json.loads(own.payload)["clientId"] == "watcher"
            client = stack.mqtt("sensor", username="alice")
            client.send(p.Subscribe(1, [p.Subscription("plant/#", 1)],
                                    {"user_property": [("relaymq-filter", "usr.level > 5")]}))
            client.send(p.Subscribe(2, [p.Subscription("plant/#", 1)],
                                    {"user_property": [("relaymq-filter", "usr.level > 5")]}))  # the same again
            client.subscribe("plant/#", 1, packet_id=3)  # a new filter: replaced
            client.subscribe("$share/g/plant/+/t", packet_id=4)
            client.subscribe("other/#", packet_id=5)
            client.send(p.Unsubscribe(6, ["plant/#"]))
            client.send(p.Disconnect())
            events = await _collect(watcher, "$SYS/Broker/B1/Subscriptions/+", 8)
            sensor = {"clientId": "sensor", "user": "alice", "subPoint": ""}
            assert [(m.topic.rsplit("/", 1)[1], json.loads(m.payload)) for m in events] == [
                ("Added", {"topic": "plant/#", "filter": "usr.level > 5", "qos": 1, **sensor}),
                ("Removed", {"topic": "plant/#", "filter": "usr.level > 5", "qos": 1, "cause": "replaced", **sensor}),
                ("Added", {"topic": "plant/#", "filter": "", "qos": 1, **sensor}),
                ("Added", {"topic": "plant/+/t", "subPoint": "", "filter": "", "shareGroup": "g"}),
                ("Added", {"topic": "other/#", "filter": "", "qos": 0, **sensor}),
                ("Removed", {"topic": "plant/#", "filter": "", "qos": 1, "cause": "unsubscribed", **sensor}),
                ("Removed", {"topic": "plant/+/t", "subPoint": "", "filter": "", "shareGroup": "g",
                             "cause": "last_member_left"}),
                ("Removed", {"topic": "other/#", "filter": "", "qos": 0, "cause": "session_ended", **sensor}),
            ]
            assert await _collect(watcher, "$SYS/Broker/B1/Subscriptions/+", 1, limit=0.3) == []
        finally:
            await stack.stop()
    run(scenario())


def test_statistics_off_by_default(tmp_path):
    """pubsub.md item 44; seed 003 l.2885, 2907-2909: statsInterval 0 (the default) publishes
    no report: a subscriber to every broker's statistics topic gets nothing in half a second,
    when a 30 ms interval (test_item_44_statistics_report) gives one at once."""
    async def scenario():
        stack = await Stack(tmp_path).start()
        try:
            watcher = stack.mqtt("watcher")
            watcher.subscribe("$SYS/Broker/+/ExecutionGroup/+/Statistics")
            watcher.publishes()
            await asyncio.sleep(0.5)
            assert watcher.publishes() == []
        finally:
            await stack.stop()
    run(scenario())


def test_item_27_non_command_on_the_control_queue_goes_to_the_dead_letter_queue(tmp_path):
    """pubsub.md items 27, 36 (seed 6940-6948): a message with no psc put to the control queue
    by mistake is answered 2336 on its ReplyToQ and kept on the real queue manager's
    SYSTEM.DEAD.LETTER.QUEUE behind an MQDLH naming the reason and the queue."""
    from relaymq.message.headers import MQMessage
    from relaymq.message.message import Message
    from relaymq.message.mqdlh import MQDLH
    from relaymq.message.mqmd import MQMD
    from relaymq.pubsub import psc

    async def scenario():
        stack = await Stack(tmp_path).start()
        try:
            stack.ensure_queue("APP.REPLY")
            plain = Message(MQMessage(md=MQMD(MsgType=1, ReplyToQ="APP.REPLY", Format="MQSTR"), body=b"not a command"))
            await stack.aio.put("SYSTEM.BROKER.CONTROL.QUEUE", plain)
            reply = await stack.aio.get("APP.REPLY", wait=10.0)
            assert psc.reply_reasons(reply) == ("error", [r.RFH_COMMAND_ERROR])
            dead = await stack.aio.get("SYSTEM.DEAD.LETTER.QUEUE", wait=10.0)
            (dlh,) = dead.mq.headers
            assert isinstance(dlh, MQDLH)
            assert (dlh.Reason, dlh.DestQName, dlh.DestQMgrName) == (r.RFH_COMMAND_ERROR, "SYSTEM.BROKER.CONTROL.QUEUE", "QM1")
            assert dead.mq.body == b"not a command"
        finally:
            await stack.stop()
    run(scenario())


def test_perform_returns_when_the_default_point_copies_are_on_the_queues(tmp_path):
    """README decision 4 for publishers inside the broker (a flow's Publication node):
    ``PubSubService.perform`` hands a default-point publication to the MQTT broker, and the
    copies the tap makes for psc subscribers (pubsub.md item 35) are on their queues when it
    returns - no outbox in between. A subscriber queue that refuses its copy (max depth,
    everyplace.md item 7) does not stop the others; perform then raises PutFailed."""
    from relaymq.pubsub.model import Publication
    from relaymq.pubsub.service import PutFailed

    async def scenario():
        stack = await Stack(tmp_path).start()
        try:
            mqtt = stack.mqtt("watcher")
            mqtt.subscribe("meter/#")
            assert await stack.command("RegSub", Topic="meter/#", QName="SUBS") == ("ok", [])
            stack.qm.define_queue("FULL", max_depth=1)
            assert await stack.command("RegSub", Topic="meter/#", QName="FULL") == ("ok", [])
            service = stack.service
            now = stack.broker.clock.wall()
            await service.perform(service.engine.publish(Publication("meter/1", b"first", usr=[("unit", "1")]), now))
            assert stack.qm.depth("SUBS") == 1 and stack.qm.depth("FULL") == 1  # at once, not later
            assert [m.payload for m in mqtt.publishes()] == [b"first"]
            try:
                await service.perform(service.engine.publish(Publication("meter/2", b"second"), now))
            except PutFailed as error:
                assert "1 of 2" in str(error)
            else:
                raise AssertionError("a refused put was not reported")
            assert stack.qm.depth("SUBS") == 2 and stack.qm.depth("FULL") == 1
            first, second = await stack.messages("SUBS", 2)
            assert (first.mq.body, second.mq.body) == (b"first", b"second")
            assert first.mq.first_rfh2().get("usr.unit") == "1"
        finally:
            await stack.stop()
    run(scenario())


def test_item_35_mqtt_user_properties_the_usr_folder_cannot_hold(tmp_path):
    """pubsub.md item 35 (an MQTT publication reaches a psc subscriber with its user
    properties in usr) with what MQTT 5 allows and usr does not (seed 003 l.5266-5281: each
    name once, XML names): a repeated name keeps its first value, a name with a space or a
    colon is left out - the subscriber's copy is a readable MQRFH2 (it was not: decoding it
    failed), and the MQTT subscriber still gets every user property."""
    from relaymq.message.message import Message

    async def scenario():
        stack = await Stack(tmp_path).start()
        try:
            watcher = stack.mqtt("watcher")
            watcher.subscribe("meter/#")
            assert await stack.command("RegSub", Topic="meter/#", QName="SUBS") == ("ok", [])
            props = [("unit", "7"), ("unit", "8"), ("a b", "x"), ("ns:tag", "y"), ("trace-id", "t-1")]
            stack.mqtt("meter").publish("meter/7", b"r", qos=1, properties={"user_property": props})
            (copy,) = await stack.messages("SUBS", 1)
            again = Message.from_bytes(copy.to_bytes())  # what a reader of the queue decodes
            usr = again.mq.first_rfh2().folder("usr")
            assert [(c.name, c.value) for c in usr.children] == [("unit", "7"), ("trace-id", "t-1")]
            (live,) = watcher.publishes()
            assert live.properties["user_property"] == props
        finally:
            await stack.stop()
    run(scenario())


def test_queued_commands_are_taken_in_a_run_that_shares_the_wait_for_its_commit(tmp_path):
    """Issue 14 ("psc commands and their effects are one unit of work") with the throughput of
    bench_pubsub.py's psc-queue row: the service's drain takes the commands waiting on a queue
    one after the other, each in its own unit of work and in order, and waits for their commit
    once per run, not once per command (it waited 20 times for these 20)."""
    async def scenario():
        stack = await Stack(tmp_path, store="sqlite").start()
        try:
            service = stack.service
            assert await stack.command("RegSub", Topic="Run/#", QName="RUN.Q") == ("ok", [])
            waits = 0
            durable = service.durable

            async def counted(*args, **kwargs):
                nonlocal waits
                waits += 1
                await durable(*args, **kwargs)

            service.durable = counted
            with service.unit():  # 20 commands arrive together (one application's unit of work)
                for n in range(20):
                    stack.qm.put(STREAM, psc.command_message("Publish", Topic=f"Run/{n}", body=b"%d" % n,
                                                             reply_to="REPLY.Q"), wait=False)
            replies = [await stack.aio.get("REPLY.Q", wait=10.0) for _ in range(20)]
            service.durable = durable
            assert all(reply is not None and psc.reply_reasons(reply) == ("ok", []) for reply in replies)
            assert [m.mq.body for m in await stack.messages("RUN.Q", 20)] == [b"%d" % n for n in range(20)]
            assert stack.qm.depth(STREAM) == 0
            assert 1 <= waits < 20, waits  # a run ends early only after DRAIN_SLICE seconds of work
        finally:
            await stack.stop()
    run(scenario())
