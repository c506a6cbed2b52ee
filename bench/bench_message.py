"""Benchmark (not a test): decode + encode of a 1 KB MQRFH2 message per second.

Run: .venv/bin/python bench/bench_message.py [seconds]
The message is an MQMD v2 + one MQRFH2 (mcd, jms, usr folders with typed values) + an XML
body, 1 KB in all, built by the JMS mapping; each iteration decodes the bytes (MQMD, RFH2
and folder parsing) and encodes them again.
"""

from __future__ import annotations

import platform
import sys
import time

from relaymq.message import JMSMessage, decode_message, encode_message, jms_to_mq


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


def main(seconds: float = 3.0) -> None:
    raw = build_message()
    assert encode_message(decode_message(raw)) == raw
    n, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for _ in range(200):
            encode_message(decode_message(raw))
        n += 200
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {platform.machine()}, "
          f"{platform.processor() or 'cpu unknown'}, {seconds:g} s")
    print(f"decode+encode of a {len(raw)}-byte MQRFH2 message: {n / elapsed:,.0f} per second "
          f"({n} in {elapsed:.2f} s; {n / cpu:,.0f} per CPU second)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
