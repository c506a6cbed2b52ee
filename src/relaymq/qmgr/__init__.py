"""The queue manager of relaymq: MQ Everyplace's queues, message states and assured delivery
(spec everyplace.md; issue 5), with no sockets of its own (channels and REST stand on it).

    >>> from relaymq.qmgr import QueueManager
    >>> from relaymq.message import Message
    >>> qm = QueueManager.open("QM1", None)          # in memory; a directory gives SQLite
    >>> _ = qm.define_queue("ORDERS", max_depth=1000)
    >>> msg_id = qm.put("ORDERS", Message())
    >>> qm.get("ORDERS").mq.md.MsgId == msg_id
    True
"""

from relaymq.qmgr.definitions import (
    ADMIN,
    ASYNC,
    DEAD_LETTER,
    HOME_SERVER,
    LOCAL,
    REMOTE,
    STORE_AND_FORWARD,
    SYNC,
    SYSTEM_ADMIN_QUEUE,
    SYSTEM_BROKER_CONTROL_QUEUE,
    SYSTEM_DEAD_LETTER_QUEUE,
    SYSTEM_DEFAULT_LOCAL_QUEUE,
    QueueDefinition,
)
from relaymq.qmgr.errors import QueueError
from relaymq.qmgr.expiry import ExpireTime, expire_time_from_field
from relaymq.qmgr.manager import QueueManager
from relaymq.qmgr.resolution import Resolution
from relaymq.qmgr.rules import QueueManagerRule, QueueRule
from relaymq.qmgr.states import Envelope, MessageEvent, PutEvent

__all__ = [
    "ADMIN", "ASYNC", "DEAD_LETTER", "HOME_SERVER", "LOCAL", "REMOTE", "STORE_AND_FORWARD", "SYNC",
    "SYSTEM_ADMIN_QUEUE", "SYSTEM_BROKER_CONTROL_QUEUE", "SYSTEM_DEAD_LETTER_QUEUE", "SYSTEM_DEFAULT_LOCAL_QUEUE",
    "Envelope", "ExpireTime", "MessageEvent", "PutEvent", "QueueDefinition", "QueueError", "QueueManager",
    "QueueManagerRule", "QueueRule", "Resolution", "expire_time_from_field",
]
