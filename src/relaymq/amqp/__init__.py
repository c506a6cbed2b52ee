"""The AMQP 1.0 listener (issue 20): JMS applications (Qpid JMS, rhea, any AMQP 1.0 client) on
relaymq's queues and topics, with the AMQP JMS Mapping. See docs/amqp.md."""
