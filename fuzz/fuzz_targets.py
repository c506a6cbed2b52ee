"""The decoders the fuzzer drives, each with the one typed error it may raise and seeds.

* ``mqtt``: relaymq.mqtt.reader.PacketReader (framing + relaymq.mqtt.decoder), levels 3, 4
  and 5, broker and client side, bytes fed in pieces: only ``MQTTError``.
* ``http``: the HTTP server's request parsing (relaymq.http.exchange.Exchange on h11) on a
  real asyncio stream that ends after the input: nothing may escape (what escapes is logged
  as a traceback, issue 15 finding 8), only the transport errors the server handles.
* ``psc``: an MQ message (MQMD, MQRFH2/MQRFH, body) decoded and read as a psc command
  (relaymq.message.headers.decode_message, relaymq.pubsub.psc.read_command), and a string
  body holding ``<psc>...</psc>``: only ``FormatError`` / ``PscError``.
* ``message``: relaymq.message.headers.decode_message and every body domain's parser
  (JSON, XML, MIME, JMS map/stream ...): only ``FormatError``.
* ``channel``: the queue manager channel's frame decoder (relaymq.qmgr.channel_frames): only
  ``ChannelProtocolError``. (Channel code belongs to another part; findings are reported.)
"""

from __future__ import annotations

import asyncio
import ssl
import struct

from fuzz_engine import Target

from relaymq.http.exchange import Exchange
from relaymq.http.server import HttpRequest, HttpResponse, HttpServer
from relaymq.message.domains.registry import DOMAINS, parse_body
from relaymq.message.errors import FormatError
from relaymq.message.headers import MQMessage, decode_message, encode_message
from relaymq.message.message import Message
from relaymq.mqtt import packets as p
from relaymq.mqtt.encoder import encode
from relaymq.mqtt.errors import MQTTError
from relaymq.mqtt.reader import PacketReader
from relaymq.pubsub.psc import command_message, read_command
from relaymq.pubsub.reasons import PscError
from relaymq.qmgr.channel_frames import ChannelProtocolError, FrameDecoder, FrameType, encode_frame

# -- MQTT --------------------------------------------------------------------------------------


def _mqtt_seeds() -> list[bytes]:
    will = p.Will("will/topic", b"gone", 1, True, {})
    packets = [
        p.Connect(client_id="c1", will=will, username="u", password=b"pw", keep_alive=30),
        p.Publish("a/b", b"payload", 1, False, False, 7),
        p.Publish("a/b", b"", 0),
        p.Puback(7), p.Pubrec(8), p.Pubrel(8), p.Pubcomp(8),
        p.Subscribe(3, [p.Subscription("a/+", 1), p.Subscription("$share/g/#", 2)]),
        p.Unsubscribe(4, ["a/+"]), p.Pingreq(), p.Disconnect(),
    ]
    seeds = []
    for level in (3, 4, 5):
        stream = b""
        for packet in packets:
            if isinstance(packet, p.Connect):
                packet = p.Connect(protocol_name="MQIsdp" if level == 3 else "MQTT", protocol_level=level,
                                   client_id="c1", will=will, username="u", password=b"pw", keep_alive=30,
                                   properties={"session_expiry_interval": 10} if level == 5 else {})
            if level == 5 and isinstance(packet, p.Publish) and packet.qos:
                packet = p.Publish("a/b", b"x", 1, False, False, 9,
                                   {"user_property": [("k", "v")], "content_type": "text/plain",
                                    "topic_alias": 2, "message_expiry_interval": 5})
            stream += encode(packet, level)
        seeds.append(bytes([level]) + stream)
    return seeds


def mqtt(data: bytes) -> None:
    if not data:
        return
    control, data = data[0], data[1:]
    reader = PacketReader(from_client=not control & 0x80, max_connect_size=65536 * 8)
    if control & 0x40:
        reader.protocol_level = (3, 4, 5)[control % 3]
    step = (control & 0x0F) + 1
    for start in range(0, len(data) or 1, step):
        reader.feed(data[start:start + step])
        while reader.next_packet() is not None:
            pass


MQTT = Target("mqtt", mqtt, (MQTTError,), _mqtt_seeds(), [b"MQTT", b"MQIsdp", b"\x00\x04MQTT\x05", b"\x26",
                                                          b"\xff\xff\xff\x7f"],
              ("relaymq/mqtt/",))

# -- HTTP --------------------------------------------------------------------------------------

_loop = asyncio.new_event_loop()


class _Writer:
    """What Exchange writes to: collects the bytes (the peer is gone once input ends)."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.closing = False

    def write(self, data: bytes) -> None:
        self.out += data

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name: str) -> object:
        return ("192.0.2.1", 40000) if name == "peername" else None


async def _echo(request: HttpRequest) -> HttpResponse:
    return HttpResponse(200, [("content-type", "text/plain")], request.body[:64])


_server = HttpServer(max_header_bytes=4096, max_body_bytes=65536, idle_timeout=0.05, header_timeout=0.05,
                     body_timeout=0.05)
_server.add_route("*", "/q/{name}", _echo)
_server.add_route("GET", "/t/{rest:path}/m", _echo)


async def _serve(data: bytes) -> None:
    reader = asyncio.StreamReader(limit=65536)
    reader.feed_data(data)
    reader.feed_eof()
    await Exchange(_server, reader, _Writer()).run()  # type: ignore[arg-type]


def http(data: bytes) -> None:
    _loop.run_until_complete(_serve(data))


HTTP = Target("http", http, (ConnectionError, TimeoutError, ssl.SSLError), [
    b"GET /q/a HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /q/a?x=1&y HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    b"POST /q/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"GET /t/a/b%2Fc/m HTTP/1.0\r\n\r\nGET /q/b HTTP/1.1\r\nHost: y\r\nExpect: 100-continue\r\n\r\n",
    b"GET http://h/q/a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
], [b"\r\n", b"Content-Length: ", b"Transfer-Encoding: chunked\r\n", b"HTTP/1.1", b"%2F", b"?a=b&"],
    ("relaymq/http/", "h11/"))

# -- psc and messages --------------------------------------------------------------------------


def _psc_seeds() -> list[bytes]:
    seeds = []
    for command in ("<Command>RegSub</Command><Topic>a/#</Topic><QName>Q</QName>",
                    "<Command>Publish</Command><Topic>a/b</Topic><PubOpt>Retain</PubOpt>",
                    "<Command>DeregSub</Command><Topic>a/#</Topic><RegOpt>DeregAll</RegOpt>",
                    "<Command>ReqUpdate</Command><Topic>a/b</Topic>"):
        try:
            seeds.append(encode_message(command_message(command).mq))
        except Exception:  # noqa: BLE001 - a seed the helper does not take; the others do
            pass
    seeds.append(b"\x01<psc><Command>RegSub</Command><Topic>x/#</Topic><QName>Q</QName></psc>body")
    return seeds


def psc(data: bytes) -> None:
    if data[:1] == b"\x01":  # a text body beginning with <psc>
        mq = MQMessage(body=data[1:])
        mq.md.Format = "MQSTR"
    else:
        mq = decode_message(data)
    read_command(Message(mq))


PSC = Target("psc", psc, (FormatError, PscError), _psc_seeds(),
             [b"<psc>", b"</psc>", b"<Command>", b"</Command>", b"<Topic>", b"RegSub", b"<![CDATA[", b"&amp;",
              b"<usr>", b"<mcd><Msd>jms_text</Msd></mcd>", b"RFH ", b"MQHRF2  "],
             ("relaymq/pubsub/psc", "relaymq/message/"))

_DOMAIN_NAMES = sorted(DOMAINS)


def message(data: bytes) -> None:
    if not data:
        return
    if data[0] < 0x20:  # a body for one of the domains
        parse_body(_DOMAIN_NAMES[data[0] % len(_DOMAIN_NAMES)], data[1:])
        return
    decode_message(data)


def _message_seeds() -> list[bytes]:
    seeds = [s for s in _psc_seeds() if s[:1] != b"\x01"]
    bodies = {"JSON": b'{"a": [1, 2.5, "x", {"b": null}], "c": true}',
              "XML": b"<a x='1'><b>t</b><c/></a>", "XMLNSC": b"<a><b>t</b></a>",
              "MIME": b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b--\r\n"}
    for name, body in bodies.items():
        if name in _DOMAIN_NAMES:
            seeds.append(bytes([_DOMAIN_NAMES.index(name)]) + body)
    return seeds


MESSAGE = Target("message", message, (FormatError,), _message_seeds(),
                 [b"MD  ", b"RFH ", b"MQHRF2  ", b"MQSTR   ", b"{", b"[", b'"', b"<", b"</", b"&#", b"--"],
                 ("relaymq/message/",))

# -- channel frames ----------------------------------------------------------------------------


def channel(data: bytes) -> None:
    """Raw bytes (first byte even), or - so that mutations reach the header parser instead of
    breaking the length fields - a frame built around them: type byte, JSON header up to the
    first NUL, body after it."""
    if not data or not data[0] & 1:
        FrameDecoder(max_frame=1 << 20).feed(data[1:])
        return
    head, _, body = data[2:].partition(b"\0")
    payload = struct.pack(">BI", data[1] if len(data) > 1 else 1, len(head)) + head + body
    FrameDecoder(max_frame=1 << 20).feed(struct.pack(">I", len(payload)) + payload)


def _channel_seeds() -> list[bytes]:
    seeds = []
    for frame_type in list(FrameType)[:4]:
        seeds.append(b"\0" + encode_frame(frame_type, {"qmgr": "QM1", "req": 1, "h": {"a": [1, 2]}}, b"body"))
        seeds.append(b"\1" + bytes([int(frame_type)]) + b'{"qmgr": "QM1", "h": {"a": [1, {"b": []}]}}\0body')
    seeds.append(b"\0" + struct.pack(">I", 3) + b"\x00\x01\x00")
    return seeds


CHANNEL = Target("channel", channel, (ChannelProtocolError,), _channel_seeds(), [b"[", b"{", b'{"a":', b"]"],
                 ("relaymq/qmgr/channel_frames",))

TARGETS = {target.name: target for target in (MQTT, HTTP, PSC, MESSAGE, CHANNEL)}
