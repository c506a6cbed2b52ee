"""Dynamic nodes: an AMQP link whose terminus asks for a dynamic node (AMQP 1.0 part 3.5.3
``dynamic``; a JMS TemporaryQueue) gets a temporary dynamic queue of the queue manager,
opened from a model queue as an MQ application's MQOPEN would (relaymq.qmgr.dynamic_queues;
pubsub.md items 19-20). Its address goes back in the attach; the queue is deleted when the
link is closed (the dynamic node's default lifetime, delete-on-close) or the connection ends.

The terminus's dynamic-node-properties may name the model (``relaymq-model``, default
SYSTEM.DEFAULT.MODEL.QUEUE) and the dynamic name (``relaymq-dynamic-name``, default AMQ.*).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from proton import Link, Terminus

from relaymq.qmgr.dynamic_queues import DEFAULT_DYNAMIC_NAME, SYSTEM_DEFAULT_MODEL_QUEUE

log = logging.getLogger("relaymq.amqp")

MODEL_PROPERTY = "relaymq-model"
DYNAMIC_NAME_PROPERTY = "relaymq-dynamic-name"


def wants_dynamic(link: Link) -> bool:
    """Whether the peer's terminus of ``link`` (our source for its receiver, our target for
    its sender) asks for a dynamic node."""
    terminus = link.remote_source if link.is_sender else link.remote_target
    return bool(terminus.dynamic)


def _node_properties(terminus: Terminus) -> dict[str, str]:
    data = terminus.properties
    data.rewind()
    if not data.next():
        return {}
    value = data.get_object()
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


class DynamicNodes:
    """The temporary dynamic queues one AMQP connection opened."""

    def __init__(self, qm: Any, owner: str) -> None:
        self.qm = qm
        self.owner = owner
        self.by_link: dict[Link, str] = {}

    async def open(self, link: Link) -> str:
        """A temporary dynamic queue for ``link``; returns its name."""
        terminus = link.remote_source if link.is_sender else link.remote_target
        properties = _node_properties(terminus)
        model = properties.get(MODEL_PROPERTY, SYSTEM_DEFAULT_MODEL_QUEUE)
        dynamic_name = properties.get(DYNAMIC_NAME_PROPERTY, DEFAULT_DYNAMIC_NAME)
        definition = await asyncio.to_thread(self.qm.dynamic.open, model, self.owner, dynamic_name)
        self.by_link[link] = definition.name
        return str(definition.name)

    async def link_closed(self, link: Link) -> None:
        """The peer closed the link: its dynamic node goes (delete-on-close)."""
        name = self.by_link.pop(link, None)
        if name is not None:
            await asyncio.to_thread(self.qm.dynamic.delete, name)

    async def connection_ended(self) -> None:
        """Every temporary dynamic queue this connection opened goes."""
        self.by_link.clear()
        deleted = await asyncio.to_thread(self.qm.dynamic.close_owner, self.owner)
        if deleted:
            log.info("AMQP connection %s ended: temporary dynamic queues %s deleted", self.owner, ", ".join(deleted))
