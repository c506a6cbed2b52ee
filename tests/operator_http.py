"""HTTP calls to a broker the harness started, as an operator's tools make them (curl,
Prometheus, the console): the metrics, admin and console tests share them (issue 18)."""

from __future__ import annotations

import base64
import http.client
import json
import time
from collections.abc import Callable
from typing import Any

from harness import BrokerProcess

WAIT = 15.0


def call(broker: BrokerProcess, method: str, path: str, body: bytes | None = None, *,
         admin: bool = True, headers: dict[str, str] | None = None,
         credentials: tuple[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request on the broker's HTTP port, as its administrator unless ``admin`` is false
    or other ``credentials`` are given: (status, headers with lower-case names, body)."""
    sent = dict(headers or {})
    if credentials is not None:
        token = base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()
        sent["Authorization"] = f"Basic {token}"
    elif admin:
        sent.update((name.title(), value) for name, value in broker.admin_headers())
    conn = http.client.HTTPConnection(broker.host, broker.http_port, timeout=WAIT)
    try:
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def call_json(broker: BrokerProcess, method: str, path: str, value: Any = None, **options: Any) -> tuple[int, Any]:
    body = None if value is None else json.dumps(value).encode()
    status, _, data = call(broker, method, path, body, **options)
    return status, json.loads(data) if data.strip() else None


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    """Poll ``condition`` until it returns something true (returned), or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g}s: {what} (last: {value!r})")
        time.sleep(0.05)
