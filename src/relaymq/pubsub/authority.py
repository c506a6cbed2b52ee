"""Who may do what with a psc command or a delivery (issue 15 finding 3; pubsub.md item 38).

Why a module of its own: the command checks (RegSub, Publish, DeletePub, ReqUpdate) and the
delivery of each publication ask the same questions of the broker's ACLs; the service
answers them (``SenderAuthority``), the engine only asks.
"""

from __future__ import annotations

from typing import Protocol

#: SenderAuthority.topic's permission for a publication delivered to a subscription's owner.
RECEIVE = "receive"


class SenderAuthority(Protocol):
    """What a psc command's sender may do (issue 15 finding 3), asked whatever
    ``topic_security`` says: the broker's topic ACL and the queue authorities. ``user`` is
    the command's MQMD.UserIdentifier as its entrance stamped it (None: blank, anonymous);
    ``permission`` PUBLISH, SUBSCRIBE (a filter) or RECEIVE (a delivery on a topic)."""

    def topic(self, user: str | None, topic: str, permission: str) -> bool: ...

    def queue(self, user: str | None, qmgr: str, queue: str, action: str) -> bool: ...
