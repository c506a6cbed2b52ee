"""The broker core: sessions, connections' protocol handling, routing, retained messages, wills.

Sans-I/O: nothing here touches sockets or asyncio. A connection writes through a *link*
(``write(bytes)``, ``close()``, ``get_write_buffer_size()``: an asyncio transport fits) and the
server drives time by calling ``Broker.tick()``. Files are named after the protocol concern
they implement, as Mosquitto's are (handle_connect, handle_publish, ...).
"""
