"""The ``[flows]`` configuration section (relaymq.config PLUGIN_SECTIONS).

::

    [flows]
    enabled = true
    deploy = ["flows/telemetry.yaml"]   # deployed at start-up (into default_group)
    default_group = "default"
    admin_remote = false                # accept /relaymq/flows admin calls from non-loopback peers

Deployed flows are kept under ``<data_dir>/flows/<group>/<flow>.yaml`` and redeployed at
start-up, before the ``deploy`` files (which replace a stored flow of the same name).
"""

from __future__ import annotations

from dataclasses import dataclass

from relaymq.config import ConfigError, boolean, build_section, key_field, non_empty_text, text_list


@dataclass(frozen=True)
class FlowsSettings:
    enabled: bool = key_field(True, boolean)
    deploy: tuple[str, ...] = key_field((), text_list)
    default_group: str = key_field("default", non_empty_text)
    admin_remote: bool = key_field(False, boolean)


def build(raw: object, key: str, base_dir: str | None) -> FlowsSettings:
    import os

    from relaymq.flows.names import NAME

    settings: FlowsSettings = build_section(FlowsSettings, raw, key, base_dir)
    if not NAME.match(settings.default_group):
        raise ConfigError(f"{key}.default_group", "expected letters, digits, '.', '_', '-'")
    if base_dir is not None and settings.deploy:
        paths = tuple(p if os.path.isabs(p) else os.path.normpath(os.path.join(base_dir, p)) for p in settings.deploy)
        settings = FlowsSettings(settings.enabled, paths, settings.default_group, settings.admin_remote)
    for i, path in enumerate(settings.deploy):
        if not os.path.isfile(path):
            raise ConfigError(f"{key}.deploy[{i}]", f"no such file: {path!r}")
    return settings
