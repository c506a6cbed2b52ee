"""How flows use the queue manager (relaymq.qmgr's asyncio face, ``services["qmgr.aio"]``).

MQInput gets under a confirm id (everyplace.md item 20: get-unconfirmed): the message stays
on its queue, invisible, until the flow has finished with it - committed, sent down the
failure path or put to the backout queue - and only then is it confirmed (deleted). A broker
that dies mid-run therefore loses nothing: when the binding opens again it undoes its confirm
id and the message is visible again. Each queue's binding uses one fixed confirm id.

A message whose run fails is run again where it is (it keeps its place on the queue and, with
``order_mode: user_id``, its order); before that, its new BackoutCount is written to
:class:`BackoutCounts`, so a broker restarted in between gives it back with the count it had
reached - as IBM MQ does for a queue with HARDENBO - and a poison message reaches the backout
threshold instead of starting again from 0 after every restart.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import zlib
from typing import Any

from relaymq.flows.files import read_text, write_atomically
from relaymq.message.message import Message

log = logging.getLogger("relaymq.flows")


def confirm_id_for(queue: str) -> int:
    """The fixed confirm id flows use for gets from ``queue`` (positive, stable across restarts)."""
    return (zlib.crc32(f"relaymq.flows:{queue}".encode()) & 0x7FFFFFFF) or 1


async def recover(aio: Any, queue: str) -> int:
    """Make messages a previous run left get-unconfirmed visible again; returns how many."""
    from relaymq.qmgr.errors import NoMessage

    try:
        return int(await aio.undo(queue, confirm_id_for(queue)))
    except NoMessage:
        return 0


async def get_unconfirmed(aio: Any, queue: str) -> tuple[str, Message] | None:
    """The next message of ``queue`` (uid, message), left get-unconfirmed; None when empty."""
    envelope = await aio.get_envelope(queue, wait=0.0, confirm_id=confirm_id_for(queue))
    return None if envelope is None else (envelope.uid, envelope.message)


async def confirm(aio: Any, uid: str) -> None:
    await aio.confirm_get(uid)


class BackoutCounts:
    """The BackoutCount of queue messages whose runs failed, by queue and message UID, kept
    in one small JSON file (``<data_dir>/flows/backout-counts.json``; only in memory without
    a path). Written only when a run fails or a message that had failed is done with."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.counts: dict[str, dict[str, int]] = {}
        if path is not None and os.path.exists(path):
            try:
                self.counts = {q: {u: int(c) for u, c in by_uid.items()}
                               for q, by_uid in json.loads(read_text(path)).items()}
            except (OSError, ValueError, AttributeError) as err:  # counts start again from the messages'
                log.warning("backout counts %s not read (%s): counting from the messages' own", path, err)
        self._lock = asyncio.Lock()

    def get(self, queue: str, uid: str) -> int:
        return self.counts.get(queue, {}).get(uid, 0)

    async def record(self, queue: str, uid: str, count: int) -> None:
        """``count`` is on disk when this returns."""
        async with self._lock:
            self.counts.setdefault(queue, {})[uid] = count
            await self._save()

    async def forget(self, queue: str, uid: str) -> None:
        async with self._lock:
            by_uid = self.counts.get(queue)
            if by_uid is None or by_uid.pop(uid, None) is None:
                return
            if not by_uid:
                del self.counts[queue]
            await self._save()

    async def _save(self) -> None:
        if self.path is not None:
            await asyncio.to_thread(write_atomically, self.path, json.dumps(self.counts, sort_keys=True))
