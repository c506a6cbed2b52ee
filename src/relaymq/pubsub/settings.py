"""``[pubsub]``: the publish/subscribe engine's configuration (pubsub.md items 16, 38, 44, 45).

Why these keys: the broker and execution group names appear in the statistics topic
(item 44); ``stats_interval_ms`` is the seed's ``statsInterval`` (0 = off, the default);
publication input queues stand where the seed's publishing message flows stand, each with the
subscription point of its Publication node (item 16); topic security switches the topic ACLs
on (item 38), which come from ``[[pubsub.acl]]`` rows, ``[pubsub.groups]`` and the ACL file
that ``relaymq acl set|remove`` writes. Example::

    [pubsub]
    broker_name = "BROKER1"
    execution_group = "default"
    stats_interval_ms = 0
    input_queues = ["SYSTEM.BROKER.DEFAULT.STREAM", "PRICES.POUNDS:Pounds"]
    topic_security = true
    acl_file = "topic-acl.json"     # "" = <broker.data_dir>/topic-acl.json
    events = true
    admin_remote = false             # accept /relaymq/pubsub admin calls from non-loopback peers

    [pubsub.groups]
    PDefault = ["alice"]

    [[pubsub.acl]]
    topic = ""                       # the root
    principal = "PublicGroup"
    publish = "deny"
    subscribe = "deny"
    persistent = "deny"
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, fields
from typing import Any

from relaymq.config import ConfigError, boolean, build_section, int_range, key_field, non_empty_text, text, text_list
from relaymq.pubsub.topicacl import ALLOW, DENY, INHERIT, PERMISSIONS, TopicAcl

#: ``QUEUE`` or ``QUEUE:SubPoint`` (MQ object names have no ``:``).
_INPUT_QUEUE = re.compile(r"^[A-Za-z0-9._/%]{1,48}(:.*)?$")
ACL_FILE_NAME = "topic-acl.json"


def _input_queues(value: Any) -> str | None:
    if text_list(value) is not None or not all(_INPUT_QUEUE.match(item) for item in value):
        return 'a list of "QUEUE" or "QUEUE:SubPoint" strings'
    return None


@dataclass(frozen=True)
class PubSubOptions:
    broker_name: str = key_field("relaymq", non_empty_text)
    execution_group: str = key_field("default", non_empty_text)
    stats_interval_ms: int = key_field(0, int_range(0))
    input_queues: tuple[str, ...] = key_field(("SYSTEM.BROKER.DEFAULT.STREAM",), _input_queues)
    topic_security: bool = key_field(False, boolean)
    acl_file: str = key_field("", text, path="dir")
    events: bool = key_field(True, boolean)
    admin_remote: bool = key_field(False, boolean)


@dataclass(frozen=True)
class PubSubSettings(PubSubOptions):
    """The section as the service uses it; ``acl`` holds the rows and groups of the file."""

    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    acl: tuple[dict[str, str], ...] = ()

    def input_queue_points(self) -> dict[str, str]:
        """Input queue -> subscription point of its publications."""
        out = {}
        for item in self.input_queues:
            queue, _, point = item.partition(":")
            out[queue] = point
        return out

    def acl_path(self, data_dir: str) -> str:
        return self.acl_file or os.path.join(data_dir, ACL_FILE_NAME)

    def topic_acl(self, data_dir: str) -> TopicAcl:
        """The topic ACLs: defaults, then the configuration's rows, then the ACL file's."""
        acl = TopicAcl.from_data({"groups": self.groups, "acl": list(self.acl)}, enabled=self.topic_security)
        path = self.acl_path(data_dir)
        if os.path.exists(path):
            acl.merge(load_acl_file(path))
        return acl


def load_acl_file(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def build(raw: Any, key: str, base_dir: str | None) -> PubSubSettings:
    """Build ``[pubsub]``; errors name the exact key (``pubsub.acl[2].publish``)."""
    if raw is None:
        return PubSubSettings()
    if not isinstance(raw, dict):
        raise ConfigError(key, f"expected a table, got {raw!r}")
    table = dict(raw)
    raw_groups = table.pop("groups", {})
    raw_acl = table.pop("acl", [])
    top = build_section(PubSubOptions, table, key, base_dir)
    if not isinstance(raw_groups, dict):
        raise ConfigError(f"{key}.groups", "expected a table of group = [users]")
    groups = {}
    for name, users in raw_groups.items():
        if text_list(users) is not None:
            raise ConfigError(f"{key}.groups.{name}", "expected a list of user names")
        groups[name] = tuple(users)
    if not isinstance(raw_acl, list):
        raise ConfigError(f"{key}.acl", "expected [[pubsub.acl]] tables")
    rows = []
    for index, row in enumerate(raw_acl):
        row_key = f"{key}.acl[{index}]"
        if not isinstance(row, dict):
            raise ConfigError(row_key, "expected a table")
        for name in row:
            if name not in ("topic", "principal", *PERMISSIONS):
                raise ConfigError(f"{row_key}.{name}", "unknown key (topic, principal, publish, subscribe, persistent)")
        if not isinstance(row.get("topic", ""), str):
            raise ConfigError(f"{row_key}.topic", "expected a topic string")
        if not isinstance(row.get("principal"), str) or not row["principal"]:
            raise ConfigError(f"{row_key}.principal", "expected a user or group name")
        for perm in PERMISSIONS:
            if row.get(perm, INHERIT) not in (ALLOW, DENY, INHERIT):
                raise ConfigError(f"{row_key}.{perm}", "expected allow, deny or inherit")
        rows.append({"topic": row.get("topic", ""), "principal": row["principal"],
                     **{p: row.get(p, INHERIT) for p in PERMISSIONS}})
    return PubSubSettings(**{f.name: getattr(top, f.name) for f in fields(PubSubOptions)},
                          groups=groups, acl=tuple(rows))
