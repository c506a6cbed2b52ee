"""The contract between the broker process and the parts that run beside the MQTT listeners:
what a service gets at start (``contract``), which services start in which order
(``registry``), and what SIGHUP reads again (``reload``)."""
