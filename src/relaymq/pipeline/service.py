"""The archive service in the broker: taps routed publications (and puts to archived queues)
into the message log, and serves the log's HTTP fetch endpoint.

Why a tap and a writer thread: the tap runs inside routing on the broker's event loop, so it
only builds the log record and hands it to ``LogWriter``; the SQLite transaction happens on the
writer thread in group commits, and the loop never waits for the disk. Registered as
``context.services["archive"]``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from typing import Any

from relaymq.pipeline.fetch import FetchEndpoint
from relaymq.pipeline.log import LogWriter, MessageLog
from relaymq.pipeline.partitioning import Router
from relaymq.pipeline.record import LogRecord, from_message, from_publication
from relaymq.pipeline.settings import ArchiveConfig

log = logging.getLogger("relaymq.archive")

SERVICE_NAME = "archive"


class ArchiveService:
    """The running archive: the log, its writer thread, the tap and the endpoint."""

    def __init__(self, config: ArchiveConfig, directory: str) -> None:
        self.config = config
        self.directory = directory
        self.router = Router(config.rules)
        self.log = MessageLog(directory)
        self.writer = LogWriter(self.log, commit_delay=config.commit_delay_ms / 1000.0, max_batch=config.max_batch,
                                housekeeping=self.apply_retention, housekeeping_every=config.retention_check_seconds,
                                on_error=lambda error: log.error("message log: %s", error),
                                max_pending=config.max_pending, on_overflow=self._overflow)
        self._broker: Any = None
        self._http: Any = None
        self._endpoint: FetchEndpoint | None = None
        self._qmgr: Any = None

    def _overflow(self, total: int) -> None:
        log.warning("message log: %d records not archived so far: more than [archive] max_pending = %d were "
                    "waiting for the writer (a slow disk?)", total, self.config.max_pending)

    # -- publications ---------------------------------------------------------------------------
    def tap(self, message: Any) -> None:
        """broker.publication_taps hook: archive a routed publication (a StoredMessage)."""
        partitions = self.router.for_topic(message.topic)
        if not partitions:
            return
        first = from_publication(message.topic, message.payload, message.qos, message.properties, message.expiry_at)
        self.writer.submit(_placed(first, partitions))

    # -- queues ---------------------------------------------------------------------------------
    def _on_put(self, event: Any) -> None:
        """qmgr put listener (a PutEvent with the stored bytes, in the putting thread, after
        the put is durable): archive that message - also when a getter has already taken it."""
        try:
            record = from_message(event.queue, event.message())
        except Exception as error:  # noqa: BLE001 - never break the put that triggered us
            log.warning("archive: a message put to %s could not be read: %s", event.queue, error)
            return
        self.writer.submit(_placed(record, self.router.for_queue(event.queue)))

    # -- housekeeping ---------------------------------------------------------------------------
    def apply_retention(self) -> int:
        """Apply each rule's retention to its partitions (runs on the writer thread)."""
        removed = 0
        for name in self.log.partitions():
            rule = self.router.rule_of(name)
            if rule is not None and (rule.retention_seconds or rule.retention_entries):
                removed += self.log.apply_retention(name, max_age=rule.retention_seconds,
                                                    max_entries=rule.retention_entries)
        return removed

    def attach(self, broker: Any, services: dict[str, Any]) -> None:
        """Hook into the broker, the HTTP server and the queue manager (those that run)."""
        self._broker = broker
        broker.publication_taps.append(self.tap)
        self._http = services.get("http")
        if self._http is not None:
            self._endpoint = FetchEndpoint(self.log)
            self._endpoint.install(self._http)
        self._qmgr = services.get("qmgr")
        if self.router.queues:
            if self._qmgr is None:
                log.warning("archive rules name queues but no queue manager runs: queues not archived")
            else:
                for queue in self.router.queues:
                    try:
                        self._qmgr.add_put_listener(queue, self._on_put)
                    except Exception as error:  # noqa: BLE001 - an undefined queue is not fatal
                        log.warning("archive: cannot archive queue %s: %s", queue, error)

    async def stop(self) -> None:
        if self._broker is not None and self.tap in self._broker.publication_taps:
            self._broker.publication_taps.remove(self.tap)
        if self._endpoint is not None:
            self._endpoint.uninstall(self._http)
        if self._qmgr is not None:
            for queue in self.router.queues:
                try:
                    self._qmgr.remove_put_listener(queue, self._on_put)
                except Exception:  # noqa: BLE001
                    pass
        await asyncio.to_thread(self.writer.close)
        self.log.close()


def _placed(record: LogRecord, partitions: list[str]) -> list[LogRecord]:
    """One copy of the record per partition it goes to."""
    copies = [record] + [dataclasses.replace(record) for _ in partitions[1:]]
    for copy, name in zip(copies, partitions):
        copy.partition = name
    return copies


class _Disabled:
    """No archive rules: nothing runs."""

    async def stop(self) -> None:
        return None


async def start(context: Any) -> Any:
    """Start the archive service when ``[archive]`` has rules."""
    config: ArchiveConfig = context.config.section("archive")
    if config is None or not config.enabled:
        return _Disabled()
    directory = config.dir or os.path.join(context.config.broker.data_dir, "log")
    from relaymq.server.app import ServiceError

    try:
        service = ArchiveService(config, directory)
    except Exception as error:  # noqa: BLE001 - one line for the operator
        raise ServiceError(f"archive: cannot open the message log in {directory}: {error}") from None
    service.attach(context.broker, context.services)
    context.services[SERVICE_NAME] = service
    log.info("archive: %d rule(s), log in %s", len(config.rules), directory)
    return service
