"""$SYS/broker/... statistics, published retained at the configured interval (issue 2:
version, uptime, clients, messages and bytes in/out, subscriptions, retained count). They are
kept in memory only: they describe this process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from relaymq import __version__
from relaymq.broker.backpressure import held_connections, stalled_sessions
from relaymq.broker.retain import store_retained
from relaymq.broker.routing import route

if TYPE_CHECKING:
    from relaymq.broker.broker import Broker


#: The store's group-commit figures, when it keeps them (the SQLite store does): how many
#: commits (one fsync each with synchronous=FULL), statements written, and statements that never
#: reached the disk because a later one in the same batch undid them (a QoS 1 message whose
#: subscriber acknowledged it before the commit).
STORE_COUNTERS = (("store/commits", "commit_count"),
                  ("store/statements/written", "written_count"),
                  ("store/statements/coalesced", "coalesced_count"),
                  ("store/write/retries", "write_retry_count"),
                  ("store/write/outages", "write_outage_count"))


def store_state(broker: Broker) -> str:
    """``ok``, or ``cannot write: <error>`` while the store retries a failed commit (a full
    disk): no acknowledgement goes out until it is ``ok`` again (issue 15 finding 9)."""
    error = broker.store.write_error
    return "ok" if error is None else f"cannot write: {error}"


def stats_values(broker: Broker) -> dict[str, str]:
    s = broker.stats
    connected = s.clients_connected
    store = {name: str(getattr(broker.store, attr)) for name, attr in STORE_COUNTERS
             if hasattr(broker.store, attr)}
    return {
        "version": f"relaymq {__version__}",
        "uptime": f"{int(broker.clock.monotonic() - broker.started_at)} seconds",
        "clients/connected": str(connected),
        "clients/disconnected": str(len(broker.sessions) - sum(
            1 for x in broker.sessions.values() if x.connection is not None)),
        "clients/total": str(len(broker.sessions)),
        "clients/maximum": str(s.clients_maximum),
        "connections/total": str(s.connections_total),
        "messages/received": str(s.messages_received),
        "messages/sent": str(s.messages_sent),
        "bytes/received": str(s.bytes_received),
        "bytes/sent": str(s.bytes_sent),
        "publish/messages/dropped": str(s.publish_dropped),
        "publish/messages/dropped/overflow": str(s.overflow_dropped),
        "publish/messages/held": str(s.publications_held),
        "clients/blocking": str(len(broker.backpressure.blocking)),
        "clients/held": str(held_connections(broker)),
        "clients/stalled": str(stalled_sessions(broker)),
        "clients/stalled/total": str(s.stalls),
        "subscriptions/count": str(len(broker.subscriptions)),
        "retained messages/count": str(len(broker.retained)),
        "store/messages": str(len(broker.refs.counts)),
        "store/state": store_state(broker),
        **store,
    }


def publish_stats(broker: Broker) -> None:
    for name, value in stats_values(broker).items():
        msg = broker.new_message(f"$SYS/broker/{name}", value.encode(), 0, True)
        store_retained(broker, msg, persist=False)
        route(broker, msg, None)
