"""Message expiry (everyplace.md item 5; seed 004 l.302-374).

A queue has an expiry interval; a message's own ExpireTime overrides it. The seed tells the
two kinds of ExpireTime apart by the field's type: an int32 is relative (milliseconds after the
message was created), an int64 is absolute (epoch milliseconds). Python integers carry no
width, so the width travels in :class:`ExpireTime`; :func:`expire_time_from_field` builds one
from an MQeFields type name. An MQ message's MQMD.Expiry (tenths of a second from the put,
-1 unlimited) is honoured as well, so a message arriving over REST or MQTT expires as MQ would.
"""

from __future__ import annotations

from dataclasses import dataclass

MQEI_UNLIMITED = -1


@dataclass(frozen=True)
class ExpireTime:
    """A message's ExpireTime: ``value`` ms, relative to creation unless ``absolute``."""

    value: int
    absolute: bool = False

    def deadline(self, created_ms: int) -> int:
        """Epoch ms after which the message is expired."""
        return self.value if self.absolute else created_ms + self.value


def expire_time_from_field(value: int, field_type: str) -> ExpireTime:
    """The seed's rule: ``int``/``int32`` is relative, ``long``/``int64`` is absolute."""
    kind = field_type.lower()
    if kind in ("int", "int32", "mqeint32"):
        if not -(2**31) <= value < 2**31:
            raise ValueError(f"an int32 ExpireTime must fit 32 bits, got {value}")
        return ExpireTime(value, absolute=False)
    if kind in ("long", "int64", "mqeint64"):
        return ExpireTime(value, absolute=True)
    raise ValueError(f"ExpireTime must be int32 (relative) or int64 (absolute), not {field_type}")


def expiry_deadline(created_ms: int, queue_expiry_ms: int, md_expiry_tenths: int,
                    expire_time: ExpireTime | None) -> int | None:
    """Epoch ms at which a message expires, or None for never.

    Precedence: the message's ExpireTime, else its MQMD.Expiry, else the queue's interval
    (the message's value overrides the queue's, l.306-308).
    """
    if expire_time is not None:
        return expire_time.deadline(created_ms)
    if md_expiry_tenths is not None and md_expiry_tenths != MQEI_UNLIMITED and md_expiry_tenths >= 0:
        return created_ms + md_expiry_tenths * 100
    if queue_expiry_ms > 0:
        return created_ms + queue_expiry_ms
    return None


def is_expired(deadline_ms: int | None, now_ms: int) -> bool:
    return deadline_ms is not None and now_ms >= deadline_ms
