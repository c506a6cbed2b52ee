"""What ``relaymq pub`` and ``relaymq sub`` share: the mosquitto_pub/mosquitto_sub flags for
the connection, and a blocking wrapper around a paho-mqtt 2.x client.

Why one module: both commands connect the same way (host, port, protocol version, identity,
will, TLS, WebSocket, session expiry) and must report failures the same way (one line, non-zero
exit). Keeping the flags and the client construction here means a fix to one is a fix to both.

Why a blocking wrapper: a command-line client is a straight line (connect, do one thing,
disconnect), while paho runs the network in its own thread and reports through callbacks.
``Connection`` turns the callbacks into waits that end when the awaited thing happened or the
connection was lost; there are no timers of our own: a silent broker is detected by the MQTT
keep-alive (``-k``), as with mosquitto's clients.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from relaymq.cli.client_url import UrlError, apply_url
from relaymq.cli.mqtt5_properties import PropertyError, PropertySet
from relaymq.cli.mqtt5_properties import parse as parse_properties
from relaymq.mqtt.wire import MAX_UINT16
from relaymq.net.binding import MAX_PORT
from relaymq.store.base import NEVER_EXPIRES  # MQTT 5 Session Expiry Interval "never"

#: -V values, mosquitto's spellings included.
PROTOCOL_VERSIONS: dict[str, mqtt.MQTTProtocolVersion] = {
    "31": mqtt.MQTTv31,
    "mqttv31": mqtt.MQTTv31,
    "311": mqtt.MQTTv311,
    "mqttv311": mqtt.MQTTv311,
    "5": mqtt.MQTTv5,
    "mqttv5": mqtt.MQTTv5,
}

CONNECTION_EPILOG = """\
protocol versions (-V): 31 = MQIsdp v3 (MQTT 3.1), 311 = MQTT 3.1.1 (default), 5 = MQTT 5.0.
exit status: 0 success; 1 the connection failed or was refused (the reason is printed on
stderr, e.g. "connection refused: Not authorized"); 2 bad command line."""


class ClientError(Exception):
    """A failure to report as one line on stderr, followed by exit status 1."""


def _int_in(low: int, high: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} must be in {low}..{high}, got {value}")
        return value

    return parse


def _protocol(text: str) -> mqtt.MQTTProtocolVersion:
    try:
        return PROTOCOL_VERSIONS[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"protocol version must be 31, 311 or 5, got {text!r}") from None


def _session_expiry(text: str) -> int:
    value = _int_in(-1, NEVER_EXPIRES, "session expiry")(text)
    return NEVER_EXPIRES if value == -1 else value


def add_client_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the flags pub and sub share. The parser must be made with add_help=False, because
    ``-h`` is the host, as in mosquitto_pub/mosquitto_sub; help is ``--help``."""
    parser.add_argument("--help", action="help", help="show this help and exit")
    connection = parser.add_argument_group("connection")
    connection.add_argument("-h", "--host", default="localhost", metavar="HOST", help="broker host (default localhost)")
    connection.add_argument(
        "-p", "--port", type=_int_in(1, MAX_PORT, "port"), metavar="PORT", help="broker port (default 1883, 8883 with TLS)"
    )
    connection.add_argument(
        "-V", "--protocol-version", dest="protocol", type=_protocol, default=mqtt.MQTTv311,
        metavar="{31,311,5}", help="MQTT protocol version (default 311)",
    )
    connection.add_argument("-i", "--id", dest="client_id", metavar="ID", help="client id (default relaymq-COMMAND-<random>)")
    connection.add_argument("-u", "--username", metavar="USER", help="user name")
    connection.add_argument("-P", "--pw", dest="password", help="password (needs -u)")
    connection.add_argument(
        "-k", "--keepalive", type=_int_in(0, MAX_UINT16, "keepalive"), default=60, metavar="SECONDS",
        help="keep-alive in seconds (default 60, 0 = none)",
    )
    connection.add_argument(
        "-q", "--qos", type=int, choices=(0, 1, 2), default=0, help="quality of service (default 0)"
    )
    connection.add_argument(
        "-x", "--session-expiry", type=_session_expiry, metavar="SECONDS",
        help="MQTT 5 session expiry interval (-1 = never expires)",
    )
    connection.add_argument("-d", "--debug", action="store_true", help="print the MQTT conversation on stderr")
    connection.add_argument("--ws", action="store_true", help="connect over WebSocket instead of plain TCP")
    connection.add_argument("--ws-path", default="/mqtt", metavar="PATH", help="WebSocket request path (default /mqtt)")
    connection.add_argument("-A", dest="bind_address", metavar="ADDRESS",
                            help="bind the outgoing socket to this local address (choose the interface)")
    connection.add_argument("-L", "--url", metavar="URL",
                            help="mqtt(s)://[user[:password]@]host[:port]/topic: host, port, credentials and topic in one")
    connection.add_argument("-D", "--property", dest="properties", nargs="+", action="append",
                            metavar="WORD", help="an MQTT 5 property: -D COMMAND PROPERTY VALUE, or -D COMMAND "
                            "user-property NAME VALUE (COMMAND: connect, publish or subscribe, will); makes "
                            "the client MQTT 5")
    connection.add_argument("--quiet", action="store_true", help="do not print error messages")

    will = parser.add_argument_group("last will (published by the broker if this client vanishes)")
    will.add_argument("--will-topic", metavar="TOPIC", help="topic of the will message")
    will.add_argument("--will-payload", default="", metavar="TEXT", help="payload of the will message")
    will.add_argument("--will-qos", type=int, choices=(0, 1, 2), default=0, help="QoS of the will message")
    will.add_argument("--will-retain", action="store_true", help="retain the will message")

    tls = parser.add_argument_group("TLS")
    tls.add_argument("--cafile", metavar="FILE", help="CA certificates (PEM) to verify the broker; enables TLS")
    tls.add_argument("--tls-use-os-certs", action="store_true", help="enable TLS, verify with the system CAs")
    tls.add_argument("--cert", metavar="FILE", help="client certificate (PEM), for brokers that require one")
    tls.add_argument("--key", metavar="FILE", help="private key (PEM) of --cert")
    tls.add_argument("--insecure", action="store_true", help="do not check the broker's host name")


def report(args: argparse.Namespace, command: str, text: str) -> None:
    """One error line on stderr (``relaymq COMMAND: text``), unless --quiet."""
    if not getattr(args, "quiet", False):
        print(f"relaymq {command}: {text}", file=sys.stderr)


def resolve_target(args: argparse.Namespace, command: str) -> PropertySet:
    """What -L and -D say, applied to ``args`` before anything connects (raise ClientError):
    the URL's host, port, credentials and topic; the -D properties, which make the client
    MQTT 5 as with mosquitto's clients."""
    try:
        apply_url(args, many_topics=command == "sub")
        properties = parse_properties(args.properties, COMMAND_PROPERTIES[command])
    except (UrlError, PropertyError) as error:
        raise ClientError(str(error)) from None
    if not args.topic:
        raise ClientError("give a topic with -t or -L")
    if args.properties:
        args.protocol = mqtt.MQTTv5
    return properties


#: The -D commands each client sends.
COMMAND_PROPERTIES = {"pub": ("connect", "publish", "will"), "sub": ("connect", "subscribe", "will")}


def _check_arguments(args: argparse.Namespace, persistent: bool) -> None:
    """Combinations argparse cannot express; raise ClientError."""
    if args.password is not None and args.username is None:
        raise ClientError("-P (password) needs -u (user name)")
    if (args.cert is None) != (args.key is None):
        raise ClientError("--cert and --key go together")
    if args.will_topic is None and (args.will_payload or args.will_retain or args.will_qos):
        raise ClientError("the will options need --will-topic")
    if args.session_expiry is not None and args.protocol != mqtt.MQTTv5:
        raise ClientError("-x (session expiry) needs MQTT 5 (-V 5)")
    if persistent and not args.client_id:
        raise ClientError("a persistent session (-c) needs a client id (-i)")


def _uses_tls(args: argparse.Namespace) -> bool:
    return bool(args.cafile or args.tls_use_os_certs or args.cert)


def build_client(args: argparse.Namespace, command: str, persistent: bool = False,
                 properties: PropertySet | None = None) -> mqtt.Client:
    """A configured, not yet connected paho client for these arguments."""
    _check_arguments(args, persistent)
    client_id = args.client_id or f"relaymq-{command}-{secrets.token_hex(4)}"
    client = mqtt.Client(
        callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
        client_id=client_id,
        clean_session=None if args.protocol == mqtt.MQTTv5 else not persistent,
        protocol=args.protocol,
        transport="websockets" if args.ws else "tcp",
        reconnect_on_failure=False,
    )
    if args.ws:
        client.ws_set_options(path=args.ws_path)
    if args.username is not None:
        client.username_pw_set(args.username, args.password)
    if args.will_topic is not None:
        try:
            client.will_set(args.will_topic, args.will_payload, args.will_qos, args.will_retain,
                            properties=properties.build("will") if properties is not None else None)
        except ValueError as error:
            raise ClientError(f"bad will: {error}") from None
    if _uses_tls(args):
        try:
            client.tls_set(ca_certs=args.cafile, certfile=args.cert, keyfile=args.key)
        except (OSError, ValueError) as error:
            raise ClientError(f"TLS setup failed: {error}") from None
        client.tls_insecure_set(args.insecure)
    if args.debug:
        client.on_log = lambda _client, _userdata, _level, text: print(text, file=sys.stderr, flush=True)
    return client


def _connect_properties(args: argparse.Namespace, persistent: bool, given: PropertySet) -> Properties | None:
    """MQTT 5 CONNECT properties: -D connect ..., and the session expiry from -x, or "never"
    for -c without -x."""
    if args.protocol != mqtt.MQTTv5:
        return None
    properties = given.build("connect")
    expiry = args.session_expiry
    if expiry is None and persistent:
        expiry = NEVER_EXPIRES
    if expiry is None:
        return properties
    properties = properties or Properties(PacketTypes.CONNECT)
    properties.SessionExpiryInterval = expiry
    return properties


class Connection:
    """A paho client driven from the main thread: open, publish/subscribe and wait, close.

    Every paho callback records what happened and wakes the waiting thread; a lost
    connection wakes it too, so no wait outlives the connection.
    """

    def __init__(self, args: argparse.Namespace, command: str, persistent: bool = False,
                 properties: PropertySet | None = None) -> None:
        self.args = args
        self.persistent = persistent
        self.properties = properties or PropertySet({}, {})
        self.client = build_client(args, command, persistent, self.properties)
        self._changed = threading.Condition()
        self._connack: ReasonCode | None = None
        self.lost: str | None = None
        self._subacks: dict[int, list[ReasonCode]] = {}
        self.suback_reason: str | None = None  # the last SUBACK's Reason String (MQTT 5)
        self._refused_publications: dict[int, str] = {}
        self._closing = False
        self._handler_error: Exception | None = None
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_publish = self._on_publish

    # -- paho callbacks (network thread) -------------------------------------------------
    def _on_connect(self, _c: mqtt.Client, _u: Any, _flags: Any, reason: ReasonCode, _p: Any) -> None:
        with self._changed:
            self._connack = reason
            self._changed.notify_all()

    def _on_disconnect(self, _c: mqtt.Client, _u: Any, _flags: Any, reason: ReasonCode, _p: Any) -> None:
        with self._changed:
            if self._closing:
                pass
            elif self._connack is None:
                # Includes a 3.1.1 CONNACK "unacceptable protocol version", which paho reports
                # only as a protocol error when it is told not to retry with 3.1.
                self.lost = f"the connection closed before the broker accepted it ({reason})"
            else:
                self.lost = f"connection lost: {reason}" if reason.is_failure else "the broker closed the connection"
            self._changed.notify_all()

    def _on_subscribe(self, _c: mqtt.Client, _u: Any, mid: int, reasons: list[ReasonCode], props: Any) -> None:
        with self._changed:
            self._subacks[mid] = reasons
            self.suback_reason = getattr(props, "ReasonString", None) if props is not None else None
            self._changed.notify_all()

    def _on_publish(self, _c: mqtt.Client, _u: Any, mid: int, reason: ReasonCode, _p: Any) -> None:
        with self._changed:
            if reason.is_failure:  # MQTT 5 PUBACK/PUBREC with a failure reason
                self._refused_publications[mid] = str(reason)
            self._changed.notify_all()

    # -- main thread ---------------------------------------------------------------------
    def wait_until(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        """Block until ``done()`` (True) or ``timeout`` seconds pass (False); raise ClientError
        if the connection is lost first, or re-raise what a message handler raised. ``done`` is
        re-evaluated whenever a callback fires."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while not done():
                if self._handler_error is not None:
                    raise self._handler_error
                if self.lost is not None:
                    raise ClientError(self.lost)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    def on_message(self, handler: Callable[[mqtt.MQTTMessage], bool]) -> None:
        """Call ``handler`` (in the network thread) for every message, acknowledge the message
        if the handler returns True (it took the message), then wake waiters so a condition
        that depends on the messages received is re-evaluated.

        Why acknowledge here rather than let paho do it: paho acknowledges after the callback
        returns, so a main thread woken by the callback (``-C`` reached) could send DISCONNECT
        before the PUBACK/PUBCOMP, and a persistent session would get the message again. A
        message the handler did not take (after ``-C``, or when stdout is gone) is not
        acknowledged, so a persistent session gets it next time instead of losing it.
        """
        self.client.manual_ack_set(True)

        def deliver(client: mqtt.Client, _userdata: Any, message: mqtt.MQTTMessage) -> None:
            try:
                if handler(message):
                    client.ack(message.mid, message.qos)
            except Exception as error:  # e.g. BrokenPipeError: `relaymq sub | head -1`
                # Raised in paho's thread it would end the network loop silently and leave the
                # main thread waiting; hand it to the main thread instead.
                with self._changed:
                    self._handler_error = error
            with self._changed:
                self._changed.notify_all()

        self.client.on_message = deliver

    def open(self) -> None:
        """Connect and wait for a successful CONNACK; raise ClientError otherwise."""
        args = self.args
        port = args.port or (8883 if _uses_tls(args) else 1883)
        kwargs: dict[str, Any] = {"properties": _connect_properties(args, self.persistent, self.properties)}
        if args.bind_address:
            kwargs["bind_address"] = args.bind_address
        if args.protocol == mqtt.MQTTv5:
            kwargs["clean_start"] = not self.persistent
        try:
            self.client.connect(args.host, port, args.keepalive, **kwargs)
        except (OSError, ValueError) as error:
            detail = getattr(error, "strerror", None) or str(error)
            raise ClientError(f"cannot connect to {args.host}:{port}: {detail}") from None
        self.client.loop_start()
        self.wait_until(lambda: self._connack is not None)
        if self._connack is not None and self._connack.is_failure:
            raise ClientError(f"connection refused: {self._connack}")

    def publish(self, topic: str, payload: bytes | None, qos: int, retain: bool,
                user_properties: list[tuple[str, str]] | None = None) -> None:
        """Publish and wait until the message has left (QoS 0) or been acknowledged (QoS 1/2).
        ``user_properties`` go out as MQTT 5 User Properties (refused at other levels)."""
        properties = self._properties("publish", user_properties)
        try:
            info = self.client.publish(topic, payload, qos, retain, properties=properties)
        except ValueError as error:
            raise ClientError(f"cannot publish to {topic!r}: {error}") from None
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise ClientError(self.lost or f"cannot publish to {topic!r}: {mqtt.error_string(info.rc)}")
        self.wait_until(info.is_published)
        refused = self._refused_publications.pop(info.mid, None)
        if refused is not None:
            raise ClientError(f"the broker refused the message on {topic!r}: {refused}")

    def _properties(self, command: str, pairs: list[tuple[str, str]] | None) -> Properties | None:
        """-D ``command`` properties and the user properties ``pairs`` (MQTT 5 only)."""
        if pairs and self.client.protocol != mqtt.MQTTv5:
            raise ClientError("user properties need MQTT 5 (-V 5)")
        return self.properties.build(command, pairs)

    def subscribe(self, topic_filters: list[str], qos: int,
                  user_properties: list[tuple[str, str]] | None = None) -> list[ReasonCode]:
        """Subscribe to every filter in one SUBSCRIBE and return the SUBACK's reason codes."""
        properties = self._properties("subscribe", user_properties)
        try:
            result, mid = self.client.subscribe([(topic_filter, qos) for topic_filter in topic_filters],
                                                properties=properties)
        except ValueError as error:
            raise ClientError(f"cannot subscribe: {error}") from None
        if result != mqtt.MQTT_ERR_SUCCESS or mid is None:
            raise ClientError(f"cannot subscribe: {mqtt.error_string(result)}")
        self.wait_until(lambda: mid in self._subacks)
        return self._subacks.pop(mid)

    def close(self) -> None:
        """Send DISCONNECT (so the broker does not publish the will) and stop the network thread."""
        with self._changed:
            self._closing = True
        if self.client.is_connected():
            self.client.disconnect()
        self.client.loop_stop()
