"""The telemetry listener behind SCADAInput nodes (flows-http.md items 2, 10; mqtt.md).

Each port is a small broker of its own - the broker core's sessions, the MQTT codec and the
server's listener, reused as they are - so devices get the full MQIsdp v3 / 3.1.1 / 5
protocol (keep-alive, QoS handshakes, wills) while what they publish goes only into the
flow, not to the main broker's subscribers: the flow decides where it goes. Topics starting
with ``$`` (the endpoint's own $SYS) never enter a flow. Devices log in against the main
broker's password file and ACL (``[access]``), as on any other listener, and their passwords
are checked by the main broker's ``authenticator`` (the server's PasswordChecker: bcrypt off
the event loop, failures delayed per source address), so a login on a telemetry port never
stops the other devices.

Acknowledgements (spec README decision 4: an acknowledgement promises durability). The
broker core sends PUBACK (QoS 1) and PUBCOMP (QoS 2) through its store's ``on_durable``
right after it routed the publication, and PUBREC (QoS 2) after it stored it. The endpoint's
store is wrapped in a gate (:class:`AckGate`): a callback waits until every publication
handed to the flow before it has *finished* its run - its outputs committed (puts on disk),
or sent down the failure path, or put to the backout queue. So a device's QoS 1 publication
is acknowledged only once what the flow made of it survives a crash. A QoS 2 publication's
inbound record is removed behind the same gate, so a crash before the flow's outputs commit
leaves the device's resent PUBREL something to release: the flow runs it again, and nothing
acknowledged is lost. A crash after they committed is not run twice: the run's outputs commit
with a release marker in the broker's database (relaymq.flows.releases, read at start before
the port accepts), and a publication the marker names is finished without a run (exactly
once, docs/flows.md). With a SQLite broker
store, the endpoint keeps its sessions in ``<data_dir>/scada-<port>/``, so a QoS 2
publication of a persistent session (clean session 0) is on disk before PUBREC and is run
after a restart when the device sends PUBREL again.

Each message carries the publishing device's MQTT user name (else its client id) as MQMD
UserIdentifier (first 12 characters), for ``order_mode: user_id``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections import OrderedDict, deque
from collections.abc import Callable
from functools import partial
from typing import Any

from relaymq.broker.broker import Broker
from relaymq.config import ListenerConfig
from relaymq.flows.releases import Releases
from relaymq.server.listeners import Listener, ListenerError
from relaymq.store.base import StoredMessage
from relaymq.store.factory import open_store

log = logging.getLogger("relaymq.flows.scada")

TICK_SECONDS = 0.5
#: Publications whose sender is remembered between PUBLISH and their routing (QoS 2 waits for PUBREL).
MAX_ORIGINS = 65536

#: ``on_publication(stored, user, done, release)``: ``user`` the device's user name or client
#: id, ``done()`` to be called once the flow has finished with the publication, ``release()``
#: (a QoS 2 publication, persistent endpoint) to be called inside the unit of work of the run's
#: outputs (relaymq.flows.releases), else None.
OnPublication = Callable[[StoredMessage, str, Callable[[], None], Callable[[], None] | None], None]


class AckGate:
    """Holds acknowledgement callbacks until every publication handed over before them is done.

    ``ticket()`` when a publication is handed to the flow, ``done(ticket)`` when its run has
    finished; ``after(callback)`` runs ``callback`` once all tickets issued so far are done
    (at once when they are). Callbacks run in the order they were registered, so PUBACKs
    leave in the order the PUBLISHes came, as MQTT requires, even when additional instances
    finish runs out of order."""

    def __init__(self) -> None:
        self.issued = 0
        self.finished = 0  # every ticket <= finished is done
        self.closed = False  # the endpoint stopped: its connections and store are gone
        self._done: set[int] = set()
        self._waiting: deque[tuple[int, Callable[[], None]]] = deque()

    def ticket(self) -> int:
        self.issued += 1
        return self.issued

    def done(self, ticket: int) -> None:
        if self.closed:
            return
        self._done.add(ticket)
        while self.finished + 1 in self._done:
            self.finished += 1
            self._done.discard(self.finished)
        while self._waiting and self._waiting[0][0] <= self.finished:
            self._waiting.popleft()[1]()

    def after(self, callback: Callable[[], None]) -> None:
        if self.closed:
            return
        if self.issued <= self.finished and not self._waiting:
            callback()
        else:
            self._waiting.append((self.issued, callback))

    @property
    def pending(self) -> int:
        return self.issued - self.finished


class _GatedStore:
    """The endpoint's store with ``on_durable`` behind the gate (everything else as is).

    The broker core acknowledges at once, without ``on_durable``, a publication whose routing
    submitted no write to the store (``Store.submitted`` did not move: nothing stored, nothing
    promised). Here the promise is the flow's run, so a publication handed to the flow counts
    as a write: ``submitted`` includes the gate's tickets, and its PUBACK waits for the gate."""

    def __init__(self, inner: Any, gate: AckGate) -> None:
        self._inner = inner
        self._gate = gate

    @property
    def submitted(self) -> int:
        return int(getattr(self._inner, "submitted", 0)) + self._gate.issued

    def on_durable(self, callback: Callable[[], None]) -> None:
        self._gate.after(lambda: self._inner.on_durable(callback))

    # A QoS 2 publication's inbound record (and its message) may go only once the flow's run
    # of it has committed: the endpoint's store is not the flow's, so a crash in between would
    # otherwise leave the device's resent PUBREL nothing to release, and the publication lost.
    # Deferred, a crash means the PUBREL finds it: the flow runs it again, unless its release
    # marker says the run committed (ScadaEndpoint._tap).
    def delete_inbounds(self, rows: list[tuple[int, bool]]) -> None:
        """A read's QoS 2 releases: their records and messages behind the gate (as above)."""
        self._gate.after(lambda: self._inner.delete_inbounds(rows))

    def delete_message(self, msg_id: int) -> None:
        self._gate.after(lambda: self._inner.delete_message(msg_id))

    def delete_deliveries(self, client_id: str, rows: list[tuple[int, int | None]]) -> None:
        """A read's acknowledged deliveries: their rows at once, the messages whose last
        reference went behind the gate (the inner store's one call would not wait)."""
        for seq, msg_id in rows:
            self._inner.delete_delivery(client_id, seq)
            if msg_id is not None:
                self.delete_message(msg_id)

    #: The deletes that pass straight to the inner store: none of them removes a message or a
    #: persistent session's inbound QoS 2 record (a clean session's go with it: nothing of it
    #: survives a crash). Every other ``delete*`` of the Store interface must be defined above;
    #: tests/flows/test_flow_gated_store.py checks it, as a new combined delete reached through
    #: ``__getattr__`` would delete past the gate.
    PASSED_THROUGH = frozenset({"delete_delivery", "delete_session", "delete_subscription", "delete_retained"})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Access:
    """The main broker's ACL (looked up on each call, so a reloaded ACL applies), which also
    notes who is publishing: the broker core asks ``can_publish`` for every PUBLISH right
    before it builds the message (see :meth:`_ScadaBroker.new_message`)."""

    def __init__(self, endpoint: ScadaEndpoint) -> None:
        self.endpoint = endpoint

    def _acl(self) -> Any:
        main = self.endpoint.main_broker
        return main.acl if main is not None else None

    def can_publish(self, username: str | None, client_id: str, topic: str) -> bool:
        broker = self.endpoint.broker
        if broker is not None:
            session = broker.sessions.get(client_id)
            broker.publishing = (topic, username or client_id or "", session is None or session.persistent)
        acl = self._acl()
        return acl is None or bool(acl.can_publish(username, client_id, topic))

    def can_receive(self, username: str | None, client_id: str, topic: str) -> bool:
        acl = self._acl()
        return acl is None or bool(acl.can_receive(username, client_id, topic))

    def can_subscribe(self, username: str | None, client_id: str, topic_filter: str) -> bool:
        acl = self._acl()
        return acl is None or bool(acl.can_subscribe(username, client_id, topic_filter))


class _ScadaBroker(Broker):
    """The endpoint's broker: remembers which device published each message it builds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: (topic, who, whether the publisher's session is persistent) of the PUBLISH being read.
        self.publishing: tuple[str, str, bool] | None = None
        #: msg_id -> (who published it, whether from a persistent session).
        self.origins: OrderedDict[int, tuple[str, bool]] = OrderedDict()

    def new_message(self, topic: str, payload: bytes, qos: int, retain: bool,
                    properties: dict | None = None, expiry_interval: int | None = None) -> StoredMessage:
        message = super().new_message(topic, payload, qos, retain, properties, expiry_interval)
        publishing, self.publishing = self.publishing, None
        if publishing is not None and publishing[0] == topic:
            self.origins[message.msg_id] = publishing[1:]
            if len(self.origins) > MAX_ORIGINS:
                self.origins.popitem(last=False)
        return message


class ScadaEndpoint:
    """A telemetry listener on ``host:port``; ``on_publication`` gets every publication a
    device sends (see :data:`OnPublication`)."""

    def __init__(self, config: Any, host: str, port: int, on_publication: OnPublication, *,
                 main_broker: Any = None) -> None:
        self.persistent = config.broker.store != "memory"
        self.data_dir = os.path.join(config.broker.data_dir, f"scada-{port}")
        self.config = dataclasses.replace(
            config, broker=dataclasses.replace(config.broker, sys_interval=0))
        self.host = host
        self.requested_port = port
        self.on_publication = on_publication
        self.main_broker = main_broker
        self.gate = AckGate()
        self.broker: _ScadaBroker | None = None
        self.listener: Listener | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._store: Any = None
        #: The release markers of this endpoint's QoS 2 publications in the broker's database,
        #: when both the endpoint's store and the broker's are on disk.
        self.releases: Releases | None = None

    @property
    def port(self) -> int:
        return self.listener.port if self.listener is not None else self.requested_port

    async def start(self) -> None:
        loop = asyncio.get_running_loop()

        def notify(callback: Callable[[], None]) -> None:  # the store's wake-up, from its thread
            loop.call_soon_threadsafe(callback)

        broker_config = self.config.broker
        if self.persistent and self.requested_port:
            self._store = await asyncio.to_thread(
                open_store, "sqlite", self.data_dir, notify,
                synchronous=broker_config.sqlite_synchronous, commit_delay=broker_config.commit_delay_ms / 1000.0)
        else:
            self._store = open_store("memory", "", notify)
        passwords = getattr(self.main_broker, "passwords", None)
        self.broker = _ScadaBroker(self.config, _GatedStore(self._store, self.gate), passwords=passwords,
                                   acl=_Access(self))
        self.broker.backpressure.call_soon = loop.call_soon  # held publishers resume on their own turn
        # The main broker's password checks off the event loop, when the server installed one.
        self.broker.authenticator = getattr(self.main_broker, "authenticator", None)
        snapshot = self._store.load()
        self.broker.restore(snapshot)
        self.broker.publication_taps.append(self._tap)
        name = f"scada-{self.requested_port}"
        main_engine = getattr(getattr(self.main_broker, "store", None), "engine", None)
        if self.persistent and self.requested_port and main_engine is not None:
            # before the listener accepts: no publication of this start can meet a stale marker
            self.releases = Releases(main_engine, name)
            await asyncio.to_thread(self.releases.restore, {
                record.msg_id for record in snapshot.inbound})
        listener = ListenerConfig(name=name, host=self.host, port=self.requested_port)
        self.listener = Listener(listener, self.broker, self.config.limits.max_outbound_buffer)
        try:
            await self.listener.start()
        except ListenerError:
            self._store.close()
            raise
        self._ticker = loop.create_task(self._tick(), name=f"{name} tick")

    def _tap(self, stored: StoredMessage) -> None:
        assert self.broker is not None
        user, persistent = self.broker.origins.pop(stored.msg_id, ("", True))
        if stored.topic.startswith("$"):
            return
        ticket = self.gate.ticket()
        releases = self.releases
        # A clean session's QoS 2 publication needs no marker: its inbound record is not
        # stored, so after a crash no PUBREL can find it and nothing runs it again.
        if releases is None or stored.qos != 2 or not persistent:
            self.on_publication(stored, user, lambda: self.gate.done(ticket), None)
            return
        finished = partial(self._released, releases, ticket, stored.msg_id)
        if releases.was_run(stored.msg_id):
            # Its run committed before the last start: not run again. Finished after this read,
            # whose end hands the inbound record's delete to the gate first (``_released``).
            asyncio.get_running_loop().call_soon(finished)
            return
        self.on_publication(stored, user, finished, partial(releases.mark, stored.msg_id))

    def _released(self, releases: Releases, ticket: int, msg_id: int) -> None:
        """A QoS 2 publication's run finished. Its marker goes once the endpoint's delete of its
        inbound record has committed: the gate passes that delete on (it was registered when
        the PUBREL was read) before this callback, so the endpoint store's next commit holds it."""
        self.gate.done(ticket)
        self.gate.after(lambda: self._store.on_durable(lambda: releases.forget(msg_id)))

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            assert self.broker is not None
            self.broker.tick()

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self.listener is not None:
            await self.listener.stop()
        if self.broker is not None:
            self.broker.shutdown()
        self.gate.closed = True
        if self._store is not None:
            await asyncio.to_thread(self._store.close)
