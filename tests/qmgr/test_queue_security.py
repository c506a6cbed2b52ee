"""Queue security: the authenticator, cryptor and compressor queue properties and the check
made at every hop (everyplace.md items 7 and 26; docs/queues.md "Queue security").

Real parts: SQLite stores read back byte for byte, `relaymq serve` processes, raw channel
connections speaking the channel's own frames, and two queue-manager processes linked by a
channel.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sqlite3
from pathlib import Path

import pytest
from harness import port_accepts

from relaymq.cli.main import main
from relaymq.config import ConfigError, load_config
from relaymq.message import Message
from relaymq.qmgr import QueueManager
from relaymq.qmgr.channel_frames import FrameType, encode_frame
from relaymq.qmgr.errors import BadProperty, RuleVeto
from relaymq.qmgr.queue_keys import load_keys
from relaymq.qmgr.queue_security import Carried, QueueSecurity

from .helpers import linked_queue_managers, text_message
from .test_channel_security import Peer, _password_file, _until
from .test_chain_failure import Node
from .test_rest_api import BASE, QueueBroker, Rest

SECRET = "card 4111-1111-1111-1111, expires 12/29"
NOT_AUTHENTICATED, RULE_VETO, SECURITY_ERROR = 3307, 3304, 2063


def _key_file(path: Path, **names: bytes) -> str:
    path.write_text("".join(f'{name} = "{base64.b64encode(key).decode()}"\n' for name, key in names.items()))
    path.chmod(0o600)
    return str(path)


def _stored_rows(data_dir: Path, name: str = "QM1") -> list[bytes]:
    with sqlite3.connect(data_dir / f"qmgr-{name}.db") as db:
        return [bytes(row[0]) for row in db.execute("SELECT data FROM qm_messages")]


def _files_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.iterdir() if p.is_file())


def test_everyplace_item_7_cryptor_encrypts_messages_at_rest_and_put_get_round_trips(tmp_path) -> None:
    """everyplace.md item 7 (cryptor), seed 004 l.746-750: "encodes the messages ... so that
    you cannot read them without the decoding information", and l.506: the characteristics
    are used when a message is stored on a queue. The SQLite file (and its WAL) never hold
    the body in clear; a get - also after the queue manager is opened again - returns it."""
    keys = {"orders": os.urandom(32)}
    with QueueManager.open("QM1", str(tmp_path), security=QueueSecurity(keys)) as qm:
        qm.define_queue("SECURE", cryptor="orders")
        qm.define_queue("PLAIN")
        qm.put("SECURE", text_message(SECRET))
        qm.put("SECURE", text_message(SECRET + " (2)"))
        qm.put("PLAIN", text_message("plain " + SECRET))
        got = qm.get("SECURE")
        assert got is not None and got.mq.body.decode() == SECRET
    rows = _stored_rows(tmp_path)
    assert len(rows) == 2
    assert sum(SECRET.encode() in row for row in rows) == 1  # the PLAIN queue's message only
    assert all(row.startswith(b"RMQS") or row.find(b"plain ") >= 0 for row in rows)
    assert _files_bytes(tmp_path).count(SECRET.encode()) == 1
    with QueueManager.open("QM1", str(tmp_path), security=QueueSecurity(keys)) as qm:
        got = qm.get("SECURE")
        assert got is not None and got.mq.body.decode() == SECRET + " (2)"
        assert qm.unreadable == []


def test_everyplace_item_7_compressor_shrinks_a_compressible_body_and_restores_it(tmp_path) -> None:
    """everyplace.md item 7 (compressor), seed 004 l.758: "reduce the size of messages while
    they are being transmitted and stored": stored compressed, got back byte for byte."""
    text = "temperature=21.5;humidity=40;" * 700  # 20,300 bytes, very compressible
    with QueueManager.open("QM1", str(tmp_path)) as qm:
        qm.define_queue("READINGS", compressor="zlib")
        qm.put("READINGS", text_message(text))
    [row] = _stored_rows(tmp_path)
    assert len(row) < len(text) // 10
    with QueueManager.open("QM1", str(tmp_path)) as qm:
        got = qm.get("READINGS")
        assert got is not None and got.mq.body.decode() == text


def test_everyplace_item_26_tampered_ciphertext_at_rest_is_refused(tmp_path) -> None:
    """everyplace.md item 26, seed 004 l.746-748 (a cryptor encodes messages so that they
    cannot be read without the decoding information) and l.3582 (stored in a manner
    controlled by the queue's security characteristics): one byte of a stored ciphertext
    changed, and the message is not delivered (AES-GCM authentication fails); it is listed
    in ``unreadable`` with reason 2063's cause, and the untouched message is delivered."""
    keys = {"orders": os.urandom(32)}
    with QueueManager.open("QM1", str(tmp_path), security=QueueSecurity(keys)) as qm:
        qm.define_queue("SECURE", cryptor="orders", compressor="zlib")
        qm.put("SECURE", text_message("first"))
        qm.put("SECURE", text_message("second"))
    with sqlite3.connect(tmp_path / "qmgr-QM1.db") as db:
        uid, data = db.execute("SELECT uid, data FROM qm_messages ORDER BY seq LIMIT 1").fetchone()
        tampered = bytearray(data)
        tampered[-20] ^= 0x01
        db.execute("UPDATE qm_messages SET data = ? WHERE uid = ?", (bytes(tampered), uid))
    with QueueManager.open("QM1", str(tmp_path), security=QueueSecurity(keys)) as qm:
        assert [(u, q) for u, q, _ in qm.unreadable] == [(uid, "SECURE")]
        assert "fails authentication" in qm.unreadable[0][2]
        got = qm.get("SECURE")
        assert got is not None and got.mq.body == b"second"
        assert qm.get("SECURE") is None
    with QueueManager.open("QM1", str(tmp_path), security=QueueSecurity({"orders": os.urandom(32)})) as qm:
        assert len(qm.unreadable) == 1  # a different key of that name opens nothing either


def test_everyplace_item_7_cryptor_names_a_key_that_exists(tmp_path) -> None:
    """everyplace.md item 7: a cryptor names a key of [qmgr] key_file; a definition naming
    another is refused (3306), and a key file that is missing or malformed stops start-up
    naming the key (qmgr.key_file), as does a configured queue naming an unknown key."""
    with QueueManager.open("QM1", None) as qm, pytest.raises(BadProperty) as refused:
        qm.define_queue("Q", cryptor="nokey")
    assert "'nokey'" in refused.value.message
    keys = _key_file(tmp_path / "keys.toml", orders=os.urandom(16))
    assert list(load_keys(keys)) == ["orders"]
    cases = {
        "missing": (f'[qmgr]\nkey_file = "{tmp_path / "nope.toml"}"\n', "qmgr.key_file"),
        "not base64": ('[qmgr]\nkey_file = "{bad}"\n', "qmgr.key_file"),
        "unknown key": (f'[qmgr]\nkey_file = "{keys}"\n[[qmgr.queue]]\nname = "Q"\ncryptor = "other"\n',
                        "qmgr.queue[0].cryptor"),
        "bad compressor": ('[[qmgr.queue]]\nname = "Q"\ncompressor = "rle"\n', "qmgr.queue[0]"),
    }
    bad = tmp_path / "bad.toml"
    for content, problem in ((b'orders = "not base64!"\n', "not base64"), (b'orders = "AAAA"\n', "3 bytes"),
                             (b"orders = [1]\n", "base64 string"), (b"= x", "not TOML")):
        bad.write_bytes(content)
        config = tmp_path / "relaymq.toml"
        config.write_text(cases["not base64"][0].format(bad=bad))
        with pytest.raises(ConfigError) as err:
            load_config(str(config))
        assert err.value.key == "qmgr.key_file" and problem in str(err.value), (content, str(err.value))
    for name, (toml, key) in cases.items():
        if name == "not base64":
            continue
        config = tmp_path / "relaymq.toml"
        config.write_text(toml)
        with pytest.raises(ConfigError) as err:
            load_config(str(config))
        assert err.value.key == key, (name, err.value)


def _put(uid: str, queue: str, body: bytes) -> bytes:
    return encode_frame(FrameType.PUT, {"uid": uid, "qmgr": "QM1", "queue": queue, "resend": False}, body)


def test_everyplace_item_26_security_requirements_checked_at_the_hop(tmp_path, capsys, monkeypatch) -> None:
    """everyplace.md item 26, seed 004 l.3580-3584: "When a message must be stored on a queue
    ... the queue attribute rule determines if the channel security meets the requirements of
    the queue". Against `relaymq serve` with anonymous channel peers allowed, over raw channel
    connections:

    * a queue with ``authenticator = "channel"`` refuses a PUT from an anonymous peer with the
      seed's Except_Authenticate (3307) and takes it from a peer that authenticated;
    * a queue with a cryptor refuses a PUT that came unencrypted (3304, the attribute rule's
      refusal) and one whose ciphertext was altered on the way (2063), and takes one sealed
      under its key;
    * a queue with neither takes all of them.
    Nothing refused is stored (depths over REST)."""
    key = os.urandom(32)
    keys = _key_file(tmp_path / "keys.toml", orders=key)
    peers = _password_file(tmp_path / "channel-peers", ("QM2", "qm2-secret"))
    queues = ('[[qmgr.queue]]\nname = "AUTH.IN"\nauthenticator = "channel"\n\n'
              '[[qmgr.queue]]\nname = "ENC.IN"\ncryptor = "orders"\n\n'
              '[[qmgr.queue]]\nname = "OPEN.IN"\n')
    broker = QueueBroker("relaymq", workdir=tmp_path / "broker", queues=queues,
                         config={"qmgr": {"channel_allow_anonymous": True, "channel_password_file": peers,
                                          "key_file": keys}})
    broker.start()
    port = broker._side_ports["channel"]
    rest = Rest(broker, broker.http_port)
    sealer = QueueSecurity({"orders": key})
    try:
        _until(lambda: port_accepts("127.0.0.1", port), 30, "the channel listener accepts")
        anonymous = Peer(port)
        assert anonymous.login("QM9", None).type is FrameType.WELCOME

        def answer(peer: Peer, uid: str, queue: str, body: bytes) -> tuple[FrameType, int]:
            frame = peer.send(_put(uid, queue, body)).receive()
            return frame.type, frame.header.get("reason", 0)

        plain = text_message("hello").to_bytes()
        sealed = sealer.seal_with(Carried("orders"), "u-enc", plain)
        tampered = bytearray(sealer.seal_with(Carried("orders"), "u-bad", plain))
        tampered[-1] ^= 0x80
        assert answer(anonymous, "u-auth", "AUTH.IN", plain) == (FrameType.ERROR, NOT_AUTHENTICATED)
        assert answer(anonymous, "u-clear", "ENC.IN", plain) == (FrameType.ERROR, RULE_VETO)
        assert answer(anonymous, "u-bad", "ENC.IN", bytes(tampered)) == (FrameType.ERROR, SECURITY_ERROR)
        assert answer(anonymous, "u-enc", "ENC.IN", sealed) == (FrameType.ACK, 0)
        assert answer(anonymous, "u-open", "OPEN.IN", plain) == (FrameType.ACK, 0)
        anonymous.close()
        known = Peer(port)
        assert known.login("QM2", ("QM2", "qm2-secret")).type is FrameType.WELCOME
        assert answer(known, "u-auth2", "AUTH.IN", plain) == (FrameType.ACK, 0)
        for uid in ("u-auth2",):
            known.send(encode_frame(FrameType.CONFIRM, {"uid": uid}))
            assert known.receive().type is FrameType.CONFIRMED
        known.close()
        again = Peer(port)
        assert again.login("QM9", None).type is FrameType.WELCOME
        for uid in ("u-enc", "u-open"):  # the first connection's puts are confirmed on another
            again.send(encode_frame(FrameType.CONFIRM, {"uid": uid}))
            assert again.receive().type is FrameType.CONFIRMED
        again.close()
        depths = {q["name"]: q["status"]["currentDepth"]
                  for q in json.loads(rest.call("GET", f"{BASE}/admin/qmgr/QM1/queue")[2])["queue"] if "status" in q}
        assert (depths["AUTH.IN"], depths["ENC.IN"], depths["OPEN.IN"]) == (1, 1, 1)
        status, _, got = rest.get("ENC.IN")
        assert status == 200 and got == b"hello"
        # the properties are defined at run time too: `relaymq queue define --url` (admin API)
        monkeypatch.setenv("RELAYMQ_ADMIN_CREDENTIALS", str(broker.data_dir / "admin.credentials"))
        url = f"http://127.0.0.1:{broker.http_port}"
        assert main(["queue", "define", "ENC.TWO", "--cryptor", "orders", "--compressor", "zlib",
                     "--authenticator", "channel", "--url", url]) == 0
        [shown] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert shown["security"] == {"authenticator": "channel", "cryptor": "orders", "compressor": "zlib"}
        assert main(["queue", "define", "ENC.BAD", "--cryptor", "nokey", "--url", url]) == 1
        assert "'nokey' is not a key of the key file" in capsys.readouterr().err
    finally:
        broker.cleanup()


def test_everyplace_item_26_encrypted_queue_across_a_channel_between_two_processes(tmp_path) -> None:
    """everyplace.md items 7 and 26, seed 004 l.2599 (an asynchronous put is stored "in a
    secure format that is defined by its destination queue" and the transporter sends that)
    and l.3580-3584 (security checked at each hop): DEVICE's async remote queue SECRET (cryptor
    and compressor) and SERVER's local SECRET (the same cryptor) in two `relaymq serve`
    processes sharing the key. A message put on DEVICE arrives on SERVER and is got back in
    clear; neither store holds it in clear. A second remote queue without the cryptor sends to
    SERVER's encrypted queue LOCKED: SERVER refuses that channel's messages, which stay on
    DEVICE."""
    key = os.urandom(32)
    keys = _key_file(tmp_path / "keys.toml", shared=key)
    server = Node(tmp_path, "SERVER", [{"name": "SECRET", "cryptor": "shared"},
                                       {"name": "LOCKED", "cryptor": "shared"}], [],
                  qmgr_extra={"key_file": keys})
    device = Node(tmp_path, "DEVICE",
                  [{"name": "SECRET", "type": "remote", "queue_manager": "SERVER", "mode": "async",
                    "cryptor": "shared", "compressor": "zlib"},
                   {"name": "LOCKED", "type": "remote", "queue_manager": "SERVER", "mode": "async"}],
                  [{"name": "SERVER", "address": f"127.0.0.1:{server.port}", "retry_initial_ms": 20,
                    "retry_max_ms": 200, "timeout_ms": 5000}],
                  qmgr_extra={"key_file": keys})
    try:
        server.start()
        device.start()
        to_device = Rest(None, device.http_port)
        to_server = Rest(None, server.http_port)
        assert to_device.put("SECRET", SECRET, qmgr="SERVER")[0] == 201
        assert to_device.put("LOCKED", "not encrypted on the way", qmgr="SERVER")[0] == 201
        # A depth counts the channel's put before its unit of work commits (seed l.370: any
        # state), and a get cannot see it until then: wait until a browse finds it committed.
        secret_url = f"{BASE}/messaging/qmgr/SERVER/queue/SECRET/message"
        _until(lambda: to_server.call("GET", secret_url)[0] == 200, 30,
               "the message arrives on SERVER, committed")
        assert SECRET.encode() not in _files_bytes(server.data_dir)
        status, _, got = to_server.call("DELETE", secret_url)
        assert status == 200 and got.decode() == SECRET
        _until(lambda: "does not meet the queue's requirements" in device.log.read_text(), 30,
               "DEVICE logs SERVER's refusal of LOCKED's message")
        on_server, on_device = server.depths(), device.depths()
        assert (on_server.get("LOCKED"), on_device.get("LOCKED")) == (0, 1), (on_server, on_device)
    finally:
        device.stop()
        server.stop()


def test_everyplace_item_26_transmitted_bytes_are_sealed(tmp_path) -> None:
    """everyplace.md item 26, seed 004 l.748 (a cryptor encodes messages "during transit"):
    what the channel sends for an encrypting async remote queue (``Pending.data()``, the PUT
    frame's body) does not hold the body in clear, and opens to the message under the key."""
    keys = {"k": os.urandom(24)}
    with QueueManager.open("DEV", str(tmp_path), security=QueueSecurity(keys)) as qm:
        qm.define_queue("OUT", "remote", queue_manager="SRV", mode="async", cryptor="k")
        qm.put("OUT", text_message(SECRET), qmgr="SRV")
        [pending] = qm.pending_messages("SRV")
        wire = pending.data()
        assert SECRET.encode() not in wire and wire.startswith(b"RMQS")
        clear, carried = QueueSecurity(keys).open(pending.uid, wire)
        assert Message.from_bytes(clear).mq.body.decode() == SECRET and carried.cryptor == "k"


def test_everyplace_item_26_synchronous_put_is_sealed_by_its_remote_definition() -> None:
    """everyplace.md item 26, seed 004 l.3580 ("Remote queue definitions define the security
    requirements that must be satisfied by channels moving messages to target queues") and
    l.596 (a synchronous remote queue: the owning queue controls the security requirements):
    a put through a synchronous remote definition with the target's cryptor goes encrypted
    and is stored there; one through a definition without it is refused by the target with
    3304, over a real channel connection."""
    keys = {"k": os.urandom(32)}

    def prepare(server: QueueManager, device: QueueManager) -> None:
        server.security = device.security = QueueSecurity(keys)
        server.define_queue("ENC", cryptor="k")
        server.define_queue("LOCKED", cryptor="k")
        device.define_queue("ENC", "remote", queue_manager="TGT", cryptor="k", compressor="zlib")
        device.define_queue("LOCKED", "remote", queue_manager="TGT")

    async def scenario() -> None:
        async with linked_queue_managers(prepare) as pair:
            await asyncio.to_thread(pair.device.put, "ENC", text_message(SECRET), qmgr="TGT")
            got = pair.server.get("ENC")
            assert got is not None and got.mq.body.decode() == SECRET
            with pytest.raises(RuleVeto) as refused:
                await asyncio.to_thread(pair.device.put, "LOCKED", text_message("clear"), qmgr="TGT")
            assert refused.value.reason == RULE_VETO and "unencrypted" in refused.value.message
            assert pair.server.depth("LOCKED") == 0

    asyncio.run(scenario())
