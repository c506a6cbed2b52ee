"""An administrator lists and removes queue subscriptions (pubsub.md item 19: removal "by an
administrator", seed 1840-1854, 5487-5501) with ``relaymq psc``: against a running broker
through its admin routes, and in a stopped broker's data directory; removals are announced
with the Removed event, cause administrator (item 45)."""

from __future__ import annotations

import json

from interop.clients import paho_client
from relaymq.cli.main import main

from psc_process import CONTROL, STREAM, Rest, admin, http_port, start, wait_for


def _lines(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_item_19_administrator_removes_subscriptions_from_a_running_and_a_stopped_broker(tmp_path, capsys,
                                                                                        monkeypatch):
    """pubsub.md items 19 and 45: ``relaymq psc list|remove --url`` on a running broker (the
    Removed event says ``administrator``; the removed subscriber gets nothing more), then
    ``--data-dir`` once the broker is stopped, which the restarted broker honours."""
    broker = start(tmp_path, {"pubsub": {"broker_name": "B1"}}, queues=("APP.REPLY", "APP.SUBS", "OLD.SUBS"))
    capsys.readouterr()  # what `relaymq queue define` printed
    monkeypatch.setenv("RELAYMQ_ADMIN_CREDENTIALS", str(broker.admin_credentials))  # as its administrator
    try:
        url = f"http://127.0.0.1:{http_port(broker)}"
        rest = Rest(broker)
        assert rest.command(CONTROL, "<Command>RegSub</Command><Topic>News/#</Topic><QName>APP.SUBS</QName>") == ("ok", [])
        assert rest.command(CONTROL, "<Command>RegSub</Command><Topic>News/#</Topic><QName>OLD.SUBS</QName>"
                                     "<SubName>old-feed</SubName>") == ("ok", [])
        watcher = paho_client(broker, "v5")
        watcher.subscribe("$SYS/Broker/B1/Subscriptions/Removed", 1)

        assert main(["psc", "list", "--url", url]) == 0
        listed = _lines(capsys)
        assert sorted((s["queue"], s["subName"]) for s in listed) == [("APP.SUBS", None), ("OLD.SUBS", "old-feed")]
        assert main(["psc", "list", "--url", url, "--name", "old-feed"]) == 0
        assert [s["queue"] for s in _lines(capsys)] == ["OLD.SUBS"]

        assert main(["psc", "remove", "--url", url]) == 1  # no criterion: refused
        assert "say which" in capsys.readouterr().err
        assert main(["psc", "remove", "--url", url, "--queue", "OLD.SUBS"]) == 0
        assert [s["queue"] for s in _lines(capsys)] == ["OLD.SUBS"]
        (event,) = watcher.inbox.wait_for(1)
        assert json.loads(event.payload) == {"topic": "News/#", "subPoint": "", "filter": "", "qmgr": "QM1",
                                             "queue": "OLD.SUBS", "user": "", "subName": "old-feed",
                                             "cause": "administrator"}
        assert main(["psc", "remove", "--url", url, "--queue", "OLD.SUBS"]) == 1  # nothing matched now
        capsys.readouterr()

        assert rest.command(STREAM, "<Command>Publish</Command><Topic>News/today</Topic>", body="extra") == ("ok", [])
        assert rest.get("APP.SUBS")[2] == b"extra"
        assert rest.get("OLD.SUBS", wait_ms=300)[0] == 204
        watcher.disconnect()
        broker.stop()

        data_dir = str(broker.data_dir)
        assert main(["psc", "list", "--data-dir", data_dir]) == 0
        assert [s["queue"] for s in _lines(capsys)] == ["APP.SUBS"]
        assert main(["psc", "remove", "--data-dir", data_dir, "--topic", "News/#", "--queue", "APP.SUBS"]) == 0
        capsys.readouterr()
        assert main(["psc", "list", "--data-dir", data_dir]) == 0
        assert _lines(capsys) == []

        broker.start()
        assert admin(broker, "GET") == (200, {"subscriptions": []})
        assert rest.command(STREAM, "<Command>Publish</Command><Topic>News/later</Topic>", body="late") == ("ok", [])
        assert rest.get("APP.SUBS", wait_ms=300)[0] == 204
    finally:
        broker.cleanup()


def test_item_19_admin_routes_are_for_administrators_on_loopback(tmp_path):
    """pubsub.md item 19: removing others' subscriptions is an administrator's act: with
    ``[access] administrators`` set, an authenticated non-administrator gets 403, no
    credentials 401, an administrator the list; a bad query is 400."""
    passwords = tmp_path / "passwords"
    assert main(["passwd", "-c", "-b", "--cost", "4", str(passwords), "alice", "a-pass"]) == 0
    assert main(["passwd", "-b", "--cost", "4", str(passwords), "bob", "b-pass"]) == 0
    # with a password file bob touches only the queues he is granted (issue 15, docs/security.md)
    authorities = tmp_path / "authorities.json"
    for profile, grants in (("SYSTEM.BROKER.CONTROL.QUEUE", "+put"), ("BOB.SUBS", "+put"), ("APP.REPLY", "+get")):
        assert main(["auth", "--file", str(authorities), "set", "-t", "queue", "-n", profile, "-p", "bob", grants]) == 0
    config = {"access": {"allow_anonymous": False, "password_file": str(passwords), "administrators": ["alice"],
                         "authorities_file": str(authorities)}}
    broker = start(tmp_path, config, queues=("APP.REPLY", "BOB.SUBS"))
    try:
        rest = Rest(broker, "bob", "b-pass")
        assert rest.command(CONTROL, "<Command>RegSub</Command><Topic>T</Topic><QName>BOB.SUBS</QName>") == ("ok", [])
        assert admin(broker, "GET")[0] == 401
        assert admin(broker, "GET", user="bob", password="b-pass")[0] == 403
        assert admin(broker, "DELETE", {"queue": "BOB.SUBS"}, user="bob", password="b-pass")[0] == 403
        status, listing = admin(broker, "GET", user="alice", password="a-pass")
        assert status == 200 and [s["queue"] for s in listing["subscriptions"]] == ["BOB.SUBS"]
        assert admin(broker, "GET", {"colour": "blue"}, user="alice", password="a-pass")[0] == 400
        assert admin(broker, "DELETE", user="alice", password="a-pass")[0] == 400
        status, removed = admin(broker, "DELETE", {"all": "true"}, user="alice", password="a-pass")
        assert status == 200 and [s["queue"] for s in removed["removed"]] == ["BOB.SUBS"]
        assert wait_for(lambda: admin(broker, "GET", user="alice", password="a-pass")[1] == {"subscriptions": []})
    finally:
        broker.cleanup()
