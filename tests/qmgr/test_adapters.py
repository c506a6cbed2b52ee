"""MQ Everyplace adapters (seed 004 l.3806-3900; docs/channels.md "Adapters", docs/queues.md
"The store"): the built-in communications adapters (tcp, tls, http) and storage adapters
(sqlite, memory) chosen by name, an adapter of the test's own loaded by "module:Class" from
the configuration, and unknown names refused at start-up naming the key.

Real parts: channel listeners and links over real sockets (TLS with a throw-away CA), SQLite
files, and `relaymq serve` processes.
"""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable

import pytest
from harness import BrokerProcess, free_port

from relaymq.config import ConfigError, load_config
from relaymq.qmgr import QueueManager
from relaymq.qmgr.adapters import communications_adapter, open_queue_manager, storage_adapter
from relaymq.qmgr.channel_auth import ChannelAuthenticator
from relaymq.qmgr.channel_service import ChannelService
from relaymq.qmgr.channel_settings import build_connections
from relaymq.qmgr.errors import BadProperty
from relaymq.qmgr.listener_registry import ListenerRegistry

from .helpers import FAST_LINK, body, text_message
from .test_channel_security import _until
from .test_channel_transport import _certificates
from .test_rest_api import BASE, Rest

ADAPTERS = ("tcp", "tls", "http")


async def _until_async(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(0.02)


def test_everyplace_adapters_builtin_communications_adapters_chosen_by_name(tmp_path) -> None:
    """Seed 004 l.3838-3868 (communications adapters: TCP with a length, HTTP) and l.3878 (the
    adapter is named "when creating the listener on the server queue manager, and ... the
    connection definition on the client queue manager"): SRV has three listener objects,
    adapters tcp, tls and http; three devices each name the same adapter in their connection
    to SRV and deliver a message through it."""
    ca, cert, key = _certificates(tmp_path)

    async def scenario() -> None:
        server = QueueManager.open("SRV", None)
        server.define_queue("IN")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        channels = ChannelService(server, listen_host=None, ssl_context=context,
                                  authenticator=ChannelAuthenticator.anonymous())
        await channels.start()
        registry = ListenerRegistry(channels, None)
        devices: list[tuple[QueueManager, ChannelService]] = []
        try:
            ports = {}
            for adapter in ADAPTERS:
                ports[adapter] = free_port()
                await registry.create(adapter.upper(), ports[adapter], adapter=adapter)
                await registry.start(adapter.upper())
            for n, adapter in enumerate(ADAPTERS):
                device = QueueManager.open(f"DEV{n}", None)
                device.define_queue("IN", "remote", queue_manager="SRV", mode="async")
                device.put("IN", text_message(f"over {adapter}"), qmgr="SRV")
                table = {**FAST_LINK, "name": "SRV", "address": f"localhost:{ports[adapter]}", "adapter": adapter,
                         **({"tls_ca": ca} if adapter == "tls" else {})}
                service = ChannelService(device, build_connections([table], "connection", None), listen_host=None)
                devices.append((device, service))
                await service.start()
                await _until_async(lambda n=n, device=device: server.depth("IN") == n + 1
                                   and device.depth("IN", qmgr="SRV") == 0, 30, f"delivery over {adapter}")
            assert [body(server.get("IN")) for _ in ADAPTERS] == [f"over {a}" for a in ADAPTERS]
        finally:
            for device, service in devices:
                await service.stop()
                device.close()
            await registry.close()
            await channels.stop()
            server.close()

    asyncio.run(scenario())


def test_everyplace_adapters_builtin_storage_adapters_chosen_by_name(tmp_path) -> None:
    """Seed 004 l.3806-3830 (storage adapters: disk "reading and writing to persistent storage",
    memory "to non-persistent storage"): ``sqlite`` keeps a message across a reopen,
    ``memory`` does not; an unknown name or a class without the methods is refused."""
    for name, survives in (("sqlite", True), ("memory", False)):
        data_dir = tmp_path / name
        qm = open_queue_manager("QM1", str(data_dir), store_adapter=name)
        qm.define_queue("Q")
        qm.put("Q", text_message(f"kept by {name}"))
        qm.close()
        qm = open_queue_manager("QM1", str(data_dir), store_adapter=name)
        try:
            assert (body(qm.get("Q")) if "Q" in qm.queue_names() else None) == (f"kept by {name}" if survives else None)
        finally:
            qm.close()
        assert (data_dir / "qmgr-QM1.db").exists() is survives
    with pytest.raises(BadProperty, match="unknown adapter 'floppy'"):
        storage_adapter("floppy")
    with pytest.raises(BadProperty, match="lacks the methods of CommunicationsAdapter"):
        communications_adapter("relaymq.qmgr.adapters:MemoryStorage")


JOURNAL_ADAPTER = '''
"""A storage adapter of the test's own: the memory store, and a journal line per message
row it is asked to write (so the test sees it was the store used)."""
import os

from relaymq.qmgr.store import MemoryQueueStore


class JournalStore(MemoryQueueStore):
    def __init__(self, path):
        self.path = path

    def submit(self, ops):
        with open(self.path, "a", encoding="utf-8") as journal:
            for op in ops:
                if op[0] == "entry":
                    journal.write(f"{op[1].queue} {op[1].uid} {op[1].state}\\n")
        return super().submit(ops)


class JournalStorage:
    def open(self, qmgr, data_dir, *, synchronous="FULL", engine=None):
        return JournalStore(os.path.join(data_dir, f"journal-{qmgr}.txt"))
'''


def test_everyplace_adapters_own_storage_adapter_loaded_by_dotted_name(tmp_path) -> None:
    """Seed 004 l.3870-3880 ("You can also write your own adapters"; an adapter is named by
    its class and made with the default constructor): a storage adapter module written here,
    beside the broker's relaymq.toml, named ``[qmgr] store_adapter = "journal_store:
    JournalStorage"``, is the store of `relaymq serve`'s queue manager: a REST put is written
    through it (its journal has the row) and got back."""
    workdir = tmp_path / "broker"
    workdir.mkdir()
    (workdir / "journal_store.py").write_text(textwrap.dedent(JOURNAL_ADAPTER))
    broker = BrokerProcess("relaymq", workdir=workdir, config={"qmgr": {"store_adapter": "journal_store:JournalStorage"}})
    broker.start()
    rest = Rest(broker, broker.http_port)
    try:
        _until(lambda: rest.call("GET", f"{BASE}/admin/qmgr")[0] == 200, 30, "REST answers")
        assert rest.put("SYSTEM.DEFAULT.LOCAL.QUEUE", "through my adapter")[0] == 201
        journal = broker.data_dir / "journal-QM1.txt"
        lines = journal.read_text().splitlines()
        assert any(line.startswith("SYSTEM.DEFAULT.LOCAL.QUEUE ") for line in lines), lines
        status, _, got = rest.get("SYSTEM.DEFAULT.LOCAL.QUEUE")
        assert status == 200 and got == b"through my adapter"
        assert not (broker.data_dir / "qmgr-QM1.db").exists()
    finally:
        broker.cleanup()


def test_everyplace_adapters_unknown_adapter_refused_at_start_up_naming_the_key(tmp_path) -> None:
    """An adapter name that is neither built in nor "module:Class" stops start-up naming
    its key (qmgr.store_adapter, qmgr.connection[N].adapter); a "module:Class" that cannot be
    imported stops `relaymq serve` with "config error: qmgr.store_adapter: ..."; a listener
    object with an unknown adapter is refused when it is created."""
    config = tmp_path / "relaymq.toml"
    for toml, key in (('[qmgr]\nstore_adapter = "floppy"\n', "qmgr.store_adapter"),
                      ('[[qmgr.connection]]\nname = "S"\naddress = "h:1"\nadapter = "pigeon"\n',
                       "qmgr.connection[0].adapter")):
        config.write_text(toml)
        with pytest.raises(ConfigError) as err:
            load_config(str(config))
        assert err.value.key == key and "unknown adapter" in str(err.value)
    config.write_text(f'[broker]\ndata_dir = "{tmp_path / "data"}"\n[qmgr]\nstore_adapter = "no_such_module:Store"\n')
    done = subprocess.run([sys.executable, "-m", "relaymq", "serve", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "config error: qmgr.store_adapter: cannot load storage adapter 'no_such_module:Store'" in done.stderr
    with pytest.raises(BadProperty, match="listener adapter: unknown adapter 'pigeon'"):
        asyncio.run(ListenerRegistry(type("Channels", (), {"qm": None})(), None).create("L", 1881, adapter="pigeon"))
