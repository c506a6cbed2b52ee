"""The pub/sub engine in a real ``relaymq serve`` process, as a new user would try it: psc
commands POSTed over HTTP to the REST interface, a paho MQTT 5 client on the same topics
(issue 4 "Done when" 1; pubsub.md items 26-28, 33, 35)."""

from __future__ import annotations

import asyncio

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from harness import BrokerProcess, free_port, port_accepts
from interop.clients import paho_client
from relaymq.cli.main import main
from relaymq.http.client import request

CONTROL = "SYSTEM.BROKER.CONTROL.QUEUE"
STREAM = "SYSTEM.BROKER.DEFAULT.STREAM"


def rest(http_port: int, method: str, queue: str, body: bytes = b"", headers=()) -> tuple[int, bytes]:
    url = f"http://127.0.0.1:{http_port}/ibmmq/rest/v3/messaging/qmgr/QM1/queue/{queue}/message"
    if method == "DELETE":
        url += "?wait=10000"
    response = asyncio.run(request(method, url, headers=[("content-type", "text/plain"), *headers],
                                   body=body, timeout=20))
    return response.status, response.body


def test_scenario_rest_and_mqtt_clients_in_one_broker(tmp_path):
    """pubsub.md items 26, 28, 33, 35 end to end: RegSub over REST, an MQTT 5 publication with
    a user property delivered to the REST subscriber's queue, a psc Publish (ibm-mq-usr header
    = usr folder) delivered to the MQTT subscriber with that user property."""
    http_port = free_port()
    config = {"http": {"port": http_port}, "qmgr": {"channel_port": free_port()}}
    process = BrokerProcess(config=config, workdir=tmp_path)
    for queue in ("APP.REPLY", "APP.SUBS"):  # as an operator would, before the start
        assert main(["queue", "define", queue, "--data-dir", str(process.data_dir)]) == 0
    with process as broker:
        for _ in range(200):  # services start after the MQTT listener the harness waits for
            if port_accepts("127.0.0.1", http_port) and "pub/sub engine" in broker.log_tail(40):
                break
            asyncio.run(asyncio.sleep(0.05))
        reply = [("ibm-mq-md-replyTo", "APP.REPLY")]
        regsub = b"<psc><Command>RegSub</Command><Topic>Plant/+/temp</Topic><QName>APP.SUBS</QName></psc>"
        assert rest(http_port, "POST", CONTROL, regsub, reply)[0] == 201
        assert rest(http_port, "DELETE", "APP.REPLY") == (200, b"<pscr><Completion>ok</Completion></pscr>")

        sensor = paho_client(broker, "v5")
        props = Properties(PacketTypes.PUBLISH)
        props.UserProperty = ("unit", "C")
        sensor.client.publish("Plant/boiler/temp", b"71", 1, properties=props).wait_for_publish(10)
        status, body = rest(http_port, "DELETE", "APP.SUBS")
        assert (status, body) == (200, b"71")

        got: list[mqtt.MQTTMessage] = []
        watcher = paho_client(broker, "v5")
        watcher.client.on_message = lambda client, userdata, message: got.append(message)
        watcher.subscribe("Plant/#", 1)
        publish = b"<psc><Command>Publish</Command><Topic>Plant/press/temp</Topic></psc>88"
        assert rest(http_port, "POST", STREAM, publish, [*reply, ("ibm-mq-usr", "unit;F;string")])[0] == 201
        assert rest(http_port, "DELETE", "APP.REPLY")[1] == b"<pscr><Completion>ok</Completion></pscr>"
        for _ in range(200):
            if got:
                break
            asyncio.run(asyncio.sleep(0.05))
        assert got and got[0].topic == "Plant/press/temp" and got[0].payload == b"88"
        assert ("unit", "F") in got[0].properties.UserProperty
        assert rest(http_port, "DELETE", "APP.SUBS") == (200, b"88")  # the psc publication reached the queue too
        sensor.disconnect()
        watcher.disconnect()
