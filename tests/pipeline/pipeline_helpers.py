"""What the pipeline tests and bench/bench_pipeline.py share: a broker process with archive rules
and an HTTP port, an MQTT subscriber that waits for messages, publishing helpers.

(A module with its own name rather than conftest.py, so test modules and the benchmark can
import it without clashing with tests/conftest.py.)"""

from __future__ import annotations

import os
import signal
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from harness import BrokerProcess, free_port
from relaymq.pipeline.log import LogError

WAIT = 20.0
EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "telemetry-analytics"


def archive_toml(rules: list[dict[str, Any]], **options: Any) -> str:
    """An ``[archive]`` section with ``[[archive.rule]]`` tables (harness.to_toml writes two
    levels only)."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(i) for i in v) + "]"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return str(v)

    lines = ["[archive]", *(f"{k} = {value(v)}" for k, v in options.items()), ""]
    for rule in rules:
        lines += ["[[archive.rule]]", *(f"{k} = {value(v)}" for k, v in rule.items()), ""]
    return "\n".join(lines)


class ArchiveBroker(BrokerProcess):
    """A relaymq broker whose config file also has an [archive] section and an HTTP port."""

    def __init__(self, archive: str, **kwargs: Any) -> None:
        self._http_port = free_port()
        config = dict(kwargs.pop("config", {}) or {})
        config.setdefault("http", {"host": "127.0.0.1", "port": self._http_port})
        # The queue manager's channel listener defaults to 8081: give each broker its own.
        config.setdefault("qmgr", {"channel_host": "127.0.0.1", "channel_port": free_port()})
        super().__init__("relaymq", config=config, **kwargs)
        self.archive = archive

    def command(self) -> list[str]:
        cmd = super().command()
        conf = self.workdir / "relaymq.toml"
        conf.write_text(conf.read_text() + "\n" + self.archive + "\n")
        return cmd

    def _wait_ready(self) -> None:
        """Ready = the archive's fetch route answers: the MQTT listener opens before the
        services start, and publications before the archive is attached are not archived."""
        super()._wait_ready()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.http_url + "/archive/partitions", timeout=2):
                    return
            except urllib.error.HTTPError as error:
                if error.code == 401:  # up, behind the HTTP server's basic authentication
                    return
            except OSError:
                if self.proc is not None and self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError(f"archive endpoint of the broker did not come up\n{self.describe_log()}")

    @property
    def http_port(self) -> int:  # the port given in [http] (kept apart from the harness's own choice)
        return self._http_port

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "log"


class Subscriber:
    """An MQTT 5 subscriber (paho) collecting what arrives; ``tls``: paho tls_set keywords."""

    def __init__(self, port: int, topic_filter: str, *, tls: dict[str, str] | None = None,
                 username: str | None = None, password: str | None = None) -> None:
        self.messages: list[mqtt.MQTTMessage] = []
        self.arrived: list[float] = []  # time.perf_counter() of each message's arrival
        self.cond = threading.Condition()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        if tls is not None:
            self.client.tls_set(**tls)
        if username:
            self.client.username_pw_set(username, password)
        subscribed = threading.Event()
        self.client.on_subscribe = lambda *a: subscribed.set()
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        self.client.subscribe(topic_filter, 1)
        assert subscribed.wait(WAIT)

    def _on_message(self, _c, _u, message) -> None:
        with self.cond:
            self.messages.append(message)
            self.arrived.append(time.perf_counter())
            self.cond.notify_all()

    def wait_for(self, count: int, timeout: float = WAIT) -> list[mqtt.MQTTMessage]:
        with self.cond:
            self.cond.wait_for(lambda: len(self.messages) >= count, timeout)
            return list(self.messages)

    def settle(self, quiet: float = 5.0, timeout: float = 120.0) -> list[mqtt.MQTTMessage]:
        """Everything received once nothing new arrived for ``quiet`` seconds (a duplicate that
        comes late is seen: the test does not stop at the expected count)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while time.monotonic() < deadline:
                seen = len(self.messages)
                self.cond.wait_for(lambda: len(self.messages) > seen, quiet)  # noqa: B023 - called within this iteration
                if len(self.messages) == seen:
                    break
            return list(self.messages)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def publish_all(port: int, messages: list[tuple[str, bytes, list[tuple[str, str]]]],
                credentials: tuple[str, str] | None = None) -> None:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    if credentials is not None:
        client.username_pw_set(*credentials)
    client.connect("127.0.0.1", port)
    client.loop_start()
    infos = []
    for topic, payload, usr in messages:
        props = Properties(PacketTypes.PUBLISH)
        if usr:
            props.UserProperty = usr
        infos.append(client.publish(topic, payload, qos=1, properties=props))
    for info in infos:
        info.wait_for_publish(WAIT)
    client.disconnect()
    client.loop_stop()


def wait_for_entries(access, count: int) -> dict:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            parts = access.partitions()
        except LogError as error:
            parts = {"error": error}
        if "error" not in parts and sum(p.size for p in parts.values()) >= count:
            return parts
        time.sleep(0.05)
    raise AssertionError(f"log did not reach {count} entries: {parts}")




def session_members(session: int) -> list[int]:
    """Every process of a session (a job started with start_new_session=True: its Python, the
    JVM, and the Python daemon and workers, which move to their own process group)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != b"Z":  # after ")": state, ppid, pgrp, session
            members.append(int(entry))
    return members


def become_subreaper() -> None:
    """Processes orphaned below this one (a killed job's JVM) become its children, so that
    kill_session can reap them instead of leaving zombies (Linux PR_SET_CHILD_SUBREAPER)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def kill_session(session: int, timeout: float = 30.0) -> None:
    """SIGKILL every process of ``session`` (the way a machine failure ends a job), wait until
    none is left, and reap those that are this process's children."""
    deadline = time.monotonic() + timeout
    killed: set[int] = set()
    while members := session_members(session):
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of session {session} survive SIGKILL: {members}")
        time.sleep(0.1)
    for pid in killed - {session}:  # the session leader is the caller's Popen: it waits itself
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def write_row_per_entry_log(path: Path, records: list, application_id: int | None = None) -> None:
    """A message log as relaymq versions before record batches (schema 4) kept it: table
    ``entries``, one row per entry, ``usr`` as JSON text; ``partitions`` with each extent.
    ``application_id`` marks it (the standalone archive.sqlite3 of earlier versions: "RMQL")."""
    import json
    import sqlite3

    from relaymq.pipeline.record import COLUMNS
    from relaymq.store.engine import LOG_COLUMNS

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE partitions (name TEXT PRIMARY KEY, first_seq INTEGER NOT NULL, next_seq INTEGER NOT NULL)")
    conn.execute("CREATE TABLE entries (partition TEXT NOT NULL, seq INTEGER NOT NULL, "
                 + ", ".join(c + " ANY" for c in LOG_COLUMNS) + ", PRIMARY KEY (partition, seq)) WITHOUT ROWID")
    extents: dict[str, int] = {}
    for record in records:
        record.seq = extents.get(record.partition, 0)
        extents[record.partition] = record.seq + 1
        values = {name: getattr(record, name) for name in COLUMNS}
        values["usr"] = json.dumps(values["usr"])
        conn.execute(f"INSERT INTO entries (partition, seq, {', '.join(LOG_COLUMNS)}) VALUES "
                     f"({', '.join('?' * (len(LOG_COLUMNS) + 2))})",
                     [record.partition, record.seq] + [values[name] for name in LOG_COLUMNS])
    conn.executemany("INSERT INTO partitions VALUES (?, 0, ?)", list(extents.items()))
    if application_id is not None:
        conn.execute(f"PRAGMA application_id = {application_id}")
        conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
