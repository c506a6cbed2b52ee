"""relaymq: an integration message broker (MQTT MQIsdp v3 / 3.1.1 / 5.0, pub/sub, MQ formats)."""

__version__ = "0.1.0"
