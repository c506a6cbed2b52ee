"""SCADAInput: a telemetry (MQIsdp v3 / MQTT) listener on its own port; every publication a
device sends there starts the flow, with an MQRFH2 carrying ``psc.Topic`` (flows-http.md
items 2, 10; mqtt.md). The listener stays bound across redeploys of its flow."""

from __future__ import annotations

from typing import Any

from relaymq.flows.node import Prop
from relaymq.flows.nodes.input_base import InputNode
from relaymq.net.binding import MAX_PORT


def _port(value: Any) -> str | None:
    return None if 0 <= value <= MAX_PORT else f"a port in 0..{MAX_PORT}"


class SCADAInput(InputNode):
    KIND = "SCADAInput"
    PROPERTIES = {
        "port": Prop((int,), check=_port),
        "host": Prop((str,), "0.0.0.0"),
        "domain": Prop((str,), "BLOB"),
    }
