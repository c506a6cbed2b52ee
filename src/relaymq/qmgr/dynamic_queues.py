"""Model queues and temporary dynamic queues (pubsub.md items 19-20; seed 003 l.1852-1854,
2830-2843, 5487-5493, 6428-6433; WebSphere MQ's MQOPEN of a model queue).

An application opens a *model queue* with a dynamic name (``AMQ.*``: the ``*`` becomes a
unique suffix; a name without ``*`` is taken as it is) and gets a new local queue with the
model's properties: a *temporary dynamic queue*, which belongs to the connection that opened
it. It is deleted, with its messages, when that connection closes or when its owner deletes
it; its subscriptions go with it (the queue manager's deletion listeners, ``QueueManager.
queue_deleted_listeners``, tell the pub/sub service at once). Temporary dynamic queues do not
survive a restart: a queue manager that finds one at start-up (a crash) deletes it.

Why a part of its own: the queue manager's definitions stay what the operator defined; what
is temporary, who owns it and the model queues are kept here.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from relaymq.qmgr.definitions import LOCAL, QueueDefinition
from relaymq.qmgr.errors import BadName, BadProperty, QueueExists, UnknownQueue
from relaymq.qmgr.names import check_name

if TYPE_CHECKING:
    from relaymq.qmgr.manager import QueueManager

log = logging.getLogger("relaymq.qmgr")

#: The model queue every queue manager has (as MQ's SYSTEM.DEFAULT.MODEL.QUEUE, DEFTYPE TEMPDYN).
SYSTEM_DEFAULT_MODEL_QUEUE = "SYSTEM.DEFAULT.MODEL.QUEUE"
#: The dynamic name MQ applications give most often; the ``*`` becomes a unique suffix.
DEFAULT_DYNAMIC_NAME = "AMQ.*"
#: The description that marks a temporary dynamic queue in the store, so that one left by a
#: crash is found and deleted at start-up.
TEMPORARY_DESCRIPTION = "temporary dynamic queue"
#: MQ queue names are at most 48 characters (MQ_Q_NAME_LENGTH); a dynamic name is held to it.
MAX_DYNAMIC_NAME = 48
#: What a model may give the queues it makes (a local queue's properties).
MODEL_PROPERTIES = frozenset({"max_depth", "max_message_size", "expiry", "default_priority"})


class DynamicQueues:
    """The model queues of one queue manager and the temporary dynamic queues open now."""

    def __init__(self, qm: QueueManager) -> None:
        self.qm = qm
        self.models: dict[str, dict[str, Any]] = {SYSTEM_DEFAULT_MODEL_QUEUE: {}}
        self._owners: dict[str, str] = {}  # temporary queue -> the connection that opened it
        self._lock = threading.Lock()
        self._suffix = itertools.count(1)
        self._prefix = os.urandom(4).hex().upper()

    def define_model(self, name: str, **properties: Any) -> None:
        """A model queue: the local-queue properties of the queues opened from it."""
        check_name(name, "model queue")
        unknown = set(properties) - MODEL_PROPERTIES
        if unknown:
            raise BadProperty(f"model queue {name!r}: no property {sorted(unknown)[0]!r}; "
                              f"a model gives {', '.join(sorted(MODEL_PROPERTIES))}")
        self.models[name] = dict(properties)

    def open(self, model: str, owner: str, dynamic_name: str = DEFAULT_DYNAMIC_NAME) -> QueueDefinition:
        """Open ``model`` for the connection ``owner``: a new temporary dynamic queue."""
        properties = self.models.get(model)
        if properties is None:
            raise UnknownQueue(f"no model queue {model!r} (models: {', '.join(sorted(self.models))})")
        name = self._name(dynamic_name)
        definition = self.qm.define_queue(name, LOCAL, description=f"{TEMPORARY_DESCRIPTION} (model {model})",
                                          **properties)
        with self._lock:
            self._owners[name] = owner
        log.info("temporary dynamic queue %s opened from %s by %s", name, model, owner)
        return definition

    def _name(self, dynamic_name: str) -> str:
        """The queue name for a DynamicQName: a trailing ``*`` becomes a unique suffix."""
        if not dynamic_name.endswith("*"):
            name = dynamic_name
        else:
            name = f"{dynamic_name[:-1]}{self._prefix}{next(self._suffix):08X}"
        if "*" in name:
            raise BadName(f"dynamic name {dynamic_name!r}: only a last '*' is replaced")
        if len(name) > MAX_DYNAMIC_NAME:
            raise BadName(f"dynamic name {dynamic_name!r} makes {name!r}, longer than {MAX_DYNAMIC_NAME} characters")
        check_name(name, "dynamic queue")
        if name in self.qm.queue_names():
            raise QueueExists(f"queue {name!r} already exists")
        return name

    def is_temporary(self, name: str) -> bool:
        """Whether ``name`` is a temporary dynamic queue of this queue manager (not an alias)."""
        with self._lock:
            return name in self._owners

    def owned_by(self, owner: str) -> list[str]:
        with self._lock:
            return sorted(q for q, o in self._owners.items() if o == owner)

    def delete(self, name: str) -> bool:
        """Delete a temporary dynamic queue and its messages (its owner closed it). False when
        it is no longer there."""
        if not self.is_temporary(name):
            return False
        try:
            self.qm.delete_queue(name, purge=True)
        except UnknownQueue:
            return False
        finally:
            with self._lock:
                self._owners.pop(name, None)
        return True

    def close_owner(self, owner: str) -> list[str]:
        """The connection ``owner`` closed: delete every temporary dynamic queue it opened."""
        deleted = []
        for name in self.owned_by(owner):
            try:
                if self.delete(name):
                    deleted.append(name)
            except Exception:  # one queue that cannot go must not keep the others
                log.exception("temporary dynamic queue %s of %s was not deleted", name, owner)
        return deleted

    def forget(self, definition: QueueDefinition) -> None:
        """A queue was deleted (by its owner or an administrator): it is no longer open."""
        with self._lock:
            self._owners.pop(definition.name, None)

    def left_by_crash(self) -> list[str]:
        """Temporary dynamic queues in the store at start-up: their connections are gone."""
        return [d.name for d in self.qm.definitions() if d.description.startswith(TEMPORARY_DESCRIPTION)
                and d.name not in self._owners]

    def delete_left_by_crash(self) -> None:
        for name in self.left_by_crash():
            try:
                self.qm.delete_queue(name, purge=True)
                log.info("temporary dynamic queue %s deleted: its connection ended with the last run", name)
            except Exception:
                log.exception("temporary dynamic queue %s left by the last run was not deleted", name)
