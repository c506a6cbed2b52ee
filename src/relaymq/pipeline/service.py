"""The archive service's entry point (relaymq.services.registry SERVICE_MODULES).

Only ``[archive]`` with rules starts it; the service itself (relaymq.pipeline.archive_service:
the message log, the tap, the fetch endpoint) is imported then, so a broker without an archive
does not carry it (0.3 MB; issue 8, scenario 6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relaymq.pipeline.settings import ArchiveConfig


class _Disabled:
    """No archive rules: nothing runs."""

    async def stop(self) -> None:
        return None


async def start(context: Any) -> Any:
    """Start the archive service when ``[archive]`` has rules."""
    config: ArchiveConfig | None = context.config.configured("archive")
    if config is None or not config.enabled:
        return _Disabled()
    from relaymq.pipeline.archive_service import start_archive

    return await start_archive(context, config)
