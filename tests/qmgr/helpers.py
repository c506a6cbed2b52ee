"""Helpers shared by the queue manager tests."""

from __future__ import annotations

from relaymq.message import Message


def text_message(body: str, priority: int = -1, correl_id: bytes | None = None) -> Message:
    """An MQSTR message with ``body``."""
    message = Message()
    message.mq.md.Format = "MQSTR"
    message.mq.md.Priority = priority
    if correl_id is not None:
        message.mq.md.CorrelId = correl_id.ljust(24, b"\0")
    message.mq.body = body.encode()
    return message


def body(message: Message | None) -> str | None:
    return None if message is None else message.mq.body.decode()
