"""``[pubsub]`` configuration (pubsub.md items 16, 38, 44; docs/pubsub.md): defaults, and
errors that name the exact key."""

from __future__ import annotations

import pytest

from relaymq.config import ConfigError
from relaymq.pubsub.settings import build
from relaymq.pubsub.topicacl import PUBLISH


def test_item_44_defaults_statistics_off_and_default_stream():
    """pubsub.md item 44; seed 003 l.2871-2932: statsInterval is 0 (off) unless set."""
    settings = build(None, "pubsub", None)
    assert settings.stats_interval_ms == 0
    assert settings.input_queue_points() == {"SYSTEM.BROKER.DEFAULT.STREAM": ""}
    assert settings.topic_security is False


@pytest.mark.parametrize("raw, key", [
    ({"stats_interval_ms": -1}, "pubsub.stats_interval_ms"),
    ({"input_queues": ["BAD QUEUE"]}, "pubsub.input_queues"),
    ({"acl": [{"principal": "p", "publish": "maybe"}]}, "pubsub.acl[0].publish"),
    ({"acl": [{"topic": "a"}]}, "pubsub.acl[0].principal"),
    ({"acl": [{"principal": "p", "colour": "red"}]}, "pubsub.acl[0].colour"),
    ({"groups": {"G": "alice"}}, "pubsub.groups.G"),
    ({"unknown": 1}, "pubsub.unknown"),
])
def test_errors_name_the_key(raw, key):
    with pytest.raises(ConfigError) as caught:
        build(raw, "pubsub", None)
    assert caught.value.key == key


def test_item_16_and_38_input_queue_points_and_acl_rows(tmp_path):
    """pubsub.md items 16 and 38: QUEUE:SubPoint; rows from the configuration."""
    settings = build({"input_queues": ["A", "B:Pounds"], "topic_security": True,
                      "groups": {"W": ["w"]},
                      "acl": [{"topic": "", "principal": "PublicGroup", "publish": "deny"},
                              {"topic": "", "principal": "W", "publish": "allow"}]}, "pubsub", str(tmp_path))
    assert settings.input_queue_points() == {"A": "", "B": "Pounds"}
    acl = settings.topic_acl(str(tmp_path))
    assert acl.allowed("w", "x", PUBLISH) and not acl.allowed("v", "x", PUBLISH)
