"""JMSInput header selectors joined with the property selector: formats-and-jms.md item 14
(last sentence); seed 000 l.2762-2806."""

from __future__ import annotations

import pytest

from relaymq.selector import SelectorError, compile_selector, compose_selector
from relaymq.selector.compose import complete_header_selector


@pytest.mark.parametrize(
    ("identifier", "fragment", "expected"),
    [
        ("JMSTimestamp", "BETWEEN 1057576423231 AND 10575788993265", "JMSTimestamp BETWEEN 1057576423231 AND 10575788993265"),
        ("JMSDeliveryMode", "PERSISTENT", "JMSDeliveryMode = 'PERSISTENT'"),
        ("JMSPriority", ">= 5 AND <= 8", "JMSPriority >= 5 AND JMSPriority <= 8"),
        ("JMSMessageID", "> WMBRK123456", "JMSMessageID > 'WMBRK123456'"),
        ("JMSRedelivered", "FALSE", "JMSRedelivered = FALSE"),
        ("JMSCorrelationID", "= WMBRKABCDEFGG", "JMSCorrelationID = 'WMBRKABCDEFGG'"),
    ],
)
def test_each_seed_example_is_completed(identifier: str, fragment: str, expected: str) -> None:
    """seed 000 l.2796-2812: every header selector example gets its implicit identifier."""
    text = complete_header_selector(identifier, fragment)
    assert text == expected
    compile_selector(text)


def test_parts_are_parenthesised_and_anded() -> None:
    """seed 000 l.2764: parts joined with AND, each wrapped in parentheses."""
    text = compose_selector("OrderValue > 100.00", priority=">= 5 AND <= 8", delivery_mode="PERSISTENT")
    assert text == "(OrderValue > 100.00) AND (JMSPriority >= 5 AND JMSPriority <= 8) AND (JMSDeliveryMode = 'PERSISTENT')"
    s = compile_selector(text)
    assert s.matches({"OrderValue": 150.0, "JMSPriority": 6, "JMSDeliveryMode": "PERSISTENT"})
    assert not s.matches({"OrderValue": 150.0, "JMSPriority": 9, "JMSDeliveryMode": "PERSISTENT"})


def test_single_part_is_used_directly() -> None:
    """seed 000 l.2798: the PropertySelector alone is used as written."""
    assert compose_selector("OrderValue > 100.00") == "OrderValue > 100.00"
    assert compose_selector() == ""


def test_bad_part_is_reported_when_composed() -> None:
    """A broken header part is an error when the node is configured, not at first message."""
    with pytest.raises(SelectorError):
        compose_selector(priority=">= AND")
    with pytest.raises(KeyError):
        compose_selector(colour="= 'x'")
