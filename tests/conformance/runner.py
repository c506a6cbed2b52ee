"""Byte-exact MQTT conversation runner for the shared packet-sequence conformance data.

The data (``mqtt-packet-sequences/*.json``, recorded against Eclipse Mosquitto) is read from
where it lives, never copied into this repository: ``$RELAYMQ_CONFORMANCE_DIR`` or
``<repo>/../shared/conformance/mqtt-packet-sequences``. Its README defines the format this
module implements:

* groups with ``disable: true`` are skipped; case id = ``group + " " + name``;
* ``ver`` 3 = MQIsdp v3.1, 4 = 3.1.1 (default), 5 = 5.0;
* ``connect`` (default true): send the default CONNECT (client id = case id, keepalive 60,
  clean session; level 5 with Receive Maximum 20) and expect the default CONNACK;
* steps ``send`` (write bytes), ``recv`` (read exactly that many bytes, must be equal),
  ``publish`` (a helper client ``helper`` at level 4 publishes with packet id 1, completing the
  QoS 1/2 handshake, and disconnects);
* ``expect_disconnect`` (default true): afterwards the broker must have closed the connection;
  if false it must answer PINGREQ with PINGRESP;
* every step waits at most 2 seconds.

Cases run sequentially, one connection each, in file (sorted by name) and group order: some
REGRESSION cases depend on the case before them, and ``ZZ-broker-check`` sorts last to prove the
broker survived everything before it. Raw sockets throughout: the point is byte-exactness.

Standalone::

    python -m tests.conformance.runner --host 127.0.0.1 --port 1883 [--level 5] \
        [--filter TEXT] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ENV_DATA_DIR = "RELAYMQ_CONFORMANCE_DIR"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "conformance" / "mqtt-packet-sequences"
STEP_TIMEOUT = 2.0
LEVELS = (3, 4, 5)
PINGREQ = bytes.fromhex("C000")
PINGRESP = bytes.fromhex("D000")
HELPER_CLIENT_ID = "helper"


class ConformanceDataMissing(FileNotFoundError):
    """No conformance data at any of the places looked at; ``tried`` lists them."""

    def __init__(self, tried: Sequence[Path]) -> None:
        self.tried = list(tried)
        where = ", ".join(str(p) for p in self.tried)
        super().__init__(
            f"MQTT conformance data (mqtt-packet-sequences/*.json) not found; tried: {where}. "
            f"Set {ENV_DATA_DIR} to the directory holding the *.json files."
        )


class CaseFailed(Exception):
    """A case did not behave as recorded; the message is the reason shown to the user."""


# -- the data -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step of a conversation: ``send``/``recv`` carry bytes, ``publish`` a helper message."""

    kind: str
    data: bytes = b""
    topic: str = ""
    qos: int = 0
    comment: str = ""


@dataclass(frozen=True)
class Case:
    case_id: str
    file: str
    level: int
    connect: bool
    expect_disconnect: bool
    steps: tuple[Step, ...]


@dataclass
class CaseResult:
    case_id: str
    file: str
    level: int
    passed: bool
    reason: str = ""
    note: str = ""
    seconds: float = 0.0


def parse_hex(text: str) -> bytes:
    """Bytes from the data's hex notation (whitespace ignored)."""
    return bytes.fromhex("".join(text.split()))


def find_data_dir(explicit: str | Path | None = None) -> Path:
    """The conformance data directory: ``explicit``, else the env var, else the shared default.

    Raises :class:`ConformanceDataMissing` listing every path tried. An env var that points at a
    wrong place is an error rather than a silent fall-back to the default.
    """
    tried: list[Path] = []
    candidates = [Path(explicit)] if explicit else []
    if not candidates and os.environ.get(ENV_DATA_DIR):
        candidates.append(Path(os.environ[ENV_DATA_DIR]))
    if not candidates:
        candidates.append(DEFAULT_DATA_DIR)
    for path in candidates:
        tried.append(path)
        if path.is_dir() and any(path.glob("*.json")):
            return path
    raise ConformanceDataMissing(tried)


def _step(raw: dict[str, Any]) -> Step:
    kind = raw["type"]
    comment = str(raw.get("comment", ""))
    if kind in ("send", "recv"):
        return Step(kind, parse_hex(raw["payload"]), comment=comment)
    if kind == "publish":
        # The helper's payload is message text ("message"), not hex: the recorded PUBLISH
        # packets carry it as 6d657373616765.
        return Step(kind, str(raw["payload"]).encode(), topic=raw["topic"], qos=int(raw["qos"]),
                    comment=comment)
    raise ValueError(f"unknown step type {kind!r}")


def load_cases(data_dir: Path) -> list[Case]:
    """Every enabled case, in file-name then group then case order."""
    cases: list[Case] = []
    for path in sorted(data_dir.glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            if group.get("disable"):
                continue
            for test in group["tests"]:
                cases.append(Case(
                    case_id=f"{group['group']} {test['name']}",
                    file=path.name,
                    level=int(test.get("ver", 4)),
                    connect=bool(test.get("connect", True)),
                    expect_disconnect=bool(test.get("expect_disconnect", True)),
                    steps=tuple(_step(m) for m in test["msgs"]),
                ))
    return cases


# -- packets the runner itself sends -------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        n, digit = divmod(n, 128)
        out.append(digit | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _utf8(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return len(data).to_bytes(2, "big") + data


def _packet(first_byte: int, body: bytes) -> bytes:
    return bytes([first_byte]) + _varint(len(body)) + body


def default_connect(client_id: str, level: int) -> bytes:
    """The README's default CONNECT: clean session, keepalive 60; level 5 adds Receive Max 20."""
    name = b"MQIsdp" if level == 3 else b"MQTT"
    body = _utf8(name) + bytes([level, 0x02]) + (60).to_bytes(2, "big")
    if level == 5:
        body += bytes([3, 0x21]) + (20).to_bytes(2, "big")  # properties: Receive Maximum 20
    return _packet(0x10, body + _utf8(client_id))


def default_connack(level: int) -> bytes:
    if level == 5:
        # Topic Alias Maximum 10, Receive Maximum 20: what a broker configured as the README
        # asks advertises.
        return parse_hex("20 09 00 00 06 22 00 0A 21 00 14")
    return parse_hex("20 02 00 00")


def helper_publish(topic: str, payload: bytes, qos: int) -> bytes:
    header = 0x30 | (qos << 1)
    body = _utf8(topic) + ((1).to_bytes(2, "big") if qos else b"") + payload
    return _packet(header, body)


# -- talking to the broker ------------------------------------------------------------------------


def _hex(data: bytes) -> str:
    return data.hex(" ").upper() if data else "(nothing)"


def _is_reset(exc: OSError) -> bool:
    return isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError))


def recv_exact(sock: socket.socket, expected: bytes, timeout: float, what: str) -> None:
    """Read ``len(expected)`` bytes within ``timeout`` and compare; fail early on a mismatch."""
    got = bytearray()
    deadline = time.monotonic() + timeout
    mismatch = False
    while len(got) < len(expected):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(len(expected) - len(got))
        except TimeoutError:
            break
        except OSError as exc:
            if not _is_reset(exc):
                raise
            raise CaseFailed(f"{what}: connection reset; expected {_hex(expected)}, "
                             f"got {_hex(bytes(got))}") from None
        if not chunk:
            raise CaseFailed(f"{what}: connection closed by broker; expected {_hex(expected)}, "
                             f"got {_hex(bytes(got))}")
        got += chunk
        if not expected.startswith(bytes(got)):
            mismatch = True
            # Keep what is already there for a useful message, without waiting for more.
            deadline = min(deadline, time.monotonic() + 0.05)
    if mismatch or bytes(got) != expected:
        if len(got) < len(expected) and not mismatch:
            raise CaseFailed(f"{what}: timed out after {timeout:g}s; expected {_hex(expected)}, "
                             f"got {_hex(bytes(got))}")
        raise CaseFailed(f"{what}: expected {_hex(expected)}, got {_hex(bytes(got))}")


def expect_closed(sock: socket.socket, timeout: float) -> bytes:
    """The broker must close the connection within ``timeout``.

    Bytes it sends before closing are read and returned, not judged: the README fails a case
    on "a connection that stays up where it should be closed", and an MQTT 5 broker may send
    a DISCONNECT with a reason code before it closes. They are shown in the result's note.
    """
    deadline = time.monotonic() + timeout
    extra = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            break
        except OSError as exc:
            if not _is_reset(exc):
                raise
            chunk = b""
        if not chunk:
            return bytes(extra)
        extra += chunk
    detail = f" (it sent {_hex(bytes(extra))})" if extra else ""
    raise CaseFailed(f"connection still open {timeout:g}s after the last step, expected the "
                     f"broker to close it{detail}")


def expect_alive(sock: socket.socket, timeout: float) -> None:
    """The connection must still be up: PINGREQ answered by exactly PINGRESP."""
    try:
        sock.sendall(PINGREQ)
    except OSError as exc:
        if not _is_reset(exc):
            raise
        raise CaseFailed("connection closed by broker, expected it to stay open "
                         "(PINGREQ could not be sent)") from None
    recv_exact(sock, PINGRESP, timeout, "connection check (PINGREQ -> PINGRESP)")


def run_helper_publish(host: str, port: int, step: Step, timeout: float) -> None:
    """The README's helper: connect as ``helper`` (3.1.1, clean), publish, finish QoS, close."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(default_connect(HELPER_CLIENT_ID, 4))
            recv_exact(sock, default_connack(4), timeout, "helper CONNACK")
            sock.sendall(helper_publish(step.topic, step.data, step.qos))
            if step.qos == 1:
                recv_exact(sock, parse_hex("40 02 00 01"), timeout, "helper PUBACK")
            elif step.qos == 2:
                recv_exact(sock, parse_hex("50 02 00 01"), timeout, "helper PUBREC")
                sock.sendall(parse_hex("62 02 00 01"))
                recv_exact(sock, parse_hex("70 02 00 01"), timeout, "helper PUBCOMP")
            sock.sendall(parse_hex("E0 00"))
    except OSError as exc:
        raise CaseFailed(f"helper publish failed: {exc!r}") from None


def _steps_with_defaults(case: Case) -> list[Step]:
    steps = list(case.steps)
    if case.connect:
        steps[:0] = [
            Step("send", default_connect(case.case_id, case.level), comment="default CONNECT"),
            Step("recv", default_connack(case.level), comment="default CONNACK"),
        ]
    return steps


def run_case(host: str, port: int, case: Case, step_timeout: float = STEP_TIMEOUT) -> CaseResult:
    """Play one conversation on a fresh connection and judge it."""
    started = time.monotonic()
    result = CaseResult(case.case_id, case.file, case.level, passed=False)
    try:
        sock = socket.create_connection((host, port), timeout=step_timeout)
    except OSError as exc:
        result.reason = f"cannot connect to {host}:{port}: {exc!r}"
        result.seconds = time.monotonic() - started
        return result
    steps = _steps_with_defaults(case)
    try:
        with sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for index, step in enumerate(steps, start=1):
                what = f"step {index}/{len(steps)} {step.kind}"
                if step.comment:
                    what += f" ({step.comment})"
                if step.kind == "send":
                    try:
                        sock.sendall(step.data)
                    except OSError as exc:
                        if not _is_reset(exc):
                            raise
                        # The broker hung up. That is the expected outcome when the case
                        # ends in a disconnect and nothing is left to read; a send that lost
                        # the race with the close is not the broker's fault.
                        rest = steps[index:]
                        if case.expect_disconnect and all(s.kind == "send" for s in rest):
                            break
                        raise CaseFailed(f"{what}: connection closed by broker before all "
                                         f"steps ran") from None
                elif step.kind == "recv":
                    recv_exact(sock, step.data, step_timeout, what)
                elif step.kind == "publish":
                    run_helper_publish(host, port, step, step_timeout)
            if case.expect_disconnect:
                trailing = expect_closed(sock, step_timeout)
                if trailing:
                    result.note = f"sent {_hex(trailing)} before closing (not checked)"
            else:
                expect_alive(sock, step_timeout)
        result.passed = True
    except CaseFailed as exc:
        result.reason = str(exc)
    except OSError as exc:
        result.reason = f"socket error: {exc!r}"
    result.seconds = time.monotonic() - started
    return result


def run_cases(
    host: str,
    port: int,
    cases: Iterable[Case],
    step_timeout: float = STEP_TIMEOUT,
    progress: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run cases sequentially, in the given order (later cases may depend on earlier ones)."""
    results = []
    for case in cases:
        result = run_case(host, port, case, step_timeout)
        results.append(result)
        if progress:
            progress(result)
    return results


def select(cases: Iterable[Case], level: int | None = None, text: str | None = None) -> list[Case]:
    """Cases of one level and/or whose id contains ``text`` (case-insensitive)."""
    needle = text.lower() if text else None
    return [c for c in cases
            if (level is None or c.level == level)
            and (needle is None or needle in c.case_id.lower())]


def summarize(results: Iterable[CaseResult]) -> dict[int, dict[str, int]]:
    """Per protocol level: total, passed, failed."""
    counts: dict[int, dict[str, int]] = {}
    for r in results:
        c = counts.setdefault(r.level, {"total": 0, "passed": 0, "failed": 0})
        c["total"] += 1
        c["passed" if r.passed else "failed"] += 1
    return dict(sorted(counts.items()))


def format_summary(results: Sequence[CaseResult]) -> str:
    lines = []
    names = {3: "MQIsdp v3.1", 4: "MQTT 3.1.1", 5: "MQTT 5.0"}
    for level, c in summarize(results).items():
        lines.append(f"level {level} ({names.get(level, '?')}): {c['passed']}/{c['total']} passed, "
                     f"{c['failed']} failed")
    return "\n".join(lines)


def format_failures(results: Iterable[CaseResult]) -> str:
    return "\n".join(f"FAIL [{r.file}] {r.case_id}: {r.reason}" for r in results if not r.passed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.runner",
        description="Run the byte-exact MQTT packet-sequence cases against a running broker. "
                    "Configure the broker with topic alias maximum 10 and receive maximum "
                    "(max inflight) 20, as the data's default CONNACK assumes.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1883)
    parser.add_argument("--level", type=int, choices=LEVELS, help="only cases of this level")
    parser.add_argument("--filter", help="only cases whose id contains this text")
    parser.add_argument("--data-dir", help=f"data directory (default: ${ENV_DATA_DIR} or "
                                           f"{DEFAULT_DATA_DIR})")
    parser.add_argument("--json", type=Path, help="write every result to this JSON file")
    parser.add_argument("--step-timeout", type=float, default=STEP_TIMEOUT)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args(argv)

    try:
        data_dir = find_data_dir(args.data_dir)
    except ConformanceDataMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cases = select(load_cases(data_dir), args.level, args.filter)
    if not cases:
        print("no cases selected", file=sys.stderr)
        return 2

    def progress(r: CaseResult) -> None:
        if args.verbose:
            print(f"{'ok  ' if r.passed else 'FAIL'} {r.case_id}", flush=True)

    results = run_cases(args.host, args.port, cases, args.step_timeout, progress)
    failures = format_failures(results)
    if failures:
        print(failures)
    print(format_summary(results))
    if args.json:
        args.json.write_text(json.dumps({
            "data_dir": str(data_dir),
            "summary": {str(k): v for k, v in summarize(results).items()},
            "results": [asdict(r) for r in results],
        }, indent=2))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
