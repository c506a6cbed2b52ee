"""MQTT bridges: this broker as a client of another MQTT 3.1.1/5 broker, carrying topics in
either direction (docs/networks.md, issue 17)."""
