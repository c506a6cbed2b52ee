"""Start-up and shutdown of the broker process.

``run(config)``: open the store, restore the broker from it, open the listeners, drive time
with a periodic tick, and on SIGTERM/SIGINT close connections without wills, flush the store
and exit (issue 2: graceful shutdown).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
from typing import Any

from relaymq import __version__, dataclass_code, native
from relaymq.broker.broker import Broker
from relaymq.server.authenticate import PasswordChecker
from relaymq.server.exposure import exposure_warnings, loopback_notice
from relaymq.server.listeners import ListenerError, Listeners
from relaymq.server.preflight import busy_side_ports
from relaymq.services.contract import ServiceContext, ServiceError
from relaymq.services.registry import start_services, stop_services
from relaymq.services.reload import acl_reloader, authorities_reloader, password_reloader, reload_all
from relaymq.store.base import StoreError
from relaymq.store.factory import open_store

log = logging.getLogger("relaymq")

TICK_SECONDS = 0.5

#: Garbage collector thresholds while serving. The hot path makes container objects by the
#: hundred thousand per second (packets, deliveries, messages, rows) that reference counting
#: frees; with CPython's default (700, 10, 10) every 700 of them start a scan of the young
#: generation, and every 7,000 one of the middle one, where the deliveries waiting in deep
#: session queues sit (the profile: bench/README.md, "Figures behind the constants"). Cycles
#: are rare here, so they are collected far less often.
GC_THRESHOLDS = (100_000, 50, 100)


def settle_heap() -> None:
    """Once started: what start-up built (restored sessions and queues, the services' state)
    lives as long as the process, so it is frozen out of every later collection, and the
    serving thresholds apply. ``relaymq serve`` runs its start-up with the collector off
    (``relaymq.cli.serve.run``): nearly everything a start makes lives on, and with the default
    thresholds some 200 collections scanned it, one of them all of it (issue 16, bench/compare
    row 9: 3-4% of a start's instructions). The one collection here, of all that start-up
    made, frees the cycles it left (about 470 objects, 110 KB) before the rest is frozen;
    the restored state was frozen already (``restore_frozen``), the cycles made before it
    collected then.
    Start-up's dataclass code is kept for the next start, and let go of
    (relaymq.dataclass_code)."""
    dataclass_code.save()
    gc.collect(1)
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()


def restore_frozen(broker: Broker) -> None:
    """Restore ``broker`` from its store (``Broker.restore_stored``); while start-up runs with
    the collector off (``relaymq serve``), what start-up made so far is collected first and
    what the restore made is frozen at once: the sessions, their queues and a backlog's ids
    all live on, and the restore leaves no cycles (none found after it, measured), so the one
    collection of ``settle_heap`` need not scan them. Issue 16, bench/compare row 9: the
    99,000 (seq, msg_id) pairs of a 100,000-message backlog were most of that collection's
    objects (about 127,000) and most of its time. A caller with the collector on (a test
    calling ``serve``) keeps its own collections."""
    if gc.isenabled():
        broker.restore_stored()
        return
    gc.collect(1)
    broker.restore_stored()
    gc.freeze()


def setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def load_access(config: Any):
    passwords = acl = None
    access = config.access
    if access.password_file:
        from relaymq.auth.passwords import PasswordFile

        passwords = PasswordFile.load(access.password_file)
    if access.acl_file:
        from relaymq.auth.acl import Acl

        acl = Acl.load(access.acl_file)
    return passwords, acl


def listener_failed(err: ListenerError) -> None:
    """A port that cannot be used is a configuration problem: one line, named like one."""
    print(f"config error: {err.key}: {err}", file=sys.stderr, flush=True)


async def serve(config: Any, ready: asyncio.Event | None = None) -> int:
    """Run the broker until SIGTERM/SIGINT. Returns the exit status: 0 after a graceful stop,
    2 when a listener (MQTT, HTTP or channel) cannot bind its address (nothing else has
    started then), 1 when a service cannot start."""
    loop = asyncio.get_running_loop()
    b = config.broker
    # Bind every listener first (without accepting): a port in use stops start-up before the
    # store is opened or anything is logged.
    listeners = Listeners(config.listeners, None, config.limits)
    if not await bind_all(config, listeners):
        return 2
    store = open_store(b.store, b.data_dir, loop.call_soon_threadsafe,
                       synchronous=b.sqlite_synchronous, commit_delay=b.commit_delay_ms / 1000.0)
    checker: PasswordChecker | None = None
    try:
        passwords, acl = load_access(config)
        broker = Broker(config, store, passwords=passwords, acl=acl)
        broker.backpressure.call_soon = loop.call_soon  # a held publisher resumes on a turn of its own
        if passwords is not None:
            checker = PasswordChecker(passwords, loop)
            broker.authenticator = checker
        restore_frozen(broker)
        listeners.attach_broker(broker)
        broker.listener_control = listeners.control
        # A signal during start-up is a graceful stop too: it is taken once everything started.
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        # The services (queue manager, pub/sub engine, flows, archive) start before the MQTT
        # listeners open, so a client that can connect finds the whole broker: nothing it
        # publishes misses a queue subscriber or an archive rule.
        context = service_context(config, broker, listeners, passwords, acl)
        loop.add_signal_handler(signal.SIGHUP, reload_all, context.reloaders)
        try:
            services = await start_services(context)
        except ServiceError as err:
            log.error("%s", err)
            await listeners.stop_all()
            broker.shutdown()
            return 1
        settle_heap()
        try:
            await listeners.start_all()
        except ListenerError as err:
            listener_failed(err)
            await listeners.stop_all()
            await stop_services(services)
            broker.shutdown()
            return 2
        started(config, ready)
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), TICK_SECONDS)
            except TimeoutError:
                pass
            broker.tick()
        log.info("shutting down")
        # Listening sockets closed, then client connections (no wills), then waited for:
        # see relaymq.server.listeners for why this order.
        await listeners.stop_all()
        await stop_services(services)
        broker.shutdown()
        return 0
    finally:
        if checker is not None:
            checker.close()
        store.close()
        log.info("store closed")


async def bind_all(config: Any, listeners: Listeners) -> bool:
    """Bind every MQTT listener and probe the HTTP and channel ports (issue 18: every busy
    port in one go); False, with one line per problem and nothing left open, when any is."""
    problems = busy_side_ports(config)
    try:
        await listeners.open_all()
    except ListenerError as err:
        problems.insert(0, f"{err.key}: {err}")
    if not problems:
        return True
    for problem in problems:
        print(f"config error: {problem}", file=sys.stderr, flush=True)
    for item in listeners.items:
        item.close()
    return False


def service_context(config: Any, broker: Broker, listeners: Listeners, passwords: Any, acl: Any) -> ServiceContext:
    """What the services start with: the broker, the listeners' state, the authorities, and
    what SIGHUP reloads (authorities, password file, ACL)."""
    from relaymq.auth.authorities import open_authorities

    context = ServiceContext(config, broker, authorities=open_authorities(config))
    context.services["listeners"] = listeners  # their state for the metrics and the admin API
    if context.authorities.current.enforced and not config.access.password_file and not all(
            listener.require_certificate for listener in config.listeners):
        log.warning("authorities are enforced, but without [access] password_file a user name is only a"
                    " claim: anyone may act as any user that holds authorities (docs/security.md)")
    context.reloaders.append(authorities_reloader(context.authorities))
    if passwords is not None:
        context.reloaders.append(password_reloader(config.access.password_file, passwords))
    if acl is not None:
        context.reloaders.append(acl_reloader(config.access.acl_file, broker))
    return context


def started(config: Any, ready: asyncio.Event | None) -> None:
    """Everything runs: say so, and what can reach the broker."""
    log.info("relaymq %s started (store: %s, data: %s; %s)", __version__, config.broker.store, config.broker.data_dir,
             native.status.describe())
    notice = loopback_notice(config)
    if notice is not None:
        log.info("%s", notice)
    for line in exposure_warnings(config):
        log.warning("%s", line)
    if ready is not None:
        ready.set()


def run(config: Any) -> int:
    setup_logging(config.broker.log_level)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        return asyncio.run(serve(config))
    except StoreError as err:
        log.error("store error: %s", err)
        return 1
    except (OSError, ValueError) as err:
        log.error("%s", err)
        return 1
