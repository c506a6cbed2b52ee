"""The seed's publish/subscribe scenarios end to end, in a real ``relaymq serve`` process with
real clients, as a new user would try them (issue 4 "Tests" and "Done when" 1): psc commands
over the REST interface and over the queue-manager channel protocol (an application's own
queue manager connected to the broker's QM1), MQTT 5 clients (paho) on the same topics.

* the stock-price subscription points (seed 003 l.1935-1962);
* the soccer results: retained latest scores, Request Update, Delete Publication (the psc
  examples of l.5839-6765);
* the stream ACL scenario (l.2405-2486) with users authenticated by a password file.
"""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from harness import BrokerProcess, free_port
from interop.clients import paho_client
from relaymq.cli.main import main
from relaymq.message.headers import MQMessage
from relaymq.message.message import Message
from relaymq.message.mqmd import MQMD
from relaymq.message.mqrfh import MQRFH
from relaymq.pubsub import reasons as r

from psc_process import CONTROL, STREAM, Device, Rest, start, wait_for


def _received(client, count: int, timeout: float = 10.0):
    return client.inbox.wait_for(count, timeout)


def test_scenario_stock_prices_at_two_subscription_points(tmp_path):
    """pubsub.md item 16; seed 003 l.1935-1962: prices in dollars are published at the default
    subscription point (input queue PRICES.DOLLARS), the same prices converted to pounds at the
    "Pounds" point (PRICES.POUNDS); a subscriber chooses its currency by choosing the point (a
    subscription to "Pounds" made before any publisher used it is accepted and served once one
    does). MQTT clients are at the default point, as publishers and as subscribers. Retained
    prices are kept per point."""
    config = {"pubsub": {"input_queues": [STREAM, "PRICES.DOLLARS", "PRICES.POUNDS:Pounds"]}}
    broker = start(tmp_path, config, queues=("APP.REPLY", "DOLLAR.SUBS", "POUND.SUBS", "POUND.LATE", "DOLLAR.LATE"))
    try:
        rest = Rest(broker)
        trader = paho_client(broker, "v5")
        trader.subscribe("Stock/#", 1)
        assert rest.command(CONTROL, "<Command>RegSub</Command><Topic>Stock/#</Topic><QName>DOLLAR.SUBS</QName>") == ("ok", [])
        assert rest.command(CONTROL, "<Command>RegSub</Command><Topic>Stock/#</Topic><SubPoint>Pounds</SubPoint>"
                                     "<QName>POUND.SUBS</QName>") == ("ok", [])
        assert rest.command("PRICES.DOLLARS", "<Command>Publish</Command><Topic>Stock/IBM</Topic>"
                                              "<PubOpt>RetainPub</PubOpt>", body="125.50") == ("ok", [])
        assert rest.command("PRICES.POUNDS", "<Command>Publish</Command><Topic>Stock/IBM</Topic>"
                                             "<PubOpt>RetainPub</PubOpt>", body="98.75") == ("ok", [])
        assert rest.get("DOLLAR.SUBS")[2] == b"125.50"
        assert rest.get("POUND.SUBS")[2] == b"98.75"
        (live,) = _received(trader, 1)
        assert (live.topic, live.payload) == ("Stock/IBM", b"125.50")  # the dollar price only

        exchange = paho_client(broker, "v5")
        exchange.publish("Stock/HAL", b"42.00", 1)  # an MQTT publisher: the default point
        assert rest.get("DOLLAR.SUBS")[2] == b"42.00"
        assert [m.payload for m in _received(trader, 2)] == [b"125.50", b"42.00"]
        assert rest.get("POUND.SUBS", wait_ms=300)[0] == 204

        # retained publications per (topic, point): a late subscriber gets its point's price
        assert rest.command(CONTROL, "<Command>RegSub</Command><Topic>Stock/IBM</Topic><SubPoint>Pounds</SubPoint>"
                                     "<QName>POUND.LATE</QName>") == ("ok", [])
        assert rest.get("POUND.LATE")[2] == b"98.75"
        assert rest.command(CONTROL, "<Command>RegSub</Command><Topic>Stock/IBM</Topic>"
                                     "<QName>DOLLAR.LATE</QName>") == ("ok", [])
        assert rest.get("DOLLAR.LATE")[2] == b"125.50"
        late_trader = paho_client(broker, "v5")
        late_trader.subscribe("Stock/IBM", 1)
        (retained,) = _received(late_trader, 1)
        assert (retained.payload, retained.retain) == (b"125.50", True)
        for client in (trader, exchange, late_trader):
            client.disconnect()
    finally:
        broker.cleanup()


def test_scenario_soccer_results_over_the_channel_protocol(tmp_path):
    """pubsub.md items 21-25, 28, 35; seed 003 l.5839-6765 (the Sport/Soccer examples), driven
    from an application queue manager over the channel protocol: the match simulator publishes
    the match start and retained latest scores (with PubTime, SeqNum and a usr folder); the
    results service registers PubOnReqOnly with CorrelAsId, gets nothing live, asks with
    Request Update and gets the latest score with its CorrelId; Delete Publication removes it
    (the next Request Update is 3077). An MQTT 5 fan and a REST ticker (InformIfRet) follow the
    same topics."""
    score = "Sport/Soccer/State/LatestScore/Team1 Team2"

    async def scenario():
        channel_port = free_port()
        device = await Device("SPORTS", channel_port, queues=("RESULTS",)).start()
        broker = BrokerProcess(config={"qmgr": {"channel_port": channel_port, "channel_allow_anonymous": True,
                                                "connection": [device.broker_connection()]},
                                       "http": {"port": free_port()}}, workdir=tmp_path)
        for queue in ("APP.REPLY", "TICKER"):
            assert main(["queue", "define", queue, "--data-dir", str(broker.data_dir)]) == 0
        await asyncio.to_thread(broker.start)
        try:
            fan = await asyncio.to_thread(paho_client, broker, "v5")
            await asyncio.to_thread(fan.subscribe, "Sport/Soccer/#", 1)
            results = dict(QMgrName="SPORTS", QName="RESULTS", correl_id=b"results-service")
            assert await device.command(CONTROL, "RegSub", Topic="Sport/Soccer/State/LatestScore/#",
                                        RegOpt=["PubOnReqOnly", "CorrelAsId"], **results) == ("ok", [])
            assert await device.command(STREAM, "Publish", Topic="Sport/Soccer/Event/MatchStarted",
                                        body=b"Team1 v Team2") == ("ok", [])
            for seq, (goals, minute) in enumerate((("0-0", "1"), ("1-0", "23")), start=1):
                assert await device.command(STREAM, "Publish", Topic=score, PubOpt="RetainPub", body=goals.encode(),
                                            PubTime=f"202611232{seq}000000", SeqNum=str(seq),
                                            usr={"minute": minute}) == ("ok", [])
            live = await asyncio.to_thread(_received, fan, 3)
            assert [(m.topic, m.payload) for m in live] == [
                ("Sport/Soccer/Event/MatchStarted", b"Team1 v Team2"), (score, b"0-0"), (score, b"1-0")]

            rest = Rest(broker)
            ticker = await asyncio.to_thread(rest.command, CONTROL, "<Command>RegSub</Command>"
                                             "<Topic>Sport/Soccer/State/LatestScore/#</Topic><QName>TICKER</QName>"
                                             "<RegOpt>InformIfRet</RegOpt>")
            assert ticker == ("ok", [])
            status, headers, body = await asyncio.to_thread(rest.get, "TICKER")
            assert (status, body) == (200, b"1-0") and "minute" in headers.get("ibm-mq-usr", "")

            assert await device.get("RESULTS", wait=0.5) is None  # PubOnReqOnly: nothing until asked
            assert await device.command(CONTROL, "ReqUpdate", Topic="Sport/Soccer/State/LatestScore/#",
                                        RegOpt="CorrelAsId", **results) == ("ok", [])
            update = await device.get("RESULTS")
            assert update.mq.body == b"1-0"
            assert update.mq.md.CorrelId == b"results-service".ljust(24, b"\0")
            psc = update.mq.first_rfh2()
            assert (psc.get("psc.Topic"), psc.get("psc.PubTime"), psc.get("psc.SeqNum"), psc.get("usr.minute")) == \
                (score, "2026112322000000", "2", "23")

            assert await device.command(STREAM, "DeletePub", Topic=score, DelOpt="Local") == ("ok", [])
            assert await device.command(CONTROL, "ReqUpdate", Topic="Sport/Soccer/State/LatestScore/#",
                                        RegOpt="CorrelAsId", **results) == ("error", [r.NO_RETAINED_MSG])
            latecomer = await asyncio.to_thread(paho_client, broker, "v5")
            await asyncio.to_thread(latecomer.subscribe, "Sport/Soccer/State/#", 1)
            await asyncio.sleep(0.3)
            assert latecomer.inbox.messages == []  # the retained score is gone for MQTT too
            assert await device.command(CONTROL, "DeregSub", Topic="Sport/Soccer/State/LatestScore/#",
                                        RegOpt="CorrelAsId", **results) == ("ok", [])
            for client in (fan, latecomer):
                await asyncio.to_thread(client.disconnect)
        finally:
            await asyncio.to_thread(broker.cleanup)
            await device.stop()

    asyncio.run(asyncio.wait_for(scenario(), 120))


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
USERS = ("pd", "sd", "px", "sx")


def _password_file(tmp_path):
    path = tmp_path / "passwords"
    for n, user in enumerate(USERS):
        assert main(["passwd", *(["-c"] if n == 0 else []), "-b", "--cost", "4", str(path), user, f"{user}-pw"]) == 0
    return str(path)


def test_scenario_stream_acls_with_authenticated_users(tmp_path):
    """pubsub.md items 32, 37, 38; seed 003 l.2405-2486: PublicGroup denied at the root;
    PDefault/SDefault publish/subscribe on the default stream and are denied $SYS/STREAM/;
    PStreamX/SStreamX on StreamX. MQTT clients log in with the password file; psc commands come
    over the channel protocol carrying the application's user in the MQMD (UserIdentifier), an
    MQRFH v1 publisher names its stream (MQPSStreamName)."""
    stream_x = "$SYS/STREAM/StreamX/Results"

    async def scenario():
        channel_port = free_port()
        device = await Device("APPS", channel_port, queues=("SX.Q", "SD.Q"), credentials=("APPS", "apps-pw")).start()
        # The device's queue manager authenticates to QM1 (issue 15 finding 1) as a channel peer
        # QM1 trusts to vouch for its users' MQMD.UserIdentifier ([qmgr] channel_trusted_context).
        peers = tmp_path / "channel-peers"
        assert main(["passwd", "-c", "-b", "--cost", "4", str(peers), "APPS", "apps-pw"]) == 0
        config = {"access": {"allow_anonymous": False, "password_file": _password_file(tmp_path)},
                  "pubsub": STREAM_ACL, "http": {"port": free_port()},
                  "qmgr": {"channel_port": channel_port, "channel_password_file": str(peers),
                           "channel_trusted_context": ["APPS"], "connection": [device.broker_connection()]}}
        broker = BrokerProcess(config=config, workdir=tmp_path)
        # ... and, the queue authorities being enforced (a password file), may put psc commands
        # and publications on the control and stream queues: as principal qmgr:APPS (docs/channels.md)
        assert main(["auth", "--file", str(broker.data_dir / "authorities.json"), "set", "-t", "queue",
                     "-n", "SYSTEM.BROKER.**", "-p", "qmgr:APPS", "+put"]) == 0
        await asyncio.to_thread(broker.start)

        def login(user):
            return paho_client(broker, "v5", username=user, password=f"{user}-pw")

        try:
            sx, sd, pd, px = [await asyncio.to_thread(login, u) for u in ("sx", "sd", "pd", "px")]
            assert await asyncio.to_thread(sx.subscribe, "$SYS/STREAM/StreamX/#", 1) == [1]
            assert await asyncio.to_thread(sd.subscribe, "$SYS/STREAM/StreamX/#", 1) == [0x87]  # (2): denied
            assert await asyncio.to_thread(sd.subscribe, "News/#", 1) == [1]
            assert await asyncio.to_thread(sx.subscribe, "News/#", 1) == [0x87]  # PublicGroup denied at (1)
            assert await asyncio.to_thread(pd.publish, "News/a", b"default stream", 1) == 0
            assert await asyncio.to_thread(pd.publish, stream_x, b"pd on X", 1) == 0x87  # (2) denies PDefault
            assert await asyncio.to_thread(px.publish, "News/b", b"px on default", 1) == 0x87
            assert [(m.topic, m.payload) for m in await asyncio.to_thread(_received, sd, 1)] == [("News/a", b"default stream")]

            # psc over the channel: the user is the command's MQMD UserIdentifier
            sub = dict(QMgrName="APPS", Topic="$SYS/STREAM/StreamX/#")
            assert await device.command(CONTROL, "RegSub", user="sx", QName="SX.Q", **sub) == ("ok", [])
            assert await device.command(CONTROL, "RegSub", user="sd", QName="SD.Q", **sub) == ("error", [r.NOT_AUTHORIZED])
            assert await device.command(STREAM, "Publish", user="pd", Topic=stream_x, body=b"no") == \
                ("error", [r.NOT_AUTHORIZED])
            assert await device.command(STREAM, "Publish", user="px", Topic=[stream_x, "News/c"], body=b"partial") == \
                ("warning", [r.NOT_AUTHORIZED])  # item 32: News/c refused, StreamX published
            delivered = await device.get("SX.Q")
            assert (delivered.mq.body, delivered.mq.first_rfh2().get("psc.Topic")) == (b"partial", stream_x)
            assert [(m.topic, m.payload) for m in await asyncio.to_thread(_received, sx, 1)] == [(stream_x, b"partial")]
            v1 = Message(MQMessage(md=MQMD(MsgType=1, ReplyToQ="APP.REPLY", ReplyToQMgr="APPS", UserIdentifier="px"),
                                   headers=[MQRFH(Format="MQSTR", name_values=[
                                       ("MQPSCommand", "Publish"), ("MQPSTopic", "Results"),
                                       ("MQPSStreamName", "StreamX")])], body=b"v1 on X"))
            assert await device.command(STREAM, "Publish", message=v1) == ("ok", [])
            assert (await device.get("SX.Q")).mq.body == b"v1 on X"
            assert await asyncio.to_thread(lambda: [m.payload for m in _received(sx, 2)][-1]) == b"v1 on X"
            assert await device.get("SD.Q", wait=0.3) is None
            for client in (sx, sd, pd, px):
                await asyncio.to_thread(client.disconnect)
        finally:
            await asyncio.to_thread(broker.cleanup)
            await device.stop()

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_scenario_stream_acls_mqtt_publisher_on_a_stream(tmp_path):
    """pubsub.md items 6, 38; seed 003 l.2405-2415, 3147-3157: streams are topics under
    $SYS/STREAM/<stream>/ governed by the ACLs, so an MQTT client of PStreamX publishes on
    StreamX and a subscriber of SStreamX receives it."""
    config = {"access": {"allow_anonymous": False, "password_file": _password_file(tmp_path)}, "pubsub": STREAM_ACL}
    broker = start(tmp_path, config)
    try:
        sx = paho_client(broker, "v5", username="sx", password="sx-pw")
        px = paho_client(broker, "v5", username="px", password="px-pw")
        assert sx.subscribe("$SYS/STREAM/StreamX/#", 1) == [1]
        assert px.publish("$SYS/STREAM/StreamX/Results", b"px on X", 1) == 0
        assert [(m.topic, m.payload) for m in _received(sx, 1)] == [("$SYS/STREAM/StreamX/Results", b"px on X")]
        sx.disconnect()
        px.disconnect()
    finally:
        broker.cleanup()


def test_scenario_stream_acls_over_rest_with_the_login_as_user(tmp_path):
    """pubsub.md item 38; seed 003 l.2405-2486 over the REST interface: the authenticated HTTP
    user is the psc command's user, so sx may subscribe on StreamX and sd may not."""
    # with a password file the users touch only the queues they are granted (issue 15)
    authorities = str(tmp_path / "authorities.json")
    grants = [("SYSTEM.BROKER.**", "+put"), ("APP.REPLY", "+get"), ("SX.Q", "+all"), ("SD.Q", "+all")]
    for user in ("sx", "sd", "px"):
        for profile, grant in grants:
            assert main(["auth", "--file", authorities, "set", "-t", "queue", "-n", profile, "-p", user, grant]) == 0
    config = {"access": {"allow_anonymous": False, "password_file": _password_file(tmp_path),
                         "authorities_file": authorities}, "pubsub": STREAM_ACL}
    broker = start(tmp_path, config, queues=("APP.REPLY", "SX.Q", "SD.Q"))
    try:
        regsub = "<Command>RegSub</Command><Topic>$SYS/STREAM/StreamX/#</Topic><QName>{}</QName>"
        assert Rest(broker, "sx", "sx-pw").command(CONTROL, regsub.format("SX.Q")) == ("ok", [])
        assert Rest(broker, "sd", "sd-pw").command(CONTROL, regsub.format("SD.Q")) == ("error", [r.NOT_AUTHORIZED])
        publish = "<Command>Publish</Command><Topic>$SYS/STREAM/StreamX/Results</Topic>"
        assert Rest(broker, "px", "px-pw").command(STREAM, publish, body="over REST") == ("ok", [])
        assert Rest(broker, "sx", "sx-pw").get("SX.Q")[2] == b"over REST"
    finally:
        broker.cleanup()


def test_mqtt_user_properties_reach_queue_subscribers_and_back(tmp_path):
    """Issue 4 "One engine for all clients": an MQTT 5 publication's user properties are the
    usr folder a REST (psc) subscriber's queue message carries; a psc Publish's usr folder
    reaches MQTT 5 subscribers as user properties."""
    broker = start(tmp_path, queues=("APP.REPLY", "APP.SUBS"))
    try:
        rest = Rest(broker)
        assert rest.command(CONTROL, "<Command>RegSub</Command><Topic>Plant/+/temp</Topic><QName>APP.SUBS</QName>"
                                     "<Filter>usr.unit = 'C' AND usr.reading > 60</Filter>") == ("ok", [])
        sensor = paho_client(broker, "v5")
        for reading in (b"55", b"71"):
            props = Properties(PacketTypes.PUBLISH)
            props.UserProperty = [("unit", "C"), ("reading", reading.decode())]
            sensor.client.publish("Plant/boiler/temp", reading, 1, properties=props).wait_for_publish(10)
        status, headers, body = rest.get("APP.SUBS")
        assert (status, body) == (200, b"71") and "unit" in headers.get("ibm-mq-usr", "")
        assert rest.get("APP.SUBS", wait_ms=300)[0] == 204  # 55 is not > 60
        got = []
        watcher = paho_client(broker, "v5")
        watcher.client.on_message = lambda client, userdata, message: got.append(message)
        watcher.subscribe("Plant/#", 1)
        assert rest.command(STREAM, "<Command>Publish</Command><Topic>Plant/press/temp</Topic>", body="88",
                            usr="unit;F;string") == ("ok", [])
        assert wait_for(lambda: got)
        assert got[0].topic == "Plant/press/temp" and got[0].payload == b"88"
        assert ("unit", "F") in got[0].properties.UserProperty
        sensor.disconnect()
        watcher.disconnect()
    finally:
        broker.cleanup()


def test_item_44_statistics_count_each_connection_through_a_broker_process(tmp_path):
    """pubsub.md item 44; seed 003 l.3199-3370: the Client section's Connection entries carry
    what each connection moved (messages and bytes sent and received), read by a paho client
    from the report the broker process publishes every statsInterval."""
    broker = start(tmp_path, {"pubsub": {"broker_name": "B1", "stats_interval_ms": 200}})
    try:
        sensor = paho_client(broker, "v5", "stats-sensor")
        sensor.subscribe("plant/#", 1)
        for n in range(3):
            sensor.publish(f"plant/{n}", b"21.5", 1)
        _received(sensor, 3)
        watcher = paho_client(broker, "v5", "stats-watcher")
        watcher.subscribe("$SYS/Broker/B1/ExecutionGroup/+/Statistics", 0)
        report = ET.fromstring(_received(watcher, 1)[-1].payload)
        counts = {c.get("ClientId"): c.attrib for c in report.find("Client").findall("Connection")}
        assert counts["stats-sensor"]["MessagesReceived"] == "3"
        assert counts["stats-sensor"]["MessagesSent"] == "3"
        assert int(counts["stats-sensor"]["BytesReceived"]) >= 3 * len(b"plant/021.5")
        assert int(counts["stats-sensor"]["BytesSent"]) >= 3 * len(b"plant/021.5")
        assert counts["stats-watcher"]["MessagesReceived"] == "0"
        sensor.disconnect()
        watcher.disconnect()
    finally:
        broker.cleanup()
