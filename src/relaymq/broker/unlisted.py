"""A restored backlog's tail left unlisted in the store (``Snapshot.unlisted``; issue 16, row 9:
listing a 99,000-delivery tail at start was a third of a restart's instructions).

A session's ``unlisted`` tail sits in seq order between its ``spilled`` entries up to
``tail.after`` and those spilled since the restart (above ``tail.through``). Whatever takes a
spilled entry from the front (``delivery.refill``, ``delivery._drop_oldest``,
``Broker.end_session``) first lists what it needs here: the ids join ``spilled`` in their place
and their references are counted then. Until a chunk of a tail (about a page) is listed, the
messages it may refer to are kept whatever their counts say (``MessageRefs.pin``: the range
of its ids); once it is, the ones there nothing counts nor another chunk keeps are deleted
(``sweep_deferred``): the releases that reached 0 meanwhile (``MessageRefs.deferred``); once
the whole tail is, the orphans a crash left among its ids (``sweep_orphans``). A backlog drained in order
releases its messages below the chunks still kept, so they go with their rows as before. A crash before then loses nothing: the rows and their messages
are still stored, and the next start finds the same tail.
"""

from __future__ import annotations

from functools import partial
from operator import itemgetter
from typing import TYPE_CHECKING

from relaymq.broker.session import grown
from relaymq.store.base import StoreUnavailable

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
            # on a turn of its own: outside the read's unit, whose deletes a flush would not commit
            broker.defer(partial(sweep_orphans, broker, tail.low, tail.high))
        else:
            _unpin_listed(broker, tail)
    spilled.extendleft(reversed(front))


def _unpin_listed(broker: Broker, tail: QueueTail) -> None:
    """The chunks of ``tail`` listed in full (up to ``tail.after``): unpinned, and the releases
    deferred in their ranges done (a backlog drained in order defers none)."""
    refs = broker.refs
    chunks = tail.chunks
    while chunks and chunks[0][0] <= tail.after:
        _, low, high = chunks.pop(0)
        refs.unpin(low, high)
        if refs.deferred:
            sweep_deferred(broker, low, high)


def list_all(broker: Broker, session: Session) -> None:
    """The session's whole tail listed (its end releases every delivery it kept)."""
    tail = session.unlisted
    if tail is not None:
        list_unlisted(broker, session, len(session.spilled) + tail.count)


def sweep_deferred(broker: Broker, low: int, high: int) -> None:
    """A chunk that pinned ``low..high`` is listed: the messages there whose count reached 0
    meanwhile, no longer pinned, are deleted, unless counted again since (each was kept, never
    deleted, so it is deleted once)."""
    refs = broker.refs
    deferred = refs.deferred
    # the fewer to look at: the ids of the range, or the deferred ones
    within = ([m for m in range(low, high + 1) if m in deferred] if high - low < len(deferred)
              else [m for m in deferred if low <= m <= high])
    done = sorted(m for m in within if not refs.pinned(m))
    refs.deferred.difference_update(done)
    for msg_id in done:
        if msg_id not in refs.counts:
            broker.store.delete_message(msg_id)


def sweep_orphans(broker: Broker, low: int, high: int) -> None:
    """A whole tail is listed, whose chunks' ids lie in ``low..high``: delete the stored
    messages there nothing counts and no chunk pins, the orphans a crash left. No record
    refers to them (every other reference is counted) and none is waiting for its delete to
    commit (``Store.message_ids`` lists what is stored once everything submitted is: called
    outside a unit of work, ``Broker.defer``, it flushes them all)."""
    refs = broker.refs
    try:
        stored = broker.store.message_ids(low, high)
    except StoreUnavailable:
        return  # the store cannot write just now: the next start finds them (sqlite_load)
    for msg_id in sorted(set(stored).difference(refs.counts)):
        if not refs.pinned(msg_id):
            refs.deferred.discard(msg_id)
            broker.store.delete_message(msg_id)
