"""Transmit only when enough messages are waiting: the seed's triggerTransmission example
(MQ Everyplace 2.0.2, "Trigger transmission rule example", seed 004 l.5339-5356) as a relaymq
queue manager rule.

A link asks the rule before it transmits: when a put wakes it (``fields`` are the message's),
when it connects and every second (``fields`` empty). ``count`` is the number of confirmed
messages waiting on all asynchronous remote and store-and-forward queues. With this rule
nothing leaves until more than ``threshold`` are waiting; then everything goes, in priority
then arrival order. ``qm.trigger_transmission()`` asks the rule too.

Use it by putting this directory on PYTHONPATH and naming the rule::

    [qmgr]
    rule = "pending_threshold:PendingThresholdRule"
"""

from __future__ import annotations

from typing import Any

from relaymq.qmgr import QueueManagerRule


class PendingThresholdRule(QueueManagerRule):
    """Allow transmission only when more than ``threshold`` messages are pending."""

    #: The seed's example uses 10.
    threshold = 10

    def trigger_transmission(self, qm: Any, count: int, fields: dict[str, Any]) -> bool:
        return count > self.threshold
