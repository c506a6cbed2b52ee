"""Multicast publish/subscribe (pubsub item 47; seed 003 l.222-273, 534-1084).

Publications on topics enabled for multicast leave the broker once per group on UDP, whatever
the number of receivers. ``settings`` is the ``[multicast]`` section; ``topics`` the per-topic
enable, group and quality of service and the overlapping-topic decision; ``packets`` the wire
format; ``sender`` and ``receiver`` the reliable (NAK-based repair) and unreliable state
machines: those four do no I/O. ``transport`` runs the sender on the broker's event loop,
``listen`` the receiver (``relaymq multicast-listen``), ``service`` wires it into the broker
(docs/pubsub.md, "Multicast").
"""
