"""Issue 15, findings 3 and 6, through a started broker, real HTTP requests and paho-mqtt:
one authorisation model for every entrance (docs/security.md "The authorisation model").

The set-up is the attack campaign's: a password file, an ACL file (alice owns ``alice/#``, bob
``bob/#``), ``topic_security`` left false, and authorities that give each user its own
application queues and put on the control queue.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import BrokerProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "qmgr"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
from clients import paho_client
from test_rest_api import BASE, Rest

CONTROL = "SYSTEM.BROKER.CONTROL.QUEUE"
DLQ = "SYSTEM.DEAD.LETTER.QUEUE"
ACL = "user alice\ntopic readwrite alice/#\nuser bob\ntopic readwrite bob/#\nuser admin\ntopic readwrite #\n"
QUEUES = ["ALICE.SUBS", "ALICE.REPLY", "BOB.SUBS", "BOB.REPLY"]
WAIT = 15.0


def _grants(user: str, prefix: str) -> list[dict]:
    return [{"type": "queue", "profile": f"{prefix}.**", "principal": user, "authorities": ["all"]},
            {"type": "queue", "profile": CONTROL, "principal": user, "authorities": ["put"]}]


def start_secured(broker_factory, tmp_path: Path) -> tuple[BrokerProcess, dict[str, Rest]]:
    from relaymq.auth.passwords import PasswordFile

    passwords = PasswordFile()
    for user in ("alice", "bob", "admin"):
        passwords.set(user, f"{user}pw", cost=4)
    passwords.save(str(tmp_path / "passwd"))
    (tmp_path / "acl").write_text(ACL)
    (tmp_path / "authorities.json").write_text(json.dumps(
        {"authorities": _grants("alice", "ALICE") + _grants("bob", "BOB")}))
    broker = broker_factory(config={
        "access": {"password_file": str(tmp_path / "passwd"), "acl_file": str(tmp_path / "acl"),
                   "authorities_file": str(tmp_path / "authorities.json"), "administrators": ["admin"]},
        "qmgr": {"name": "QM1", "queue": [{"name": name} for name in QUEUES]},
    })
    rest = {user: Rest(broker, broker.http_port, (user, f"{user}pw")) for user in ("alice", "bob", "admin")}
    rest["anonymous"] = Rest(broker, broker.http_port)
    deadline = time.monotonic() + 30
    while rest["admin"].call("GET", f"{BASE}/admin/qmgr")[0] != 200:  # the queue manager starts after HTTP
        assert time.monotonic() < deadline and broker.running, broker.describe_log()
        time.sleep(0.05)
    return broker, rest


def _regsub(rest: Rest, topic: str, queue: str, reply: str, headers: dict[str, str] | None = None) -> str:
    """A RegSub put over REST as the text body (the REST extension); its pscr."""
    command = f"<psc><Command>RegSub</Command><Topic>{topic}</Topic><QName>{queue}</QName></psc>"
    status, _, body = rest.put(CONTROL, command, {"ibm-mq-md-replyTo": reply, **(headers or {})})
    assert status == 201, body
    status, _, answer = rest.get(reply, f"?wait={int(WAIT * 1000)}")
    assert status == 200, (status, answer)
    return answer.decode()


def test_finding_3_bob_cannot_regsub_on_alice_topics_over_rest(broker_factory, tmp_path) -> None:
    """issue 15 finding 3: with topic_security = false, bob's RegSub on alice/# put over REST is
    refused (3081) by the ACL for bob, and an MQTT publication of alice's reaches her own queue
    subscriber but nothing of bob's; bob's RegSub on his own topics still works."""
    broker, rest = start_secured(broker_factory, tmp_path)
    assert "<Completion>ok</Completion>" in _regsub(rest["alice"], "alice/#", "ALICE.SUBS", "ALICE.REPLY")
    refused = _regsub(rest["bob"], "alice/#", "BOB.SUBS", "BOB.REPLY")
    assert "<Completion>error</Completion>" in refused and "<Reason>3081</Reason>" in refused, refused
    assert "<Completion>ok</Completion>" in _regsub(rest["bob"], "bob/#", "BOB.SUBS", "BOB.REPLY")
    publisher = paho_client(broker, "v5", username="alice", password="alicepw")
    try:
        publisher.publish("alice/secret", b"for alice only", 1)
    finally:
        publisher.disconnect()
    status, _, body = rest["alice"].get("ALICE.SUBS", f"?wait={int(WAIT * 1000)}")
    assert (status, body) == (200, b"for alice only")
    # the copies for every queue subscriber commit together: bob's would be there by now
    assert rest["bob"].browse("BOB.SUBS")[0] == 204


def test_finding_3_forged_user_identifier_on_the_control_queue(broker_factory, tmp_path) -> None:
    """issue 15 finding 3: a REST put stamps MQMD.UserIdentifier with the logged-in user and
    never trusts the client's (JMSXUserID in ibm-mq-usr): bob claiming to be alice still runs
    his RegSub on alice/# as bob, refused 3081."""
    _, rest = start_secured(broker_factory, tmp_path)
    forged = {"ibm-mq-usr": "JMSXUserID;alice;string"}
    refused = _regsub(rest["bob"], "alice/#", "BOB.SUBS", "BOB.REPLY", forged)
    assert "<Reason>3081</Reason>" in refused, refused


def test_regsub_needs_put_authority_on_the_subscriber_queue(broker_factory, tmp_path) -> None:
    """issue 15 (docs/pubsub.md "Who may register"): the broker puts to the subscriber queue on
    the subscriber's behalf, so bob may not make it fill alice's queue or the dead-letter queue."""
    _, rest = start_secured(broker_factory, tmp_path)
    for queue in ("ALICE.SUBS", DLQ):
        refused = _regsub(rest["bob"], "bob/#", queue, "BOB.REPLY")
        assert "<Reason>3081</Reason>" in refused and f"<QName>{queue}</QName>" in refused, refused


def test_finding_6_no_access_to_other_queues_or_the_dead_letter_queue(broker_factory, tmp_path) -> None:
    """issue 15 finding 6 (seed 000 l.336-371; flows-http.md item 7): bob cannot get, browse,
    list or put alice's subscriber queue, nor touch SYSTEM.DEAD.LETTER.QUEUE; alice can use
    hers; an administrator holds everything; the queue listing shows bob only his queues."""
    _, rest = start_secured(broker_factory, tmp_path)
    alice, bob, admin = rest["alice"], rest["bob"], rest["admin"]
    assert alice.put("ALICE.SUBS", "private")[0] == 201
    for queue in ("ALICE.SUBS", DLQ):
        for status, _, body in (bob.get(queue), bob.browse(queue), bob.put(queue, "x"),
                                bob.call("GET", f"{BASE}/messaging/qmgr/QM1/queue/{queue}/messagelist")):
            assert status == 403 and b"2035" in body, (queue, status, body)
    assert admin.browse(DLQ)[0] == 204
    assert alice.browse("ALICE.SUBS")[2] == b"private"
    listed = {q["name"] for q in json.loads(bob.call("GET", f"{BASE}/admin/qmgr/QM1/queue")[2])["queue"]}
    assert listed == {"BOB.SUBS", "BOB.REPLY"}, listed


def test_relaymq_auth_grants_at_run_time(broker_factory, tmp_path) -> None:
    """issue 15 "relaymq auth ... at run time, with no restart": bob is refused alice's queue;
    `relaymq auth set ... +browse` in another process lets him browse it (not get) at the next
    request; revoking takes it away again."""
    _, rest = start_secured(broker_factory, tmp_path)
    rest["alice"].put("ALICE.SUBS", "shared")
    assert rest["bob"].browse("ALICE.SUBS")[0] == 403

    def auth(*argv: str) -> None:
        done = subprocess.run([sys.executable, "-m", "relaymq", "auth", "--file", str(tmp_path / "authorities.json"),
                               *argv], check=False, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert done.returncode == 0, done.stderr

    auth("set", "-t", "queue", "-n", "ALICE.*", "-p", "bob", "+browse")
    assert rest["bob"].browse("ALICE.SUBS")[2] == b"shared"
    assert rest["bob"].get("ALICE.SUBS")[0] == 403
    auth("set", "-t", "queue", "-n", "ALICE.*", "-p", "bob", "--", "-browse")
    assert rest["bob"].browse("ALICE.SUBS")[0] == 403


def test_admin_api_manages_authorities_and_users(broker_factory, tmp_path) -> None:
    """issue 15: the admin API changes authorities and users at run time, persisted; bob may
    not grant himself anything."""
    _, rest = start_secured(broker_factory, tmp_path)
    grant = json.dumps({"type": "queue", "profile": DLQ, "principal": "bob", "grant": ["browse"]}).encode()
    assert rest["bob"].call("POST", "/relaymq/auth/authorities", grant)[0] == 403
    assert rest["admin"].call("POST", "/relaymq/auth/authorities", grant)[0] == 200
    assert rest["bob"].browse(DLQ)[0] == 204
    saved = json.loads((tmp_path / "authorities.json").read_text())
    assert {"type": "queue", "profile": DLQ, "principal": "bob", "authorities": ["browse"]} in saved["authorities"]
    carol = Rest(rest["admin"].broker, rest["admin"].port, ("carol", "carolpw"))
    assert carol.browse("BOB.SUBS")[0] == 401
    status, _, body = rest["admin"].call("PUT", "/relaymq/auth/users/carol", json.dumps({"password": "carolpw"}).encode())
    assert status == 200, body
    assert rest["admin"].call("PUT", "/relaymq/auth/groups/bobs", json.dumps({"members": ["carol"]}).encode())[0] == 200
    group_grant = {"type": "queue", "profile": "BOB.**", "group": "bobs", "grant": ["browse"]}
    assert rest["admin"].call("POST", "/relaymq/auth/authorities", json.dumps(group_grant).encode())[0] == 200
    assert carol.browse("BOB.SUBS")[0] == 204


def test_sighup_reloads_the_password_file(broker_factory, tmp_path) -> None:
    """issue 15 "the password and ACL files reload on SIGHUP": a user added to the password file
    with `relaymq auth user ... --reload PID` (which sends SIGHUP) can log in over HTTP and
    MQTT, with no restart; the broker keeps running."""
    broker, _ = start_secured(broker_factory, tmp_path)
    dave = Rest(broker, broker.http_port, ("dave", "davepw"))
    assert dave.call("GET", f"{BASE}/admin/qmgr")[0] == 401
    done = subprocess.run([sys.executable, "-m", "relaymq", "auth", "user", "dave", "--password", "davepw",
                           "--password-file", str(tmp_path / "passwd"), "--reload", str(broker.proc.pid)],
                          check=False, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + WAIT
    while not any("SIGHUP: password file" in line and "reloaded" in line
                  for line in broker.log_path.read_text().splitlines()):
        assert time.monotonic() < deadline and broker.running, broker.describe_log()
        time.sleep(0.05)
    assert broker.running
    assert dave.call("GET", f"{BASE}/admin/qmgr")[0] == 200
    client = paho_client(broker, "v5", username="dave", password="davepw")
    client.disconnect()


def test_sighup_reloads_the_acl_and_queue_subscriptions_obey_it(broker_factory, tmp_path) -> None:
    """issue 15 "the password and ACL files reload on SIGHUP", finding 3: a queue subscription
    is delivered only what its owner may read now - bob's bob/# subscription, made while the
    ACL let him, receives nothing once the reloaded ACL takes bob/ away (as an MQTT
    subscription of his would), while alice's keeps receiving."""
    broker, rest = start_secured(broker_factory, tmp_path)
    assert "<Completion>ok</Completion>" in _regsub(rest["bob"], "bob/#", "BOB.SUBS", "BOB.REPLY")
    (tmp_path / "acl").write_text(ACL.replace("topic readwrite bob/#", "topic readwrite bobby/#")
                                  .replace("topic readwrite alice/#", "topic readwrite alice/#\ntopic read bob/#"))
    assert "<Reason>3081</Reason>" in _regsub(rest["alice"], "bob/#", "ALICE.SUBS", "ALICE.REPLY")  # not yet
    os.kill(broker.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + WAIT
    while not any("SIGHUP: ACL file" in line and "reloaded" in line
                  for line in broker.log_path.read_text().splitlines()):
        assert time.monotonic() < deadline and broker.running, broker.describe_log()
        time.sleep(0.05)
    assert "<Completion>ok</Completion>" in _regsub(rest["alice"], "bob/#", "ALICE.SUBS", "ALICE.REPLY")
    publisher = paho_client(broker, "v5", username="admin", password="adminpw")
    try:
        publisher.publish("bob/news", b"after the reload", 1)
    finally:
        publisher.disconnect()
    status, _, body = rest["alice"].get("ALICE.SUBS", f"?wait={int(WAIT * 1000)}")
    assert (status, body) == (200, b"after the reload")
    assert rest["bob"].browse("BOB.SUBS")[0] == 204


def test_the_authorisation_models_administrators_may_use_the_admin_routes(broker_factory, tmp_path) -> None:
    """issue 15 "one authorisation model for every entrance (... admin)": a user the model makes
    an administrator (group ``administrators`` through the admin API, at run time) may define a
    queue on the admin routes like a user of ``[access] administrators``; before, bob was refused."""
    _, rest = start_secured(broker_factory, tmp_path)
    define = f"{BASE}/admin/qmgr/QM1/queue"
    assert rest["bob"].call("POST", define, json.dumps({"name": "BOB.NEW"}).encode())[0] == 403
    status, _, body = rest["admin"].call("PUT", "/relaymq/auth/groups/administrators",
                                         json.dumps({"members": ["bob"]}).encode())
    assert status == 200, body
    status, _, body = rest["bob"].call("POST", define, json.dumps({"name": "BOB.NEW"}).encode())
    assert status == 201, body
    assert rest["alice"].call("POST", define, json.dumps({"name": "ALICE.NEW"}).encode())[0] == 403


def test_deeply_nested_admin_bodies_are_refused_without_a_traceback(broker_factory, tmp_path) -> None:
    """issue 15 "recursion limits in every parser (typed error, no traceback)": a queue
    definition or an authority change nested 100,000 deep is a 400, not a 500 with a
    RecursionError traceback in the log; the broker goes on."""
    broker, rest = start_secured(broker_factory, tmp_path)
    deep = b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, _, body = rest["admin"].call("POST", f"{BASE}/admin/qmgr/QM1/queue", deep)
    assert status == 400, body
    status, _, body = rest["admin"].call("POST", "/relaymq/auth/authorities", deep)
    assert status == 400, body
    assert broker.running and "Traceback" not in broker.log_tail(200)
