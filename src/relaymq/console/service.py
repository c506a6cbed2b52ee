"""The web console as a service of the broker process (relaymq.services.registry): its static
files at ``/console`` on the HTTP server, when it runs."""

from __future__ import annotations

from typing import Any

from relaymq.console.routes import install


class ConsoleService:
    async def stop(self) -> None:
        return None


async def start(context: Any) -> ConsoleService:
    server = context.services.get("http")
    if server is not None:
        install(server)
    return ConsoleService()
