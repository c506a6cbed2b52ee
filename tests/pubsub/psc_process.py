"""A real ``relaymq serve`` process for the pub/sub end-to-end tests, and the two ways a new
user talks psc to it from outside: the REST interface (curl-like HTTP calls, the relaymq
extension that carries the psc in a text body) and the admin routes.

Why helpers: every scenario of issue 4 starts a broker with queues and [pubsub] settings,
puts psc commands over REST and reads the responses and publications back."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from harness import BrokerProcess, free_port
from relaymq.cli.main import main
from relaymq.http.client import request
from relaymq.pubsub.psc import reply_reasons

CONTROL = "SYSTEM.BROKER.CONTROL.QUEUE"
STREAM = "SYSTEM.BROKER.DEFAULT.STREAM"
REST_BASE = "/ibmmq/rest/v3/messaging/qmgr/QM1/queue"


def start(tmp_path: Path, config: dict[str, Any] | None = None, queues: tuple[str, ...] = ()) -> BrokerProcess:
    """A broker with free MQTT, HTTP and channel ports, the queues defined beforehand as an
    operator would (``relaymq queue define``); started (the port accepts once the services,
    pub/sub included, are up)."""
    config = dict(config or {})
    config.setdefault("http", {})
    config["http"] = {"port": free_port(), **config["http"]}
    config.setdefault("qmgr", {})
    # Devices (psc_process.Device) connect without credentials: issue 15 tests refuse that.
    config["qmgr"] = {"channel_port": free_port(), "channel_allow_anonymous": True, **config["qmgr"]}
    process = BrokerProcess(config=config, workdir=tmp_path)
    for queue in queues:
        assert main(["queue", "define", queue, "--data-dir", str(process.data_dir)]) == 0
    return process.start()


def http_port(broker: BrokerProcess) -> int:
    return int(broker.config["http"]["port"])


def http(broker: BrokerProcess, method: str, path: str, body: bytes = b"", headers=(),
         user: str | None = None, password: str = "") -> tuple[int, dict[str, str], bytes]:
    all_headers = list(headers)
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        all_headers.append(("authorization", f"Basic {token}"))
    response = asyncio.run(request(method, f"http://127.0.0.1:{http_port(broker)}{path}", headers=all_headers,
                                   body=body, timeout=20))
    return response.status, {k.lower(): v for k, v in response.headers}, response.body


class Rest:
    """The REST messaging API of one broker, as one (optionally authenticated) user."""

    def __init__(self, broker: BrokerProcess, user: str | None = None, password: str = "") -> None:
        self.broker = broker
        self.user = user
        self.password = password

    def put(self, queue: str, body: bytes, headers=()) -> int:
        status, _, _ = http(self.broker, "POST", f"{REST_BASE}/{quote(queue, safe='')}/message", body,
                            [("content-type", "text/plain"), *headers], self.user, self.password)
        return status

    def get(self, queue: str, wait_ms: int = 10000) -> tuple[int, dict[str, str], bytes]:
        return http(self.broker, "DELETE", f"{REST_BASE}/{quote(queue, safe='')}/message?wait={wait_ms}",
                    user=self.user, password=self.password)

    def command(self, queue: str, psc: str, *, reply_to: str = "APP.REPLY", body: str = "",
                usr: str | None = None) -> tuple[str, list[int]]:
        """Put ``<psc>...</psc>`` (+ the publication body) and read the response back from
        ``reply_to``: (completion, reasons)."""
        headers = [("ibm-mq-md-replyTo", reply_to)]
        if usr:
            headers.append(("ibm-mq-usr", usr))
        assert self.put(queue, f"<psc>{psc}</psc>{body}".encode(), headers) == 201
        status, _, reply = self.get(reply_to)
        assert status == 200, f"no response to {psc!r} on {reply_to} ({status})"
        from relaymq.message.headers import MQMessage
        from relaymq.message.message import Message

        return reply_reasons(Message(MQMessage(body=reply)))


def admin(broker: BrokerProcess, method: str, query: dict[str, str] | None = None, user: str | None = None,
          password: str = "") -> tuple[int, Any]:
    """An admin route, as ``user`` or, without one, as the broker's own administrator (when it
    has one: no [access] administrators)."""
    path = "/relaymq/pubsub/subscriptions" + ("?" + urlencode(query) if query else "")
    as_admin = broker.admin_headers() if user is None else []
    status, headers, body = http(broker, method, path, headers=as_admin, user=user, password=password)
    if "json" in headers.get("content-type", ""):
        return status, json.loads(body)
    return status, body.decode("utf-8", "replace")


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.05):
    """Poll ``predicate`` until it returns something truthy (returned) or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


class Device:
    """An application's own queue manager (MQ Everyplace embedded, issue 5) connected by a
    channel to the broker's QM1, as the seed's applications reach a broker through their
    queue manager: it puts psc commands to QM1's SYSTEM.BROKER.CONTROL.QUEUE and publication
    input queues (remote asynchronous queues here, assured transfer) and gets the responses and
    publications back on its own queues, which the broker reaches over a connection to it
    (``broker_connection()`` goes into the broker's ``[qmgr] connection``)."""

    FAST = {"retry_initial_ms": 50, "retry_max_ms": 300, "timeout_ms": 10000}

    def __init__(self, name: str, broker_channel_port: int, queues: tuple[str, ...] = (),
                 broker_queues: tuple[str, ...] = (CONTROL, STREAM),
                 credentials: tuple[str, str] | None = None) -> None:
        from relaymq.qmgr import QueueManager
        from relaymq.qmgr.aio import AsyncQueueManager

        self.name = name
        self.broker_channel_port = broker_channel_port
        self.qm = QueueManager.open(name, None)
        for queue in ("APP.REPLY", *queues):
            self.qm.define_queue(queue)
        for queue in broker_queues:  # the broker's queues, reached over the channel
            self.qm.define_queue(queue, "remote", queue_manager="QM1", mode="async")
        self.aio = AsyncQueueManager(self.qm)
        self.channels: Any = None
        #: (user, password) the channel to QM1 authenticates with; None: it sends none (the
        #: broker then needs [qmgr] channel_allow_anonymous).
        self.credentials = credentials

    async def start(self) -> Device:
        from relaymq.qmgr.channel_auth import ChannelAuthenticator
        from relaymq.qmgr.channel_service import ChannelService
        from relaymq.qmgr.channel_settings import build_connections

        login = {"user": self.credentials[0], "password": self.credentials[1]} if self.credentials else {}
        address = f"127.0.0.1:{self.broker_channel_port}"
        connections = build_connections([{**self.FAST, "name": "QM1", "address": address, **login}], "connection", None)
        self.channels = ChannelService(self.qm, connections, listen_host="127.0.0.1", listen_port=0,
                                       authenticator=ChannelAuthenticator.anonymous())
        await self.channels.start()
        return self

    def broker_connection(self) -> dict[str, Any]:
        return {**self.FAST, "name": self.name, "address": f"127.0.0.1:{self.channels.port}"}

    async def command(self, queue: str, command: str, *, user: str = "", message: Any = None,
                      **params: Any) -> tuple[str, list[int]]:
        """Put a psc command (an MQRFH2 REQUEST from ``user``) to ``queue`` at QM1; the
        broker's response comes back over the channel to APP.REPLY here."""
        from relaymq.pubsub.psc import command_message

        if message is None:
            message = command_message(command, reply_to="APP.REPLY", reply_to_qmgr=self.name, user_id=user, **params)
        await self.aio.put(queue, message, qmgr="QM1")
        reply = await self.aio.get("APP.REPLY", wait=20.0)
        assert reply is not None, f"no response to {command} over the channel"
        return reply_reasons(reply)

    async def get(self, queue: str, wait: float = 20.0) -> Any:
        return await self.aio.get(queue, wait=wait)

    async def stop(self) -> None:
        if self.channels is not None:
            await self.channels.stop()
        self.qm.close()
