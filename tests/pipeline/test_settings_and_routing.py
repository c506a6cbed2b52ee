"""[archive] rules and where a message goes (issue 7 item 1: "archive rules in the configuration
choose topics (filters) and queues ... partitions ... retention"; spec README decision 2 for
the topic filter rules)."""

from __future__ import annotations

import pytest

from relaymq.config import ConfigError, load_config
from relaymq.pipeline.partitioning import Router, partition_index
from relaymq.pipeline.settings import build


@pytest.mark.parametrize("key", ["dir", "commit_delay_ms", "max_batch", "max_pending"])
def test_the_log_writers_own_keys_are_refused_with_the_reason(key: str) -> None:
    """issue 14: the log commits with the publications in the broker's database, so the keys
    of its former writer thread stop start-up with a message naming the key and why."""
    with pytest.raises(ConfigError, match=rf"archive\.{key}: no longer used: the message log now lives in"):
        build({key: 1, "rule": [{"topics": ["a"]}]}, "archive", None)


def test_defaults_mean_no_archive() -> None:
    """issue 7: without rules nothing is archived."""
    assert not build(None, "archive", None).enabled


def test_rules_are_built_with_exact_error_keys() -> None:
    """issue 7 archive rules; lead brief: ConfigError names the exact key (archive.rule[1].partitions)."""
    config = build({"retention_check_seconds": 2, "rule": [{"name": "t", "topics": ["LCUnit/#"], "partitions": 4,
                                                            "retention_seconds": 60}]}, "archive", None)
    assert config.retention_check_seconds == 2 and config.rules[0].partition_names() == [f"t-{i}" for i in range(4)]
    with pytest.raises(ConfigError, match=r"archive\.rule\[1\]\.partitions"):
        build({"rule": [{"topics": ["a"]}, {"topics": ["b"], "partitions": 0}]}, "archive", None)
    with pytest.raises(ConfigError, match=r"archive\.rule\[0\]\.topics.*'a/b#'"):
        build({"rule": [{"topics": ["a/b#"]}]}, "archive", None)
    with pytest.raises(ConfigError, match=r"archive\.rule\[0\]\.topics: a rule needs"):
        build({"rule": [{"name": "x"}]}, "archive", None)
    with pytest.raises(ConfigError, match=r"archive\.rule\[1\]\.name"):
        build({"rule": [{"name": "x", "queues": ["Q"]}, {"name": "x", "queues": ["R"]}]}, "archive", None)
    with pytest.raises(ConfigError, match=r"unknown key archive\.colour"):
        build({"colour": 1}, "archive", None)


def test_the_example_configuration_loads(tmp_path) -> None:
    """examples/telemetry-analytics/relaymq.toml is a valid configuration (docs/pipeline.md)."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "telemetry-analytics" / "relaymq.toml"
    config = load_config(str(path))
    archive = config.section("archive")
    assert archive.enabled and Router(archive.rules).for_topic("LCUnit/12345/batch")
    assert not Router(archive.rules).for_topic("alerts/LCUnit/12345")


def test_router_matches_filters_and_keeps_a_topic_in_one_partition() -> None:
    """issue 7: filters choose topics (one matching engine, spec README decision 2); a topic
    always hashes to the same partition so its order is kept."""
    config = build({"rule": [{"name": "t", "topics": ["LCUnit/+/StateChange", "LCUnit/#"], "partitions": 3},
                             {"name": "q", "queues": ["IN"], "topics": ["#"]}]}, "archive", None)
    router = Router(config.rules)
    first = router.for_topic("LCUnit/1/StateChange")
    assert first == [f"t-{partition_index('LCUnit/1/StateChange', 3)}", "q-0"]
    assert router.for_topic("LCUnit/1/StateChange") == first
    assert router.for_topic("other") == ["q-0"]
    assert router.for_topic("$SYS/broker/uptime") == []  # '#' does not match $ topics
    assert router.for_queue("IN") == ["q-0"] and router.for_queue("OUT") == []
    assert router.rule_of("t-2") is config.rules[0] and router.rule_of("t-3") is None
