"""Sans-I/O MQTT: packets, properties, reason codes and the codec for protocol levels 3, 4 and 5.

Nothing in this package performs I/O or imports asyncio: it turns bytes into packet objects
and packet objects into bytes.
"""
