"""A relaymq broker with the AMQP 1.0 listener on a free loopback port, for the AMQP tests."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from harness import BrokerProcess, free_port, merge_config, port_accepts


def amqp_config(port: int, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return merge_config({
        "amqp": {"enabled": True, "host": "127.0.0.1", "port": port, "allow_anonymous": True},
        "qmgr": {"name": "QM1", "queue": [{"name": "ORDERS"}, {"name": "REPLIES"}, {"name": "JMSQ"}]},
    }, extra)


@contextmanager
def amqp_broker(extra: Mapping[str, Any] | None = None, **kwargs: Any) -> Iterator[tuple[BrokerProcess, int]]:
    port = free_port()
    with BrokerProcess("relaymq", config=amqp_config(port, extra), **kwargs) as broker:
        yield broker, port


def url(port: int, user: str | None = None, password: str | None = None) -> str:
    creds = f"{user}:{password}@" if user else ""
    return f"amqp://{creds}127.0.0.1:{port}"


def put_and_get(conn: Any, message: Any, address: str = "queue://ORDERS", timeout: float = 15.0) -> Any:
    """Send ``message`` to ``address`` on a proton BlockingConnection, then receive one message
    from it and accept it; returns that message."""
    conn.create_sender(address).send(message)
    receiver = conn.create_receiver(address)
    got = receiver.receive(timeout=timeout)
    receiver.accept()
    return got


__all__ = ["amqp_broker", "amqp_config", "port_accepts", "put_and_get", "url"]
