"""``[archive]``: which publications and queue messages the message log keeps, and for how long.

Why rules rather than "archive everything": the log is for data someone analyses (device
telemetry, orders), not for ``$SYS`` chatter; each rule names the topic filters and queues it
takes, how many partitions spread the load (a topic always lands in the same partition, so its
order is kept) and the retention that bounds the disk. The log lives in the broker's database
and commits with the publications (``relaymq.store.engine``), so it has no file, writer or
queue of its own to configure. Example::

    [archive]
    retention_check_seconds = 60

    [[archive.rule]]
    name = "telemetry"
    topics = ["LCUnit/#"]
    queues = ["TELEMETRY.IN"]
    partitions = 4
    retention_seconds = 604800    # 0 = keep forever
    retention_entries = 0         # per partition; 0 = no limit
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

from relaymq.pubsub.topics import TopicError, validate_topic_filter
from relaymq.config import ConfigError, build_section, int_range, key_field, text_list

_RULE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _rule_name(value: Any) -> str | None:
    if isinstance(value, str) and _RULE_NAME.match(value):
        return None
    return "a name of 1-64 letters, digits, '_', '.', '-'"


def _topic_filters(value: Any) -> str | None:
    """MQTT topic filters, checked by the broker's own rules (spec README decision 2)."""
    if text_list(value) is not None:
        return "a list of MQTT topic filters"
    for item in value:
        try:
            validate_topic_filter(item)
        except TopicError as error:
            return f"a list of MQTT topic filters ({item!r}: {error})"
    return None


@dataclass(frozen=True)
class ArchiveRule:
    """One ``[[archive.rule]]``: what goes into partitions ``<name>-0`` .. ``<name>-<n-1>``."""

    name: str = key_field("default", _rule_name)
    topics: tuple[str, ...] = key_field((), _topic_filters)
    queues: tuple[str, ...] = key_field((), text_list)
    partitions: int = key_field(1, int_range(1, 1024))
    retention_seconds: int = key_field(0, int_range(0))
    retention_entries: int = key_field(0, int_range(0))

    def partition_names(self) -> list[str]:
        """The partitions of this rule, in index order."""
        return [f"{self.name}-{index}" for index in range(self.partitions)]


#: Keys of the log's own writer thread, which is gone: the log commits with the publications in
#: the broker's database now (issue 14). A configuration that still sets one is told why.
_ONE_COMMIT = ("the message log now lives in the broker's database (<data_dir>/relaymq.db) and commits with "
               "the publication it archives")
RETIRED_KEYS = {
    "dir": f"no longer used: {_ONE_COMMIT}; remove the key (pipeline jobs take --log <data_dir>)",
    "commit_delay_ms": f"no longer used: {_ONE_COMMIT}; remove the key ([broker] commit_delay_ms applies)",
    "max_batch": f"no longer used: {_ONE_COMMIT}; remove the key",
    "max_pending": f"no longer used: {_ONE_COMMIT}, so no record waits in memory; remove the key",
}


@dataclass(frozen=True)
class ArchiveOptions:
    """The scalar keys of ``[archive]`` (rules are built one by one, so errors name the rule)."""

    retention_check_seconds: int = key_field(60, int_range(1))


@dataclass(frozen=True)
class ArchiveConfig(ArchiveOptions):
    """The whole ``[archive]`` section; no rules (the default) means the log is not opened."""

    rules: tuple[ArchiveRule, ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.rules)


def build(raw: Any, key: str, base_dir: str | None) -> ArchiveConfig:
    """Build the section from its TOML table (None: defaults, no rules)."""
    if raw is None:
        return ArchiveConfig()
    if not isinstance(raw, dict):
        raise ConfigError(key, f"expected a table, got {raw!r}")
    table = dict(raw)
    raw_rules = table.pop("rule", [])
    if not isinstance(raw_rules, list):
        raise ConfigError(f"{key}.rule", "expected [[archive.rule]] tables")
    for retired, why in RETIRED_KEYS.items():
        if retired in table:
            raise ConfigError(f"{key}.{retired}", why)
    top = build_section(ArchiveOptions, table, key, base_dir)
    rules: list[ArchiveRule] = []
    for index, raw_rule in enumerate(raw_rules):
        rule_key = f"{key}.rule[{index}]"
        if isinstance(raw_rule, dict) and "name" not in raw_rule:
            raw_rule = {**raw_rule, "name": f"rule{index}"}
        rule = build_section(ArchiveRule, raw_rule, rule_key, base_dir)
        if not rule.topics and not rule.queues:
            raise ConfigError(f"{rule_key}.topics", "a rule needs at least one topic filter or queue")
        for earlier_index, earlier in enumerate(rules):
            if earlier.name == rule.name:
                raise ConfigError(f"{rule_key}.name", f"{rule.name!r} is already the name of {key}.rule[{earlier_index}]")
        rules.append(rule)
    return ArchiveConfig(**{f.name: getattr(top, f.name) for f in fields(ArchiveOptions)}, rules=tuple(rules))

