"""Which QoS 2 publications of a SCADAInput endpoint its flow has already run (issue 14:
"exactly once for QoS 2" into a flow input; docs/flows.md, "What an acknowledgement means").

The endpoint keeps a device's QoS 2 publication (its inbound record) in a store of its own
until the flow's run of it has committed; the run's outputs go to the broker's database. A
*release marker* ``(endpoint, msg_id)`` in that database (table ``flow_releases``,
relaymq.store.engine migration 5) is submitted in the same unit of work as the run's outputs,
so it commits with them or not at all. After a crash the device's resent PUBREL finds the
publication again; a marker says the run already committed, and the endpoint then finishes
it without running it again.

``msg_id`` is the endpoint store's id of the publication. A marker lives until the endpoint's
delete of the inbound record has committed (``forget``); one left by a crash between the two
names an id no inbound record holds any more, and ``restore`` deletes it at the endpoint's
start, before its listener accepts: an id reused after that restart can never match it.
"""

from __future__ import annotations

from typing import Any

_MARK = "INSERT OR REPLACE INTO flow_releases (endpoint, msg_id) VALUES (?, ?)"
_FORGET = "DELETE FROM flow_releases WHERE endpoint = ? AND msg_id = ?"
_READ = "SELECT msg_id FROM flow_releases WHERE endpoint = ?"


class Releases:
    """One endpoint's markers in the broker's storage engine (``engine``)."""

    def __init__(self, engine: Any, endpoint: str) -> None:
        self.engine = engine
        self.endpoint = endpoint
        #: Markers found at start whose publication still waits for its PUBREL (``restore``).
        self.run: set[int] = set()

    def restore(self, inbound: set[int]) -> None:
        """At start (a worker thread, before the listener accepts): keep the markers of the
        publications ``inbound`` still holds, delete the others (a crash came between the
        inbound record's delete and its marker's)."""
        conn = self.engine.connect()
        try:
            found = {row[0] for row in conn.execute(_READ, (self.endpoint,))}
        finally:
            conn.close()
        self.run = found & inbound
        stale = found - inbound
        if stale:
            self.engine.append([(_FORGET, (self.endpoint, msg_id)) for msg_id in sorted(stale)])

    def was_run(self, msg_id: int) -> bool:
        """Whether the flow's run of this publication committed before the last start."""
        return msg_id in self.run

    def mark(self, msg_id: int) -> None:
        """Submit the marker (inside the run's unit of work: it commits with the outputs)."""
        self.engine.append([(_MARK, (self.endpoint, msg_id))])

    def forget(self, msg_id: int) -> None:
        """Submit the marker's delete (the endpoint's inbound record is gone for good)."""
        self.run.discard(msg_id)
        self.engine.append([(_FORGET, (self.endpoint, msg_id))])
