"""Benchmark (not a test): evaluations per second of ``JMSPriority > 4 AND colour = 'blue'``
on a prepared message.

Run: .venv/bin/python bench/bench_selector.py [seconds]
"Prepared" = the selector compiled once and the message's resolver made once, as a consumer
or subscription holds them. Three resolvers are measured: a plain mapping, a JMS message, and
the canonical Message decoded from MQ bytes (its JMS view is computed once and cached).
"""

from __future__ import annotations

import sys
import time

from relaymq.message import JMSMessage, Message
from relaymq.selector import compile_selector
from relaymq.selector.resolvers import jms_resolver, message_resolver

EXPRESSION = "JMSPriority > 4 AND colour = 'blue'"


def rate(fn, seconds: float) -> float:  # type: ignore[no-untyped-def]
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(1000):
            fn()
        n += 1000
    return n / (time.perf_counter() - start)


def main(seconds: float = 2.0) -> None:
    selector = compile_selector(EXPRESSION)
    jms = JMSMessage(JMSPriority=7)
    jms.properties.set("colour", "blue")
    mapping = {"JMSPriority": 7, "colour": "blue"}
    jres = jms_resolver(jms)
    mres = message_resolver(Message.from_bytes(Message.from_jms(jms).to_bytes()))
    assert selector.matches(mapping) and selector.matches(jres) and selector.matches(mres)
    for name, source in (("dict", mapping), ("JMSMessage", jres), ("Message (from MQ bytes)", mres)):
        r = rate(lambda s=source: selector.matches(s), seconds)
        print(f"{EXPRESSION!r} on {name}: {r:,.0f} evaluations per second")
    r = rate(lambda: compile_selector.__wrapped__(EXPRESSION), seconds / 2)
    print(f"compile (uncached): {r:,.0f} per second")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
