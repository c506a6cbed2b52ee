"""Backpressure, not loss (issue 14, "Nothing acknowledged is ever lost").

A PUBACK (for QoS 2 the PUBREC) tells a publisher its message is safe. So when a subscriber's
session is full ([limits] ``max_queued_messages`` / ``max_queued_bytes`` in memory for a clean
session, ``max_stored_messages`` in all for a persistent one) and its client's listener says
``overflow = "block"`` (the default), the broker does not drop what comes next: it holds back
the clients that publish to that session until it has room again.

How, and why it cannot deadlock:

* A full session is *blocking*: ``Session.blocking`` is the list of connections it holds
  back, ``Broker.backpressure.blocking`` has every blocking session with the time it filled
  up. The message
  that filled it is still taken (delivery.overflow).
* A client's QoS 1 PUBLISH, and the PUBREL of a QoS 2 one, is routed with ``hold=True``: when
  one of the sessions it would reach at QoS 1/2 is blocking, routing returns :data:`HELD`
  before anything is delivered, retained or acknowledged. The publication then waits on its
  connection (:class:`Held`, ``Connection.hold``), its acknowledgement still owed, registered
  with that one session.
* The held connection goes on reading its socket, and handles at once what frees someone's
  window or keeps the connection alive: PUBACK, PUBREC and PUBCOMP for messages the broker sent
  it, PINGREQ, DISCONNECT, and QoS 0 PUBLISH (never held: QoS 0 may be dropped under pressure
  anyway, and MQTT orders messages per topic *and QoS*, 3.1.1 4.6). Everything else (QoS 1/2
  PUBLISH, a retained QoS 0 one, which must not be overwritten by the older held one, PUBREL,
  SUBSCRIBE, UNSUBSCRIBE) waits behind the held publication in arrival order,
  so acknowledgements keep the order of the packets they answer (4.6, ``Connection.acks``);
  the topic aliases of waiting PUBLISH packets are resolved as they arrive, in order. So a
  client that is both a held publisher and a subscriber still frees its own window, and every
  blocking session, its own included, drains as fast as its subscriber reads: no cycle of
  held connections can wait for itself.
* Memory: a held connection keeps the publication and what its client sends meanwhile within
  its own window (MQTT 5: the Receive Maximum, ``max_inflight``; paho's default is 20), and
  within ``max_outbound_buffer`` bytes (large messages reach it first: 100 in flight of 1 MB).
  Past it, a client that subscribes to nothing is read no further until its publication is
  routed: its reads free nobody's window, so TCP can hold it back. A client with
  subscriptions is disconnected instead (MQTT 5: DISCONNECT 0x97), since not reading it could
  close a cycle: none of what it sent was acknowledged, so nothing acknowledged is lost and a
  client resends it after it reconnects.
* When the session drains to its low-water mark (half of each limit: :func:`below_low_water`)
  it stops blocking, and each held connection retries on its own turn of the event loop
  (``Broker.defer``), never inside the subscriber's PUBACK: its publication is routed (or held
  again by another full session) and acknowledged, then the packets behind it are handled.
* A session that holds publishers back for longer than :data:`STALLED_AFTER` (its client
  reads nothing, or too slowly to drain half its queue in that time) is logged (WARNING, at
  most every :data:`STALL_LOG_EVERY` per session) and counted: ``$SYS/broker/clients/stalled``
  and ``clients/stalled/total``; ``clients/blocking``, ``clients/held`` and
  ``publish/messages/held`` show the rest.

What cannot be held back, because nothing waits for an answer: publications from inside the
broker (flows, the REST interface, ``psc`` publications, wills) and the retained messages sent
after a SUBSCRIBE. A blocking session still takes those, up to twice its limits; past that they
are dropped and counted like the opt-in policies' drops.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from relaymq.mqtt import packets as p
from relaymq.mqtt.reason_codes import QUOTA_EXCEEDED

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.connection import Connection
    from relaymq.broker.session import Session

log = logging.getLogger("relaymq.backpressure")

#: What routing returns for a publication it held back instead of delivering.
HELD = -1
#: A session that has held publishers back this long (seconds) without draining below its
#: low-water mark is logged and counted as stalled ...
STALLED_AFTER = 10.0
#: ... and logged again at most this often while it stays so.
STALL_LOG_EVERY = 60.0
#: Packets that wait behind a held publication, by type (the others are handled at once).
WAITING_TYPES = frozenset((p.PUBLISH, p.PUBREL, p.SUBSCRIBE, p.UNSUBSCRIBE))


class Held:
    """What a held-back connection keeps: the publication waiting to be routed (``retry``,
    which routes it and returns True, or holds it again and returns False), the packets that
    arrived after it (with their approximate sizes) and the session it waits for."""

    __slots__ = ("retry", "packets", "bytes", "session")

    def __init__(self) -> None:
        self.retry: Callable[[], bool] | None = None
        self.packets: deque[tuple[Any, int]] = deque()
        self.bytes = 0
        self.session: Session | None = None

    def waiting(self) -> bool:
        """Is a publication held (``retry`` set)?"""
        return self.retry is not None


class Backpressure:
    """The broker's backpressure state (``Broker.backpressure``)."""

    __slots__ = ("blocking", "held_on", "policies", "default_overflow", "call_soon", "deferred")

    def __init__(self, listeners: Any) -> None:
        self.blocking: dict[Session, Blocking] = {}  # the blocking sessions
        self.held_on: Session | None = None  # the session that made routing return HELD last
        # What a full session does, by the name of its client's listener; a session restored
        # from the store (or of a listener not configured) takes what every listener says,
        # else "block".
        self.policies: dict[str, str] = {listener.name: listener.overflow for listener in listeners}
        values = set(self.policies.values())
        self.default_overflow = values.pop() if len(values) == 1 else "block"
        # Set by the server: loop.call_soon (Broker.defer); None: calls wait in ``deferred``
        # for Broker.run_deferred (the tick, tests).
        self.call_soon: Callable[[Callable[[], None]], Any] | None = None
        self.deferred: list[Callable[[], None]] = []

    def policy(self, listener: str) -> str:
        """The ``overflow`` of the listener named ``listener``."""
        return self.policies.get(listener, self.default_overflow)


class Blocking:
    """A blocking session's entry in ``Backpressure.blocking``."""

    __slots__ = ("since", "stalled", "logged_at")

    def __init__(self, since: float) -> None:
        self.since = since  # monotonic time it filled up
        self.stalled = False  # counted as stalled in this episode
        self.logged_at = 0.0


def start_blocking(broker: Broker, session: Session) -> None:
    """The session is full (policy ``block``): from now on it holds its publishers back."""
    session.blocking = []
    broker.backpressure.blocking[session] = Blocking(broker.clock.monotonic())
    log.debug("session %s is full: holding back its publishers", session.client_id)


def below_low_water(broker: Broker, session: Session) -> bool:
    """Has a blocking session drained enough to take publications again (half its limits)?"""
    limits = broker.limits
    if session.persistent:
        return (len(session.queue) + session.in_store_only() + len(session.inflight)
                <= limits.max_stored_messages // 2)
    return len(session.queue) <= limits.max_queued_messages // 2 and (
        not limits.max_queued_bytes or session.queued_bytes <= limits.max_queued_bytes // 2)


def relieve(broker: Broker, session: Session) -> None:
    """Called as a blocking session drains: release its publishers at the low-water mark."""
    if below_low_water(broker, session):
        unblock(broker, session)


def unblock(broker: Broker, session: Session) -> None:
    """The session stops blocking (it drained, ended or stopped using ``block``): every
    connection it held back retries."""
    waiters = session.blocking
    if waiters is None:
        return
    session.blocking = None
    entry = broker.backpressure.blocking.pop(session, None)
    if entry is not None and entry.stalled:
        log.warning("session %s takes messages again after holding publishers back for %.0f s",
                    session.client_id, broker.clock.monotonic() - entry.since)
    _wake(broker, waiters)


def wake(broker: Broker, session: Session) -> None:
    """The connections held back by a session retry, though it still blocks: the publication
    may no longer go to it (an UNSUBSCRIBE)."""
    waiters = session.blocking
    if waiters:
        session.blocking = []
        _wake(broker, waiters)


def _wake(broker: Broker, waiters: list[Connection]) -> None:
    for conn in waiters:
        held = conn.held_back
        if held is not None:
            held.session = None
            broker.defer(conn.resume_held)


def hold(conn: Connection, retry: Callable[[], bool]) -> None:
    """Hold ``conn``'s publication until the session routing found full
    (``Backpressure.held_on``, blocking) has room: ``retry`` routes it then. Counted once per
    publication, however often it is held again."""
    session = conn.broker.backpressure.held_on
    assert session is not None and session.blocking is not None  # routing set it when it returned HELD
    held = conn.held_back
    if held is None:
        held = conn.held_back = Held()
    if held.retry is None:
        conn.broker.stats.publications_held += 1
    held.retry = retry
    held.session = session
    session.blocking.append(conn)


def must_wait(conn: Connection, held: Held, packet: Any) -> bool:
    """While ``conn`` is held back: True when ``packet`` waits behind the held publication
    (kept in ``held``), False when it is handled now. A PUBLISH that waits has its topic
    alias resolved now, in arrival order."""
    kind = packet.packet_type
    if kind not in WAITING_TYPES:
        return False
    if kind == p.PUBLISH:
        if packet.qos == 0 and not packet.retain:
            return False  # (a retained one waits: it must not be replaced by an older one)
        from relaymq.broker.handle_publish import resolve_topic

        packet.topic = resolve_topic(conn, packet)
        if conn.level == 5 and packet.properties:
            packet.properties.pop("topic_alias", None)
        size = 16 + len(packet.topic) + len(packet.payload)
    elif kind == p.SUBSCRIBE:
        size = 16 + sum(16 + len(sub.topic_filter) for sub in packet.subscriptions)
    elif kind == p.UNSUBSCRIBE:
        size = 16 + sum(16 + len(topic_filter) for topic_filter in packet.topic_filters)
    else:
        size = 16
    held.packets.append((packet, size))
    held.bytes += size
    limit = conn.broker.limits.max_outbound_buffer
    if held.bytes > limit:
        if _frees_no_window(conn):
            conn.pause_reading("held")
        else:
            log.warning("client %s sent %d bytes of packets while held back, over max_outbound_buffer (%d); "
                        "disconnecting it (none of them was acknowledged)", conn.client_id, held.bytes, limit)
            conn.disconnect_with(QUOTA_EXCEEDED, "too much sent while held back")
    return True


def _frees_no_window(conn: Connection) -> bool:
    """Nothing the client could send next frees a window: it subscribes to nothing, so no
    delivery waits for its acknowledgement. Its socket can then simply stop being read until
    its publication is routed (TCP holds the client back), without a cycle of held
    connections waiting for each other."""
    session = conn.session
    return session is not None and not session.subscriptions and not session.inflight


def forget(conn: Connection) -> None:
    """The held connection closed: what it held was never acknowledged; its client sends it
    again after reconnecting if it wants it delivered (QoS 1/2 resend, MQTT 3.1.1 4.4)."""
    held = conn.held_back
    if held is None:
        return
    conn.held_back = None
    session = held.session
    if session is not None and session.blocking:
        try:
            session.blocking.remove(conn)
        except ValueError:
            pass
    if held.retry is not None:
        log.info("client %s went away while held back: %d packets not handled (nor acknowledged)",
                 conn.client_id, 1 + len(held.packets))


def check(broker: Broker, now: float) -> None:
    """The periodic tick: release a session that drained by other means than an acknowledgement
    (expired messages), and log and count those that held publishers back too long."""
    for session, entry in list(broker.backpressure.blocking.items()):
        if below_low_water(broker, session):
            unblock(broker, session)
            continue
        waiters = session.blocking
        if not waiters or now - entry.since < STALLED_AFTER:
            continue
        if not entry.stalled:
            entry.stalled = True
            broker.stats.stalls += 1
        if now - entry.logged_at >= STALL_LOG_EVERY:
            entry.logged_at = now
            conn = session.connection
            log.warning("session %s has held %d publishers back for %.0f s: its queue is full (%d in memory, "
                        "%d in the store only, %d in flight) and its client %s", session.client_id,
                        len(waiters), now - entry.since, len(session.queue), session.in_store_only(),
                        len(session.inflight),
                        "is not connected" if conn is None else "does not acknowledge (or read) what it is sent")


def held_connections(broker: Broker) -> int:
    """Connections held back now."""
    return sum(len(session.blocking or ()) for session in broker.backpressure.blocking)


def stalled_sessions(broker: Broker) -> int:
    """Sessions stalled now (holding publishers back for longer than STALLED_AFTER)."""
    return sum(1 for entry in broker.backpressure.blocking.values() if entry.stalled)
