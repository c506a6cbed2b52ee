"""The asyncio wiring: listeners (MQTT over TCP, TLS, WebSocket), configuration, lifecycle.
The only layer that touches sockets; it moves bytes between them and relaymq.broker."""
