"""Wills (mqtt.md item 25; MQTT 5 3.1.3.2 Will Delay Interval): a client's last message,
published as that client when its connection ends without a DISCONNECT, at once or after a
delay; a delayed will waits here, and a persistent session's is stored with it so a restart
meanwhile does not lose it (persistence.py writes it, persist_read.py reads it back).

:class:`Wills` is the broker's part that owns the waiting wills; handle_connect and the
connection decide when a will is due, this part holds and publishes it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relaymq.broker.records import PendingWill
from relaymq.broker.routing import process_publication
from relaymq.pubsub.topics import reserved_for_broker
from relaymq.store.base import StoredMessage

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Session

log = logging.getLogger("relaymq.broker")


class Wills:
    """The broker's wills: who may publish one, the delayed ones, publishing them."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        #: Wills waiting for their delay: client id -> PendingWill.
        self.pending: dict[str, PendingWill] = {}
        #: Client ids whose pending will is kept in the store with their session (persistent).
        self.stored: set[str] = set()

    def refusal(self, username: str | None, client_id: str, topic: str) -> str | None:
        """Why this client's will may not be published on ``topic``; None if it may. A will is
        a publication by its client, so it passes the checks of a PUBLISH (handle_publish):
        ``$SYS``/``$ISYS`` are the broker's, and the ACL must let the user write the topic.
        Asked at CONNECT and again when the will is published (the ACL may have changed)."""
        if topic.startswith("$") and reserved_for_broker(topic):
            return "$SYS and $ISYS are reserved for the broker"
        acl = self._broker.acl
        if acl is not None and not acl.can_publish(username, client_id, topic):
            return "the ACL refuses it"
        return None

    def publish(self, message: StoredMessage, username: str | None, client_id: str) -> bool:
        """Publish a client's will as that client, if it is still allowed: the ACL is asked
        again now, since it may have changed since the CONNECT (issue 15, finding 5). A will
        that is no longer allowed is dropped with a log line. True if it was published."""
        why = self.refusal(username, client_id, message.topic)
        if why is not None:
            log.info("will of client %s (user %r) on %r not published: %s", client_id, username,
                     message.topic, why)
            return False
        process_publication(self._broker, message, origin=None)
        return True

    def schedule(self, session: Session, due: float, message: StoredMessage) -> None:
        """Hold a will until ``due`` (monotonic; MQTT 5 Will Delay Interval). A persistent
        session's will is stored with it, so a restart meanwhile does not lose it."""
        self.cancel(session.client_id)
        # the session's user is the will's: connect_session made it the connection's user
        self.pending[session.client_id] = PendingWill(due, message, session.username)
        if session.persistent:
            self._broker.refs.acquire(message)
            self.stored.add(session.client_id)

    def restored(self, client_id: str, will: PendingWill) -> None:
        """A delayed will read back from the store with its session (persist_read.py)."""
        self.pending[client_id] = will
        self.stored.add(client_id)

    def cancel(self, client_id: str) -> None:
        """The client came back within the delay: its will is not sent."""
        entry = self.pending.pop(client_id, None)
        if entry is not None and client_id in self.stored:
            self.stored.discard(client_id)
            self._broker.refs.release(entry.message)

    def fire(self, client_id: str) -> None:
        """Publish a waiting will now (its delay passed or its session ended)."""
        entry = self.pending.pop(client_id, None)
        if entry is None:
            return
        self.publish(entry.message, entry.username, client_id)
        if client_id in self.stored:
            self.stored.discard(client_id)
            self._broker.refs.release(entry.message)

    def fire_due(self, now: float) -> list[str]:
        """Publish the wills whose delay has passed; returns their client ids."""
        due = [cid for cid, entry in self.pending.items() if now >= entry.due]
        for cid in due:
            self.fire(cid)
        return due
