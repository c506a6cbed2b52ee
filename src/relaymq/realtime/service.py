"""The real-time transport as a service of the broker process (relaymq.services.registry;
item 46): when ``[realtime] enabled``, its listener (relaymq.realtime.server), imported then
only, so a broker without the transport does not carry its frames and connections (issue 16,
a smaller base process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relaymq.services.contract import ServiceContext

if TYPE_CHECKING:
    from relaymq.realtime.settings import RealtimeSettings


class RealtimeOff:
    """The service when ``[realtime]`` is not enabled: nothing to stop."""

    async def stop(self) -> None:
        return None


async def start(context: ServiceContext) -> Any:
    settings: RealtimeSettings | None = context.config.configured("realtime")
    if settings is None or not settings.enabled:
        return RealtimeOff()
    from relaymq.realtime.server import start as start_server

    return await start_server(context, settings)
