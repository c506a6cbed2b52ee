"""Topologies through `relaymq serve` processes: the HTTP adapter between queue managers and a
home-server pull (everyplace.md items 8, 24, 30; seed 004 l.2385-2589, 3360-3390), checked
through the REST interface as a user would."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

from relaymq.message import Message
from relaymq.qmgr import QueueManager

from .test_chain_failure import Node, define_queues


def _put_offline(node: Node, queue: str, qmgr: str, texts: list[str]) -> None:
    """Put on a node's store while its process is down (an embedded application)."""
    qm = QueueManager.open(node.name, str(node.data_dir), synchronous="NORMAL")
    try:
        define_queues(qm, node.queues)
        for text in texts:
            message = Message()
            message.mq.md.Format = "MQSTR"
            message.mq.body = text.encode()
            qm.put(queue, message, qmgr=qmgr)
    finally:
        qm.close()


def _drain(node: Node, queue: str, expected: int) -> list[str]:
    """Get ``expected`` messages, each waiting up to 10 s, then whatever else is there. A depth
    counts a message the channel has put but not yet confirmed (everyplace.md item 11: state
    put-unconfirmed), which a get cannot see yet, so "the depth reached n" does not mean n
    messages can be got."""
    url = f"http://127.0.0.1:{node.http_port}/ibmmq/rest/v3/messaging/qmgr/{node.name}/queue/{queue}/message"
    out = []
    while True:
        wait = "?wait=10000" if len(out) < expected else ""
        with urllib.request.urlopen(urllib.request.Request(url + wait, method="DELETE"), timeout=30) as response:
            if response.status == 204:
                return out
            out.append(response.read().decode())


def test_http_adapter_and_home_server_pull_between_brokers(tmp_path: Path) -> None:
    """DEVICE pushes to TARGET over HTTP (POST /relaymq/channel/v1 on TARGET's HTTP port) and
    pulls from SERVER, which holds messages for it on a non-pushing store-and-forward queue
    and has no connection to it."""
    target = Node(tmp_path, "TARGET", [{"name": "IN"}], [])
    server = Node(tmp_path, "SERVER", [{"name": "HOLD", "type": "store_and_forward",
                                        "target_queue_managers": ["DEVICE"], "push": False}], [])
    device = Node(tmp_path, "DEVICE",
                  [{"name": "IN", "type": "remote", "queue_manager": "TARGET", "mode": "async"},
                   {"name": "INBOX"},
                   {"name": "HOLD", "type": "home_server", "queue_manager": "SERVER", "poll_interval": 100}],
                  [{"name": "TARGET", "address": f"http://127.0.0.1:{target.http_port}", "retry_initial_ms": 50},
                   {"name": "SERVER", "address": f"127.0.0.1:{server.port}", "retry_initial_ms": 50}])
    _put_offline(device, "IN", "TARGET", ["d1", "d2", "d3"])
    _put_offline(server, "INBOX", "DEVICE", ["s1", "s2"])
    nodes = [target, server, device]
    try:
        for node in nodes:
            node.start()
        deadline = time.monotonic() + 30
        while not (target.depths().get("IN") == 3 and device.depths().get("INBOX") == 2
                   and server.depths().get("HOLD") == 0 and device.depths().get("IN") == 0):
            assert time.monotonic() < deadline, (target.depths(), server.depths(), device.depths())
            time.sleep(0.1)
        assert _drain(target, "IN", 3) == ["d1", "d2", "d3"]
        assert _drain(device, "INBOX", 2) == ["s1", "s2"]
    finally:
        for node in nodes:
            node.stop()


def test_mutual_tls_channel_between_brokers(tmp_path: Path) -> None:
    """Issue 5 ("a documented, versioned protocol ... over TCP (and TLS)"), P7d: SERVER's
    listener speaks TLS with [qmgr] channel_tls_cert/channel_tls_key and, with
    channel_tls_ca, accepts only queue managers presenting a certificate from that CA.
    DEVICE, whose [qmgr] channel_tls_* are its certificate and CA, delivers over tls = true;
    INTRUDER, with tls = true and the CA but no certificate of its own, is refused at the
    handshake and keeps its message."""
    from .test_channel_transport import _certificates, _client_certificate

    ca, cert, key = _certificates(tmp_path)
    tls = {"channel_tls_cert": cert, "channel_tls_key": key, "channel_tls_ca": ca}
    device_cert, device_key = _client_certificate(tmp_path, "DEVICE")  # its CN names it (item 26)
    server = Node(tmp_path, "SERVER", [{"name": "IN"}], [], qmgr_extra=tls)
    device = Node(tmp_path, "DEVICE", [{"name": "IN", "type": "remote", "queue_manager": "SERVER", "mode": "async"}],
                  [{"name": "SERVER", "address": f"localhost:{server.port}", "tls": True, "retry_initial_ms": 50}],
                  qmgr_extra={"channel_tls_cert": device_cert, "channel_tls_key": device_key, "channel_tls_ca": ca})
    intruder = Node(tmp_path, "INTRUDER",
                    [{"name": "IN", "type": "remote", "queue_manager": "SERVER", "mode": "async"}],
                    [{"name": "SERVER", "address": f"localhost:{server.port}", "tls": True, "tls_ca": ca,
                      "retry_initial_ms": 50}])
    _put_offline(device, "IN", "SERVER", ["over tls"])
    _put_offline(intruder, "IN", "SERVER", ["no certificate"])
    nodes = [server, device, intruder]
    try:
        for node in nodes:
            node.start()
        deadline = time.monotonic() + 30
        while not (server.depths().get("IN") == 1 and device.depths().get("IN") == 0):
            assert time.monotonic() < deadline, (server.depths(), device.depths())
            time.sleep(0.1)
        time.sleep(0.5)
        assert intruder.depths().get("IN") == 1
        assert _drain(server, "IN", 1) == ["over tls"]
        # TLS 1.3: the server checks the client certificate after the client's handshake is
        # done, so the intruder sees the connection closed rather than a certificate alert.
        assert "WARNING relaymq.qmgr.channel: channel to SERVER" in intruder.log.read_text()
    finally:
        for node in nodes:
            node.stop()


def _wait_for(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_channel_certificate_must_name_its_queue_manager(tmp_path: Path) -> None:
    """everyplace.md item 26 (security hop by hop), docs/channels.md "Who may connect": with
    client certificates required, SERVER accepts a HELLO only from the queue manager the
    certificate's CN names, or one [qmgr.channel_identities] lists for that CN. DEVICE (CN
    DEVICE) and GW (CN gateway, listed for GW) deliver; OTHER, presenting DEVICE's certificate,
    is refused with 2035 and keeps its message."""
    from .test_channel_transport import _certificates, _client_certificate

    ca, cert, key = _certificates(tmp_path)
    certificates = {cn: _client_certificate(tmp_path, cn) for cn in ("DEVICE", "gateway")}
    server = Node(tmp_path, "SERVER", [{"name": "IN"}], [],
                  qmgr_extra={"channel_tls_cert": cert, "channel_tls_key": key, "channel_tls_ca": ca},
                  extra_toml='[qmgr.channel_identities]\ngateway = ["GW"]\n')

    def client(name: str, cn: str) -> Node:
        client_cert, client_key = certificates[cn]
        return Node(tmp_path, name, [{"name": "IN", "type": "remote", "queue_manager": "SERVER", "mode": "async"}],
                    [{"name": "SERVER", "address": f"localhost:{server.port}", "tls": True, "tls_ca": ca,
                      "tls_cert": client_cert, "tls_key": client_key, "retry_initial_ms": 50}])

    device, gateway, other = client("DEVICE", "DEVICE"), client("GW", "gateway"), client("OTHER", "DEVICE")
    for node in (device, gateway, other):
        _put_offline(node, "IN", "SERVER", [f"from {node.name}"])
    nodes = [server, device, gateway, other]
    try:
        for node in nodes:
            node.start()
        _wait_for(lambda: server.depths().get("IN") == 2 and device.depths().get("IN") == 0
                  and gateway.depths().get("IN") == 0, "DEVICE and GW did not deliver")
        _wait_for(lambda: "may not speak for queue manager 'OTHER'" in other.log.read_text(), "OTHER was not refused")
        assert "NotAuthorized" in other.log.read_text() or "2035" in other.log.read_text()
        assert other.depths().get("IN") == 1
        assert sorted(_drain(server, "IN", 2)) == ["from DEVICE", "from GW"]
    finally:
        for node in nodes:
            node.stop()


def test_http_channel_route_needs_a_user_that_names_its_queue_manager(tmp_path: Path) -> None:
    """docs/channels.md "Peer authentication", item 26 over the HTTP adapter (item 30): POST
    /relaymq/channel/v1 needs basic authentication as a channel peer - here a user of TARGET's
    password file (even though [http] allow_anonymous lets REST reads through) - and the user
    must be the HELLO's queue manager. DEVICE logs in as DEVICE (user/password on its connection) and
    delivers; ANON sends no credentials (401) and SPOOF logs in as a valid user that is not
    SPOOF (2035): both keep their messages."""
    from relaymq.auth.passwords import PasswordFile

    passwords = PasswordFile()
    for user, password in (("DEVICE", "device-pw"), ("alice", "alice-pw")):
        passwords.set(user, password, cost=4)
    passwords.save(str(tmp_path / "passwords"))
    # the test reads TARGET's queue anonymously over REST, and DEVICE (a user of the password
    # file) puts to it over the channel: with a password file both need a grant (issue 15)
    (tmp_path / "authorities.json").write_text(json.dumps({"authorities": [
        {"type": "queue", "profile": "IN", "principal": ":anonymous", "authorities": ["inq", "get"]},
        {"type": "queue", "profile": "IN", "principal": "DEVICE", "authorities": ["put"]}]}))
    target = Node(tmp_path, "TARGET", [{"name": "IN"}], [], qmgr_extra={"channel_allow_anonymous": False},
                  extra_toml=f'[access]\npassword_file = "{tmp_path / "passwords"}"\nallow_anonymous = true\n'
                             f'authorities_file = "{tmp_path / "authorities.json"}"\n')
    http_table = f'[http]\nhost = "127.0.0.1"\nport = {target.http_port}\n'
    target.config.write_text(target.config.read_text().replace(http_table, http_table + "allow_anonymous = true\n"))

    def client(name: str, credentials: dict[str, str]) -> Node:
        return Node(tmp_path, name, [{"name": "IN", "type": "remote", "queue_manager": "TARGET", "mode": "async"}],
                    [{"name": "TARGET", "address": f"http://127.0.0.1:{target.http_port}", "retry_initial_ms": 50,
                      **credentials}])

    device = client("DEVICE", {"user": "DEVICE", "password": "device-pw"})
    anonymous = client("ANON", {})
    spoof = client("SPOOF", {"user": "alice", "password": "alice-pw"})
    for node in (device, anonymous, spoof):
        _put_offline(node, "IN", "TARGET", [f"from {node.name}"])
    nodes = [target, device, anonymous, spoof]
    try:
        for node in nodes:
            node.start()
        _wait_for(lambda: target.depths().get("IN") == 1 and device.depths().get("IN") == 0,
                  "DEVICE did not deliver over HTTP")
        _wait_for(lambda: "status 401, credentials are needed" in anonymous.log.read_text(), "ANON was not refused")
        _wait_for(lambda: "HTTP user 'alice' may not speak for queue manager 'SPOOF'" in spoof.log.read_text(),
                  "SPOOF was not refused")
        assert anonymous.depths().get("IN") == 1 and spoof.depths().get("IN") == 1
        assert _drain(target, "IN", 1) == ["from DEVICE"]
    finally:
        for node in nodes:
            node.stop()
