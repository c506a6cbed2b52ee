"""A restored backlog's tail left unlisted in the store (``Snapshot.unlisted``; issue 16, row 9:
listing a 99,000-delivery tail at start was a third of a restart's instructions).

A session's ``unlisted`` tail sits in seq order between its ``spilled`` entries up to
``tail.after`` and those spilled since the restart (above ``tail.through``). Whatever takes a
spilled entry from the front (``delivery.refill``, ``delivery._drop_oldest``,
``Broker.end_session``) first lists what it needs here: the ids join ``spilled`` in their place
and their references are counted then. Until a chunk of a tail (about a page) is listed, the
messages it may refer to are kept whatever their counts say (``MessageRefs.pin``: the range
of its ids); once it is, the ones there nothing counts nor another chunk keeps are deleted
(``sweep``): the releases that reached 0 meanwhile, and the orphans a crash left among those
ids. A backlog drained in order releases its messages below the chunks still kept, so they
go with their rows as before. A crash before then loses nothing: the rows and their messages
are still stored, and the next start finds the same tail.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING

from relaymq.broker.session import grown

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker
    from relaymq.broker.session import Session
    from relaymq.store.base import QueueTail

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
            tail.after = tail.through  # every chunk is listed
        _unpin_listed(broker, tail)
    spilled.extendleft(reversed(front))


def _unpin_listed(broker: Broker, tail: QueueTail) -> None:
    """The chunks of ``tail`` listed in full (up to ``tail.after``): unpinned and swept."""
    chunks = tail.chunks
    while chunks and chunks[0][0] <= tail.after:
        _, low, high = chunks.pop(0)
        broker.refs.unpin(low, high)
        sweep(broker, low, high)


def list_all(broker: Broker, session: Session) -> None:
    """The session's whole tail listed (its end releases every delivery it kept)."""
    tail = session.unlisted
    if tail is not None:
        list_unlisted(broker, session, len(session.spilled) + tail.count)


def sweep(broker: Broker, low: int, high: int) -> None:
    """A tail's chunk that pinned ``low..high`` is listed: delete the stored messages there
    nothing counts and no other chunk pins. No record refers to them (every other reference
    is counted), and none was deleted while kept, so each is deleted once."""
    refs = broker.refs
    counts = refs.counts
    for msg_id in broker.store.message_ids(low, high):
        if msg_id not in counts and not refs.pinned(msg_id):
            broker.store.delete_message(msg_id)
