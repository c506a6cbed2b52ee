"""Where listeners bind (``binding``) and their TLS contexts (``tls``): shared by the MQTT,
HTTP and channel listeners and by the configuration's validation."""
