"""The real-time transport (pubsub item 46; seed 003 l.2004-2071, seed 000 l.619-665).

Non-persistent publish/subscribe over TCP for lightweight clients: ``frames`` is its framing,
``outqueue`` the seed's overflow policy for what waits to be written to a client, ``session``
one client's protocol state: those three do no I/O. ``connection`` and ``service`` run them on
the broker's event loop; ``client`` is a small asyncio client (tests, tools). Publications go
through the broker's routing, so MQTT and real-time clients see each other's (docs/pubsub.md,
"Real-time transport").
"""
