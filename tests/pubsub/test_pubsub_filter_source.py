"""What a content filter reads of a publication (pubsub.md item 17): ``FilterSource`` reads
``usr.*`` and ``Body.*`` without building the message view (issue 14: the view was most of a
filtered publication's cost), and every name reads what the whole view (``view_resolver``) reads."""

from __future__ import annotations

import pytest

from relaymq.pubsub.conversions import filter_resolver, filter_selects, publication_from_mqtt, view_resolver
from relaymq.pubsub.model import Publication
from relaymq.selector import compile_selector

NAMES = ("usr.level", "usr.level[2]", "usr.Level", "usr.a.b", "usr.", "usr.*", "usr.x[0]", "usr.bad step",
         "usr.colour", "usr", "Body", "Body.", "Body.v", "Body.v[2]", "Body.a.b", "Body.Item", "Body.Item[2].n",
         "Body.order.Price", "Body.order.Name", "Body.*", "Body.x[0]", "Root.MQMD.Persistence",
         "Root.MQMD.Priority", "psc.Topic", "mcd.Msd", "Properties.MessageDomain", "JMSPriority", "colour")

USR = [("level", "7"), ("level", "9"), ("Level", "x"), ("bad step", "1"), ("1x", "2"), ("colour", "blue")]

MQTT = [  # (payload, MQTT properties)
    (b'{"v": 77, "a": {"b": "t"}}', {"user_property": USR}),
    (b'{"v": 1, "v": 2}', {}),
    (b'[{"n": 1}, {"n": 2}]', {"user_property": [("level", "high")]}),
    (b"<order><Name>Smith</Name><Price>150</Price></order>", {"user_property": USR}),
    (b"<order><Name>Smith</Name>", {}),  # malformed XML
    (b'{"v": ', {"user_property": USR}),  # malformed JSON
    (b"plain text 5", {"user_property": USR}),
    (b"", {}),
    (b"<order><Price>3</Price></order>", {"content_type": "application/json"}),  # says JSON, is not
    (b'{"v": 3}', {"content_type": "text/xml", "payload_format_indicator": 1}),
]

PSC = [  # psc publications: the publisher names the domain
    Publication("t/p", b"<order><Price>150</Price></order>", usr=[("level", "7")], domain="xmlnsc", persistent=True),
    Publication("t/p", b'{"v": 60}', domain="JSON", priority=4),
    Publication("t/p", b"<order><Price>150</Price></order>", domain="jms_text"),  # a JMS class
    Publication("t/p", b'{"v": 60}', domain="nonsense"),  # no such domain
    Publication("t/p", b'{"v": 60}', domain=""),
    Publication("t/p", b"<a>1</a>", domain="mrm", body_format="MQSTR"),
]


def publications() -> list[Publication]:
    pubs = [publication_from_mqtt("t/m", payload, qos, properties, None)
            for payload, properties in MQTT for qos in (0, 1)]
    return pubs + PSC


@pytest.mark.parametrize("pub", publications(), ids=lambda pub: f"{pub.domain}:{pub.body[:12]!r}")
def test_item_17_filter_source_reads_what_the_view_reads(pub: Publication) -> None:
    """item 17: each name has the value, and the type (untyped text included), of the view."""
    view = view_resolver(Publication(**{f: getattr(pub, f) for f in ("topic", "body", "sub_point", "usr", "domain",
                                                                        "body_format", "persistent", "priority",
                                                                        "untyped_usr")}))
    source = filter_resolver(pub)
    for name in NAMES:
        expected, got = view(name), source(name)
        assert (type(got), got) == (type(expected), expected), name


def test_issue_14_usr_and_body_filters_do_not_build_the_view() -> None:
    """issue 14: ``usr.level > 5`` and ``Body.v > 50`` on an MQTT publication are answered from
    its usr folder and its parsed body; the message view is never made (it cost more than
    both filters' evaluation together)."""
    pub = publication_from_mqtt("t/m", b'{"v": 77}', 0, {"user_property": [("level", "7")]}, None)
    assert filter_selects(pub, compile_selector("usr.level > 5")) is True
    assert filter_selects(pub, compile_selector("Body.v > 50 AND usr.level = '7'")) is True
    assert filter_selects(pub, compile_selector("Body.v < 50")) is False
    assert pub._view is None
    assert filter_selects(pub, compile_selector("Root.MQMD.Priority = 0")) is True  # a header: the view
    assert pub._view is not None
