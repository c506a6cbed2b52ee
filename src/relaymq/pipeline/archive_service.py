"""The archive service in the broker (relaymq.pipeline.service starts it when ``[archive]`` has
rules): taps routed publications (and puts to archived queues) into the message log, and serves
the log's HTTP fetch endpoint.

Why a tap on the storage engine: the tap runs inside routing on the broker's event loop, in the
unit of work of the publication, so it submits the publication to the broker's storage engine
(the log's tables are in the broker's database; the writer thread builds the log entry at
commit): the entry commits in the same transaction as the publication's other copies, and
the PUBACK that waits for that commit promises the archive entry too (issue 14). Nothing is
dropped for a slow disk: the publisher's acknowledgement waits instead. With ``--store
memory`` (nothing durable) the log has a file of its own under ``<data_dir>/log``. Registered
as ``context.services["archive"]``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from relaymq.pipeline.fetch import FetchEndpoint
from relaymq.pipeline.log import LEGACY_DIR, LOG_FILE, MessageLog, import_legacy_log
from relaymq.pipeline.partitioning import Router
from relaymq.pipeline.record import from_message, stored_entry
from relaymq.pipeline.settings import ArchiveConfig
from relaymq.services.contract import ServiceError

log = logging.getLogger("relaymq.archive")

SERVICE_NAME = "archive"


class ArchiveService:
    """The running archive: the log, its writer thread, the tap and the endpoint."""

    def __init__(self, config: ArchiveConfig, directory: str, engine: Any = None) -> None:
        self.config = config
        self.directory = directory
        self.router = Router(config.rules)
        self.log = MessageLog(directory, engine=engine)
        # The tap's two steps without a call of their own (each Python call costs as much as
        # a tenth of archiving a publication): the topic's partitions, the entry's submission.
        self._known = self.router.by_topic.get
        self._submit = self.log.entry_submitter()
        self._broker: Any = None
        self._http: Any = None
        self._endpoint: FetchEndpoint | None = None
        self._qmgr: Any = None
        self._housekeeping: asyncio.Task[None] | None = None
        #: Who may read which partition over the fetch endpoint (relaymq.auth.authorities); None: anybody it lets in.
        self.authorities: Any = None

    def served_offsets(self) -> dict[str, int]:
        """partition -> the offset after the last entry a reader fetched over HTTP (empty
        without the fetch endpoint): how far behind readers are (relaymq.metrics)."""
        return dict(self._endpoint.served) if self._endpoint is not None else {}

    # -- publications ---------------------------------------------------------------------------
    def tap(self, message: Any) -> None:
        """broker.publication_taps hook: archive a routed publication (a StoredMessage) in the
        partitions its topic's rules name; its stored form is built at commit, on the writer
        thread (MessageLog.submit_entry)."""
        partitions = self._known(message.topic)
        if partitions is None:
            partitions = self.router.for_topic(message.topic)
        if partitions:
            self._submit((partitions, message), len(partitions))

    # -- queues ---------------------------------------------------------------------------------
    def _on_put(self, event: Any) -> None:
        """qmgr put listener (a PutEvent with the stored bytes, in the putting thread, once the
        put is submitted): archive that message - also when a getter has already taken it."""
        try:
            record = from_message(event.queue, event.message())
        except Exception as error:  # noqa: BLE001 - never break the put that triggered us
            log.warning("archive: a message put to %s could not be read: %s", event.queue, error)
            return
        try:
            self.log.submit_entry(self.router.for_queue(event.queue), stored_entry(record))
        except Exception as error:  # noqa: BLE001 - the put itself is made; say what is missing
            log.error("archive: a message put to %s is not archived: %s", event.queue, error)

    # -- housekeeping ---------------------------------------------------------------------------
    async def _retention(self) -> None:
        every = self.config.retention_check_seconds
        while True:
            await asyncio.sleep(every)
            try:
                await asyncio.to_thread(self.apply_retention)
            except Exception as error:  # noqa: BLE001 - retried next time
                log.error("message log: retention failed: %s", error)

    def apply_retention(self) -> int:
        """Apply each rule's retention to its partitions (a worker thread)."""
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
            self._endpoint = FetchEndpoint(self.log, self.authorities)
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
        if self._housekeeping is not None:
            self._housekeeping.cancel()
            await asyncio.gather(self._housekeeping, return_exceptions=True)
        await asyncio.to_thread(self.log.flush)
        self.log.close()


async def start_archive(context: Any, config: ArchiveConfig) -> ArchiveService:
    """Open the message log and start archiving by ``config``'s rules."""
    engine = getattr(context.broker.store, "engine", None)
    data_dir = context.config.broker.data_dir
    directory = data_dir if engine is not None else os.path.join(data_dir, "log")
    try:
        if engine is not None:
            imported = import_legacy_log(engine, data_dir)
            if imported is not None:
                log.info("archive: imported %d partition(s) and %d entries from %s (renamed .imported)",
                         *imported, os.path.join(data_dir, LEGACY_DIR, LOG_FILE))
        service = ArchiveService(config, directory, engine)
        service.authorities = getattr(context, "authorities", None)
    except Exception as error:  # noqa: BLE001 - one line for the operator
        raise ServiceError(f"archive: cannot open the message log in {directory}: {error}") from None
    service.attach(context.broker, context.services)
    if any(rule.retention_seconds or rule.retention_entries for rule in config.rules):
        service._housekeeping = asyncio.get_running_loop().create_task(service._retention())
    context.services[SERVICE_NAME] = service
    log.info("archive: %d rule(s), log in %s", len(config.rules),
             service.log.engine.path if service.log.engine is not None else directory)
    return service
