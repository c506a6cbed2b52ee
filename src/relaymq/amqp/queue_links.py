"""Links on ``queue://NAME``: a client's sender puts to the queue, a client's receiver gets
from it (docs/amqp.md "Queues").

Settlement: a transfer the client sent unsettled is accepted only after the put is durable
(``AsyncQueueManager.put`` awaits the storage engine's commit); a pre-settled one is put the
same way, nobody waits. To an at-least-once receiver a message is sent *locked* (the queue
manager's browseAndLock of one message, seed 004 item 13, under the listener's confirm id for
that queue): accepted (or rejected) deletes it, released or modified unlocks it (visible
again, in its place), and so does the link or connection ending before the disposition. A
broker that dies with messages locked for AMQP receivers finds them locked at start-up: the
listener undoes its confirm id on every queue then (:func:`recover`), so they are delivered
again. To an at-most-once receiver (snd-settle-mode settled) the get is a plain destructive
get.
A selector (``apache.org:selector-filter:string``) is the queue manager's own get selector.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

from proton import Condition, Delivery, Link, Message

from relaymq.amqp.jms_mapping import amqp_to_jms, jms_to_amqp
from relaymq.amqp.links import LinkHandler, Owner, echo_selector, selector_of
from relaymq.auth.authorities import ANONYMOUS
from relaymq.amqp.addresses import Address
from relaymq.message.errors import FormatError
from relaymq.message.message import Message as RelayMessage
from relaymq.qmgr.aio import Arrivals
from relaymq.qmgr.errors import NoMessage, NotAuthorized, QueueError
from relaymq.selector import SelectorError, compile_selector

#: Seconds a waiting get holds before it looks at the link again (credit, close).
GET_WAIT = 1.0
MQMD_USER_LENGTH = 12


def confirm_id_for(queue: str) -> int:
    """The confirm id the AMQP listener locks messages of ``queue`` under (positive, stable
    across restarts, apart from the flows' ids)."""
    return (zlib.crc32(f"relaymq.amqp:{queue}".encode()) & 0x7FFFFFFF) or 1


async def recover(aio: Any, queues: list[str]) -> int:
    """Unlock what a previous run left locked for AMQP receivers; returns how many."""
    count = 0
    for queue in queues:
        try:
            count += int(await aio.undo(queue, confirm_id_for(queue)))
        except (NoMessage, QueueError):
            pass
    return count


def principal(owner: Owner) -> str:
    return owner.user or ANONYMOUS


def condition_for(error: BaseException) -> Condition:
    if isinstance(error, NotAuthorized):
        return Condition("amqp:unauthorized-access", str(error))
    if isinstance(error, (FormatError, SelectorError, ValueError)):
        return Condition("amqp:invalid-field", str(error))
    return Condition("amqp:internal-error" if not isinstance(error, QueueError) else "amqp:resource-limit-exceeded",
                     str(error))


class QueueInbound(LinkHandler):
    """A client's sender: each transfer becomes a put."""

    def __init__(self, owner: Owner, link: Link, address: Address, credit: int, max_message_size: int) -> None:
        super().__init__(owner, link, address)
        self.credit = credit
        self.max_message_size = max_message_size

    async def opened(self) -> None:
        qm = self.owner.services["qmgr"]
        qm.queue(self.address.name)  # UnknownQueue: amqp:not-found
        qm.authorize(principal(self.owner), "put", self.address.name)
        self.link.flow(self.credit)

    def delivery(self, delivery: Any) -> None:
        if not delivery.readable or delivery.partial:
            if delivery.pending > self.max_message_size:
                self._refuse(delivery, Condition("amqp:link:message-size-exceeded", "message too large"))
            return
        data = self.link.recv(delivery.pending)
        self.link.advance()
        self.owner.spawn(self._put(delivery, data))

    def _refuse(self, delivery: Any, condition: Condition) -> None:
        delivery.local.condition = condition
        delivery.update(Delivery.REJECTED)
        delivery.settle()

    async def _put(self, delivery: Any, data: bytes | None) -> None:
        try:
            msg = Message()
            msg.decode(data or b"")
            jms = amqp_to_jms(msg, self.owner.scheme)
            relay = RelayMessage.from_jms(jms)
            relay.mq.md.UserIdentifier = (self.owner.user or "")[:MQMD_USER_LENGTH]
            self.owner.services["qmgr"].authorize(principal(self.owner), "put", self.address.name)
            await self.owner.services["qmgr.aio"].put(self.address.name, relay)
        except Exception as exc:  # a refused or undecodable message costs that message only
            if not delivery.settled:
                self._refuse(delivery, condition_for(exc))
        else:
            if not delivery.settled:
                delivery.update(Delivery.ACCEPTED)
            delivery.settle()
        if not self.done and self.link.credit < self.credit // 2:
            self.link.flow(self.credit - self.link.credit)
        self.owner.pump()


class QueueOutbound(LinkHandler):
    """A client's receiver: gets from the queue as long as it has credit."""

    def __init__(self, owner: Owner, link: Link, address: Address) -> None:
        super().__init__(owner, link, address)
        self.selector: str | None = None
        self._credit = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._unsettled: dict[Any, tuple[str, int]] = {}  # delivery -> (uid, lock id)

    async def opened(self) -> None:
        qm = self.owner.services["qmgr"]
        qm.queue(self.address.name)
        qm.authorize(principal(self.owner), "get", self.address.name)
        self.selector = selector_of(self.link.remote_source)
        if self.selector is not None:
            compile_selector(self.selector)  # SelectorError: refused (amqp:invalid-field)
            echo_selector(self.link.source, self.selector)
        self._task = self.owner.spawn(self._run())

    def flow(self) -> None:
        self._credit.set()

    async def _take(self, aio: Any, queue: str) -> tuple[Any, int] | None:
        """The next message, locked (at-least-once) or got (at-most-once), with its lock id."""
        if self.at_most_once:
            envelope = await aio.get_envelope(queue, selector=self.selector)
            return (envelope, 0) if envelope is not None else None
        locked = await aio.browse_and_lock(queue, confirm_id=confirm_id_for(queue), selector=self.selector, limit=1)
        return (locked[0], locked[0].lock_id) if locked else None

    async def _run(self) -> None:
        aio = self.owner.services["qmgr.aio"]
        queue = self.address.name
        async with Arrivals(aio.sync, queue) as arrivals:
            while not self.done:
                if self.link.credit <= 0:
                    await self._credit.wait()
                    self._credit.clear()
                    continue
                try:
                    taken = await self._take(aio, queue)
                except Exception as exc:  # the queue went, the authority was revoked, a bad message
                    self.link.condition = condition_for(exc)
                    self.link.close()
                    self.owner.pump()
                    return
                if taken is None:
                    if self.link.drain_mode and not self.done:
                        self.link.drained()
                        self.owner.pump()
                    await arrivals.wait(GET_WAIT)
                    continue
                envelope, lock_id = taken
                if self.done:  # the link went while the get ran: the message goes back
                    if lock_id:
                        await aio.unlock(queue, envelope.uid, lock_id)
                    break
                try:
                    msg = jms_to_amqp(envelope.message.jms(), self.owner.scheme, self.owner.scheme.format(self.address))
                    msg.delivery_count = max(envelope.message.mq.md.BackoutCount, 0)
                    body = msg.encode()
                except Exception as exc:  # a message JMS cannot express: kept, and the link told
                    if lock_id:
                        await aio.unlock(queue, envelope.uid, lock_id)
                    self.link.condition = Condition("amqp:internal-error",
                                                    f"message {envelope.uid} cannot be mapped: {exc}")
                    self.link.close()
                    self.owner.pump()
                    return
                delivery = self.link.delivery(envelope.uid.encode())
                self.link.send(body)
                self.link.advance()
                if lock_id:
                    self._unsettled[delivery] = (envelope.uid, lock_id)
                else:
                    delivery.settle()
                self.owner.pump()

    def delivery(self, delivery: Any) -> None:
        if not delivery.updated or delivery not in self._unsettled:
            return
        uid, lock_id = self._unsettled.pop(delivery)
        self.owner.spawn(self._dispose(delivery, delivery.remote_state, uid, lock_id))

    async def _dispose(self, delivery: Any, state: int, uid: str, lock_id: int) -> None:
        aio = self.owner.services["qmgr.aio"]
        if state in (Delivery.ACCEPTED, Delivery.REJECTED):
            await aio.delete(self.address.name, uid, lock_id=lock_id)  # REJECTED: refused for good
        else:
            await aio.unlock(self.address.name, uid, lock_id)
        delivery.settle()
        self.owner.pump()

    def closed(self, remove: bool) -> None:
        super().closed(remove)
        self._credit.set()
        for uid, lock_id in list(self._unsettled.values()):
            self.owner.spawn(self.owner.services["qmgr.aio"].unlock(self.address.name, uid, lock_id))
        self._unsettled.clear()
