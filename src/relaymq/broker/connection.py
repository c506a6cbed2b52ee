"""One client connection: bytes in, packets dispatched, bytes out (no I/O of its own).

The server gives the connection a *link* with ``write(bytes)``, ``close()``, ``abort()``,
``get_write_buffer_size()``, ``pause_reading()`` and ``resume_reading()`` (an asyncio
transport, or the WebSocket adapter). A malformed packet closes this connection only (issue:
"malformed packets close only that connection"), with the reason code where the level allows
one (MQTT 5 DISCONNECT or CONNACK) and a log line.

Back-pressure (issue 2, limits): when the link's buffer passes its high-water mark the server
calls ``pause_writing``. From then on the connection reads nothing more from the client (so a
publisher that never reads its PUBACKs is slowed down by TCP, not buffered by us), holds what
it must still write (acknowledgements) in one byte buffer, and past four times
``max_outbound_buffer`` of unsent bytes drops the connection. ``resume_writing`` hands the held
bytes to the link and starts reading again.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from relaymq.mqtt import packets as p
from relaymq.mqtt import reason_codes as rc
from relaymq.mqtt.codec import encode, encode_ack, encode_publish
from relaymq.mqtt.errors import MQTTError, ProtocolError
from relaymq.mqtt.reader import PacketReader
from relaymq.broker.backpressure import Held, must_wait
from relaymq.broker.backpressure import forget as forget_held
from relaymq.broker.delivery import pump, retransmit_due, settle_acknowledged
from relaymq.broker.handle_connect import handle_connect, handle_disconnect, session_disconnected
from relaymq.broker.handle_publish import (
    handle_puback, handle_pubcomp, handle_publish, handle_pubrec, handle_pubrel,
)
from relaymq.broker.handle_subscribe import handle_subscribe, handle_unsubscribe
from relaymq.broker.no_entries import NO_ENTRIES
from relaymq.broker.records import PendingAck
from relaymq.broker.session import NOTHING_QUEUED, grown, made
from relaymq.broker.states import ACCEPT, AWAITING_CONNECT, CHECK_PASSWORD, CLOSE, FLAGS, Event, State, next_state
from relaymq.broker.stats import DROP_TOO_LARGE
from relaymq.ratelog import RefusalLog

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Session
    from relaymq.store.base import StoredMessage

log = logging.getLogger("relaymq.connection")
#: Connections closed before their CONNECT was accepted: one line each, at most 10 per 10 s.
REFUSALS = RefusalLog(log)

#: A client with this many acknowledgements (PUBACK, PUBREC, PUBCOMP) waiting for the store's
#: commit is not read from until half of them went out, so a publisher that floods without a
#: Receive Maximum (MQIsdp, 3.1.1) cannot make the broker hold its backlog in memory. Only
#: store-bound replies count: they go out without the client's help, so this never deadlocks.
MAX_PENDING_ACKS = 1000

#: ``read_paused_for`` while nothing pauses reading: one shared empty set. An empty ``set()``
#: costs 216 bytes, and an idle connection is never paused (issue 8, scenario 6).
NOT_PAUSED: frozenset[str] = frozenset()

#: ``held`` while nothing is held: shared empty bytes, made a bytearray by the first write
#: while paused (an empty bytearray costs 56 bytes on every idle connection, issue 8).
NOTHING_HELD = b""


class LastQoS0:
    """The PUBLISH bytes last encoded for a QoS 0 fan-out: what ``send_publish`` writes to
    every client that gets the publication without a subscription identifier, an expiry or a
    topic alias (each such client's copy is the same bytes). One entry, keyed by the message
    object, RETAIN and protocol level: a new publication, or a client of another level, encodes
    anew; a one-subscriber publication pays one tuple and no dictionary. The entry is one tuple
    read once per call, so brokers on other threads of one process (tests, embedding) can never
    get another message's bytes."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: tuple[StoredMessage | None, bool, int, bytes] = (None, False, 0, b"")

    def encoded(self, message: StoredMessage, retain: bool, level: int) -> bytes:
        last = self.last
        if last[0] is message and last[1] == retain and last[2] == level:
            return last[3]
        data = encode_publish(message.topic, message.payload, 0, retain, False, None, message.properties or None,
                              level)
        self.last = (message, retain, level, data)
        return data


_QOS0 = LastQoS0()

#: A PUBLISH whose payload is at least this large is written as its encoded head and then the
#: payload itself: the server's link hands a write this large to the transport without
#: gathering (copying) it (``FLUSH_AT`` in server/link.py; the broker does not import the server).
WRITTEN_APART_AT = 65536

#: What the CONNECTED state reads (states.py) beyond a publication's exchange (PUBLISH to
#: PUBCOMP: Connection.handle_in_session): packet type -> handler(connection, session, packet),
#: given the session the state guarantees; filled in below the class (Connection.pingreq is one).
#: AWAITING_CONNECT reads CONNECT only (Connection.dispatch).
SESSION_HANDLERS: dict[int, Callable[[Connection, Session, Any], None]] = {}


class Connection:
    # __slots__: with more than 30 attributes an instance's __dict__ is no longer shared and
    # costs about 1.6 KB, a quarter of an idle connection (issue 8, scenario 6)
    __slots__ = (
        "_acks_unregistered", "_dispatching", "acks", "aliases_in", "aliases_out", "broker",
        "bytes_cut_through", "bytes_received", "bytes_sent", "certificate_user", "client_alias_max", "client_id",
        "client_max_packet", "closed", "connected", "created_at", "held", "held_back", "inbound_qos2",
        "inbound_unacked", "keep_alive", "last_received", "last_topic", "level", "link",
        "listener", "messages_received", "messages_sent", "paused", "peer", "problem_information",
        "read_paused_for", "reader", "send_quota", "session", "state", "username", "will", "will_delay",
    )

    def __init__(self, broker: Broker, link: Any, peer: str = "?", listener: str = "default",
                 certificate_user: str | None = None) -> None:
        self.broker = broker
        self.link = link
        self.peer = peer
        self.listener = listener
        self.certificate_user = certificate_user
        self.reader = PacketReader(broker.limits.max_packet_size,
                                   max_connect_size=broker.limits.max_connect_packet_size)
        self.level = 0  # protocol level, known after CONNECT
        #: MQTT 5 Request Problem Information (3.1.2.11.7): 0 forbids Reason Strings and User
        #: Properties on every packet but PUBLISH, CONNACK and DISCONNECT.
        self.problem_information = True
        # Set by the ACCEPT transition and only by it (``accept``): never None in CONNECTED.
        self.session: Session | None = None
        self.client_id: str | None = None
        self.username: str | None = None
        # The state (states.py) and its two views, written together by ``move`` only:
        # ``connected`` a CONNECT was accepted (CONNECTED, and CLOSED after it), ``closed``
        # nothing more is read or written (REFUSED, CLOSED).
        self.state: State = AWAITING_CONNECT
        self.connected, self.closed = FLAGS[AWAITING_CONNECT]
        self.keep_alive = 0
        self.last_received = broker.clock.monotonic()
        # What this connection moved (pubsub.md item 44's per-connection statistics);
        # broker.stats holds the same over all connections.
        self.messages_received = 0  # PUBLISH packets
        self.messages_sent = 0
        self.bytes_received = 0  # bytes of every MQTT packet
        self.bytes_sent = 0
        self.bytes_cut_through = 0  # payload bytes sent at once, never queued
        self.will: StoredMessage | None = None
        self.will_delay = 0
        self.send_quota = broker.limits.max_inflight  # outbound in-flight window
        self.client_max_packet = 0  # 0: no limit announced by the client
        self.client_alias_max = 0  # topic aliases the client accepts from us
        # Topic aliases the client set up, and ours towards it: the shared NO_ENTRIES until
        # the first one (``made``), as most clients use none (an empty dict costs 64 bytes)
        self.aliases_in: dict[int, str] = NO_ENTRIES
        self.last_topic = ""  # the topic name of the last PUBLISH, valid (levels 3 and 4)
        self.aliases_out: dict[str, int] = NO_ENTRIES
        # Receive maximum (MQTT 5 4.9): QoS 1 until its PUBACK, QoS 2 until its PUBCOMP (or a
        # failing PUBREC), on this connection; inbound_qos2 holds the QoS 2 ids counted here.
        self.inbound_unacked = 0
        # None until the first one: most clients never publish at QoS 2 (an empty set is 216 bytes)
        self.inbound_qos2: set[int] | None = None
        # Acknowledgements not sent yet, in the order their packets arrived: [bytes, completes,
        # ready]; the first ones go out as soon as they are ready (acknowledge_*).
        self.acks: deque[PendingAck] | tuple[()] = NOTHING_QUEUED  # a deque once used
        # queued in this read, not yet given to the store (a list once one is: ``acknowledge``)
        self._acks_unregistered: list[PendingAck] | tuple[()] = NOTHING_QUEUED
        self.paused = False  # the link's buffer is over its high-water mark
        self.held: bytes | bytearray = NOTHING_HELD  # written while paused, handed to the link on resume
        # Why reading is paused: "write" (the link is congested), "auth" (CONNECT waits for its
        # password check), "acks" (too many acknowledgements wait for the store). While any
        # reason holds, received packets wait in the reader too.
        self.read_paused_for = NOT_PAUSED
        self._dispatching = False
        # A publication held back by a full session, and the packets behind it (backpressure.py)
        self.held_back: Held | None = None
        self.created_at = broker.clock.monotonic()
        broker.stats.connections_total += 1
        max_conn = broker.limits.max_connections
        if 0 <= max_conn <= len(broker.connections):
            # Every accepted socket counts, CONNECT or not, so sockets that never speak cannot
            # hold the broker's resources past the limit. Nothing has been said yet, so there
            # is nobody to send a CONNACK to: the socket is closed at once (as Mosquitto does).
            log.warning("refusing connection from %s: max_connections (%d) reached", peer, max_conn)
            self.move(CLOSE)
            link.close()
            return
        broker.connections[self] = None

    # ------------------------------------------------------------------ state
    def move(self, event: Event) -> None:
        """Take the transition ``event`` from the current state (states.TRANSITIONS)."""
        self.state = state = next_state(self.state, event)
        self.connected, self.closed = FLAGS[state]

    def check_password(self) -> None:
        """CONNECT read, its password checked off the loop: read nothing until it answers."""
        self.move(CHECK_PASSWORD)
        self.pause_reading("auth")

    def accept(self, session: Session) -> None:
        """The CONNECT is accepted: the connection has ``session`` from now on."""
        self.session = session
        self.move(ACCEPT)
        stats = self.broker.stats
        stats.clients_connected += 1  # counted here and in detach: a count per CONNECT was O(clients)
        stats.clients_maximum = max(stats.clients_maximum, stats.clients_connected)

    # ------------------------------------------------------------------ input
    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.broker.stats.bytes_received += len(data)
        self.bytes_received += len(data)
        self.last_received = self.broker.clock.monotonic()
        self.reader.feed(data)
        self.process_buffered()

    def process_buffered(self) -> None:
        """Dispatch every complete packet received so far; stop while reading is paused (the
        rest waits in the reader until ``resume_reading``)."""
        if self._dispatching:
            return  # called from inside the loop below: it carries on by itself
        self._dispatching = True
        # One unit of work of the store for everything this read does: every copy of a
        # publication (deliveries, retained, queue puts, archive entries) and the state change
        # its acknowledgement waits for commit together, or not at all.
        with self.broker.store.unit():
            try:
                while not self.closed and not self.read_paused_for:
                    packet = self.reader.next_packet()
                    if packet is None:
                        break
                    self.dispatch(packet)
            except MQTTError as err:
                self.protocol_violation(err)
            finally:
                self._dispatching = False
                self._end_read()

    def dispatch(self, packet: p.Packet) -> None:
        """Hand ``packet`` to the handler its state reads it with (states.py): called in
        AWAITING_CONNECT and CONNECTED only (the others read nothing)."""
        session = self.session
        if session is None:  # AWAITING_CONNECT: a session comes with ACCEPT only
            if isinstance(packet, p.Connect):
                handle_connect(self, packet)
                return
            raise ProtocolError("the first packet must be CONNECT")
        held = self.held_back
        if held is not None and must_wait(self, held, packet):
            return  # behind a publication held back by a full session, in arrival order
        self.handle_in_session(session, packet)

    def handle_in_session(self, session: Session, packet: p.Packet) -> None:
        """Hand ``packet`` to its handler in CONNECTED: the packets of a publication's exchange
        by their class (compiled, a native call; four per QoS 2 message: issue 16, row 3), the
        others through ``SESSION_HANDLERS``."""
        if isinstance(packet, p.Publish):
            handle_publish(self, session, packet)
        elif isinstance(packet, p.Pubrel):
            handle_pubrel(self, session, packet)
        elif isinstance(packet, p.Pubrec):
            handle_pubrec(self, session, packet)
        elif isinstance(packet, p.Pubcomp):
            handle_pubcomp(self, session, packet)
        elif isinstance(packet, p.Puback):
            handle_puback(self, session, packet)
        else:
            kind = packet.packet_type
            handler = SESSION_HANDLERS.get(kind)
            if handler is None:
                if kind == p.CONNECT:
                    raise ProtocolError("a second CONNECT on one connection")
                if kind == p.AUTH and self.level == 5:
                    raise ProtocolError("enhanced authentication is not supported")
                raise ProtocolError(f"a client may not send packet type {kind}")
            handler(self, session, packet)

    def resume_held(self) -> None:
        """The full session this connection's publication waited for has room (called on a
        turn of its own, ``Broker.defer``): route the publication, which may be held again by
        another full session, then handle the packets that waited behind it (backpressure.py)."""
        held = self.held_back
        session = self.session
        if held is None or held.session is not None or held.retry is None or self.closed or session is None:
            return  # gone, or already waiting again (only a CONNECTED connection is ever held)
        self._dispatching = True  # as in process_buffered: durable acks registered once, below
        with self.broker.store.unit():  # as in process_buffered: every copy commits together
            try:
                if not held.retry():
                    return
                held.retry = None
                packets = held.packets
                while packets and not self.closed:
                    packet, size = packets.popleft()
                    held.bytes -= size
                    self.handle_in_session(session, packet)
                    if held.waiting():  # not ``held.retry``: mypy (and mypyc) take it for the None set above
                        return  # that one is held back in turn; the rest wait behind it
                self.held_back = None
            except MQTTError as err:
                self.protocol_violation(err)
                return
            except Exception:  # a bug must cost one connection, never the broker (as data_received)
                log.exception("internal error on connection %s; closing it", self.peer)
                self.close(publish_will=False)
                return
            finally:
                self._dispatching = False
                self._end_read()
        if self.held_back is None and "held" in self.read_paused_for:
            self.resume_reading("held")  # read no further while held (backpressure.must_wait)
        else:
            self.process_buffered()  # what arrived while reading was paused for another reason

    def pingreq(self, session: Session, packet: p.Pingreq) -> None:
        self.send(p.Pingresp())  # mqtt.md item 21; seed 000 l.1021

    # ------------------------------------------------------------------ output
    def send(self, packet: p.Packet) -> None:
        if self.closed:
            return
        self.write(encode(packet, self.level or 4))

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        self.broker.stats.bytes_sent += len(data)
        self.bytes_sent += len(data)
        if self.paused:
            held = self.held
            if held is NOTHING_HELD:
                self.held = held = bytearray()
            held += data
            hard_limit = 4 * self.broker.limits.max_outbound_buffer
            if len(held) + self.link.get_write_buffer_size() > hard_limit:
                self.overflowed(hard_limit)
            return
        self.link.write(data)

    def outbound_congested(self) -> bool:
        return self.paused or self.link.get_write_buffer_size() > self.broker.limits.max_outbound_buffer

    def send_publish(self, message: StoredMessage, qos: int, retain: bool, packet_id: int | None,
                     dup: bool = False, subscription_ids: list[int] | None = None) -> bool:
        """Encode and write one PUBLISH; False when it cannot be sent (too large for the client)."""
        stats = self.broker.stats
        new_alias = 0
        payload = message.payload
        # A large payload is written after the encoded head, not copied into one buffer with
        # it (the link hands it to the transport as it is: server/link.py, FLUSH_AT).
        apart = len(payload) >= WRITTEN_APART_AT
        if qos == 0 and not subscription_ids and message.expiry_at is None and not self.client_alias_max:
            # nothing of this client's own in it: the bytes every such client gets, encoded once
            data = _QOS0.encoded(message, retain, self.level)
            apart = False
        elif self.level != 5:  # no properties, no aliases, no maximum packet size below MQTT 5
            data = encode_publish(message.topic, payload, qos, retain, dup, packet_id, None, self.level, apart)
        else:
            props: dict = {}
            if message.properties:
                props.update(message.properties)
            if message.expiry_at is not None:
                # whole seconds left, rounded up: a message sent before it expires has >= 1
                props["message_expiry_interval"] = max(1, math.ceil(message.expiry_at - self.broker.clock.wall()))
            if subscription_ids:
                props["subscription_identifier"] = list(subscription_ids)
            topic = message.topic
            if self.client_alias_max:
                # MQTT 5 3.3.2.3.4: topic aliases towards the client, up to its Topic Alias Maximum;
                # the first PUBLISH of a topic carries the name and the alias, later ones the alias
                # and an empty name. Aliases live as long as this connection.
                alias = self.aliases_out.get(topic)
                if alias is not None:
                    props["topic_alias"] = alias
                    topic = ""
                elif len(self.aliases_out) < self.client_alias_max:
                    new_alias = props["topic_alias"] = len(self.aliases_out) + 1
            data = encode_publish(topic, payload, qos, retain, dup, packet_id, props, self.level, apart)
        if self.client_max_packet and len(data) + (len(payload) if apart else 0) > self.client_max_packet:
            stats.dropped_by_reason[DROP_TOO_LARGE] += 1  # MQTT 5 3.1.2.25: not sent, as if delivered
            stats.bytes_dropped += len(payload)
            return False
        if new_alias:
            self.aliases_out = aliases = made(self.aliases_out)
            aliases[message.topic] = new_alias  # only once the client is told it
        stats.sent_by_qos[qos] += 1
        stats.payload_sent_by_qos[qos] += len(payload)
        self.messages_sent += 1
        self.write(data)
        if apart:
            self.write(payload)
        return True

    # ------------------------------------------------------------------ flow control
    def pause_writing(self) -> None:
        """The link's buffer is over its high-water mark: hold further output, stop reading."""
        self.paused = True
        self.pause_reading("write")

    def resume_writing(self) -> None:
        """The link drained below its low-water mark: send what was held, read again, and
        move queued messages into the in-flight window."""
        if self.closed:
            return
        self.paused = False
        if self.held:
            data, self.held = bytes(self.held), NOTHING_HELD
            self.link.write(data)
        self.resume_reading("write")
        if self.session is not None and self.connected and not self.paused and not self.closed:
            pump(self.broker, self.session)

    def pause_reading(self, why: str) -> None:
        if not self.read_paused_for and not self.closed:
            self.link.pause_reading()
        self.read_paused_for |= {why}

    def resume_reading(self, why: str) -> None:
        """Drop one reason to pause; when none is left, read again and handle what waited."""
        if why not in self.read_paused_for:
            return
        self.read_paused_for = (self.read_paused_for - {why}) or NOT_PAUSED
        if why == "held":
            self.last_received = self.broker.clock.monotonic()  # keep-alive runs again from now
        if not self.read_paused_for and not self.closed:
            self.link.resume_reading()
            self.process_buffered()

    # ------------------------------------------------------------------ QoS 2 received
    def count_inbound_qos2(self, packet_id: int) -> None:
        """A QoS 2 PUBLISH received here counts towards the receive maximum until its PUBCOMP."""
        if self.inbound_qos2 is None:
            self.inbound_qos2 = set()
        self.inbound_qos2.add(packet_id)

    def uncount_inbound_qos2(self, packet_id: int) -> bool:
        """Stop counting ``packet_id``; False when it was not received on this connection."""
        received = self.inbound_qos2
        if received is None or packet_id not in received:
            return False
        received.discard(packet_id)
        return True

    # ------------------------------------------------------------------ acknowledgements
    # PUBACK, PUBREC and PUBCOMP leave in the order of the packets they answer (3.1.1 4.6),
    # each once what it promises is durable (spec README decision 4). One whose message made
    # no store write promises nothing stored: it leaves at once, unless an earlier one of
    # this connection still waits for the store, in which case it waits behind it.

    @property
    def acks_waiting(self) -> int:
        """Acknowledgements not sent yet (MAX_PENDING_ACKS)."""
        return len(self.acks)

    def acknowledge(self, packet_type: int, packet_id: int, reason_code: int, completes: bool,
                    durable: bool) -> PendingAck | None:
        """Send an acknowledgement in order: after the store's next commit when ``durable``
        (something it promises was written), else as soon as those before it went.
        ``completes``: it ends a flow counted by the receive maximum. Returns the queued entry,
        None when it was sent at once."""
        data = encode_ack(packet_type, packet_id, reason_code, self.level)
        if not durable and not self.acks:
            if completes:
                self.inbound_unacked -= 1
            self.write(data)
            return None
        entry = PendingAck(data, completes, not durable)
        self.acks = acks = grown(self.acks)
        acks.append(entry)
        if durable:
            unregistered = self._acks_unregistered
            if not isinstance(unregistered, list):
                self._acks_unregistered = unregistered = []
            unregistered.append(entry)
            if not self._dispatching:
                self._register_acks()
        if len(self.acks) >= MAX_PENDING_ACKS:
            self.pause_reading("acks")
        return entry

    def _end_read(self) -> None:
        """What the handlers of a read left to its end, inside its unit of work: the deliveries
        it acknowledged released and their windows refilled once (delivery.settle_acknowledged),
        then one store callback for its durable acknowledgements."""
        if self.broker.acknowledged:
            settle_acknowledged(self.broker)
        if self._acks_unregistered:
            self._register_acks()

    def _register_acks(self) -> None:
        """One store callback for the durable acknowledgements queued while handling a read:
        it is registered after all their writes, so it covers them."""
        entries, self._acks_unregistered = self._acks_unregistered, NOTHING_QUEUED

        def durable() -> None:
            for entry in entries:
                entry.ready = True
            self.send_ready_acks()

        self.broker.store.on_durable(durable)

    def send_ready_acks(self, resume: bool = True) -> None:
        """Send the acknowledgements at the head of the queue that are ready. ``resume=False``
        when called while another connection's packet is handled (ack_watch.py): reading, if
        paused for too many waiting acknowledgements, resumes at the next commit instead, so
        this connection's packets are never handled inside another's."""
        acks = self.acks
        if acks and acks[0].ready:
            ready: list[bytes] = []  # written as one: a commit readies a read's worth at once
            while acks and acks[0].ready:
                entry = acks.popleft()
                if entry.completes:
                    self.inbound_unacked -= 1
                ready.append(entry.data)
            self.write(ready[0] if len(ready) == 1 else b"".join(ready))
        if resume and len(acks) <= MAX_PENDING_ACKS // 2 and "acks" in self.read_paused_for:
            self.resume_reading("acks")

    def overflowed(self, hard_limit: int) -> None:
        """More than four times ``max_outbound_buffer`` is waiting for a client that does not
        read: drop the connection and what is waiting (docs/configuration.md, [limits])."""
        log.warning("disconnecting %s (client %s): %d bytes waiting to be sent, over the hard limit "
                    "of %d (4 x max_outbound_buffer)", self.peer, self.client_id,
                    len(self.held) + self.link.get_write_buffer_size(), hard_limit)
        self.held = NOTHING_HELD
        self.move(CLOSE)
        self.link.abort()
        self.detach(publish_will=True)

    # ------------------------------------------------------------------ closing
    def protocol_violation(self, err: MQTTError) -> None:
        """Close this connection because of a bad packet (log line; MQTT 5 reason code)."""
        if self.connected:
            log.warning("closing %s (client %s, level %s): %s [reason 0x%02X]", self.peer,
                        self.client_id, self.level or "?", err.message, err.reason_code)
        else:  # anybody can send these, as fast as they can connect: rate-limited (issue 15)
            REFUSALS.refused("closing %s before CONNECT: %s [reason 0x%02X]", self.peer, err.message,
                             err.reason_code)
        if self.level == 5:
            kind = (self.reader.last_first_byte or 0) >> 4
            if err.silent:
                pass  # answering a broken DISCONNECT/ping with a DISCONNECT helps nobody
            elif self.connected:
                code = rc.PROTOCOL_ERROR if kind == p.AUTH else err.reason_code
                self.send(p.Disconnect(code))
            elif err.reason_code >= 0x80:
                self.send(p.Connack(False, err.reason_code))
        elif not self.connected and err.reason_code == rc.UNSUPPORTED_PROTOCOL_VERSION:
            self.send(p.Connack(False, 1))  # 3.1.1 return code 1: unacceptable protocol version
        self.close(publish_will=True)

    def disconnect_with(self, reason_code: int, message: str, publish_will: bool = True) -> None:
        """The broker ends the connection (keep-alive, take-over, limits)."""
        log.info("disconnecting %s (client %s): %s", self.peer, self.client_id, message)
        if self.level == 5 and self.connected:
            self.send(p.Disconnect(reason_code))
        self.close(publish_will)

    def close(self, publish_will: bool) -> None:
        if self.closed:
            return
        self.move(CLOSE)
        if self.held:  # the last words (a DISCONNECT, acknowledgements) go before the close
            data, self.held = bytes(self.held), NOTHING_HELD
            self.link.write(data)
        self.link.close()
        self.detach(publish_will)

    def connection_lost(self) -> None:
        """The socket went away: an I/O error counts as an unexpected close (mqtt.md item 25)."""
        if not self.closed:
            self.move(CLOSE)
            self.detach(publish_will=True)

    def shutdown(self) -> None:
        """Graceful broker shutdown: close without publishing the will (issue: SIGTERM)."""
        if self.level == 5 and self.connected:
            self.send(p.Disconnect(rc.SERVER_SHUTTING_DOWN))
        self.will = None
        self.close(publish_will=False)

    def detach(self, publish_will: bool) -> None:
        connections = self.broker.connections
        if self in connections:  # (detach runs once a connection; be sure it counts once)
            del connections[self]
            if self.connected:
                self.broker.stats.clients_connected -= 1
        if self.held_back is not None:
            forget_held(self)
        session_disconnected(self, publish_will)

    # ------------------------------------------------------------------ timers
    def check_timers(self, now: float) -> None:
        if self.closed:
            return
        if not self.connected:
            # issue 2 limits: a socket (or a WebSocket handshake) that has not completed its
            # CONNECT within limits.connect_timeout of being accepted is closed
            if now - self.created_at > self.broker.limits.connect_timeout:
                log.info("closing %s: no CONNECT within %d s", self.peer, self.broker.limits.connect_timeout)
                self.close(publish_will=False)
            return
        if self.keep_alive and "held" not in self.read_paused_for and now - self.last_received > 1.5 * self.keep_alive:
            # (a publisher held back and not read: its PINGREQs wait unread, its silence is the
            # broker's doing; its clock starts again when reading resumes. A client not read
            # because it does not read either ("write") may be gone: keep-alive still applies)
            # mqtt.md item 21: disconnect after 1.5 x keep alive; the will is published (item 25)
            self.disconnect_with(rc.KEEP_ALIVE_TIMEOUT, "keep alive expired")
            return
        if self.level == 3 and self.session is not None:
            retransmit_due(self.broker, self.session, now)


SESSION_HANDLERS.update({  # the publication's exchange: Connection.handle_in_session
    p.SUBSCRIBE: handle_subscribe, p.UNSUBSCRIBE: handle_unsubscribe, p.PINGREQ: Connection.pingreq,
    p.DISCONNECT: handle_disconnect,
})
