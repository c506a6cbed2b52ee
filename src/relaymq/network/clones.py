"""Cloned brokers (pubsub.md item 43; seed 003 l.275-320, 1139-1222): the subscription table
of a broker is replicated to its clones, so that a subscriber whose broker is unavailable is
served by a clone with the subscriptions it made ("redirected subscription").

What is replicated is each persistent MQTT session's subscriptions (the clients' subscription
table; a clean session ends with its connection and has nothing to redirect). A broker
announces a client's table, retained, on ``relaymq/network/clones/<broker>/<client id>``
(JSON: ``since``, the wall-clock time of the change, and the subscriptions with their
options; an empty payload: the client has none here any more). Each clone's link subscribes
to its clone's announcements, which are then retained here too, so the replica survives a
restart of either broker.

A replica is *dormant*: it is not in the subscription tree and takes no publication, so a
subscriber never gets a copy twice (once from its own broker, once stored for it at a
clone). Publications reach a subscriber on a clone the way they reach any neighbour's
subscribers: clones are members of one collective (``settings.clone_problem``), and proxy
subscriptions carry each publication directly, once, to the clone the subscriber is on.

When a client with a persistent session connects to a clone that has no session for it, the
clone installs the replicated subscriptions in the new session before its CONNACK: it is
served at once. The clone then announces the table as its own; the broker the client left
learns that the client is now elsewhere (a newer announcement) and, if the client is not
connected to it, discards its session there (as a session taken over: the last connection
wins), so nothing more is held or proxied for it there.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from relaymq.broker.handle_subscribe import add_subscription_to_tree
from relaymq.broker.session import made
from relaymq.network.clone_list import Clones
from relaymq.pubsub.content_filter import with_filter
from relaymq.selector import SelectorError
from relaymq.store.base import SubscriptionRecord

log = logging.getLogger("relaymq.network")

CLONE_PREFIX = "relaymq/network/clones/"
#: Sessions that belong to the network itself (links), never announced.
INTERNAL_CLIENTS = ("relaymq-link-", "relaymq-neighbour-")


def clone_filter(broker: str) -> str:
    """What a clone's link subscribes to at ``broker``: its announcements."""
    return f"{CLONE_PREFIX}{broker}/#"


def table_topic(broker: str, client_id: str) -> str:
    return f"{CLONE_PREFIX}{broker}/{quote(client_id, safe='')}"


def parse_topic(topic: str) -> tuple[str, str] | None:
    """(broker, client id) of an announcement topic, None for any other topic."""
    if not topic.startswith(CLONE_PREFIX):
        return None
    broker, sep, client = topic[len(CLONE_PREFIX):].partition("/")
    return (broker, unquote(client)) if sep and broker and client and "/" not in client else None


def record_table(records: list[SubscriptionRecord]) -> list[dict[str, Any]]:
    return [{"filter": r.topic_filter, "qos": r.qos, "no_local": r.no_local, "rap": r.retain_as_published,
             "rh": r.retain_handling, "content_filter": r.content_filter} for r in records]


def table_records(client_id: str, table: list[dict[str, Any]]) -> list[SubscriptionRecord]:
    """The subscription records of an announced table; an entry that cannot be one is skipped."""
    records = []
    for entry in table:
        try:
            record = SubscriptionRecord(client_id, str(entry["filter"]), int(entry["qos"]), bool(entry["no_local"]),
                                        bool(entry["rap"]), int(entry["rh"]))
            content = entry.get("content_filter")
            records.append(with_filter(record, str(content)) if content else record)
        except (KeyError, TypeError, ValueError, SelectorError) as err:
            log.warning("clone replica of %s: entry %r skipped: %s", client_id, entry, err)
    return records


@dataclass
class Replica:
    """A cloned broker's subscription table as last learnt, and since when."""

    since: float
    table: list[dict[str, Any]]


class CloneReplication:
    """This broker's side of its clones' replication."""

    def __init__(self, me: str, clones: Clones, broker: Any) -> None:
        self.me = me
        self.clones = dict(clones)
        self.broker = broker
        #: Client id -> clone -> its announced table.
        self.replicas: dict[str, dict[str, Replica]] = {}
        #: Client id -> the time of this broker's own announcement of it.
        self.own: dict[str, float] = {}
        self._dirty: set[str] = set()
        self.installed = 0

    def start(self) -> None:
        """Learn what is retained here already (announcements from before a restart), and
        install replicas in new sessions from now on."""
        for topic, message in list(self.broker.retained.match(CLONE_PREFIX + "#")):
            self.learn(topic, message.payload)
        self.broker.session_openers.append(self.install)
        for client_id in list(self.broker.sessions):
            if client_id not in self.own:
                self.changed(client_id)  # clones newly configured: tables never announced

    def stop(self) -> None:
        if self.install in self.broker.session_openers:
            self.broker.session_openers.remove(self.install)

    def filters(self) -> list[str]:
        return [clone_filter(clone) for clone in self.clones]

    # ------------------------------------------------------------------ this broker's table
    def changed(self, key: object) -> None:
        """A subscription of the tree changed (key: a client id, or another subscriber's key):
        the client's table is announced again in the next turn of the loop."""
        if not self.clones or not isinstance(key, str) or key.startswith(INTERNAL_CLIENTS):
            return
        if not self._dirty:
            asyncio.get_running_loop().call_soon(self._announce)
        self._dirty.add(key)

    def announce_all(self) -> None:
        """Announce every client's table (a clone was added: it may never have been announced)."""
        for client_id in list(self.broker.sessions):
            self.changed(client_id)

    def _announce(self) -> None:
        dirty, self._dirty = self._dirty, set()
        now = self.broker.clock.wall()
        for client_id in sorted(dirty):
            session = self.broker.sessions.get(client_id)
            records = list(session.subscriptions.values()) if session is not None and session.persistent else []
            if not records and client_id not in self.own:
                continue
            payload = json.dumps({"since": now, "subscriptions": record_table(records)}).encode() if records else b""
            self.broker.publish(table_topic(self.me, client_id), payload, 1, True)

    # ------------------------------------------------------------------ the clones' tables
    def learn(self, topic: str, payload: bytes) -> None:
        """An announcement (a publication on CLONE_PREFIX...): a clone's table, or our own."""
        parsed = parse_topic(topic)
        if parsed is None:
            return
        broker, client_id = parsed
        try:
            body = json.loads(payload) if payload else None
            replica = Replica(float(body["since"]), list(body["subscriptions"])) if body is not None else None
        except (ValueError, TypeError, KeyError):
            log.warning("clone announcement on %s is not valid: ignored", topic)
            return
        if broker == self.me:
            if replica is None:
                self.own.pop(client_id, None)
            else:
                self.own[client_id] = replica.since
            return
        if broker not in self.clones:
            return
        if replica is None:
            self.replicas.get(client_id, {}).pop(broker, None)
            return
        self.replicas.setdefault(client_id, {})[broker] = replica
        self._taken_over(client_id, broker, replica.since)

    def _taken_over(self, client_id: str, clone: str, since: float) -> None:
        """A clone announced ``client_id`` after this broker last did: the client went there.
        Its session here is discarded unless it is connected here (then it announces again)."""
        mine = self.own.get(client_id)
        session = self.broker.sessions.get(client_id)
        if mine is None or since <= mine or session is None or session.connection is not None:
            return
        log.info("client %s is now served by clone %s: its session here is discarded", client_id, clone)
        self.broker.end_session(session)

    def install(self, session: Any) -> None:
        """A new persistent session: the subscriptions its client made at a clone (the newest
        announcement) go into it, so the client is served here at once."""
        found = self.replicas.get(session.client_id)
        if not found or session.subscriptions:
            return
        clone, replica = max(found.items(), key=lambda item: item[1].since)
        records = table_records(session.client_id, replica.table)
        for record in records:
            session.subscriptions = made(session.subscriptions)
            session.subscriptions[record.topic_filter] = record
            add_subscription_to_tree(self.broker, session, record)
            self.broker.store.put_subscription(record)
        self.installed += 1
        log.info("client %s: %d subscription(s) replicated from clone %s installed", session.client_id, len(records),
                 clone)
