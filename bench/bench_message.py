"""Benchmark (not a test): decode + encode of a 1 KB MQRFH2 message per second.

Run: .venv/bin/python bench/bench_message.py [seconds] [--jms]
The message is an MQMD v2 + one MQRFH2 (mcd, jms, usr folders with typed values) + an XML
body, 1 KB in all, built by the JMS mapping; each iteration decodes the bytes (MQMD, RFH2
and folder parsing) and encodes them again. ``--jms`` also times the JMS mapping of the same
message both ways (mq_to_jms of the decoded message, then jms_to_mq of the result).
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

from relaymq.message import JMSMessage, decode_message, encode_message, jms_to_mq, mq_to_jms


def build_message(size: int = 1024) -> bytes:
    jms = JMSMessage(message_type="jms_text", JMSPriority=6, JMSCorrelationID="order-42", JMSReplyTo="queue://QM1/REPLY", JMSTimestamp=1_700_000_000_000, JMSType="order")
    for i in range(8):
        jms.properties.set(f"p{i}", f"value-{i}")
    jms.properties.set("count", 12, "i4")
    jms.properties.set("colour", "blue")
    head = len(encode_message(jms_to_mq(jms)))
    jms.body = "<order>" + "x" * max(0, size - head - len("<order></order>")) + "</order>"
    raw = encode_message(jms_to_mq(jms))
    assert len(raw) == size, len(raw)
    return raw


def rate(step: Callable[[], object], seconds: float) -> tuple[int, float, float]:
    """How many ``step()`` calls in ``seconds``: (count, elapsed, CPU seconds)."""
    n, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for _ in range(200):
            step()
        n += 200
    return n, time.perf_counter() - start, time.process_time() - cpu


def main(seconds: float = 3.0, jms: bool = False) -> None:
    raw = build_message()
    assert encode_message(decode_message(raw)) == raw
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {platform.machine()}, "
          f"{platform.processor() or 'cpu unknown'}, {seconds:g} s")
    n, elapsed, cpu = rate(lambda: encode_message(decode_message(raw)), seconds)
    print(f"decode+encode of a {len(raw)}-byte MQRFH2 message: {n / elapsed:,.0f} per second "
          f"({n} in {elapsed:.2f} s; {n / cpu:,.0f} per CPU second)")
    if jms:
        msg = decode_message(raw)
        n, elapsed, cpu = rate(lambda: jms_to_mq(mq_to_jms(msg)), seconds)
        print(f"JMS mapping MQ -> JMS -> MQ of the same message: {n / elapsed:,.0f} per second "
              f"({n} in {elapsed:.2f} s; {n / cpu:,.0f} per CPU second)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("seconds", nargs="?", type=float, default=3.0, help="time per measurement (default 3)")
    parser.add_argument("--jms", action="store_true", help="also time the JMS mapping both ways")
    options = parser.parse_args()
    main(options.seconds, options.jms)
