"""What every link handler shares, and reading a link's terminus (filters, capabilities).

A link handler serves one attached link of an AMQP connection: ``opened()`` after the attach
is answered, ``flow()`` when the peer gave credit, ``delivery(d)`` for a transfer or a
disposition, ``closed(remove)`` when the link or its connection ends (``remove``: the peer
closed the link rather than detached it, e.g. JMS ``unsubscribe``). Handlers change proton
objects and then call ``owner.pump()`` so the engine's output goes out.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from proton import Data, Described, Link, Terminus, symbol

from relaymq.amqp.addresses import QUEUE, TOPIC, Address, AddressScheme

log = logging.getLogger("relaymq.amqp")

#: The filter key and descriptors a JMS selector travels under (Qpid JMS, rhea).
SELECTOR_KEY = symbol("jms-selector")
SELECTOR_DESCRIPTORS = (symbol("apache.org:selector-filter:string"), 0x0000468C00000004)
TOPIC_CAPABILITIES = (symbol("topic"), symbol("temporary-topic"))
QUEUE_CAPABILITIES = (symbol("queue"), symbol("temporary-queue"))


class Owner(Protocol):
    """What a link handler needs of its connection (relaymq.amqp.connection)."""

    user: str | None
    peer: str
    container: str
    scheme: AddressScheme
    services: Any

    def pump(self) -> None: ...

    def spawn(self, coro: Any) -> asyncio.Task[Any]: ...


class LinkHandler:
    def __init__(self, owner: Owner, link: Link, address: Address) -> None:
        self.owner = owner
        self.link = link
        self.address = address
        self.done = False

    async def opened(self) -> None:
        """Called once the attach was answered; may raise to refuse (the link closes)."""

    def flow(self) -> None:
        pass

    def delivery(self, delivery: Any) -> None:
        pass

    def closed(self, remove: bool) -> None:
        self.done = True

    @property
    def at_most_once(self) -> bool:
        """The sender settles first (AMQP snd-settle-mode settled)."""
        return self.link.snd_settle_mode == Link.SND_SETTLED


def _symbols(data: Data) -> list[str]:
    data.rewind()
    found: list[str] = []
    while data.next():
        value = data.get_object()
        if isinstance(value, (list, tuple)):
            found.extend(str(v) for v in value)
        elif value is not None:
            found.append(str(value))
    return found


def terminus_address(terminus: Terminus, scheme: AddressScheme) -> Address:
    """The terminus's address; a bare name with a ``topic`` capability (Qpid JMS's
    ``createTopic``) is a topic."""
    address = scheme.parse(terminus.address)
    capabilities = set(_symbols(terminus.capabilities))
    if address.kind == QUEUE and not str(terminus.address).startswith(scheme.queue_prefix) and \
            capabilities & {str(c) for c in TOPIC_CAPABILITIES}:
        return Address(TOPIC, address.name)
    return address


def selector_of(terminus: Terminus) -> str | None:
    """The JMS selector in a source's filter set, if any."""
    data = terminus.filter
    data.rewind()
    if not data.next():
        return None
    filters = data.get_object()
    if not isinstance(filters, dict):
        return None
    for key, value in filters.items():
        if isinstance(value, Described) and (value.descriptor in SELECTOR_DESCRIPTORS or key == SELECTOR_KEY):
            return str(value.value)
    return None


def echo_selector(terminus: Terminus, selector: str) -> None:
    """Put the accepted selector in our source: a JMS client takes a missing one as 'not
    supported' (AMQP 1.0 part 3.5.8: the filters actually in effect)."""
    terminus.filter.put_object({SELECTOR_KEY: Described(SELECTOR_DESCRIPTORS[0], selector)})


def is_durable(terminus: Terminus) -> bool:
    """A durable subscription as Qpid JMS asks for one: durable terminus, never expires."""
    return terminus.durability != Terminus.NONDURABLE or terminus.expiry_policy == Terminus.EXPIRE_NEVER
