"""Who a REST caller is, and what it may do (issue 5 REST security): publishing to a topic over
REST obeys $SYS/$ISYS protection, the [access] ACL file and the pub/sub topic ACLs for the
logged-in user (mqtt.md item 5; pubsub.md "Topic ACLs"); a REST put carries the logged-in
user as MQMD.UserIdentifier, so a psc command sent over REST runs as that user, and an
anonymous caller cannot claim another user's identity through its headers."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import BrokerProcess, free_port, port_accepts

from .test_rest_api import BASE, Rest

ACL = """\
user alice
topic write allowed/#
topic read allowed/#
topic read Plant/#
"""


@pytest.fixture(scope="module")
def secured(tmp_path_factory) -> Iterator[tuple[BrokerProcess, int]]:
    from relaymq.auth.passwords import PasswordFile

    tmp = tmp_path_factory.mktemp("rest-security")
    passwords = PasswordFile()
    passwords.set("alice", "alicepw", cost=4)
    passwords.set("bob", "bobpw", cost=4)
    passwords.save(str(tmp / "passwd"))
    (tmp / "acl").write_text(ACL)
    # issue 15: with a password file a user touches only the queues its authorities allow
    (tmp / "authorities.json").write_text(json.dumps({"authorities": [
        {"type": "queue", "profile": "PLAIN", "principal": "alice", "authorities": ["put", "get", "browse"]},
        {"type": "queue", "profile": "APP.**", "principal": "alice", "authorities": ["all"]},
        {"type": "queue", "profile": "SYSTEM.BROKER.CONTROL.QUEUE", "principal": "alice", "authorities": ["put"]},
        {"type": "queue", "profile": "PLAIN", "principal": ":anonymous", "authorities": ["put"]},
        {"type": "queue", "profile": "SYSTEM.BROKER.CONTROL.QUEUE", "principal": ":anonymous",
         "authorities": ["put"]}]}))
    port = free_port()
    config = {"access": {"password_file": str(tmp / "passwd"), "acl_file": str(tmp / "acl"),
                         "authorities_file": str(tmp / "authorities.json")},
              "http": {"host": "127.0.0.1", "port": port, "allow_anonymous": True},
              "qmgr": {"name": "QM1", "queue": [{"name": "APP.REPLY"}, {"name": "APP.SUBS"}, {"name": "PLAIN"}]},
              "pubsub": {"topic_security": True, "groups": {"Plant": ["alice"]},
                         "acl": [{"topic": "", "principal": "PublicGroup", "publish": "deny", "subscribe": "deny"},
                                 {"topic": "allowed", "principal": "alice", "publish": "allow", "subscribe": "allow"},
                                 {"topic": "Plant", "principal": "Plant", "publish": "allow",
                                  "subscribe": "allow"}]}}
    broker = BrokerProcess("relaymq", config=config, workdir=tmp / "broker")
    broker.start()
    deadline = time.monotonic() + 30
    rest = Rest(broker, port, ("alice", "alicepw"))
    while not port_accepts("127.0.0.1", port) or rest.call("GET", f"{BASE}/admin/qmgr")[0] == 503:
        if time.monotonic() > deadline or not broker.running:
            broker.cleanup()
            raise RuntimeError(f"did not start\n{broker.describe_log()}")
        time.sleep(0.05)
    try:
        yield broker, port
    finally:
        broker.cleanup()


def _publish(rest: Rest, topic: str) -> tuple[int, dict]:
    status, _, body = rest.call("POST", f"{BASE}/messaging/qmgr/QM1/topic/{topic}/message", b"x",
                                {"Content-Type": "text/plain"})
    return status, json.loads(body) if body else {}


def test_rest_publish_obeys_reserved_topics_and_acls(secured) -> None:
    """$SYS and $ISYS are the broker's (403 for every caller); the ACL file lets alice publish
    under allowed/ only and bob nowhere; an MQTT subscriber sees only the allowed one."""
    broker, port = secured
    alice, bob = Rest(broker, port, ("alice", "alicepw")), Rest(broker, port, ("bob", "bobpw"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    from clients import paho_client

    watcher = paho_client(broker, "v5", username="alice", password="alicepw")
    try:
        watcher.subscribe("allowed/#", 1)
        for topic in ("$SYS/broker/uptime", "$ISYS/x"):
            status, body = _publish(alice, topic.replace("$", "%24"))
            assert status == 403 and "reserved" in body["error"][0]["message"]
        assert _publish(alice, "allowed/one")[0] == 201
        status, body = _publish(alice, "forbidden/one")
        assert status == 403 and "alice may not publish" in body["error"][0]["message"]
        assert _publish(bob, "allowed/two")[0] == 403
        assert _publish(Rest(broker, port), "allowed/three")[0] == 403  # anonymous
        [received] = watcher.inbox.wait_for(1)
        assert received.topic == "allowed/one"
        # Nothing else came: a marker published after the refused ones arrives next, in order
        # (one session), so anything they had routed would be before it.
        assert _publish(alice, "allowed/marker")[0] == 201
        assert [m.topic for m in watcher.inbox.wait_for(2)] == ["allowed/one", "allowed/marker"]
    finally:
        watcher.disconnect()


def _messagelist(rest: Rest, queue: str) -> list[dict]:
    return json.loads(rest.call("GET", f"{BASE}/messaging/qmgr/QM1/queue/{queue}/messagelist")[2])["messages"]


def test_rest_put_carries_the_logged_in_user(secured) -> None:
    """MQMD.UserIdentifier of a REST put is the logged-in user, whatever JMSXUserID the
    ibm-mq-usr header claims; an anonymous put (allowed here) carries no identity."""
    broker, port = secured
    alice = Rest(broker, port, ("alice", "alicepw"))
    assert alice.put("PLAIN", "mine", {"ibm-mq-usr": "JMSXUserID;mallory;string"})[0] == 201
    assert Rest(broker, port).put("PLAIN", "whose?", {"ibm-mq-usr": "JMSXUserID;alice;string"})[0] == 201
    listed = _messagelist(alice, "PLAIN")
    assert [m.get("userIdentifier") for m in listed] == ["alice", None]
    for _ in listed:
        alice.get("PLAIN")


def test_psc_command_over_rest_runs_as_the_logged_in_user(secured) -> None:
    """pubsub.md "psc over REST" and "Topic ACLs": a RegSub on Plant/# put by alice (in group
    Plant) is accepted; the same command put anonymously, claiming to be alice in its
    headers, is refused with 3081 (not authorized), because it carries no identity."""
    broker, port = secured
    alice, anonymous = Rest(broker, port, ("alice", "alicepw")), Rest(broker, port)
    command = "<psc><Command>RegSub</Command><Topic>Plant/+/temp</Topic><QName>APP.SUBS</QName></psc>"
    for rest, headers in ((alice, {}), (anonymous, {"ibm-mq-usr": "JMSXUserID;alice;string"})):
        status, _, _ = rest.put("SYSTEM.BROKER.CONTROL.QUEUE", command, {"ibm-mq-md-replyTo": "APP.REPLY", **headers})
        assert status == 201
    replies = [alice.get("APP.REPLY", "?wait=10000")[2].decode() for _ in range(2)]
    assert "<Completion>ok</Completion>" in replies[0], replies
    assert "3081" in replies[1], replies
