"""Third-party MQTT clients driven synchronously: paho-mqtt 2.x and mosquitto_pub/sub.

The interoperability and durability tests want to say "connect, subscribe, wait for three
messages" in one line each, with every wait bounded and awaited on an event rather than slept.
paho runs its network loop in a thread (``loop_start``), so its callbacks feed thread-safe
state here; the mosquitto command-line clients run as subprocesses whose output a reader thread
parses.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from harness import BrokerProcess

T = TypeVar("T")

WAIT = 15.0  # generous: 2 shared cores, several workers, a Python broker

# Protocol levels by short name: paho constant and mosquitto_pub/sub -V value.
PAHO_PROTOCOLS = {"v31": mqtt.MQTTv31, "v311": mqtt.MQTTv311, "v5": mqtt.MQTTv5}
CLI_VERSIONS = {"v31": "mqttv31", "v311": "mqttv311", "v5": "mqttv5"}
LEVELS = tuple(PAHO_PROTOCOLS)

MOSQUITTO_SUB = shutil.which("mosquitto_sub") or "/usr/bin/mosquitto_sub"
MOSQUITTO_PUB = shutil.which("mosquitto_pub") or "/usr/bin/mosquitto_pub"
STDBUF = shutil.which("stdbuf")


def unique(prefix: str) -> str:
    """A short unique name: v3.1 client ids are limited to 23 characters."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Received:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    alias: int | None = None  # the MQTT 5 Topic Alias it came with (paho does not resolve them)


class Inbox:
    """Messages received by one client, with a bounded wait for a count."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.messages: list[Received] = []

    def add(self, message: Received) -> None:
        with self._cond:
            self.messages.append(message)
            self._cond.notify_all()

    def clear(self) -> None:
        """Forget what arrived so far."""
        with self._cond:
            self.messages.clear()

    def wait_for(self, count: int, timeout: float = WAIT) -> list[Received]:
        """Wait until ``count`` messages arrived; raise with what did arrive on time-out."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.messages) >= count, timeout):
                raise TimeoutError(f"expected {count} message(s) within {timeout:g}s, "
                                   f"got {len(self.messages)}: {self.messages!r}")
            return list(self.messages)

    def first(self, pick: Callable[[Received], T | None], timeout: float = WAIT, what: str = "message") -> T:
        """What ``pick`` makes of the first message (arrived, or arriving within ``timeout``)
        it wants; ``pick`` returns None for the others. Raises AssertionError naming ``what``
        when none comes."""
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = 0
            while True:
                for message in self.messages[seen:]:
                    found = pick(message)
                    if found is not None:
                        return found
                seen = len(self.messages)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._cond.wait_for(lambda: len(self.messages) > seen,  # noqa: B023 - called within this iteration
                                                              remaining):
                    raise AssertionError(f"no {what} within {timeout:g}s ({len(self.messages)} message(s) came)")

    def wait_while_progressing(self, done: Callable[[list[Received]], bool], idle: float,
                               limit: float) -> list[Received]:
        """Wait until ``done(messages)``, giving up when nothing new arrived for ``idle`` seconds
        or after ``limit`` seconds in all. Returns what arrived (the caller judges it)."""
        deadline = time.monotonic() + limit
        with self._cond:
            while not done(self.messages):
                seen = len(self.messages)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                arrived = self._cond.wait_for(lambda: len(self.messages) > seen,  # noqa: B023 - called within this iteration
                                              min(idle, remaining))
                if not arrived:
                    break
            return list(self.messages)

    def wait_quiet(self, timeout: float) -> list[Received]:
        """Return what arrived within ``timeout`` (for checks that something did NOT arrive)."""
        with self._cond:
            self._cond.wait_for(lambda: False, timeout)
            return list(self.messages)


class PahoClient:
    """A paho-mqtt 2.x client (CallbackAPIVersion.VERSION2) with blocking, bounded operations.

    ``clean=False`` asks for a persistent session: clean session 0 at v3.1/3.1.1, clean start 0
    plus a Session Expiry Interval (``session_expiry``, default one hour) at v5.

    ``port`` connects to another listener of the broker than its first; ``tls`` is passed to
    paho's ``tls_set`` (``ca_certs``, ``certfile``, ``keyfile``); ``transport="websockets"``
    speaks MQTT over WebSocket on ``ws_path``; ``properties`` are extra MQTT 5 CONNECT
    properties (paho names: ``TopicAliasMaximum``, ``MaximumPacketSize``, ...);
    ``will_properties`` go with the will (``WillDelayInterval``).
    """

    def __init__(
        self,
        broker: BrokerProcess,
        level: str,
        client_id: str | None = None,
        *,
        clean: bool = True,
        session_expiry: int = 3600,
        will: tuple[str, bytes, int, bool] | None = None,
        will_properties: dict[str, object] | None = None,
        username: str | None = None,
        password: str | None = None,
        port: int | None = None,
        tls: dict[str, str] | None = None,
        transport: str = "tcp",
        ws_path: str = "/mqtt",
        properties: dict[str, object] | None = None,
        keepalive: int = 60,
    ) -> None:
        self.broker = broker
        self.level = level
        self.protocol = PAHO_PROTOCOLS[level]
        self.client_id = client_id or unique(f"p{level}")
        self.clean = clean
        self.session_expiry = session_expiry
        self.port = port or broker.port
        self.properties = dict(properties or {})
        self.keepalive = keepalive
        self.inbox = Inbox()
        self.session_present: bool | None = None
        self.connect_reason: str | None = None
        self.connack_properties: Properties | None = None
        self.connack = threading.Event()  # any CONNACK, success or failure
        self.disconnect_reason: str | None = None
        self._connected = threading.Event()
        self.disconnected = threading.Event()
        self._suback: dict[int, tuple[threading.Event, list[int]]] = {}
        self._lock = threading.Lock()
        v5 = self.protocol == mqtt.MQTTv5
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=self.client_id,
            protocol=self.protocol,
            clean_session=None if v5 else clean,
            transport=transport,
        )
        if transport == "websockets":
            self.client.ws_set_options(path=ws_path)
        if tls is not None:
            self.client.tls_set(**tls)
        if username is not None:
            self.client.username_pw_set(username, password)
        self.client.max_inflight_messages_set(20)
        if will:
            topic, payload, qos, retain = will
            will_props = None
            if will_properties:
                will_props = Properties(PacketTypes.WILLMESSAGE)
                for name, value in will_properties.items():
                    setattr(will_props, name, value)
            self.client.will_set(topic, payload, qos, retain, properties=will_props)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        self.client.on_publish = self._on_publish
        self.ack_codes: dict[int, int] = {}  # packet mid -> PUBACK/PUBREC reason code (v5)

    # -- callbacks (paho's network thread) ---------------------------------------------------

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:  # noqa: ANN001
        self.session_present = bool(flags.session_present)
        self.connect_reason = str(reason_code)
        self.connack_properties = properties
        self.connack.set()
        if not reason_code.is_failure:
            self._connected.set()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:  # noqa: ANN001
        self.disconnect_reason = str(reason_code)
        self._connected.clear()
        self.disconnected.set()

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:  # noqa: ANN001
        with self._lock:
            event, granted = self._suback.setdefault(mid, (threading.Event(), []))
        granted.extend(rc.value for rc in reason_codes)
        event.set()

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:  # noqa: ANN001
        self.ack_codes[mid] = getattr(reason_code, "value", 0)

    def _on_message(self, client, userdata, message: mqtt.MQTTMessage) -> None:  # noqa: ANN001
        props = getattr(message, "properties", None)
        alias = getattr(props, "TopicAlias", None) if props is not None else None
        self.inbox.add(Received(message.topic, bytes(message.payload), message.qos,
                                bool(message.retain), alias))

    # -- operations --------------------------------------------------------------------------

    def connect(self, timeout: float = WAIT) -> PahoClient:
        """Connect and wait for a successful CONNACK."""
        self.start_connect()
        if not self._connected.wait(timeout):
            self.client.loop_stop()
            raise TimeoutError(f"{self.client_id}: no successful CONNACK within {timeout:g}s "
                               f"(reason {self.connect_reason})")
        return self

    def start_connect(self) -> PahoClient:
        """Send CONNECT and start the network thread without waiting for the CONNACK."""
        if self.protocol == mqtt.MQTTv5:
            props = Properties(PacketTypes.CONNECT)
            if not self.clean:
                props.SessionExpiryInterval = self.session_expiry
            for name, value in self.properties.items():
                setattr(props, name, value)
            self.client.connect(self.broker.host, self.port, keepalive=self.keepalive,
                                clean_start=self.clean, properties=props)
        else:
            self.client.connect(self.broker.host, self.port, keepalive=self.keepalive)
        self.client.loop_start()
        return self

    def refused(self, timeout: float = WAIT) -> str:
        """Connect expecting a refusal: the CONNACK's reason (paho's name for it)."""
        self.client.reconnect_delay_set(60, 60)  # no retry while the test looks
        self.start_connect()
        try:
            if not self.connack.wait(timeout):
                raise TimeoutError(f"{self.client_id}: no CONNACK within {timeout:g}s")
            assert not self._connected.is_set(), f"{self.client_id}: connected, expected a refusal"
            return str(self.connect_reason)
        finally:
            self.client.disconnect()
            self.client.loop_stop()

    def subscribe(self, topic: str, qos: int, timeout: float = WAIT,
                  user_properties: list[tuple[str, str]] | None = None) -> list[int]:
        """Subscribe and wait for the SUBACK; returns the granted QoS / reason codes. MQTT 5
        ``user_properties`` go with the SUBSCRIBE (``relaymq-filter``, docs/pubsub.md)."""
        props = None
        if user_properties:
            props = Properties(PacketTypes.SUBSCRIBE)
            props.UserProperty = list(user_properties)
        with self._lock:
            result, mid = self.client.subscribe(topic, qos, properties=props)
            assert result == mqtt.MQTT_ERR_SUCCESS, mqtt.error_string(result)
            event, granted = self._suback.setdefault(mid, (threading.Event(), []))
        if not event.wait(timeout):
            raise TimeoutError(f"{self.client_id}: no SUBACK for {topic!r} within {timeout:g}s")
        return granted

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool = False,
                timeout: float = WAIT) -> int:
        """Publish and wait until the QoS flow completed (PUBACK / PUBCOMP, or sent for QoS 0).
        Returns the acknowledgement's reason code (MQTT 5; 0 otherwise)."""
        info = self.client.publish(topic, payload, qos, retain)
        info.wait_for_publish(timeout)
        if not info.is_published():
            raise TimeoutError(f"{self.client_id}: publish to {topic!r} at QoS {qos} not "
                               f"completed within {timeout:g}s")
        return self.ack_codes.get(info.mid, 0)

    def disconnect(self, timeout: float = WAIT) -> None:
        """A normal DISCONNECT (no will), then stop the network thread."""
        self.client.disconnect()
        self.disconnected.wait(timeout)
        self.client.loop_stop()

    def drop(self) -> None:
        """Lose the connection without DISCONNECT: stop the loop, close the socket under it."""
        self.client.loop_stop()
        sock = self.client.socket()
        if sock is not None:
            sock.close()


def paho_client(broker: BrokerProcess, level: str, client_id: str | None = None,
                **options: object) -> PahoClient:
    """A connected :class:`PahoClient`."""
    return PahoClient(broker, level, client_id, **options).connect()  # type: ignore[arg-type]


# -- mosquitto_pub / mosquitto_sub ----------------------------------------------------------------


def cli_base(broker: BrokerProcess, level: str) -> list[str]:
    return ["-h", broker.host, "-p", str(broker.port), "-V", CLI_VERSIONS[level]]


def mosquitto_pub(broker: BrokerProcess, level: str, topic: str, message: bytes, qos: int,
                  *, retain: bool = False, extra: Sequence[str] = (), timeout: float = WAIT) -> None:
    """Run mosquitto_pub to completion (it waits for the QoS flow before it exits)."""
    cmd = [MOSQUITTO_PUB, *cli_base(broker, level), "-t", topic, "-q", str(qos), "-s", *extra]
    if retain:
        cmd.append("-r")
    if not message:
        cmd = [c for c in cmd if c != "-s"] + ["-n"]  # -n: a zero-length message
    done = subprocess.run(cmd, input=message, capture_output=True, timeout=timeout)
    assert done.returncode == 0, (f"mosquitto_pub failed ({done.returncode}): "
                                  f"{done.stderr.decode(errors='replace')}")


class MosquittoSub:
    """A running mosquitto_sub; ``start()`` returns once its SUBACK (or a first message, which
    a resumed session may deliver before the SUBACK) arrived.

    Messages are printed as ``MSG<TAB>topic<TAB>qos<TAB>retain<TAB>hex payload`` and parsed
    into the inbox; ``-d`` debug lines tell when the SUBACK came. stdout is line-buffered
    through ``stdbuf`` so every line arrives as it is printed.
    """

    FORMAT = "MSG\t%t\t%q\t%r\t%x"

    def __init__(self, broker: BrokerProcess, level: str, topic: str, qos: int, *,
                 client_id: str | None = None, clean: bool = True,
                 extra: Sequence[str] = ()) -> None:
        self.client_id = client_id or unique(f"s{level}")
        cmd = [MOSQUITTO_SUB, *cli_base(broker, level), "-t", topic, "-q", str(qos),
               "-i", self.client_id, "-d", "-F", self.FORMAT, *extra]
        if not clean:
            cmd.append("-c")
            if level == "v5":
                cmd += ["-x", "3600"]  # MQTT 5 keeps the session only with an expiry interval
        self.cmd = ([STDBUF, "-oL"] if STDBUF else []) + cmd
        self.inbox = Inbox()
        self.output: list[str] = []
        self._ready = threading.Event()
        self.proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self, timeout: float = WAIT) -> MosquittoSub:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, text=True, errors="replace")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout):
            self.kill()
            raise TimeoutError(f"mosquitto_sub got no SUBACK within {timeout:g}s; output:\n"
                               + "\n".join(self.output[-20:]))
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.output.append(line)
            if line.startswith("MSG\t"):
                _, topic, qos, retain, payload = line.split("\t", 4)
                self.inbox.add(Received(topic, bytes.fromhex(payload), int(qos), retain == "1"))
                self._ready.set()
            elif "received SUBACK" in line:
                self._ready.set()

    def wait_exit(self, timeout: float = WAIT) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout)
        if self._reader:
            self._reader.join(timeout)
        return code

    def kill(self) -> None:
        """SIGKILL: the process dies, the kernel closes the socket, no DISCONNECT is sent."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(WAIT)

    def stop(self) -> None:
        """Clean end: SIGTERM lets mosquitto_sub send DISCONNECT before it exits."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.kill()
