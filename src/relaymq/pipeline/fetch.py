"""Reading the log from elsewhere: the HTTP fetch endpoint, and the two ways a reader gets at
the log (``LocalAccess``: the SQLite file directly; ``HttpAccess``: the endpoint).

Why an HTTP endpoint: Spark executors on other machines cannot open the broker's SQLite file;
they ask the broker for a partition's range and get it as Arrow IPC, ready to hand to Spark.
Routes (on the shared HTTP server, ``[http] port``)::

    GET /archive/partitions                     -> {"telemetry-0": {"first_seq": 0, "next_seq": 42}, ...}
    GET /archive/partitions/{name}?start=S&end=E[&limit=N]
                                                -> 200 Arrow IPC stream of entries S <= seq < E
                                                   404 unknown partition, 410 removed by retention,
                                                   400 bad parameters, 501 pyarrow not installed
    GET /archive/partitions/{name}/timestamps?start=S&end=E
                                                -> {"start": S, "timestamps_us": [...]} (archive
                                                   timestamps only: what admission control orders by)

``open_access(location)`` picks the access from what the user wrote: ``http://host:port`` or a
directory (the log directory, or a broker data directory containing ``log/``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import urllib.error
import urllib.parse
from collections.abc import Sequence
from typing import Any, Protocol

from relaymq.auth.authorities import request_principal
from relaymq.pipeline.arrowio import ARROW_MEDIA_TYPE, batch_ipc, batches_from_ipc, stored_batch
from relaymq.pipeline.log import BROKER_FILE, LOG_FILE, LogError, has_log, MessageLog, PartitionInfo, RetentionError

ROUTE_PARTITIONS = "/archive/partitions"
ROUTE_RANGE = "/archive/partitions/{name}"
ROUTE_TIMESTAMPS = "/archive/partitions/{name}/timestamps"
#: Most entries one fetch returns (a reader asks again for the rest).
MAX_FETCH = 50_000


class LogAccess(Protocol):
    """What a reader needs from the log, wherever it is."""

    def partitions(self) -> dict[str, PartitionInfo]: ...

    def read_batches(self, partition: str, start: int, end: int,
                     columns: Sequence[str] | None = None) -> list[Any]: ...

    def timestamps(self, partition: str, start: int, end: int) -> list[float]: ...


class LocalAccess:
    """The log's SQLite file, read directly (same machine, or a shared filesystem)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._log: MessageLog | None = None

    def _open(self) -> MessageLog:
        if self._log is None:
            self._log = MessageLog(self.directory, readonly=True)
        return self._log

    def partitions(self) -> dict[str, PartitionInfo]:
        return self._open().partitions()

    def read_batches(self, partition: str, start: int, end: int,
                     columns: Sequence[str] | None = None) -> list[Any]:
        """RecordBatches of entries ``start <= seq < end``, of ``columns`` (None: all)."""
        batches = []
        while start < end:
            batch = stored_batch(partition, self._open().read_stored(partition, start, end, limit=MAX_FETCH), columns)
            if batch.num_rows == 0:
                break
            batches.append(batch)
            start += batch.num_rows
        return batches

    def timestamps(self, partition: str, start: int, end: int) -> list[float]:
        return self._open().timestamps(partition, start, end)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


class HttpAccess:
    """The broker's fetch endpoint (``http://host:port``), with HTTP basic authentication when
    a user is given (``username``/``password``, or ``http://user:password@host:port``): the
    endpoint is behind the broker's password file when it has one."""

    def __init__(self, base_url: str, timeout: float = 30.0, *, username: str | None = None,
                 password: str | None = None) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.username is not None:
            username = username or urllib.parse.unquote(parts.username)
            password = password if password is not None else urllib.parse.unquote(parts.password or "")
            netloc = parts.hostname or ""
            if parts.port is not None:
                netloc += f":{parts.port}"
            base_url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._headers: dict[str, str] = {}
        if username:
            token = base64.b64encode(f"{username}:{password or ''}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"

    def _get(self, path: str) -> bytes:
        # the client's alone: urllib.request (http.client, email) is 0.7 MB the broker's side
        # of this module does not need (issue 8, scenario 6)
        import urllib.request

        try:
            request = urllib.request.Request(self.base_url + path, headers=self._headers)
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            detail = _error_detail(error.read())
            if error.code == 410:
                raise RetentionError(detail.get("partition", "?"), int(detail.get("start", -1)),
                                     int(detail.get("first_seq", -1))) from None
            if error.code == 401:
                who = "the user given was refused" if self._headers else "give username/password (or http://user:password@host:port)"
                raise LogError(f"the message log at {self.base_url} needs HTTP basic authentication: {who}") from None
            raise LogError(f"{self.base_url}{path}: HTTP {error.code}: {detail.get('error', error.reason)}") from None
        except urllib.error.URLError as error:
            raise LogError(f"cannot reach the message log at {self.base_url}: {error.reason}") from None

    def partitions(self) -> dict[str, PartitionInfo]:
        data = json.loads(self._get(ROUTE_PARTITIONS))
        return {name: PartitionInfo(name, v["first_seq"], v["next_seq"]) for name, v in data.items()}

    def read_batches(self, partition: str, start: int, end: int,
                     columns: Sequence[str] | None = None) -> list[Any]:
        """RecordBatches of entries ``start <= seq < end``, of ``columns`` (None: all; the
        endpoint sends every column, the others are dropped here)."""
        batches = []
        quoted = urllib.parse.quote(partition, safe="")
        while start < end:
            got = batches_from_ipc(self._get(f"{ROUTE_PARTITIONS}/{quoted}?start={start}&end={end}&limit={MAX_FETCH}"))
            rows = sum(b.num_rows for b in got)
            if rows == 0:
                break
            batches.extend(got if columns is None else [b.select(list(columns)) for b in got])
            start += rows
        return batches

    def timestamps(self, partition: str, start: int, end: int) -> list[float]:
        quoted = urllib.parse.quote(partition, safe="")
        data = json.loads(self._get(f"{ROUTE_PARTITIONS}/{quoted}/timestamps?start={start}&end={end}"))
        return [us / 1_000_000 for us in data["timestamps_us"]]


def _error_detail(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
        return value if isinstance(value, dict) else {}
    except ValueError:
        return {"error": body[:200].decode("utf-8", "replace")}


def open_access(location: str, username: str | None = None, password: str | None = None) -> LogAccess:
    """``http(s)://...`` -> HttpAccess (with basic authentication when a user is given); a
    directory holding the log (or ``log/`` of a broker's data directory) -> LocalAccess."""
    if location.startswith(("http://", "https://")):
        return HttpAccess(location, username=username, password=password)
    for candidate in (location, os.path.join(location, "log")):
        if has_log(candidate):
            return LocalAccess(candidate)
    raise LogError(f"no message log at {location!r} (expected a broker's {BROKER_FILE} or a {LOG_FILE} there"
                   " or in its log/ directory)")


# -- the server side ----------------------------------------------------------------------------
def _json(status: int, value: object) -> Any:
    from relaymq.http.server import HttpResponse

    return HttpResponse(status, [("content-type", "application/json")], json.dumps(value).encode())


def _arg(request: Any, name: str, default: int | None) -> int | None:
    values = request.query.get(name)
    if not values:
        return default
    number = int(values[0])
    if number < 0:
        raise ValueError(f"{name} must be >= 0")
    return number


class FetchEndpoint:
    """The HTTP handlers over one MessageLog; reads run on a worker thread, not the loop.
    ``authorities`` (relaymq.auth.authorities): a caller reads only the partitions it holds
    ``read`` on (object type ``archive``; issue 15: the archive is an entrance like the others)."""

    def __init__(self, log: MessageLog, authorities: Any = None) -> None:
        self.log = log
        self.authorities = authorities
        #: partition -> the highest offset after an entry served, for the archive lag metric.
        self.served: dict[str, int] = {}

    def _may_read(self, request: Any, partition: str) -> bool:
        if self.authorities is None:
            return True
        return self.authorities.allows(request_principal(request), "archive", partition, "read")

    def _refusal(self, request: Any) -> Any:
        """403 unless the caller may read the URL's partition."""
        name = request.path_params["name"]
        if self._may_read(request, name):
            return None
        return _json(403, {"error": f"no read authority on archive partition {name!r}", "partition": name})

    async def list_partitions(self, request: Any) -> Any:
        parts = await asyncio.to_thread(self.log.partitions)
        return _json(200, {n: {"first_seq": p.first_seq, "next_seq": p.next_seq} for n, p in parts.items()
                           if self._may_read(request, n)})

    async def read_range(self, request: Any) -> Any:
        from relaymq.http.server import HttpResponse

        refused = self._refusal(request)
        if refused is not None:
            return refused
        name = request.path_params["name"]
        try:
            start = _arg(request, "start", 0) or 0
            end = _arg(request, "end", None)
            limit = min(_arg(request, "limit", MAX_FETCH) or MAX_FETCH, MAX_FETCH)
        except ValueError as error:
            return _json(400, {"error": str(error)})
        try:
            runs = await asyncio.to_thread(self.log.read_stored, name, start, end, limit)
        except RetentionError as error:
            return _json(410, {"error": str(error), "partition": name, "start": start, "first_seq": error.first_seq})
        except LogError as error:
            return _json(404, {"error": str(error)})
        try:
            batch = await asyncio.to_thread(stored_batch, name, runs)
        except ImportError:
            return _json(501, {"error": "pyarrow is not installed in the broker (pip install relaymq[spark])"})
        if batch.num_rows:
            self.served[name] = max(self.served.get(name, 0), start + batch.num_rows)
        body = await asyncio.to_thread(batch_ipc, batch)
        return HttpResponse(200, [("content-type", ARROW_MEDIA_TYPE)], body)

    async def read_timestamps(self, request: Any) -> Any:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        name = request.path_params["name"]
        try:
            start = _arg(request, "start", 0) or 0
            end = _arg(request, "end", None)
            if end is None:
                raise ValueError("end is required")
            end = min(end, start + MAX_FETCH * 4)
        except ValueError as error:
            return _json(400, {"error": str(error)})
        try:
            stamps = await asyncio.to_thread(self.log.timestamps, name, start, end)
        except RetentionError as error:
            return _json(410, {"error": str(error), "partition": name, "start": start, "first_seq": error.first_seq})
        except LogError as error:
            return _json(404, {"error": str(error)})
        return _json(200, {"start": start, "timestamps_us": [round(t * 1_000_000) for t in stamps]})

    def install(self, server: Any) -> None:
        """Add the routes; behind the server's basic authentication when it has one (the log
        holds every archived message, so it is as private as the queues)."""
        auth = getattr(server, "auth", None)
        guard = auth.protect if auth is not None else (lambda handler: handler)
        server.add_route("GET", ROUTE_PARTITIONS, guard(self.list_partitions))
        server.add_route("GET", ROUTE_RANGE, guard(self.read_range))
        server.add_route("GET", ROUTE_TIMESTAMPS, guard(self.read_timestamps))

    def uninstall(self, server: Any) -> None:
        server.remove_route("GET", ROUTE_PARTITIONS)
        server.remove_route("GET", ROUTE_RANGE)
        server.remove_route("GET", ROUTE_TIMESTAMPS)
