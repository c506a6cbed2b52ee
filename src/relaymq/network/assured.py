"""Persistent publications between brokers over the queue managers' assured channels (issue
17; seed 003 l.115-135: "each pair of broker queue managers must be connected together by a
pair of WebSphere MQ channels"; l.1432-1440: proxy subscriptions are PersistenceAsPublisher).

A neighbour entry with ``qmgr`` (its queue manager's name, reached by the ``[[qmgr.connection]]``
of that name) makes the link to it *assured* in both directions, when both ends name each
other's queue manager:

- The link's proxy subscriptions at the neighbour carry the content filter
  ``Root.MQMD.Persistence = 0``: over the MQTT link come only non-persistent (QoS 0)
  publications, which keep that lighter path.
- The neighbour, publishing a persistent (QoS 1/2) publication that such a proxy subscription
  matches, puts it (``assured_message.py``) to its remote queue definition of
  ``RELAYMQ.NETWORK.IN`` on this broker's queue manager (asynchronous: a transmission queue),
  *in the publication's own unit of work*: it is on disk there before the publisher's
  acknowledgement leaves, or not at all. Its channel link then moves it with the channels'
  two-phase transfer (put unconfirmed, ACK, CONFIRM; UID duplicate removal): once only
  across a crash of either side.
- This broker takes each message off its local ``RELAYMQ.NETWORK.IN`` and publishes it here
  in one unit of work: the get and the publication (with its copies for every subscriber)
  commit together, so a crash before the commit leaves the message on the queue and one
  after it has removed it: published once.

The path rules are those of a link (``path.py``): the sender does not send what the
receiver would refuse, and the receiver checks again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from typing import Any

from relaymq.network.assured_message import Carried, decode, encode
from relaymq.network.path import accept, is_local, path_of, with_hop
from relaymq.network.proxy import ProxyTable
from relaymq.network.settings import NeighborSettings
from relaymq.qmgr.aio import committed
from relaymq.qmgr.definitions import ASYNC, REMOTE
from relaymq.qmgr.errors import QueueError

log = logging.getLogger("relaymq.network")

#: The queue each broker's queue manager receives its neighbours' persistent publications on.
NETWORK_QUEUE = "RELAYMQ.NETWORK.IN"
#: The content filter of an assured link's proxy subscriptions: the MQTT link carries only these.
ASSURED_FILTER = "Root.MQMD.Persistence = 0"
#: Messages taken off the queue and published in one unit of work (one commit).
BATCH = 100


def assured_targets(neighbors: tuple[NeighborSettings, ...]) -> dict[str, str]:
    """Neighbour name -> its queue manager, for the neighbours whose link is assured."""
    return {n.name: n.qmgr for n in neighbors if n.qmgr}


class AssuredPath:
    """Both halves of the assured path of one broker: the sender (a publication tap) and the
    receiver (the drain of NETWORK_QUEUE)."""

    def __init__(self, me: str, neighbors: tuple[NeighborSettings, ...], proxies: ProxyTable, broker: Any,
                 qm: Any) -> None:
        self.me = me
        self.proxies = proxies
        self.broker = broker
        self.qm = qm
        self.engine = getattr(broker.store, "engine", None)
        self.neighbors(neighbors)
        self.sent: dict[str, int] = {}
        self.received = 0
        self.dropped = 0
        self._warned: set[str] = set()
        #: (neighbour, filter) of proxy subscriptions removed in this turn of the loop.
        self._resubscribing: set[tuple[str, str]] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def neighbors(self, neighbors: tuple[NeighborSettings, ...]) -> None:
        """The neighbours changed (the admin API)."""
        self.targets = assured_targets(neighbors)
        self.collective = frozenset(n.name for n in neighbors if n.in_collective)

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        """Define the queues (the local one, a remote definition per assured neighbour), then
        send from every publication and take what arrives."""
        names = {d.key for d in self.qm.definitions()}
        if (self.qm.name, NETWORK_QUEUE) not in names:
            self.qm.define_queue(NETWORK_QUEUE, description="persistent publications from neighbouring brokers")
        for qmgr in self.targets.values():
            self.define_remote(qmgr)
        loop = asyncio.get_running_loop()
        self.qm.add_listener(NETWORK_QUEUE, lambda _queue: loop.call_soon_threadsafe(self._wake.set))
        self.broker.publication_taps.append(self.tap)
        self._wake.set()  # what arrived while this broker was down
        self._task = asyncio.create_task(self._drain(), name="network assured receiver")

    @property
    def started(self) -> bool:
        return self._task is not None

    def define_remote(self, qmgr: str) -> None:
        if (qmgr, NETWORK_QUEUE) not in {d.key for d in self.qm.definitions()}:
            self.qm.define_queue(NETWORK_QUEUE, REMOTE, queue_manager=qmgr, mode=ASYNC,
                                 description="persistent publications to a neighbouring broker")

    async def stop(self) -> None:
        if self.tap in self.broker.publication_taps:
            self.broker.publication_taps.remove(self.tap)
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    # ------------------------------------------------------------------ sending
    def tap(self, stored: Any) -> int:
        """A publication routed here: a persistent one goes to each assured neighbour whose
        proxy subscription matches it, put in the publication's unit of work. Returns the
        number of neighbours it was put for."""
        if stored.qos == 0 or not self.targets:
            return 0
        user = stored.properties.get("user_property", [])
        if is_local(user):
            return 0
        path = path_of(user)
        done: set[str] = set()
        for key, value in self.broker.subscriptions.match(stored.topic):
            neighbor = self.proxies.neighbor_of(key)
            if neighbor is None or neighbor.name in done:
                continue
            done.add(neighbor.name)
            if getattr(value, "filter_text", None) != ASSURED_FILTER:
                continue  # a link that takes persistent publications itself, over MQTT
            if neighbor.name not in self.targets:
                self._misconfigured(neighbor.name)
                continue
            if neighbor.name in path or (path and neighbor.in_collective and path[-1] in self.collective):
                continue  # it would refuse it (path.py)
            self._put(neighbor.name, stored)
        return sum(1 for name in done if name in self.targets)

    def proxy_changed(self, added: bool, topic_filter: str, key: object, value: Any) -> None:
        """A subscription of the tree changed. A new proxy subscription of an assured
        neighbour brings the persistent retained publications it matches over the channel
        (item 42; the MQTT link's filter keeps them off the link). A subscription made again
        (the link's reconnection: removed and inserted in one call) brings nothing, as MQTT's
        Retain Handling 1."""
        neighbor = self.proxies.neighbor_of(key)
        if neighbor is None or neighbor.name not in self.targets or getattr(value, "filter_text", None) != ASSURED_FILTER:
            return
        if not added:
            if not self._resubscribing:
                asyncio.get_running_loop().call_soon(self._resubscribing.clear)
            self._resubscribing.add((neighbor.name, topic_filter))
            return
        if (neighbor.name, topic_filter) in self._resubscribing:
            return
        wall = self.broker.clock.wall()
        with self._unit():
            for _topic, stored in list(self.broker.retained.match(topic_filter)):
                user = stored.properties.get("user_property", [])
                if (stored.qos and (stored.expiry_at is None or stored.expiry_at > wall) and not is_local(user)
                        and neighbor.name not in path_of(user)):
                    self._put(neighbor.name, stored)

    def _put(self, name: str, stored: Any) -> None:
        carried = Carried(self.me, stored.topic, stored.payload, stored.qos, stored.retain, dict(stored.properties),
                          stored.expiry_at)
        try:
            self.qm.put(NETWORK_QUEUE, encode(carried), qmgr=self.targets[name], wait=False)
        except QueueError as err:
            log.error("network: a persistent publication on %r for %s could not be put to its transmission"
                      " queue: %s", stored.topic, name, err)
            return
        self.sent[name] = self.sent.get(name, 0) + 1

    def _misconfigured(self, name: str) -> None:
        if name not in self._warned:
            self._warned.add(name)
            log.error("network.neighbor: %s asks for persistent publications over the queue managers' channel, but"
                      " its entry here has no qmgr: they do not reach it (set qmgr on both ends)", name)

    # ------------------------------------------------------------------ receiving
    def _unit(self) -> contextlib.AbstractContextManager[None]:
        return self.engine.unit() if self.engine is not None else contextlib.nullcontext()

    async def _drain(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                while await self.take():
                    pass
            except Exception:  # the store failed: this is logged, and tried again at the next arrival
                log.exception("network: publications from neighbours could not be taken")

    async def take(self) -> int:
        """Take up to BATCH messages off NETWORK_QUEUE and publish them here, all in one unit
        of work; return once it is durable. 0 when the queue is empty."""
        taken = 0
        with self._unit():
            while taken < BATCH:
                message = self.qm.get(NETWORK_QUEUE, durable=False)
                if message is None:
                    break
                taken += 1
                self._publish(message)
        if taken and self.engine is not None:
            await committed(self.engine)
        return taken

    def _publish(self, message: Any) -> None:
        try:
            carried = decode(message)
        except ValueError as err:
            self.dropped += 1
            log.error("network: a message on %s is not a publication from a neighbour (dropped): %s", NETWORK_QUEUE, err)
            return
        user = carried.properties.get("user_property", [])
        now = self.broker.clock.wall()
        if is_local(user) or not accept(path_of(user), self.me, carried.sender, self.collective):
            self.dropped += 1
            return
        if carried.expiry_at is not None and carried.expiry_at <= now:
            self.dropped += 1  # expired on the way
            return
        properties = {k: v for k, v in carried.properties.items() if k != "message_expiry_interval"}
        properties["user_property"] = with_hop(user, carried.sender)
        interval = math.ceil(carried.expiry_at - now) if carried.expiry_at is not None else None
        self.broker.publish(carried.topic, carried.payload, carried.qos, carried.retain, properties, interval)
        self.received += 1
