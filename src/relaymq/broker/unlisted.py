"""A restored backlog's tail left unlisted in the store (``Snapshot.unlisted``; issue 16, row 9:
listing a 99,000-delivery tail at start was a third of a restart's instructions).

A session's ``unlisted`` tail sits in seq order between its ``spilled`` entries up to
``tail.after`` and those spilled since the restart (above ``tail.through``). Whatever takes a
spilled entry from the front (``delivery.refill``, ``delivery._drop_oldest``,
``Broker.end_session``) first lists what it needs here: the ids join ``spilled`` in their place
and their references are counted then. Until a tail is listed, the messages it may refer to
are kept whatever their counts say (``MessageRefs.pin``: the range of its ids); once it is
listed, the ones there nothing counts nor another tail keeps are deleted (``sweep``): the
releases that reached 0 meanwhile, and the orphans a crash left among those ids. A crash
before then loses nothing: the rows and their messages are still stored, and the next start
finds the same tail.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING

from relaymq.broker.session import grown

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Session

_MSG_ID = itemgetter(1)  # of a (seq, msg_id) pair


def list_unlisted(broker: Broker, session: Session, want: int) -> None:
    """Make the first ``want`` deliveries kept only in the store listed in ``spilled`` (or all
    there are), listing the session's tail as far as that needs: a refill lists its page."""
    tail = session.unlisted
    if tail is None:
        return
    session.spilled = spilled = grown(session.spilled)
    front: list[tuple[int, int]] = []  # spilled before the tail
    while spilled and len(front) < want and spilled[0][0] <= tail.after:
        front.append(spilled.popleft())
    if len(front) < want:
        ask = want - len(front)
        rows = broker.store.list_queued(session.client_id, tail.after, tail.through, ask)
        broker.refs.add_all(map(_MSG_ID, rows))  # no Python step per id
        spilled.extendleft(reversed(rows))
        tail.count -= len(rows)
        if rows:
            tail.after = rows[-1][0]
        if len(rows) < ask or tail.count <= 0:
            session.unlisted = None
            broker.refs.unpin(tail.low, tail.high)
            sweep(broker, tail.low, tail.high)
    spilled.extendleft(reversed(front))


def list_all(broker: Broker, session: Session) -> None:
    """The session's whole tail listed (its end releases every delivery it kept)."""
    tail = session.unlisted
    if tail is not None:
        list_unlisted(broker, session, len(session.spilled) + tail.count)


def sweep(broker: Broker, low: int, high: int) -> None:
    """A tail that pinned ``low..high`` is listed: delete the stored messages there nothing
    counts and no other tail pins. No record refers to them (every other reference is
    counted), and none was deleted while kept, so each is deleted once."""
    refs = broker.refs
    counts = refs.counts
    for msg_id in broker.store.message_ids(low, high):
        if msg_id not in counts and not refs.pinned(msg_id):
            broker.store.delete_message(msg_id)
