"""Benchmark (not a test): evaluations per second of ``JMSPriority > 4 AND colour = 'blue'``
(issue 3, Done-when 2).

Run: .venv/bin/python bench/bench_selector.py [seconds]

What each line measures:

* ``prepared JMSMessage`` - the issue's figure: the selector compiled once, the message already
  in JMS form (as a consumer holds it after receipt), each evaluation resolving both
  identifiers through ``JMSMessage.selector_value`` (no cache between evaluations).
* ``dict`` - the same with the values in a plain mapping: the evaluator's own cost.
* ``MQ bytes -> verdict`` - end to end for a message off a queue: decode the 1 KB MQMD+MQRFH2
  bytes, build the Message, its JMS view and a resolver, then evaluate. Every iteration starts
  from the bytes, so nothing is cached across iterations.
* ``fresh resolver on a decoded Message`` - a new ``message_resolver`` per evaluation over
  a Message whose JMS view is already computed (what pub/sub does for each subscription of
  one publication); the resolver's per-message cache only serves within one evaluation.
* ``compile (uncached)`` - parsing and compiling the expression.
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_message import build_message  # noqa: E402

from relaymq.message import JMSMessage, Message, mq_to_jms  # noqa: E402
from relaymq.selector import compile_selector  # noqa: E402
from relaymq.selector.resolvers import jms_resolver, message_resolver  # noqa: E402

EXPRESSION = "JMSPriority > 4 AND colour = 'blue'"


def rate(fn, seconds: float, batch: int = 1000) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(calls per second, calls per CPU second of this process: steadier on a shared machine)."""
    n, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for _ in range(batch):
            fn()
        n += batch
    return n / (time.perf_counter() - start), n / max(1e-9, time.process_time() - cpu)


def main(seconds: float = 2.0) -> None:
    selector = compile_selector(EXPRESSION)
    raw = build_message()  # 1 KB: MQMD v2 + MQRFH2 (mcd, jms, usr with colour=blue) + body
    prepared = mq_to_jms(Message.from_bytes(raw).mq)
    assert isinstance(prepared, JMSMessage) and prepared.JMSPriority == 6
    jres = jms_resolver(prepared)
    mapping = {"JMSPriority": 6, "colour": "blue"}
    decoded = Message.from_bytes(raw)
    decoded.jms()

    def from_bytes() -> bool:
        return selector.matches(message_resolver(Message.from_bytes(raw)))

    def fresh_resolver() -> bool:
        return selector.matches(message_resolver(decoded))

    for check in (lambda: selector.matches(jres), lambda: selector.matches(mapping), from_bytes, fresh_resolver):
        assert check() is True
    print(f"# {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, {platform.machine()}, "
          f"{platform.processor() or 'cpu unknown'}, {seconds:g} s per figure")
    cases = (
        ("prepared JMSMessage", lambda: selector.matches(jres), 1000),
        ("dict", lambda: selector.matches(mapping), 1000),
        (f"MQ bytes ({len(raw)} B) -> verdict", from_bytes, 50),
        ("fresh resolver on a decoded Message", fresh_resolver, 1000),
    )
    for name, fn, batch in cases:
        wall, cpu = rate(fn, seconds, batch)
        print(f"{EXPRESSION!r} on {name}: {wall:,.0f} evaluations per second ({cpu:,.0f} per CPU second)")
    wall, cpu = rate(lambda: compile_selector.__wrapped__(EXPRESSION), seconds / 2, 100)
    print(f"compile (uncached): {wall:,.0f} per second ({cpu:,.0f} per CPU second)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
