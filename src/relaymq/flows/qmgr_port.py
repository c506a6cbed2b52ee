"""How flows use the queue manager (relaymq.qmgr's asyncio face, ``services["qmgr.aio"]``).

MQInput gets under a confirm id (everyplace.md item 20: get-unconfirmed): the message stays
on its queue, invisible, until the flow has finished with it - committed, sent down the
failure path or put to the backout queue - and only then is it confirmed (deleted). A broker
that dies mid-run therefore loses nothing: when the binding opens again it undoes its confirm
id and the message is visible again. Each queue's binding uses one fixed confirm id.
"""

from __future__ import annotations

import zlib
from typing import Any

from relaymq.message.message import Message


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
