"""Where a put to (queue manager, queue) lands: the resolution order of everyplace.md item 22
(seed 004 l.3586-3653, 3332-3339).

1. queue manager aliases, followed through chains (at every queue manager);
2. an exact definition: a local queue when the destination is this queue manager, else a
   remote queue definition for (queue manager, queue);
3. a queue alias (a local queue's or a remote definition's alias names);
4. a store-and-forward queue listing the destination queue manager;
5. discovery: a synchronous route to the destination queue manager when a connection to it
   exists (``reachable``);
6. otherwise fail: UnknownQueue for this queue manager, UnknownQueueManager for another.

A remote definition beats a store-and-forward queue because step 2 comes first. This is the
one function the channel helper and the local put path both call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from relaymq.qmgr.definitions import ASYNC, REMOTE, STORE_AND_FORWARD, QueueDefinition
from relaymq.qmgr.errors import UnknownQueue, UnknownQueueManager
from relaymq.qmgr.names import check_name

LOCAL_QUEUE = "local"
REMOTE_SYNC = "remote_sync"
REMOTE_ASYNC = "remote_async"
STORE_FORWARD = "store_and_forward"
DISCOVERY = "discovery"
#: Routes that hold nothing here: the operation goes over a connection at once (items 8, 21).
SYNCHRONOUS_ROUTES = (REMOTE_SYNC, DISCOVERY)


@dataclass(frozen=True)
class Resolution:
    """The outcome: ``kind``; the definition of the queue that takes the message here (None
    for discovery); the final destination after aliases (``target_qmgr``, ``target_queue``)."""

    kind: str
    definition: QueueDefinition | None
    target_qmgr: str
    target_queue: str

    @property
    def is_local(self) -> bool:
        return self.kind == LOCAL_QUEUE


def resolve_qmgr_alias(name: str, qmgr_aliases: Mapping[str, str]) -> str:
    """Follow queue manager aliases until a real name (a loop is an unknown queue manager)."""
    seen = {name}
    while name in qmgr_aliases:
        name = qmgr_aliases[name]
        if name in seen:
            raise UnknownQueueManager(f"queue manager alias loop through {name!r}")
        seen.add(name)
    return name


def resolve(local_qmgr: str, dest_qmgr: str, dest_queue: str, *,
            definitions: Mapping[tuple[str, str], QueueDefinition],
            queue_aliases: Mapping[tuple[str, str], str],
            qmgr_aliases: Mapping[str, str],
            reachable: Callable[[str], bool] | None = None) -> Resolution:
    """Resolve a put to ``(dest_qmgr, dest_queue)`` on queue manager ``local_qmgr``.

    ``definitions`` maps (owner, name) to each definition; ``queue_aliases`` maps (owner,
    alias) to the real queue name; ``qmgr_aliases`` maps alias -> queue manager name.
    """
    check_name(dest_queue)
    check_name(dest_qmgr, "queue manager")
    qmgr = resolve_qmgr_alias(dest_qmgr, qmgr_aliases)
    local = qmgr == local_qmgr
    for name in (dest_queue, queue_aliases.get((qmgr, dest_queue))):
        if name is None:
            continue
        found = definitions.get((qmgr, name))
        if found is None:
            continue
        if local and found.holds_messages and not found.transmits:
            return Resolution(LOCAL_QUEUE, found, qmgr, name)
        if not local and found.kind == REMOTE:
            kind = REMOTE_ASYNC if found.mode == ASYNC else REMOTE_SYNC
            return Resolution(kind, found, qmgr, name)
    if local:
        raise UnknownQueue(f"no queue {dest_queue!r} on queue manager {local_qmgr!r}")
    for found in definitions.values():
        if found.kind == STORE_AND_FORWARD and qmgr in found.target_queue_managers:
            return Resolution(STORE_FORWARD, found, qmgr, dest_queue)
    if reachable is not None and reachable(qmgr):
        return Resolution(DISCOVERY, None, qmgr, dest_queue)
    raise UnknownQueueManager(f"no route from {local_qmgr!r} to queue {dest_queue!r} on queue manager {qmgr!r}")
