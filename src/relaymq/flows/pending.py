"""HTTP requests waiting for their HTTPReply (flows-http.md): apart from the bindings, so the
flows service can hold them without importing the node library (issue 16, a smaller base)."""

from __future__ import annotations

import asyncio


class PendingReplies:
    """HTTP requests waiting for an HTTPReply, by RequestIdentifier (any flow may answer)."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[tuple[int, list[tuple[str, str]], bytes]]] = {}

    def reply(self, request_id: str, status: int, headers: list[tuple[str, str]], body: bytes) -> bool:
        future = self.waiting.get(request_id)
        if future is None or future.done():
            return False
        future.set_result((status, headers, body))
        return True
